//! Every method's request frame equals the matching `extension_ui_request` example of `protocol/rpc.yaml`
//! (same keys, same order, same values) once the server-generated `id` (and `expiresAt`) are substituted;
//! the handled event equals its example; the spec's `extension_ui_response` examples are accepted.

use std::time::Duration;

use dreb_dialog::DialogOptions;
use dreb_protocol::{AskQuestion, NotifyType, WidgetPlacement};
use serde_json::{Value, json};

use crate::common::harness;

fn spec() -> &'static dreb_codegen::Ir {
    static SPEC: std::sync::OnceLock<dreb_codegen::Ir> = std::sync::OnceLock::new();
    SPEC.get_or_init(|| {
        dreb_codegen::load_spec(dreb_protocol::SPEC_FILE).unwrap_or_else(|e| panic!("{e}"))
    })
}

fn event_examples(name: &str) -> Vec<Value> {
    spec()
        .events
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("event {name} in spec"))
        .examples
        .clone()
}

/// The spec example of `extension_ui_request` with this example id.
fn request_example(example_id: &str) -> Value {
    event_examples("extension_ui_request")
        .into_iter()
        .find(|e| e["id"] == example_id)
        .unwrap_or_else(|| panic!("example {example_id}"))
}

/// Our frame with the example's `id` (and `expiresAt`) substituted, compared as serialised text, so key
/// order and absent keys count.
fn assert_matches_example(ours: &Value, example: &Value) {
    let mut ours = ours.clone();
    let obj = ours.as_object_mut().unwrap();
    assert!(
        uuid_like(obj["id"].as_str().unwrap()),
        "id is a UUID: {}",
        obj["id"]
    );
    obj["id"] = example["id"].clone();
    if let Some(e) = example.get("expiresAt") {
        obj["expiresAt"] = e.clone();
    }
    assert_eq!(
        serde_json::to_string(&ours).unwrap(),
        serde_json::to_string(example).unwrap()
    );
}

fn uuid_like(s: &str) -> bool {
    uuid::Uuid::parse_str(s).is_ok_and(|u| u.get_version_num() == 4)
}

#[tokio::test]
async fn blocking_request_frames_match_the_spec() {
    let mut h = harness();
    let e = h.engine.clone();

    let t = tokio::spawn({
        let e = e.clone();
        async move {
            e.select(
                "Allow dangerous command?",
                &["Allow".into(), "Block".into()],
                DialogOptions::timeout(Duration::from_millis(10_000)),
            )
            .await
        }
    });
    let (frame, id) = h.next_request().await;
    assert_matches_example(&frame, &request_example("uuid-1"));
    h.answer(&id, json!({"value": "Allow"}));
    assert_eq!(t.await.unwrap().as_deref(), Some("Allow"));

    let t = tokio::spawn({
        let e = e.clone();
        async move {
            e.confirm(
                "Clear session?",
                "All messages will be lost.",
                DialogOptions::timeout(Duration::from_secs(5)),
            )
            .await
        }
    });
    let (frame, id) = h.next_request().await;
    assert_matches_example(&frame, &request_example("uuid-2"));
    h.answer(&id, json!({"confirmed": true}));
    assert!(t.await.unwrap());

    let t = tokio::spawn({
        let e = e.clone();
        async move {
            e.input(
                "Enter a value",
                Some("type something..."),
                DialogOptions::default(),
            )
            .await
        }
    });
    let (frame, id) = h.next_request().await;
    assert_matches_example(&frame, &request_example("uuid-3"));
    h.answer(&id, json!({"value": "typed"}));
    assert_eq!(t.await.unwrap().as_deref(), Some("typed"));

    let t = tokio::spawn({
        let e = e.clone();
        async move {
            e.editor("Edit some text", Some("Line 1\nLine 2\nLine 3"))
                .await
        }
    });
    let (frame, id) = h.next_request().await;
    assert_matches_example(&frame, &request_example("uuid-4"));
    h.answer(&id, json!({"value": "Line 1"}));
    assert_eq!(t.await.unwrap().as_deref(), Some("Line 1"));

    let example = request_example("uuid-5");
    let questions: Vec<AskQuestion> = serde_json::from_value(example["questions"].clone()).unwrap();
    let before = now_ms();
    let t = tokio::spawn({
        let e = e.clone();
        async move {
            e.ask(
                Some("Choose a database"),
                questions,
                DialogOptions::timeout(Duration::from_secs(60)),
            )
            .await
        }
    });
    let (frame, id) = h.next_request().await;
    let after = now_ms();
    let expires = frame["expiresAt"]
        .as_i64()
        .expect("expiresAt is an integer");
    assert!(
        (before + 60_000..=after + 60_000).contains(&expires),
        "expiresAt = now + timeout"
    );
    assert_matches_example(&frame, &example);
    h.answer(
        &id,
        json!({"answers": [{"selected": ["SQLite"], "customText": "with WAL enabled"}]}),
    );
    let result = t.await.unwrap().unwrap().unwrap();
    assert_eq!(result.answers[0].selected, vec!["SQLite".to_string()]);
}

#[tokio::test]
async fn fire_and_forget_frames_match_the_spec() {
    let mut h = harness();
    h.engine
        .notify("Command blocked by user", Some(NotifyType::Warning));
    assert_matches_example(&h.next_frame().await, &request_example("uuid-6"));
    h.engine.set_status("my-ext", Some("Turn 3 running..."));
    assert_matches_example(&h.next_frame().await, &request_example("uuid-7"));
    h.engine.set_widget(
        "my-ext",
        Some(vec![
            "--- My Widget ---".into(),
            "Line 1".into(),
            "Line 2".into(),
        ]),
        Some(WidgetPlacement::AboveEditor),
    );
    assert_matches_example(&h.next_frame().await, &request_example("uuid-8"));
    h.engine.set_title("dreb - my project");
    assert_matches_example(&h.next_frame().await, &request_example("uuid-9"));
    h.engine.set_editor_text("prefilled text for the user");
    assert_matches_example(&h.next_frame().await, &request_example("uuid-10"));
    h.engine.set_status("my-ext", None);
    assert_matches_example(&h.next_frame().await, &request_example("uuid-11"));

    // Optional fields left unset are absent, never null.
    h.engine.notify("hi", None);
    let f = h.next_frame().await;
    assert_eq!(f.as_object().unwrap().len(), 4, "{f}");
    assert!(f.get("notifyType").is_none());
    h.engine.set_widget("w", None, None);
    let f = h.next_frame().await;
    assert!(f.get("widgetLines").is_none() && f.get("widgetPlacement").is_none());

    // Fire-and-forget requests are never tracked and never get a handled event.
    assert!(h.engine.pending_requests().is_empty());
    assert!(h.handled().is_empty());
    // Each gets its own fresh id.
    let ids: std::collections::HashSet<_> = h
        .frames()
        .iter()
        .map(|f| f["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), h.frames().len());
}

#[tokio::test]
async fn handled_event_matches_the_spec() {
    let mut h = harness();
    let e = h.engine.clone();
    let t = tokio::spawn(async move { e.input("x", None, DialogOptions::default()).await });
    let (_, id) = h.next_request().await;
    h.answer(&id, json!({"cancelled": true}));
    assert_eq!(t.await.unwrap(), None);
    let handled = h.next_frame().await;
    let mut example = event_examples("extension_ui_response_handled")[0].clone();
    example["id"] = json!(id);
    assert_eq!(
        serde_json::to_string(&handled).unwrap(),
        serde_json::to_string(&example).unwrap()
    );
}

#[tokio::test]
async fn spec_response_examples_are_accepted() {
    // Each input example answers the dialog kind it was written for.
    let examples = spec()
        .inputs
        .iter()
        .find(|i| i.name == "extension_ui_response")
        .unwrap()
        .examples
        .clone();
    let by_id = |id: &str| examples.iter().find(|e| e["id"] == id).unwrap().clone();
    let mut h = harness();
    let e = h.engine.clone();

    let t = tokio::spawn({
        let e = e.clone();
        async move {
            e.select("t", &["Allow".into()], DialogOptions::default())
                .await
        }
    });
    let (_, id) = h.next_request().await;
    let mut r = by_id("uuid-1");
    r["id"] = json!(id);
    assert_eq!(h.respond(r), dreb_dialog::ResponseDisposition::Delivered);
    assert_eq!(t.await.unwrap().as_deref(), Some("Allow"));

    let t = tokio::spawn({
        let e = e.clone();
        async move { e.confirm("t", "m", DialogOptions::default()).await }
    });
    let (_, id) = h.next_request().await;
    let mut r = by_id("uuid-2");
    r["id"] = json!(id);
    h.respond(r);
    assert!(t.await.unwrap());

    let t = tokio::spawn({
        let e = e.clone();
        async move { e.editor("t", None).await }
    });
    let (_, id) = h.next_request().await;
    let mut r = by_id("uuid-3");
    r["id"] = json!(id);
    h.respond(r);
    assert_eq!(t.await.unwrap(), None);

    let t = tokio::spawn({
        let e = e.clone();
        async move {
            e.ask(
                None,
                vec![AskQuestion {
                    question: "q".into(),
                    title: None,
                    options: None,
                    allow_free_text: None,
                    multi_select: None,
                    multiline: None,
                }],
                DialogOptions::default(),
            )
            .await
        }
    });
    let (_, id) = h.next_request().await;
    let mut r = by_id("uuid-5");
    r["id"] = json!(id);
    h.respond(r);
    let result = t.await.unwrap().unwrap().unwrap();
    assert_eq!(
        result.answers[0].custom_text.as_deref(),
        Some("with WAL enabled")
    );
    assert!(!result.answers[0].skipped);
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}
