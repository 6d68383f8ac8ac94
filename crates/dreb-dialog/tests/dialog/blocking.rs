//! select / confirm / input / editor: answered, timed out, cancelled, aborted, shutdown; the handled event
//! exactly once; wrong-kind answers; unknown ids; pending_requests.

use std::time::Duration;

use dreb_dialog::{DialogOptions, ResponseDisposition};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::common::harness;

fn opts_50ms() -> DialogOptions {
    DialogOptions::timeout(Duration::from_millis(50))
}

#[tokio::test]
async fn select_answered_settles_once() {
    let mut h = harness();
    let e = h.engine.clone();
    let t = tokio::spawn(async move {
        e.select("Pick", &["a".into(), "b".into()], DialogOptions::default())
            .await
    });
    let (req, id) = h.next_request().await;
    assert_eq!(req["method"], "select");
    assert!(
        req.get("timeout").is_none(),
        "no timeout key without a timeout"
    );
    assert_eq!(
        h.answer(&id, json!({"value": "b"})),
        ResponseDisposition::Delivered
    );
    assert_eq!(t.await.unwrap().as_deref(), Some("b"));
    assert_eq!(h.handled(), vec![id.clone()]);
    // A duplicate answer is ignored: no second handled event.
    assert_eq!(
        h.answer(&id, json!({"value": "a"})),
        ResponseDisposition::UnknownId
    );
    assert_eq!(h.handled(), vec![id]);
    assert!(h.engine.pending_requests().is_empty());
}

#[tokio::test(start_paused = true)]
async fn timeouts_resolve_to_defaults() {
    let mut h = harness();
    let e = h.engine.clone();
    let t = tokio::spawn({
        let e = e.clone();
        async move { e.select("Pick", &["a".into()], opts_50ms()).await }
    });
    let (req, id) = h.next_request().await;
    assert_eq!(req["timeout"], json!(50));
    assert!(req.get("expiresAt").is_none(), "only ask carries expiresAt");
    assert_eq!(t.await.unwrap(), None);
    assert_eq!(h.handled(), vec![id.clone()]);
    // A late answer after the timeout is ignored.
    assert_eq!(
        h.answer(&id, json!({"value": "a"})),
        ResponseDisposition::UnknownId
    );

    let t = tokio::spawn({
        let e = e.clone();
        async move { e.confirm("Sure?", "m", opts_50ms()).await }
    });
    let (_, id2) = h.next_request().await;
    assert!(!t.await.unwrap());

    let t = tokio::spawn({
        let e = e.clone();
        async move { e.input("Name", None, opts_50ms()).await }
    });
    let (req, id3) = h.next_request().await;
    assert!(req.get("placeholder").is_none());
    assert_eq!(t.await.unwrap(), None);

    assert_eq!(h.handled(), vec![id, id2, id3]);
    assert!(h.engine.pending_requests().is_empty());
    assert_eq!(h.stops(), 0, "only ask stops the turn");
}

#[tokio::test]
async fn host_cancel_resolves_to_defaults() {
    let mut h = harness();
    let e = h.engine.clone();
    let t = tokio::spawn({
        let e = e.clone();
        async move {
            e.select("Pick", &["a".into()], DialogOptions::default())
                .await
        }
    });
    let (_, id) = h.next_request().await;
    h.answer(&id, json!({"cancelled": true, "value": "a"}));
    assert_eq!(t.await.unwrap(), None);

    let t = tokio::spawn({
        let e = e.clone();
        async move { e.confirm("Sure?", "m", DialogOptions::default()).await }
    });
    let (_, id2) = h.next_request().await;
    h.answer(&id2, json!({"cancelled": true}));
    assert!(!t.await.unwrap());

    let t = tokio::spawn({
        let e = e.clone();
        async move { e.editor("Edit", Some("x")).await }
    });
    let (_, id3) = h.next_request().await;
    h.answer(&id3, json!({"cancelled": true}));
    assert_eq!(t.await.unwrap(), None);
    assert_eq!(h.handled(), vec![id, id2, id3]);
}

#[tokio::test]
async fn wrong_kind_answers_give_the_default() {
    let mut h = harness();
    let e = h.engine.clone();
    // `value` sent to a confirm gives false.
    let t = tokio::spawn({
        let e = e.clone();
        async move { e.confirm("Sure?", "m", DialogOptions::default()).await }
    });
    let (_, id) = h.next_request().await;
    h.answer(&id, json!({"value": "yes"}));
    assert!(!t.await.unwrap());
    // `confirmed` sent to a select gives None.
    let t = tokio::spawn({
        let e = e.clone();
        async move {
            e.select("Pick", &["a".into()], DialogOptions::default())
                .await
        }
    });
    let (_, id2) = h.next_request().await;
    h.answer(&id2, json!({"confirmed": true}));
    assert_eq!(t.await.unwrap(), None);
    // A non-string value to input gives None; confirmed: false gives false.
    let t = tokio::spawn({
        let e = e.clone();
        async move { e.input("Name", Some("n"), DialogOptions::default()).await }
    });
    let (req, id3) = h.next_request().await;
    assert_eq!(req["placeholder"], "n");
    h.answer(&id3, json!({"value": 42}));
    assert_eq!(t.await.unwrap(), None);
    let t = tokio::spawn({
        let e = e.clone();
        async move { e.confirm("Sure?", "m", DialogOptions::default()).await }
    });
    let (_, id4) = h.next_request().await;
    h.answer(&id4, json!({"confirmed": false}));
    assert!(!t.await.unwrap());
    // Every one of them still settled exactly once.
    assert_eq!(h.handled(), vec![id, id2, id3, id4]);
}

#[tokio::test]
async fn abort_resolves_to_default_and_settles() {
    let mut h = harness();
    let e = h.engine.clone();
    let cancel = CancellationToken::new();
    let t = tokio::spawn({
        let e = e.clone();
        let c = cancel.clone();
        async move {
            e.select("Pick", &["a".into()], DialogOptions::cancel(c))
                .await
        }
    });
    let (_, id) = h.next_request().await;
    assert_eq!(h.engine.pending_requests().len(), 1);
    cancel.cancel();
    assert_eq!(t.await.unwrap(), None);
    assert_eq!(h.handled(), vec![id.clone()]);
    assert!(h.engine.pending_requests().is_empty());
    assert_eq!(
        h.answer(&id, json!({"value": "a"})),
        ResponseDisposition::UnknownId
    );
    assert_eq!(h.handled().len(), 1);
}

#[tokio::test]
async fn pre_aborted_dialog_emits_nothing() {
    let h = harness();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let opts = DialogOptions::timeout(Duration::from_secs(5)).with_cancel(cancel);
    assert_eq!(
        h.engine.select("Pick", &["a".into()], opts.clone()).await,
        None
    );
    assert!(!h.engine.confirm("Sure?", "m", opts.clone()).await);
    assert_eq!(h.engine.input("Name", None, opts.clone()).await, None);
    assert_eq!(h.engine.ask(None, vec![], opts).await.unwrap(), None);
    assert!(h.frames().is_empty());
}

#[tokio::test]
async fn shutdown_settles_every_pending_dialog_once() {
    let mut h = harness();
    let e = h.engine.clone();
    let first = tokio::spawn({
        let e = e.clone();
        async move {
            e.select("Pick", &["a".into(), "b".into()], DialogOptions::default())
                .await
        }
    });
    let (_, first_id) = h.next_request().await;
    let second = tokio::spawn({
        let e = e.clone();
        async move { e.input("Name", None, DialogOptions::default()).await }
    });
    let (_, second_id) = h.next_request().await;
    let third = tokio::spawn({
        let e = e.clone();
        async move { e.editor("Edit", None).await }
    });
    let (_, third_id) = h.next_request().await;
    let fourth = tokio::spawn({
        let e = e.clone();
        async move { e.confirm("Sure?", "m", DialogOptions::default()).await }
    });
    let (_, fourth_id) = h.next_request().await;

    h.engine.cancel_all();
    assert_eq!(first.await.unwrap(), None);
    assert_eq!(second.await.unwrap(), None);
    assert_eq!(third.await.unwrap(), None);
    assert!(!fourth.await.unwrap());
    assert_eq!(h.handled(), vec![first_id, second_id, third_id, fourth_id]);
    assert!(h.engine.pending_requests().is_empty());
    assert!(h.engine.is_shut_down());

    // A second shutdown is a no-op; later dialogs resolve to their default without emitting.
    h.engine.cancel_all();
    let before = h.frames().len();
    assert_eq!(
        h.engine.select("x", &[], DialogOptions::default()).await,
        None
    );
    assert!(!h.engine.confirm("x", "y", DialogOptions::default()).await);
    assert_eq!(h.engine.editor("x", None).await, None);
    assert_eq!(h.frames().len(), before);
    assert_eq!(h.stops(), 0);
}

#[tokio::test]
async fn dropping_the_caller_settles_the_dialog() {
    let mut h = harness();
    let e = h.engine.clone();
    let t = tokio::spawn(async move { e.editor("Edit", None).await });
    let (_, id) = h.next_request().await;
    t.abort();
    let _ = t.await;
    assert_eq!(h.handled(), vec![id.clone()]);
    assert!(h.engine.pending_requests().is_empty());
    assert_eq!(
        h.answer(&id, json!({"value": "late"})),
        ResponseDisposition::UnknownId
    );
    assert_eq!(h.handled().len(), 1);
}

#[tokio::test]
async fn unknown_and_missing_ids_are_ignored() {
    let mut h = harness();
    assert_eq!(
        h.answer("no-such-id", json!({"value": "x"})),
        ResponseDisposition::UnknownId
    );
    assert_eq!(
        h.respond(json!({"value": "x"})),
        ResponseDisposition::MissingId
    );
    assert_eq!(
        h.respond(json!({"id": 7, "value": "x"})),
        ResponseDisposition::MissingId
    );
    assert!(
        h.frames().is_empty(),
        "nothing is written for an ignored response"
    );

    // A stray response does not disturb a pending dialog.
    let e = h.engine.clone();
    let t = tokio::spawn(async move { e.input("Name", None, DialogOptions::default()).await });
    let (_, id) = h.next_request().await;
    assert_eq!(
        h.answer("other", json!({"value": "x"})),
        ResponseDisposition::UnknownId
    );
    assert_eq!(h.engine.pending_requests().len(), 1);
    h.answer(&id, json!({"value": "ok"}));
    assert_eq!(t.await.unwrap().as_deref(), Some("ok"));
}

#[tokio::test]
async fn pending_requests_lists_waiting_dialogs_as_emitted() {
    let mut h = harness();
    let e = h.engine.clone();
    assert!(h.engine.pending_requests().is_empty());
    let sel = tokio::spawn({
        let e = e.clone();
        async move {
            e.select(
                "Pick",
                &["a".into()],
                DialogOptions::timeout(Duration::from_secs(30)),
            )
            .await
        }
    });
    let (sel_frame, sel_id) = h.next_request().await;
    let conf = tokio::spawn({
        let e = e.clone();
        async move { e.confirm("Sure?", "m", DialogOptions::default()).await }
    });
    let (conf_frame, conf_id) = h.next_request().await;
    let ask = tokio::spawn({
        let e = e.clone();
        async move {
            e.ask(
                Some("T"),
                vec![
                    serde_json::from_value(json!({"question": "Q?", "options": ["x", "y"]}))
                        .unwrap(),
                ],
                DialogOptions::timeout(Duration::from_secs(30)),
            )
            .await
        }
    });
    let (ask_frame, ask_id) = h.next_request().await;

    let pending = serde_json::to_value(h.engine.pending_requests()).unwrap();
    assert_eq!(pending, json!([sel_frame, conf_frame, ask_frame]));
    // Each entry is a complete BlockingExtensionUiRequest (round-trips through the generated type).
    let typed: Vec<dreb_protocol::BlockingExtensionUiRequest> =
        serde_json::from_value(pending.clone()).unwrap();
    assert_eq!(typed.len(), 3);

    h.answer(&conf_id, json!({"confirmed": true}));
    assert!(conf.await.unwrap());
    let pending = serde_json::to_value(h.engine.pending_requests()).unwrap();
    assert_eq!(pending, json!([sel_frame, ask_frame]));

    h.answer(&sel_id, json!({"value": "a"}));
    sel.await.unwrap();
    h.answer(&ask_id, json!({"answers": [{"selected": ["x"]}]}));
    ask.await.unwrap().unwrap();
    assert!(h.engine.pending_requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_settlements_emit_one_handled_event_each() {
    // Answers, timeouts and shutdown race on two threads; every dialog still settles exactly once and its
    // request precedes its handled event.
    let mut h = harness();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let e = h.engine.clone();
        tasks.push(tokio::spawn(async move {
            e.input(
                &format!("q{i}"),
                None,
                DialogOptions::timeout(Duration::from_millis(1 + i % 3)),
            )
            .await
        }));
    }
    let mut ids = Vec::new();
    for _ in 0..40 {
        let (_, id) = h.next_request().await;
        h.answer(&id, json!({"value": "v"}));
        ids.push(id);
    }
    for t in tasks {
        t.await.unwrap();
    }
    h.engine.cancel_all();
    let frames = h.frames();
    for id in &ids {
        let req_pos = frames
            .iter()
            .position(|f| f["type"] == "extension_ui_request" && f["id"] == id.as_str())
            .unwrap();
        let handled: Vec<_> = frames
            .iter()
            .enumerate()
            .filter(|(_, f)| f["type"] == "extension_ui_response_handled" && f["id"] == id.as_str())
            .collect();
        assert_eq!(handled.len(), 1, "exactly one handled event for {id}");
        assert!(handled[0].0 > req_pos, "handled follows its request");
    }
}
