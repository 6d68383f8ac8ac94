//! Full event sequences of the loop for representative scenarios, as insta snapshots (one wire JSON line per
//! event; timestamps and durations redacted). Each snapshot was reviewed against runtime-behaviour §1 and the
//! reference transcripts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use dreb_agent::testing::{
    Behavior, Script, ScriptedLlm, TestTool, event_lines, record_events, test_model,
};
use dreb_agent::{Agent, AgentEvent, AgentHooks, AgentMessage, AgentOptions, QueueMode, Tool};
use dreb_ai::{DoneReason, Message, StopReason};
use serde_json::json;
use tokio::sync::Notify;

fn agent(llm: Arc<ScriptedLlm>, tools: Vec<Arc<dyn Tool>>) -> Agent {
    let mut opts = AgentOptions::new(llm);
    opts.model = Some(test_model());
    opts.tools = tools;
    // Real backoff is 1 s · 2^n; tests keep the schedule but not the wait.
    opts.config.retry.stream_retry_base_delay = Duration::from_millis(1);
    Agent::new(opts)
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::user_text(text, 1_700_000_000_000)
}

async fn prompt(agent: &Agent, text: &str) {
    agent
        .prompt(vec![user(text)])
        .await
        .expect("prompt accepted");
}

fn lines(log: &Arc<Mutex<Vec<AgentEvent>>>) -> String {
    event_lines(&log.lock().unwrap())
}

fn types(log: &Arc<Mutex<Vec<AgentEvent>>>) -> Vec<&'static str> {
    log.lock()
        .unwrap()
        .iter()
        .map(AgentEvent::type_name)
        .collect()
}

/// Calls `f` once, on the first event matching `pred`.
fn on_first(
    agent: &Agent,
    pred: impl Fn(&AgentEvent) -> bool + Send + Sync + 'static,
    f: impl Fn(&Agent) + Send + Sync + 'static,
) {
    let fired = AtomicBool::new(false);
    let handle = agent.clone();
    agent.subscribe_fn(move |e| {
        if pred(e) && !fired.swap(true, Ordering::SeqCst) {
            f(&handle);
        }
    });
}

#[tokio::test]
async fn single_answer() {
    let llm = ScriptedLlm::with_scripts([Script::new()
        .usage(100, 6)
        .text("Hello from the mock LLM.")
        .done()]);
    let a = agent(llm, vec![]);
    let log = record_events(&a);
    prompt(&a, "Say hello").await;
    // Same sequence as the reference transcript prompt_text.out.jsonl.
    assert_eq!(
        types(&log),
        [
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start",
            "message_update",
            "message_update",
            "message_update",
            "message_update",
            "message_update",
            "message_update",
            "message_update",
            "message_end",
            "turn_end",
            "agent_end"
        ]
    );
    insta::assert_snapshot!(lines(&log));
    assert_eq!(a.messages().len(), 2);
    assert!(!a.is_streaming());
}

#[tokio::test]
async fn parallel_tools_with_invalid_args_and_unknown_tool() {
    let gate = Arc::new(Notify::new());
    let slow = TestTool::with_text_param("slow", Behavior::WaitForGate(gate.clone()));
    let progress = TestTool::with_text_param(
        "progress",
        Behavior::UpdatesThenOpen(vec!["step 1".into(), "step 1\nstep 2".into()], gate),
    );
    let echo = TestTool::new(
        "echo",
        json!({"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}),
        Behavior::Echo,
    );
    let llm = ScriptedLlm::with_scripts([
        Script::new()
            .tool_call("c1", "slow", json!({"text": "a"}))
            .tool_call("c2", "echo", json!({"count": "many"}))
            .tool_call("c3", "nope", json!({}))
            .tool_call("c4", "progress", json!({"text": "b"}))
            .tool_call("c5", "echo", json!({"count": "7"}))
            .done(),
        Script::reply("All done."),
    ]);
    let a = agent(llm.clone(), vec![slow, progress, echo]);
    let log = record_events(&a);
    prompt(&a, "Use the tools").await;
    insta::assert_snapshot!(lines(&log));

    // Immediate failures first, then executed calls in source order (c1 finished last but is finalised first).
    let end_ids: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(end_ids, ["c2", "c3", "c1", "c4", "c5"]);
    // The coerced integer reached the tool, and the results went back to the model in the same order.
    let req = &llm.requests()[1];
    let results: Vec<(String, String)> = req
        .context
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(t) => Some((
                t.tool_call_id.clone(),
                dreb_ai::UserContent::Blocks(t.content.clone()).text(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        results[4],
        ("c5".to_string(), r#"echo ran with {"count":7}"#.to_string())
    );
    assert_eq!(
        results[1],
        ("c3".to_string(), "Tool nope not found".to_string())
    );
    assert!(results[0].1.starts_with("Validation failed for tool \"echo\":\n  - count: must be integer\n\nReceived arguments:\n{\n  \"count\": \"many\"\n}"));
}

#[tokio::test]
async fn steering_mid_run() {
    let tool = TestTool::with_text_param("echo", Behavior::Echo);
    let llm = ScriptedLlm::with_scripts([
        Script::new()
            .tool_call("c1", "echo", json!({"text": "x"}))
            .done(),
        Script::reply("Steered."),
    ]);
    let a = agent(llm.clone(), vec![tool]);
    let log = record_events(&a);
    on_first(
        &a,
        |e| matches!(e, AgentEvent::ToolExecutionStart { .. }),
        |a| a.steer(user("Actually, stop.")),
    );
    prompt(&a, "Go").await;
    insta::assert_snapshot!(lines(&log));
    // The tool still ran; the steering message reached the second request after the tool result.
    let ctx = &llm.requests()[1].context.messages;
    assert!(matches!(ctx[2], Message::ToolResult(_)));
    assert!(matches!(&ctx[3], Message::User(u) if u.content.text() == "Actually, stop."));
}

#[tokio::test]
async fn follow_up_after_the_agent_would_stop() {
    let llm = ScriptedLlm::with_scripts([Script::reply("First."), Script::reply("Second.")]);
    let a = agent(llm, vec![]);
    let log = record_events(&a);
    on_first(
        &a,
        |e| {
            matches!(
                e,
                AgentEvent::MessageStart {
                    message: AgentMessage::Assistant(_)
                }
            )
        },
        |a| a.follow_up(user("And then?")),
    );
    prompt(&a, "Start").await;
    insta::assert_snapshot!(lines(&log));
}

fn queue_scenario(
    mode: QueueMode,
    replies: usize,
) -> (Agent, Arc<Mutex<Vec<AgentEvent>>>, Arc<ScriptedLlm>) {
    let llm =
        ScriptedLlm::with_scripts((1..=replies).map(|i| Script::reply(&format!("Reply {i}."))));
    let a = agent(llm.clone(), vec![]);
    a.set_steering_mode(mode);
    a.set_follow_up_mode(mode);
    // Queued while idle: delivered by the next run.
    a.steer(user("steer 1"));
    a.steer(user("steer 2"));
    a.follow_up(user("follow 1"));
    a.follow_up(user("follow 2"));
    let log = record_events(&a);
    (a, log, llm)
}

#[tokio::test]
async fn queue_mode_one_at_a_time() {
    let (a, log, llm) = queue_scenario(QueueMode::OneAtATime, 4);
    prompt(&a, "Hi").await;
    insta::assert_snapshot!(lines(&log));
    assert_eq!(llm.requests().len(), 4);
    assert!(!a.has_queued_messages());
}

#[tokio::test]
async fn queue_mode_all() {
    let (a, log, llm) = queue_scenario(QueueMode::All, 2);
    prompt(&a, "Hi").await;
    insta::assert_snapshot!(lines(&log));
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn abort_during_tool() {
    let tool = TestTool::with_text_param("wait", Behavior::WaitForCancel);
    let llm = ScriptedLlm::with_scripts([Script::new()
        .tool_call("c1", "wait", json!({"text": "x"}))
        .done()]);
    let a = agent(llm.clone(), vec![tool]);
    let log = record_events(&a);
    on_first(
        &a,
        |e| matches!(e, AgentEvent::ToolExecutionStart { .. }),
        |a| a.abort(),
    );
    prompt(&a, "Wait").await;
    insta::assert_snapshot!(lines(&log));
    let last = a.messages().pop().unwrap();
    assert!(matches!(last, AgentMessage::Assistant(m) if m.stop_reason == StopReason::Aborted));
}

#[tokio::test]
async fn abort_during_streaming() {
    let llm = ScriptedLlm::with_scripts([Script::new()
        .text("Partial answer")
        .wait_for_cancel()
        .done()]);
    let a = agent(llm, vec![]);
    let log = record_events(&a);
    on_first(
        &a,
        |e| {
            matches!(
                e,
                AgentEvent::MessageUpdate {
                    assistant_message_event: dreb_ai::AssistantMessageEvent::TextDelta { .. }
                }
            )
        },
        |a| a.abort(),
    );
    prompt(&a, "Talk").await;
    insta::assert_snapshot!(lines(&log));
    assert_eq!(a.error().as_deref(), Some("Request was aborted"));
}

#[tokio::test]
async fn stream_drop_then_success() {
    let llm = ScriptedLlm::with_scripts([
        Script::new().text("Hel").drop_connection(),
        Script::reply("Hello."),
    ]);
    let a = agent(llm.clone(), vec![]);
    let log = record_events(&a);
    prompt(&a, "Hi").await;
    insta::assert_snapshot!(lines(&log));
    assert_eq!(llm.requests().len(), 2);
    // The discarded partial never reached the conversation.
    assert_eq!(a.messages().len(), 2);
}

#[tokio::test]
async fn stream_drop_exhausted() {
    let llm = ScriptedLlm::with_scripts(
        (0..4).map(|i| Script::new().text(&format!("try {i}")).drop_connection()),
    );
    let a = agent(llm.clone(), vec![]);
    let log = record_events(&a);
    prompt(&a, "Hi").await;
    insta::assert_snapshot!(lines(&log));
    assert_eq!(llm.requests().len(), 4);
    assert_eq!(
        a.error().as_deref(),
        Some("Stream dropped repeatedly — connection likely unstable")
    );
}

#[tokio::test]
async fn length_retry_then_success() {
    let llm = ScriptedLlm::with_scripts([
        Script::new()
            .text("Truncated")
            .done_with(DoneReason::Length),
        Script::reply("Complete answer."),
    ]);
    let a = agent(llm.clone(), vec![]);
    let log = record_events(&a);
    prompt(&a, "Write a lot").await;
    insta::assert_snapshot!(lines(&log));
    let budgets: Vec<Option<u64>> = llm.requests().iter().map(|r| r.max_tokens).collect();
    assert_eq!(budgets, [None, Some(64_000)]);
}

#[tokio::test]
async fn length_retries_stop_at_the_model_ceiling() {
    let llm = ScriptedLlm::with_scripts(
        (0..3).map(|_| Script::new().text("cut").done_with(DoneReason::Length)),
    );
    let a = agent(llm.clone(), vec![]);
    let log = record_events(&a);
    prompt(&a, "Write a lot").await;
    // 32000 → 64000 (the ceiling); the second truncation cannot grow further.
    assert_eq!(llm.requests().len(), 2);
    assert_eq!(
        types(&log).iter().filter(|t| **t == "length_retry").count(),
        1
    );
    assert_eq!(
        a.error().as_deref(),
        Some(
            "Response truncated at token limit after 2 attempts — output exceeded the model's maximum token budget"
        )
    );
}

#[tokio::test]
async fn end_turn_stops_after_the_tool_batch() {
    let tool = TestTool::with_text_param("wait", Behavior::EndTurn("Waiting: for CI".into()));
    // No second script: another LLM call would show up as a "no scripted response left" error.
    let llm = ScriptedLlm::with_scripts([Script::new()
        .tool_call("c1", "wait", json!({"text": "CI"}))
        .done()]);
    let a = agent(llm.clone(), vec![tool]);
    let log = record_events(&a);
    prompt(&a, "Wait for CI").await;
    insta::assert_snapshot!(lines(&log));
    assert_eq!(llm.requests().len(), 1);
}

struct FailingKey;

#[async_trait]
impl AgentHooks for FailingKey {
    async fn get_api_key(&self, provider: &str) -> Result<Option<String>, String> {
        Err(format!("No API key found for {provider}."))
    }
}

#[tokio::test]
async fn fatal_get_api_key_error() {
    let llm = ScriptedLlm::with_scripts([Script::reply("never")]);
    let a = agent(llm.clone(), vec![]);
    a.set_hooks(Arc::new(FailingKey));
    let log = record_events(&a);
    prompt(&a, "Hi").await;
    insta::assert_snapshot!(lines(&log));
    assert!(llm.requests().is_empty());
    assert_eq!(a.error().as_deref(), Some("No API key found for mock."));
    // The synthetic message is kept in state (after the prompt), but had no message_end.
    let msgs = a.messages();
    assert_eq!(msgs.len(), 2);
    assert!(matches!(&msgs[1], AgentMessage::Assistant(m) if m.stop_reason == StopReason::Error));
    assert!(!a.is_streaming());
}
