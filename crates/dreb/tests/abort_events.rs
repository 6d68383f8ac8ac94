//! The event order of an aborted stream, through the binary and the mock LLM: on the `openai-completions` wire
//! the open text block gets its `text_end` before the aborted `message_end`, as the reference's OpenAI SDK stream
//! ends its iteration quietly on abort; on `anthropic-messages` the reference closes blocks only on
//! `content_block_stop`, so an aborted block has no `text_end` there.

mod common;

use common::{Env, Frame};
use dreb_mock_llm::{Scenario, Turn, When};
use serde_json::{Value, json};

fn slow_env() -> Env {
    // 200 deltas, 100 ms apart: far longer than the test waits before aborting.
    Env::with_scenario(Scenario {
        turns: vec![Turn {
            when: Some(When {
                last_user_contains: Some("slowly".into()),
                ..Default::default()
            }),
            repeat: true,
            text: vec!["tick ".into(); 200],
            delta_delay_ms: 100,
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// The stream events between the assistant's `message_start` and its `message_end`, plus that `message_end`.
fn aborted_stream(provider: &str, model: &str) -> (Vec<Value>, Value) {
    let env = slow_env();
    let mut dreb = env.spawn_raw(
        &["--mode", "rpc", "--provider", provider, "--model", model],
        &[],
    );
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Count slowly"}));
    dreb.read_until(|f| f["assistantMessageEvent"]["type"] == "text_delta");
    dreb.send(&json!({"id": "a1", "type": "abort"}));
    dreb.read_until(|f| f["type"] == "agent_end");
    let frames: Vec<Frame> = dreb.seen.clone();
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);

    let start = frames
        .iter()
        .position(|f| f["type"] == "message_start" && f["message"]["role"] == "assistant")
        .expect("assistant message_start");
    let end = frames
        .iter()
        .position(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant")
        .expect("assistant message_end");
    let updates = frames[start + 1..end]
        .iter()
        .filter(|f| f["type"] == "message_update")
        .map(|f| f["assistantMessageEvent"].clone())
        .collect();
    (updates, frames[end].clone())
}

fn text_of(message: &Value) -> String {
    message["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

#[test]
fn an_aborted_text_block_ends_with_text_end_on_openai_completions() {
    let (updates, end) = aborted_stream("mock", "mock-model");
    assert_eq!(end["message"]["stopReason"], "aborted", "{end:#}");
    assert_eq!(end["message"]["errorMessage"], "Request was aborted");
    let kinds: Vec<&str> = updates
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"text_start"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"text_end"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "text_end").count(), 1);
    assert!(kinds.contains(&"text_delta"));
    let text_end = updates.last().unwrap();
    // The closed block carries everything streamed before the abort, which is what the aborted message keeps.
    let streamed = text_of(&end["message"]);
    assert!(!streamed.is_empty());
    assert!(streamed.len() < 200 * 5, "{streamed}");
    assert_eq!(text_end["content"], streamed.as_str());
    assert_eq!(text_end["contentIndex"], 0);
    assert_eq!(text_of(&text_end["partial"]), streamed);
}

#[test]
fn an_aborted_text_block_has_no_text_end_on_anthropic_messages() {
    let (updates, end) = aborted_stream("mock-anthropic", "mock-claude");
    assert_eq!(end["message"]["stopReason"], "aborted", "{end:#}");
    let kinds: Vec<&str> = updates
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"text_delta"), "{kinds:?}");
    assert!(!kinds.contains(&"text_end"), "{kinds:?}");
}
