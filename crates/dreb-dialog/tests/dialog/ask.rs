//! `ask`: answer mapping, stop semantics, every validation text, single-flight queueing.

use std::time::Duration;

use dreb_dialog::response::{
    ASK_ANSWERS_NOT_ARRAY, ASK_CUSTOM_TEXT_NOT_STRING, ASK_SELECTED_NOT_STRINGS,
};
use dreb_dialog::{DialogEngine, DialogOptions, ResponseDisposition};
use dreb_protocol::AskQuestion;
use dreb_tools::{AskAnswer, AskResult, DialogError};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::common::{harness, quiesce};

fn q(text: &str) -> AskQuestion {
    serde_json::from_value(json!({"question": text, "options": ["a", "b"]})).unwrap()
}

type AskTask = JoinHandle<Result<Option<AskResult>, DialogError>>;

fn spawn_ask(e: &DialogEngine, question: &str, opts: DialogOptions) -> AskTask {
    let e = e.clone();
    let question = q(question);
    tokio::spawn(async move { e.ask(None, vec![question], opts).await })
}

#[tokio::test]
async fn request_carries_every_question_and_the_default_title() {
    let mut h = harness();
    let e = h.engine.clone();
    let questions: Vec<AskQuestion> = serde_json::from_value(json!([
        {"question": "Which DB?", "title": "Storage", "options": ["SQLite", "Postgres"], "allowFreeText": true, "multiSelect": false, "multiline": false},
        {"question": "Anything else?", "multiline": true}
    ]))
    .unwrap();
    let t = tokio::spawn(async move { e.ask(None, questions, DialogOptions::default()).await });
    let (req, id) = h.next_request().await;
    assert_eq!(
        req,
        json!({
            "type": "extension_ui_request", "id": id, "method": "ask", "title": "Question",
            "questions": [
                {"question": "Which DB?", "title": "Storage", "options": ["SQLite", "Postgres"], "allowFreeText": true, "multiSelect": false, "multiline": false},
                {"question": "Anything else?", "multiline": true}
            ]
        })
    );
    assert!(req.get("timeout").is_none() && req.get("expiresAt").is_none());
    h.answer(
        &id,
        json!({"answers": [{"selected": ["SQLite"]}, {"selected": [], "skipped": true}]}),
    );
    t.await.unwrap().unwrap().unwrap();
}

#[tokio::test]
async fn answers_are_normalised() {
    let mut h = harness();
    let t = spawn_ask(&h.engine, "Which?", DialogOptions::default());
    let (_, id) = h.next_request().await;
    h.answer(
        &id,
        json!({"answers": [
            {"selected": ["b"], "customText": "duckdb"},
            {"selected": []},
            {"selected": [], "customText": "   "},
            {"selected": [], "customText": ""},
            {"selected": ["a"], "skipped": true},
            {"selected": [], "customText": "typed", "skipped": "yes"}
        ]}),
    );
    let result = t.await.unwrap().unwrap().unwrap();
    let answer = |selected: &[&str], custom: Option<&str>, skipped: bool| AskAnswer {
        selected: selected.iter().map(|s| s.to_string()).collect(),
        custom_text: custom.map(str::to_string),
        skipped,
    };
    assert_eq!(
        result.answers,
        vec![
            answer(&["b"], Some("duckdb"), false),
            answer(&[], None, true),
            answer(&[], Some("   "), true),
            answer(&[], None, true),
            answer(&["a"], None, true),
            answer(&[], Some("typed"), false),
        ]
    );
    assert_eq!(h.stops(), 0, "an answer never stops the turn");
}

#[tokio::test]
async fn all_skipped_answer_does_not_stop_the_turn() {
    let mut h = harness();
    let t = spawn_ask(&h.engine, "Which?", DialogOptions::default());
    let (_, id) = h.next_request().await;
    h.answer(&id, json!({"answers": [{"selected": []}]}));
    let result = t.await.unwrap().unwrap().unwrap();
    assert!(result.answers[0].skipped);
    assert_eq!(h.stops(), 0);
}

#[tokio::test]
async fn host_cancel_stops_the_turn_once() {
    let mut h = harness();
    let t = spawn_ask(&h.engine, "Which?", DialogOptions::default());
    let (_, id) = h.next_request().await;
    h.answer(&id, json!({"cancelled": true}));
    assert_eq!(t.await.unwrap().unwrap(), None);
    assert_eq!(h.stops(), 1);
    assert_eq!(h.handled(), vec![id.clone()]);
    h.answer(&id, json!({"cancelled": true}));
    assert_eq!(h.stops(), 1);
    assert_eq!(h.handled().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn timeout_resolves_none_and_stops_the_turn() {
    let mut h = harness();
    let t = spawn_ask(
        &h.engine,
        "Which?",
        DialogOptions::timeout(Duration::from_millis(50)),
    );
    let (req, id) = h.next_request().await;
    assert_eq!(req["timeout"], json!(50));
    assert!(req["expiresAt"].is_i64());
    assert_eq!(t.await.unwrap().unwrap(), None);
    assert_eq!(h.handled(), vec![id]);
    assert!(h.engine.pending_requests().is_empty());
    assert_eq!(h.stops(), 1);
}

#[tokio::test]
async fn abort_resolves_none_without_stopping() {
    let mut h = harness();
    let cancel = CancellationToken::new();
    let t = spawn_ask(&h.engine, "Which?", DialogOptions::cancel(cancel.clone()));
    let (_, id) = h.next_request().await;
    assert_eq!(h.engine.pending_requests().len(), 1);
    cancel.cancel();
    assert_eq!(t.await.unwrap().unwrap(), None);
    assert_eq!(h.handled(), vec![id]);
    assert!(h.engine.pending_requests().is_empty());
    assert_eq!(h.stops(), 0, "an aborted turn is already stopping");
}

#[tokio::test]
async fn shutdown_settles_the_active_ask_and_stops_the_turn() {
    let mut h = harness();
    let t = spawn_ask(&h.engine, "Which?", DialogOptions::default());
    let (_, id) = h.next_request().await;
    h.engine.cancel_all();
    assert_eq!(t.await.unwrap().unwrap(), None);
    assert_eq!(h.handled(), vec![id]);
    assert_eq!(h.stops(), 1);
}

#[tokio::test]
async fn malformed_answers_fail_with_the_exact_texts() {
    let cases: Vec<(Value, &str)> = vec![
        (json!({"answers": "not-an-array"}), ASK_ANSWERS_NOT_ARRAY),
        (
            json!({"value": "wrong response variant"}),
            ASK_ANSWERS_NOT_ARRAY,
        ),
        (json!({"confirmed": true}), ASK_ANSWERS_NOT_ARRAY),
        (json!({"answers": null}), ASK_ANSWERS_NOT_ARRAY),
        (json!({"cancelled": false}), ASK_ANSWERS_NOT_ARRAY),
        (
            json!({"answers": [{"selected": null}]}),
            ASK_SELECTED_NOT_STRINGS,
        ),
        (json!({"answers": [{}]}), ASK_SELECTED_NOT_STRINGS),
        (json!({"answers": ["a"]}), ASK_SELECTED_NOT_STRINGS),
        (json!({"answers": [null]}), ASK_SELECTED_NOT_STRINGS),
        (
            json!({"answers": [{"selected": ["a", 2]}]}),
            ASK_SELECTED_NOT_STRINGS,
        ),
        (
            json!({"answers": [{"selected": "a"}]}),
            ASK_SELECTED_NOT_STRINGS,
        ),
        (
            json!({"answers": [{"selected": ["a"], "customText": 42}]}),
            ASK_CUSTOM_TEXT_NOT_STRING,
        ),
        (
            json!({"answers": [{"selected": ["a"], "customText": null}]}),
            ASK_CUSTOM_TEXT_NOT_STRING,
        ),
        // The first bad answer decides; `selected` is checked before `customText`.
        (
            json!({"answers": [{"selected": ["a"]}, {"selected": 1, "customText": 2}]}),
            ASK_SELECTED_NOT_STRINGS,
        ),
    ];
    assert_eq!(
        ASK_ANSWERS_NOT_ARRAY,
        "Invalid RPC ask response: answers must be an array"
    );
    assert_eq!(
        ASK_SELECTED_NOT_STRINGS,
        "Invalid RPC ask response: each answer's selected must be an array of strings"
    );
    assert_eq!(
        ASK_CUSTOM_TEXT_NOT_STRING,
        "Invalid RPC ask response: customText must be a string"
    );
    for (response, text) in cases {
        let mut h = harness();
        let t = spawn_ask(&h.engine, "Which?", DialogOptions::default());
        let (_, id) = h.next_request().await;
        assert_eq!(
            h.answer(&id, response.clone()),
            ResponseDisposition::Delivered
        );
        let err = t.await.unwrap().unwrap_err();
        assert_eq!(err.0, text, "{response}");
        assert_eq!(h.handled(), vec![id], "{response}");
        assert!(h.engine.pending_requests().is_empty());
        assert_eq!(h.stops(), 0);
    }
}

#[tokio::test(start_paused = true)]
async fn concurrent_asks_are_single_flight_fifo() {
    let mut h = harness();
    let first = spawn_ask(&h.engine, "First?", DialogOptions::default());
    let (req1, id1) = h.next_request().await;
    assert_eq!(req1["questions"][0]["question"], "First?");
    let second = spawn_ask(&h.engine, "Second?", DialogOptions::default());
    quiesce().await;
    let third = spawn_ask(&h.engine, "Third?", DialogOptions::default());
    quiesce().await;
    // The others are queued: not emitted, not pending.
    assert_eq!(h.requests_emitted(), 1);
    assert_eq!(h.engine.pending_requests().len(), 1);

    h.answer(&id1, json!({"answers": [{"selected": ["a"]}]}));
    first.await.unwrap().unwrap().unwrap();
    // The handled event of the first comes before the second request.
    let handled = h.next_frame().await;
    assert_eq!(
        handled,
        json!({"type": "extension_ui_response_handled", "id": id1})
    );
    let (req2, id2) = h.next_request().await;
    assert_eq!(req2["questions"][0]["question"], "Second?");
    assert_ne!(id2, id1);
    quiesce().await;
    assert_eq!(h.requests_emitted(), 2);

    h.answer(&id2, json!({"answers": [{"selected": ["b"]}]}));
    let r2 = second.await.unwrap().unwrap().unwrap();
    assert_eq!(
        r2.answers,
        vec![AskAnswer {
            selected: vec!["b".into()],
            custom_text: None,
            skipped: false
        }]
    );
    let _ = h.next_frame().await; // handled of the second
    let (req3, id3) = h.next_request().await;
    assert_eq!(req3["questions"][0]["question"], "Third?");
    h.answer(&id3, json!({"cancelled": true}));
    assert_eq!(third.await.unwrap().unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn queued_ask_advances_after_a_malformed_answer() {
    let mut h = harness();
    let first = spawn_ask(&h.engine, "First?", DialogOptions::default());
    let (_, id1) = h.next_request().await;
    let second = spawn_ask(&h.engine, "Second?", DialogOptions::default());
    quiesce().await;
    assert_eq!(h.requests_emitted(), 1);
    h.answer(&id1, json!({"value": "wrong response variant"}));
    assert!(first.await.unwrap().is_err());
    let _ = h.next_frame().await; // handled
    let (_, id2) = h.next_request().await;
    assert_eq!(h.engine.pending_requests().len(), 1);
    h.answer(&id2, json!({"answers": [{"selected": ["b"]}]}));
    assert!(second.await.unwrap().unwrap().is_some());
}

#[tokio::test(start_paused = true)]
async fn queued_ask_aborted_is_never_emitted() {
    let mut h = harness();
    let turn = CancellationToken::new();
    let first = spawn_ask(&h.engine, "First?", DialogOptions::cancel(turn.clone()));
    let (_, id1) = h.next_request().await;
    let second = spawn_ask(&h.engine, "Second?", DialogOptions::cancel(turn.clone()));
    quiesce().await;
    turn.cancel();
    assert_eq!(first.await.unwrap().unwrap(), None);
    assert_eq!(second.await.unwrap().unwrap(), None);
    quiesce().await;
    assert_eq!(h.requests_emitted(), 1);
    assert_eq!(h.handled(), vec![id1]);
    assert!(h.engine.pending_requests().is_empty());

    // Only the queued one aborted: the active one keeps waiting and the slot is released afterwards.
    let own = CancellationToken::new();
    let active = spawn_ask(&h.engine, "Active?", DialogOptions::default());
    let (_, active_id) = h.next_request().await;
    let queued = spawn_ask(&h.engine, "Queued?", DialogOptions::cancel(own.clone()));
    quiesce().await;
    own.cancel();
    assert_eq!(queued.await.unwrap().unwrap(), None);
    assert_eq!(h.engine.pending_requests().len(), 1);
    h.answer(&active_id, json!({"answers": [{"selected": ["a"]}]}));
    assert!(active.await.unwrap().unwrap().is_some());
    let next = spawn_ask(&h.engine, "Next?", DialogOptions::default());
    let _ = h.next_frame().await; // handled of the active one
    let (req, next_id) = h.next_request().await;
    assert_eq!(req["questions"][0]["question"], "Next?");
    h.answer(&next_id, json!({"cancelled": true}));
    assert_eq!(next.await.unwrap().unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn cancel_stop_aborts_queued_asks_of_the_same_turn() {
    // The runtime's stop hook aborts the turn token; a queued ask of that turn must then never be emitted.
    let mut h = harness();
    let turn = CancellationToken::new();
    let t = turn.clone();
    h.engine
        .set_ask_stop_hook(std::sync::Arc::new(move || t.cancel()));
    let first = spawn_ask(&h.engine, "First?", DialogOptions::cancel(turn.clone()));
    let (_, id1) = h.next_request().await;
    let second = spawn_ask(&h.engine, "Second?", DialogOptions::cancel(turn.clone()));
    quiesce().await;
    h.answer(&id1, json!({"cancelled": true}));
    assert_eq!(first.await.unwrap().unwrap(), None);
    assert_eq!(second.await.unwrap().unwrap(), None);
    quiesce().await;
    assert_eq!(h.requests_emitted(), 1);
}

#[tokio::test(start_paused = true)]
async fn shutdown_releases_queued_asks_without_emitting() {
    let mut h = harness();
    let first = spawn_ask(&h.engine, "First?", DialogOptions::default());
    let (_, id1) = h.next_request().await;
    let second = spawn_ask(&h.engine, "Second?", DialogOptions::default());
    quiesce().await;
    h.engine.cancel_all();
    assert_eq!(first.await.unwrap().unwrap(), None);
    assert_eq!(second.await.unwrap().unwrap(), None);
    quiesce().await;
    assert_eq!(h.requests_emitted(), 1);
    assert_eq!(h.handled(), vec![id1]);
    assert_eq!(h.stops(), 1, "only the emitted ask stops the turn");
    // After shutdown an ask resolves at once, emitting nothing.
    assert_eq!(
        h.engine
            .ask(None, vec![q("Later?")], DialogOptions::default())
            .await
            .unwrap(),
        None
    );
    assert_eq!(h.requests_emitted(), 1);
}
