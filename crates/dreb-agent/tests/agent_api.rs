//! Agent API behaviour outside the event snapshots: busy/continue errors, hooks, queues, clamping at run start.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use dreb_agent::testing::{Behavior, Script, ScriptedLlm, TestTool, record_events, test_model};
use dreb_agent::{
    AfterToolCallContext, AfterToolCallResult, Agent, AgentError, AgentEvent, AgentHooks,
    AgentMessage, AgentOptions, BeforeToolCallContext, BeforeToolCallResult, Tool, ToolOutput,
};
use dreb_ai::{Message, StopReason, TextContent, ThinkingLevel, UserBlock};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn agent(llm: Arc<ScriptedLlm>, tools: Vec<Arc<dyn Tool>>) -> Agent {
    let mut opts = AgentOptions::new(llm);
    opts.model = Some(test_model());
    opts.tools = tools;
    Agent::new(opts)
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::user_text(text, 1)
}

fn tool_results(events: &[AgentEvent]) -> Vec<(String, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolExecutionEnd {
                result, is_error, ..
            } => {
                let text = result
                    .content
                    .iter()
                    .map(|b| match b {
                        UserBlock::Text(t) => t.text.clone(),
                        UserBlock::Image(_) => String::new(),
                    })
                    .collect::<String>();
                Some((text, *is_error))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn busy_and_continue_errors_use_reference_texts() {
    let llm = ScriptedLlm::with_scripts([Script::new().wait_for_cancel().done()]);
    let a = agent(llm, vec![]);
    let run = a.start_prompt(vec![user("one")]).unwrap();
    assert!(a.is_streaming());
    let err = a.start_prompt(vec![user("two")]).err().unwrap();
    assert_eq!(
        err.to_string(),
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    );
    assert_eq!(
        a.start_continue().err().unwrap().to_string(),
        "Agent is already processing. Wait for completion before continuing."
    );
    a.abort();
    run.wait().await;
    a.wait_for_idle().await;
    assert!(!a.is_streaming());
    // Last message is the aborted assistant message and nothing is queued.
    assert_eq!(
        a.start_continue().err().unwrap(),
        AgentError::CannotContinueFromAssistant
    );
    assert_eq!(
        AgentError::CannotContinueFromAssistant.to_string(),
        "Cannot continue from message role: assistant"
    );

    let empty = agent(ScriptedLlm::new(), vec![]);
    assert_eq!(
        empty.start_continue().err().unwrap().to_string(),
        "No messages to continue from"
    );
    let mut opts = AgentOptions::new(ScriptedLlm::new());
    opts.model = None;
    assert_eq!(
        Agent::new(opts)
            .start_prompt(vec![user("x")])
            .err()
            .unwrap()
            .to_string(),
        "No model configured"
    );
}

#[tokio::test]
async fn continue_from_assistant_delivers_queued_steering_then_follow_up() {
    let llm = ScriptedLlm::with_scripts([
        Script::reply("one"),
        Script::reply("two"),
        Script::reply("three"),
    ]);
    let a = agent(llm.clone(), vec![]);
    a.prompt(vec![user("start")]).await.unwrap();
    a.follow_up(user("later"));
    a.steer(user("now"));
    let log = record_events(&a);
    a.continue_run().await.unwrap();
    // The steering message is the prompt; the follow-up arrives at wind-down.
    let texts: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            AgentEvent::MessageEnd {
                message: AgentMessage::User(u),
            } => Some(u.content.text()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["now", "later"]);
    assert_eq!(llm.requests().len(), 3);
}

#[tokio::test]
async fn continue_after_tool_result_runs_without_prompt() {
    let llm = ScriptedLlm::with_scripts([Script::reply("resumed")]);
    let a = agent(llm.clone(), vec![]);
    a.replace_messages(vec![user("question")]);
    let log = record_events(&a);
    a.continue_run().await.unwrap();
    let types: Vec<&str> = log
        .lock()
        .unwrap()
        .iter()
        .map(AgentEvent::type_name)
        .collect();
    assert_eq!(&types[..3], ["agent_start", "turn_start", "message_start"]);
    assert_eq!(a.messages().len(), 2);
}

struct Hooks {
    blocked: &'static str,
    reason: Option<String>,
    calls: AtomicUsize,
    continue_calls: AtomicUsize,
    seen_args: Mutex<Vec<serde_json::Value>>,
}

#[async_trait]
impl AgentHooks for Hooks {
    async fn before_tool_call(
        &self,
        ctx: BeforeToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<BeforeToolCallResult>, String> {
        self.seen_args.lock().unwrap().push(ctx.args.clone());
        if ctx.tool_call.name == self.blocked {
            return Ok(Some(BeforeToolCallResult {
                block: true,
                reason: self.reason.clone(),
                ..Default::default()
            }));
        }
        if ctx.tool_call.name == "throws" {
            return Err("Extension failed, blocking execution: boom".into());
        }
        Ok(None)
    }

    async fn after_tool_call(
        &self,
        ctx: AfterToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<AfterToolCallResult>, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if ctx.tool_call.name == "scrubbed" {
            return Ok(Some(AfterToolCallResult {
                content: Some(vec![UserBlock::Text(TextContent {
                    text: "[redacted]".into(),
                    text_signature: None,
                    ..Default::default()
                })]),
                details: None,
                is_error: Some(true),
            }));
        }
        Ok(None)
    }

    fn should_continue(&self) -> bool {
        self.continue_calls.fetch_add(1, Ordering::SeqCst);
        false
    }
}

#[tokio::test]
async fn hooks_block_override_and_stop_the_loop() {
    let tools: Vec<Arc<dyn Tool>> = vec![
        TestTool::with_text_param("guarded", Behavior::Echo),
        TestTool::with_text_param("throws", Behavior::Echo),
        TestTool::with_text_param("scrubbed", Behavior::Echo),
        TestTool::with_text_param("plain", Behavior::Fail("disk full".into())),
    ];
    let llm = ScriptedLlm::with_scripts([
        Script::new()
            .tool_call("a", "guarded", json!({"text": 5}))
            .tool_call("b", "throws", json!({"text": "x"}))
            .tool_call("c", "scrubbed", json!({"text": "secret"}))
            .tool_call("d", "plain", json!({"text": "x"}))
            .done(),
        Script::reply("not reached"),
    ]);
    let a = agent(llm.clone(), tools);
    let hooks = Arc::new(Hooks {
        blocked: "guarded",
        reason: None,
        calls: AtomicUsize::new(0),
        continue_calls: AtomicUsize::new(0),
        seen_args: Mutex::new(Vec::new()),
    });
    a.set_hooks(hooks.clone());
    let log = record_events(&a);
    a.prompt(vec![user("go")]).await.unwrap();
    let events = log.lock().unwrap().clone();
    assert_eq!(
        tool_results(&events),
        [
            ("Tool execution was blocked".to_string(), true),
            (
                "Extension failed, blocking execution: boom".to_string(),
                true
            ),
            ("[redacted]".to_string(), true),
            ("disk full".to_string(), true),
        ]
    );
    // Validated (coerced) args reach the hook; after_tool_call runs only for executed calls.
    assert_eq!(hooks.seen_args.lock().unwrap()[0], json!({"text": "5"}));
    assert_eq!(hooks.calls.load(Ordering::SeqCst), 2);
    // shouldContinue said no before the second LLM call: the run ends cleanly.
    assert_eq!(hooks.continue_calls.load(Ordering::SeqCst), 1);
    assert_eq!(llm.requests().len(), 1);
    assert_eq!(events.last().map(AgentEvent::type_name), Some("agent_end"));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, AgentEvent::TurnStart))
            .count(),
        1
    );
}

#[tokio::test]
async fn blocked_reason_is_used_when_given() {
    let llm = ScriptedLlm::with_scripts([Script::new()
        .tool_call("a", "bash", json!({"text": "rm -rf /"}))
        .done()]);
    let a = agent(llm, vec![TestTool::with_text_param("bash", Behavior::Echo)]);
    a.set_hooks(Arc::new(Hooks {
        blocked: "bash",
        reason: Some("Command blocked by forbidden-commands guard".into()),
        calls: AtomicUsize::new(0),
        continue_calls: AtomicUsize::new(0),
        seen_args: Mutex::new(Vec::new()),
    }));
    let log = record_events(&a);
    a.prompt(vec![user("go")]).await.unwrap();
    assert_eq!(
        tool_results(&log.lock().unwrap())[0].0,
        "Command blocked by forbidden-commands guard"
    );
}

#[tokio::test]
async fn agent_start_reports_the_clamped_level_and_requests_carry_key_and_context() {
    struct Key;
    #[async_trait]
    impl AgentHooks for Key {
        async fn get_api_key(&self, provider: &str) -> Result<Option<String>, String> {
            Ok(Some(format!("key-for-{provider}")))
        }
    }
    let llm = ScriptedLlm::with_scripts([Script::reply("ok")]);
    let mut model = test_model();
    model.reasoning = true;
    model.id = "claude-sonnet-4-5".into();
    let mut opts = AgentOptions::new(llm.clone());
    opts.model = Some(model);
    opts.thinking_level = ThinkingLevel::Max;
    opts.system_prompt = "You are terse.".into();
    opts.tools = vec![TestTool::with_text_param("echo", Behavior::Echo)];
    opts.hooks = Arc::new(Key);
    let a = Agent::new(opts);
    let log = record_events(&a);
    a.prompt(vec![user("hi")]).await.unwrap();
    match &log.lock().unwrap()[0] {
        AgentEvent::AgentStart { thinking_level, .. } => {
            assert_eq!(*thinking_level, ThinkingLevel::High)
        }
        other => panic!("unexpected {other:?}"),
    }
    let req = &llm.requests()[0];
    assert_eq!(req.api_key.as_deref(), Some("key-for-mock"));
    assert_eq!(req.thinking, ThinkingLevel::High);
    assert_eq!(req.context.system_prompt.as_deref(), Some("You are terse."));
    assert_eq!(req.context.tools.len(), 1);
    assert!(matches!(&req.context.messages[0], Message::User(u) if u.content.text() == "hi"));
}

#[tokio::test]
async fn stream_without_start_or_terminal_still_gets_message_start_and_retries() {
    let llm = ScriptedLlm::with_scripts([
        Script::without_start().fail("401 Unauthorized"),
        Script::new().text("never").end_abruptly(),
        Script::reply("recovered"),
    ]);
    let mut opts = AgentOptions::new(llm.clone());
    opts.model = Some(test_model());
    opts.config.retry.stream_retry_base_delay = Duration::from_millis(1);
    let a = Agent::new(opts);
    let log = record_events(&a);
    a.prompt(vec![user("hi")]).await.unwrap();
    // The rejected request ends the run: message_start + message_end with the error.
    let types: Vec<&str> = log
        .lock()
        .unwrap()
        .iter()
        .map(AgentEvent::type_name)
        .collect();
    assert_eq!(
        &types[4..],
        ["message_start", "message_end", "turn_end", "agent_end"]
    );
    assert_eq!(a.error().as_deref(), Some("401 Unauthorized"));

    // A stream that ends with no terminal event counts as a dropped connection and is retried.
    log.lock().unwrap().clear();
    a.prompt(vec![user("again")]).await.unwrap();
    let events = log.lock().unwrap().clone();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::StreamRetry { attempt: 1, .. }))
    );
    let last = a.messages().pop().unwrap();
    assert!(
        matches!(last, AgentMessage::Assistant(m) if m.stop_reason == StopReason::Stop && m.text() == "recovered")
    );
}

#[tokio::test]
async fn tool_updates_and_panics_are_reported() {
    struct Panics(dreb_ai::ToolDefinition);
    #[async_trait]
    impl Tool for Panics {
        fn definition(&self) -> &dreb_ai::ToolDefinition {
            &self.0
        }
        async fn execute(
            &self,
            _: &str,
            _: serde_json::Value,
            _: CancellationToken,
            _: dreb_agent::ToolUpdateFn,
        ) -> Result<ToolOutput, dreb_agent::ToolError> {
            panic!("tool bug")
        }
    }
    let def = dreb_ai::ToolDefinition {
        name: "buggy".into(),
        description: String::new(),
        parameters: json!({"type": "object"}),
    };
    let llm = ScriptedLlm::with_scripts([
        Script::new().tool_call("a", "buggy", json!({})).done(),
        Script::reply("ok"),
    ]);
    let a = agent(llm, vec![Arc::new(Panics(def))]);
    let log = record_events(&a);
    a.prompt(vec![user("go")]).await.unwrap();
    let results = tool_results(&log.lock().unwrap());
    assert_eq!(results.len(), 1);
    assert!(
        results[0].0.starts_with("Tool buggy failed: "),
        "{results:?}"
    );
    assert!(results[0].1);
    assert!(a.pending_tool_calls().is_empty());
}

struct FailingAfter;

#[async_trait]
impl AgentHooks for FailingAfter {
    async fn after_tool_call(
        &self,
        _ctx: AfterToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<AfterToolCallResult>, String> {
        Err("after hook exploded".into())
    }
}

#[tokio::test]
async fn fatal_after_tool_call_error_cancels_running_tools_and_ends_the_run() {
    let llm = ScriptedLlm::with_scripts([Script::new()
        .tool_call("a", "quick", json!({"text": "x"}))
        .tool_call("b", "stuck", json!({"text": "y"}))
        .done()]);
    let a = agent(
        llm,
        vec![
            TestTool::with_text_param("quick", Behavior::Echo),
            TestTool::with_text_param("stuck", Behavior::WaitForCancel),
        ],
    );
    a.set_hooks(Arc::new(FailingAfter));
    let log = record_events(&a);
    // Would hang forever if the still-running `stuck` tool were not cancelled.
    a.prompt(vec![user("go")]).await.unwrap();
    let events = log.lock().unwrap().clone();
    match events.last() {
        Some(AgentEvent::AgentEnd { messages }) => {
            assert_eq!(messages.len(), 1);
            assert!(
                matches!(&messages[0], AgentMessage::Assistant(m) if m.error_message.as_deref() == Some("after hook exploded"))
            );
        }
        other => panic!("expected agent_end, got {other:?}"),
    }
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, AgentEvent::TurnEnd { .. }))
    );
    assert!(a.pending_tool_calls().is_empty());
    assert!(!a.is_streaming());
}

struct BadConversion;

#[async_trait]
impl AgentHooks for BadConversion {
    fn convert_to_llm(&self, _messages: &[AgentMessage]) -> Result<Vec<Message>, String> {
        Err("cannot convert".into())
    }
}

#[tokio::test]
async fn fatal_conversion_error_after_abort_is_marked_aborted() {
    let a = agent(ScriptedLlm::new(), vec![]);
    a.set_hooks(Arc::new(BadConversion));
    let log = record_events(&a);
    let handle = a.clone();
    a.subscribe_fn(move |e| {
        if matches!(e, AgentEvent::TurnStart) {
            handle.abort();
        }
    });
    a.prompt(vec![user("go")]).await.unwrap();
    let events = log.lock().unwrap().clone();
    match events.last() {
        Some(AgentEvent::AgentEnd { messages }) => {
            assert!(
                matches!(&messages[0], AgentMessage::Assistant(m) if m.stop_reason == StopReason::Aborted)
            )
        }
        other => panic!("expected agent_end, got {other:?}"),
    }
}

#[tokio::test]
async fn abort_during_retry_backoff_does_not_wait_out_the_delay() {
    let llm = ScriptedLlm::with_scripts([
        Script::new().text("x").drop_connection(),
        Script::reply("never"),
    ]);
    let mut opts = AgentOptions::new(llm.clone());
    opts.model = Some(test_model());
    // An hour: the test only finishes if abort cuts the backoff short.
    opts.config.retry.stream_retry_base_delay = Duration::from_secs(3600);
    let a = Agent::new(opts);
    let handle = a.clone();
    a.subscribe_fn(move |e| {
        if matches!(e, AgentEvent::StreamRetry { .. }) {
            handle.abort();
        }
    });
    a.prompt(vec![user("go")]).await.unwrap();
    let last = a.messages().pop().unwrap();
    assert!(matches!(last, AgentMessage::Assistant(m) if m.stop_reason == StopReason::Aborted));
    // The aborted retry did not consume the second script.
    assert_eq!(llm.remaining(), 1);
}

#[tokio::test]
async fn prompt_text_builds_text_then_images() {
    let llm = ScriptedLlm::with_scripts([Script::reply("seen")]);
    let a = agent(llm.clone(), vec![]);
    a.prompt_text(
        "look",
        vec![dreb_ai::ImageContent {
            data: "AAAA".into(),
            mime_type: "image/png".into(),
            ..Default::default()
        }],
    )
    .await
    .unwrap();
    let first = serde_json::to_string(&a.messages()[0]).unwrap();
    assert!(
        first.starts_with(
            r#"{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"timestamp":"#
        ),
        "{first}"
    );
}
