//! The offline, scripted `faux` provider.

mod common;

use common::*;
use dreb_ai::providers::faux;
use dreb_ai::*;
use serde_json::json;

fn faux_model() -> Model {
    ModelRegistry::builtin()
        .find("faux", "faux")
        .unwrap()
        .clone()
}

#[tokio::test]
async fn default_scenario_calls_ls_then_answers() {
    let m = faux_model();
    let client = Providers::new();
    let mut ctx = context("What is here?");
    let opts = StreamOptions::default(); // no key needed
    let events = collect(client.stream(&m, &ctx, opts.clone())).await;
    assert_one_terminal(&events);
    assert_eq!(&kinds(&events)[..3], ["start", "text_start", "text_delta"]);
    let msg = done(&events);
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!(
        (msg.api.as_str(), msg.provider.as_str(), msg.model.as_str()),
        ("faux", "faux", "faux")
    );
    let call = msg.tool_calls().next().unwrap().clone();
    assert_eq!(call.name, "ls");
    assert_eq!(json!(call.arguments), json!({"path": "."}));
    assert!(msg.usage.output > 0);

    ctx.messages.push(Message::Assistant(msg));
    ctx.messages.push(tool_result(&call, "Cargo.toml\nsrc/"));
    let msg = done(&collect(client.stream(&m, &ctx, opts.clone())).await);
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert!(msg.text().contains("offline faux provider"));
    assert_eq!(msg.tool_calls().count(), 0);

    // Scripted turns repeat: a new prompt starts over.
    ctx.messages.push(user("again"));
    assert_eq!(
        done(&collect(client.stream(&m, &ctx, opts)).await).stop_reason,
        StopReason::ToolUse
    );
}

#[tokio::test]
async fn custom_scenarios_thinking_faults_and_cuts() {
    let sc = scenario(json!({"turns": [
        {"thinking": ["hm"], "thinkingSignature": "s", "text": ["a", "b"], "usage": {"input": 10, "output": 2}},
        {"fault": {"status": 529}},
        {"text": ["x", "y", "z"], "cutAfter": 1},
        {"text": ["long"], "stop": "length"}
    ], "fallback": "error"}));
    let client = Providers::new().with_faux_scenario(sc);
    let m = faux_model();
    let ctx = context("hi");
    let run = || collect(client.stream(&m, &ctx, StreamOptions::default()));

    let events = run().await;
    assert_eq!(
        kinds(&events),
        [
            "start",
            "thinking_start",
            "thinking_delta",
            "thinking_end",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end",
            "done"
        ]
    );
    let msg = done(&events);
    assert_eq!(
        (msg.usage.input, msg.usage.output, msg.usage.total_tokens),
        (10, 2, 12)
    );

    let (_, msg) = failed(&run().await);
    let err = msg.error_message.unwrap();
    assert_eq!(
        err,
        r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
    );
    assert!(is_retryable_error(&err));

    let events = run().await;
    let (_, msg) = failed(&events);
    assert!(is_stream_drop(msg.error_message.as_deref().unwrap()));
    assert_eq!(text_deltas(&events), ["x"]);

    assert_eq!(done(&run().await).stop_reason, StopReason::Length);
    let (_, msg) = failed(&run().await);
    assert_eq!(
        msg.error_message.as_deref(),
        Some("500 faux scenario exhausted")
    );
}

#[tokio::test]
async fn faux_honours_abort() {
    let deltas: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let client = Providers::new().with_faux_scenario(scenario(
        json!({"turns": [{"text": deltas, "deltaDelayMs": 10}]}),
    ));
    let opts = StreamOptions::default();
    let cancel = opts.cancel.clone();
    let stream = client.stream(&faux_model(), &context("hi"), opts);
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let events = collect(stream).await;
    let (reason, msg) = failed(&events);
    assert_eq!(reason, ErrorReason::Aborted);
    assert_eq!(msg.error_message.as_deref(), Some(ABORTED_MESSAGE));
    assert!(text_deltas(&events).len() < 100);
}

#[test]
fn scenario_files_load_with_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.json");
    std::fs::write(&good, r#"{"turns": [{"text": ["hi"]}]}"#).unwrap();
    assert_eq!(faux::load_scenario(&good).unwrap().turns.len(), 1);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"turns": [{"txt": ["hi"]}]}"#).unwrap();
    let err = faux::load_scenario(&bad).unwrap_err();
    assert!(
        err.starts_with(&format!(
            "Invalid faux scenario {}: unknown field `txt`",
            bad.display()
        )),
        "{err}"
    );
    let err = faux::load_scenario(&dir.path().join("missing.json")).unwrap_err();
    assert!(err.contains("missing.json"), "{err}");
}
