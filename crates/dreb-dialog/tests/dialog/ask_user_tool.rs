//! The real `ask_user` tool (from dreb-tools) driven through the engine's `Dialog` impl.

use std::sync::Arc;

use dreb_agent::{Tool, ToolOutput};
use dreb_tools::{Dialog, ToolContext, create_tool};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::harness;

fn ask_user_tool(engine: &dreb_dialog::DialogEngine) -> Arc<dyn Tool> {
    let mut ctx = ToolContext::new(std::env::temp_dir());
    ctx.dialog = Some(Arc::new(engine.clone()) as Arc<dyn Dialog>);
    create_tool("ask_user", &ctx).expect("ask_user exists")
}

fn text(out: &ToolOutput) -> String {
    let v = serde_json::to_value(out).unwrap();
    v["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn params() -> Value {
    json!({
        "questions": [
            {"question": "Which database?", "title": "DB", "options": ["postgres", "sqlite"]},
            {"question": "Deploy target?"}
        ],
        "timeoutSeconds": 30
    })
}

#[tokio::test]
async fn answered_through_the_wire() {
    let mut h = harness();
    let tool = ask_user_tool(&h.engine);
    let t = tokio::spawn(async move {
        tool.execute(
            "call-1",
            params(),
            CancellationToken::new(),
            Arc::new(|_| {}),
        )
        .await
    });
    let (req, id) = h.next_request().await;
    assert_eq!(req["method"], "ask");
    assert_eq!(req["title"], "Question");
    assert_eq!(req["timeout"], json!(30_000));
    assert!(req["expiresAt"].is_i64());
    assert_eq!(
        req["questions"],
        json!([
            {"question": "Which database?", "title": "DB", "options": ["postgres", "sqlite"]},
            {"question": "Deploy target?", "allowFreeText": true}
        ])
    );
    h.answer(
        &id,
        json!({"answers": [{"selected": ["sqlite"]}, {"selected": [], "customText": "fly.io"}]}),
    );
    let out = t.await.unwrap().unwrap();
    assert_eq!(
        text(&out),
        "**DB** → Selected: sqlite\n**Deploy target?** → wrote: \"fly.io\""
    );
    assert_eq!(h.handled(), vec![id]);
}

#[tokio::test]
async fn cancelled_malformed_and_aborted() {
    let mut h = harness();
    let tool = ask_user_tool(&h.engine);

    let t = tokio::spawn({
        let tool = tool.clone();
        async move {
            tool.execute("c", params(), CancellationToken::new(), Arc::new(|_| {}))
                .await
        }
    });
    let (_, id) = h.next_request().await;
    h.answer(&id, json!({"cancelled": true}));
    assert_eq!(
        text(&t.await.unwrap().unwrap()),
        "The questions closed without an answer."
    );
    assert_eq!(h.stops(), 1);

    let t = tokio::spawn({
        let tool = tool.clone();
        async move {
            tool.execute("c", params(), CancellationToken::new(), Arc::new(|_| {}))
                .await
        }
    });
    let (_, id) = h.next_request().await;
    h.answer(&id, json!({"value": "nope"}));
    let out = t.await.unwrap().unwrap();
    assert!(text(&out).starts_with("The questions could not be delivered"));
    assert_eq!(out.details.unwrap()["failed"], json!(true));

    let cancel = CancellationToken::new();
    let t = tokio::spawn({
        let tool = tool.clone();
        let cancel = cancel.clone();
        async move { tool.execute("c", params(), cancel, Arc::new(|_| {})).await }
    });
    let (_, id) = h.next_request().await;
    cancel.cancel();
    assert_eq!(
        text(&t.await.unwrap().unwrap()),
        "The questions closed without an answer."
    );
    assert_eq!(h.handled().last(), Some(&id));
    assert_eq!(h.stops(), 1, "abort does not call the stop hook");
    assert!(h.engine.pending_requests().is_empty());
}
