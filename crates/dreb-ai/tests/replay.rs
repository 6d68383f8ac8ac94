//! Replays the reference transcripts' prompts through our providers, against the mock's built-in reference
//! scenario, and compares the assistant event sequences with what the reference emitted (types, contentIndex,
//! deltas, block contents, the partial at each block end, and the final message — modulo timestamps, durations and
//! the mock's request counter in ids).

mod common;

use std::path::Path;

use common::*;
use dreb_ai::*;
use dreb_mock_llm::MockLlm;
use serde_json::{Value, json};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/reference")
            .join(name),
    )
    .unwrap()
}

/// One assistant message of a transcript: its update events and the final message.
struct RecordedTurn {
    updates: Vec<Value>,
    message: Value,
}

fn recorded_turns(name: &str) -> Vec<RecordedTurn> {
    let mut turns = Vec::new();
    let mut updates = Vec::new();
    for line in fixture(name).lines() {
        let frame: Value = serde_json::from_str(line).unwrap();
        match frame["type"].as_str() {
            Some("message_update") => updates.push(frame["assistantMessageEvent"].clone()),
            Some("message_end") if frame["message"]["role"] == "assistant" => {
                turns.push(RecordedTurn {
                    updates: std::mem::take(&mut updates),
                    message: frame["message"].clone(),
                })
            }
            _ => {}
        }
    }
    turns
}

/// Removes what legitimately differs between runs. `role` (on partials) and `type` (on `toolCall`) are left out too:
/// our `AssistantMessage` / `ToolCall` structs leave those tags to the enclosing `Message` / block enums, and the
/// RPC layer adds them when it writes frames.
fn normalise(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("role");
        if o.get("type").and_then(Value::as_str) == Some("toolCall") {
            o.remove("type");
        }
        o.remove("timestamp");
        o.remove("durationMs");
        if let Some(Value::String(id)) = o.get_mut("id") {
            *id = id
                .trim_end_matches(|c: char| c.is_ascii_digit())
                .to_string();
        }
        if let Some(Value::String(id)) = o.get_mut("responseId") {
            *id = id
                .trim_end_matches(|c: char| c.is_ascii_digit())
                .to_string();
        }
        if let Some(Value::Array(content)) = o.get_mut("content") {
            for b in content {
                if let Some(Value::String(id)) = b.get_mut("id") {
                    *id = id
                        .trim_end_matches(|c: char| c.is_ascii_digit())
                        .to_string();
                }
            }
        }
    }
    v
}

fn compare(ours: &[AssistantMessageEvent], reference: &RecordedTurn, label: &str) {
    // `start` is the reference's message_start; the terminal event becomes message_end.
    let body: Vec<Value> = ours[1..ours.len() - 1]
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(kind(&ours[0]), "start");
    assert_eq!(
        body.len(),
        reference.updates.len(),
        "{label}: event count\nours: {:?}",
        kinds(ours)
    );
    for (i, (a, b)) in body.iter().zip(&reference.updates).enumerate() {
        for key in ["type", "contentIndex", "delta", "content"] {
            assert_eq!(a.get(key), b.get(key), "{label}: event {i} field {key}");
        }
        if let Some(tc) = b.get("toolCall") {
            assert_eq!(
                normalise(a["toolCall"].clone()),
                normalise(tc.clone()),
                "{label}: event {i} toolCall"
            );
        }
        // A block shows the wire's block index (the `index` scratch field, anthropic) from its start; its end
        // (below) has it no more.
        if b["type"].as_str().is_some_and(|t| t.ends_with("_start")) {
            let ci = b["contentIndex"].as_u64().unwrap() as usize;
            assert_eq!(
                a["partial"]["content"][ci].get("index"),
                b["partial"]["content"][ci].get("index"),
                "{label}: event {i} index"
            );
        }
        // The reference serialised partials lazily (later usage/stop updates can show through); at a block's end
        // the partial's content is settled.
        if b["type"].as_str().is_some_and(|t| t.ends_with("_end")) {
            let content =
                |v: &Value| normalise(json!({"content": v["partial"]["content"].clone()}));
            assert_eq!(content(a), content(b), "{label}: event {i} partial content");
        }
    }
    let message = match ours.last().unwrap() {
        AssistantMessageEvent::Done { message, .. } => serde_json::to_value(message).unwrap(),
        other => panic!("{label}: expected done, got {other:?}"),
    };
    let mut expected = serde_json::to_value(&reference.message).unwrap();
    expected.as_object_mut().unwrap().remove("role");
    assert_eq!(
        normalise(message),
        normalise(expected),
        "{label}: final message"
    );
}

/// The reference's models.json, pointed at our mock.
fn registry_for(mock: &MockLlm, dir: &Path) -> ModelRegistry {
    let models = fixture("models.json").replace("http://127.0.0.1:18431", &mock.base_url());
    std::fs::write(dir.join("models.json"), models).unwrap();
    ModelRegistry::load(dir)
}

async fn replay(transcript: &str, provider: &str, model_id: &str, prompt: &str) {
    let mock = MockLlm::start(Default::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_for(&mock, dir.path());
    assert!(registry.error().is_none(), "{:?}", registry.error());
    let model = registry.find(provider, model_id).unwrap().clone();
    let key = registry.api_key_for(&model).unwrap();
    assert_eq!(key.as_deref(), Some("mock-key"));
    let client = Providers::new();
    let mut ctx = Context {
        system_prompt: Some("system".into()),
        messages: vec![user(prompt)],
        tools: vec![bash_tool()],
    };
    for (n, turn) in recorded_turns(transcript).iter().enumerate() {
        let opts = StreamOptions {
            api_key: key.clone(),
            ..Default::default()
        };
        let events = collect(client.stream(&model, &ctx, opts)).await;
        compare(&events, turn, &format!("{transcript} turn {n}"));
        let msg = done(&events);
        let calls: Vec<ToolCall> = msg.tool_calls().cloned().collect();
        ctx.messages.push(Message::Assistant(msg));
        for c in &calls {
            ctx.messages.push(tool_result(c, "hello-from-bash\n"));
        }
    }
    let reqs = mock.requests();
    assert_eq!(
        reqs[0]
            .header("authorization")
            .or(reqs[0].header("x-api-key"))
            .map(|s| s.contains("mock-key")),
        Some(true)
    );
}

#[tokio::test]
async fn prompt_text_openai_wire_matches_the_reference() {
    replay("prompt_text.out.jsonl", "mock", "mock-model", "Say hello").await;
}

#[tokio::test]
async fn prompt_tool_openai_wire_matches_the_reference() {
    replay(
        "prompt_tool_openai.out.jsonl",
        "mock",
        "mock-model",
        "Run a command [[tool=bash:echo hello-from-bash]]",
    )
    .await;
}

#[tokio::test]
async fn prompt_tool_anthropic_wire_matches_the_reference() {
    replay(
        "prompt_tool_anthropic.out.jsonl",
        "mock-anthropic",
        "mock-claude",
        "Run a command [[tool=bash:echo hello-from-bash]]",
    )
    .await;
}

#[test]
fn available_models_match_the_reference_listing() {
    // No credentials but the models.json keys: only the two mock models are available.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("models.json"), fixture("models.json")).unwrap();
    let registry = ModelRegistry::load(dir.path());
    let ours: Vec<Value> = registry
        .available()
        .into_iter()
        .filter(|m| m.provider.starts_with("mock"))
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let frame: Value = serde_json::from_str(
        fixture("get_available_models.out.jsonl")
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(Value::Array(ours), frame["data"]["models"]);
    // Byte-identical serialisation of each model, key order included.
    let mock = registry.find("mock", "mock-model").unwrap();
    assert_eq!(
        serde_json::to_string(mock).unwrap(),
        serde_json::to_string(&frame["data"]["models"][0]).unwrap()
    );
    assert_eq!(
        json!(
            registry
                .find("mock-anthropic", "mock-claude")
                .unwrap()
                .compat
        ),
        Value::Null
    );
}
