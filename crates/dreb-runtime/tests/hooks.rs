//! The hook bus in a live session: handlers registered through `RuntimeOptions::hooks` see tool calls (and can
//! change their arguments or block them), tool results, the context sent to the model, the agent events before the
//! host, and the session changes they may cancel; a failing handler becomes an `extension_error` event and the
//! session goes on. Driven through the `RpcHandler` with the scripted `faux` provider; every frame is checked
//! against the spec.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use dreb_agent::AgentMessage;
use dreb_ai::Providers;
use dreb_ai::scenario::Scenario;
use dreb_hooks::*;
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_runtime::{Runtime, RuntimeOptions};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

mod common;
use common::SpecSink;

/// What a test handler does at each point, and what it saw.
#[derive(Default)]
struct Probe {
    /// `tool_call`: set `command` to this.
    rewrite_command: Option<String>,
    /// `tool_call`: block every call with this reason.
    block: Option<String>,
    /// `tool_call`: fail.
    fail: bool,
    /// `tool_result`: replace the text.
    result_text: Option<String>,
    /// `context`: append this user text to the messages sent.
    inject: Option<String>,
    /// `session_before_*`: the answer.
    before: Option<SessionBeforeDecision>,
    /// `input`: the answer.
    input: Option<InputDecision>,
    /// `before_provider_request`: set `temperature` to this.
    temperature: Option<f64>,
    /// `user_bash`: run the command "elsewhere" with this output.
    bash_output: Option<String>,
    /// `before_agent_start`: the answer.
    start: Option<BeforeAgentStartResult>,
    seen: Mutex<Vec<String>>,
}

impl Probe {
    fn saw(&self, what: impl Into<String>) {
        self.seen.lock().unwrap().push(what.into());
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl HookHandler for Probe {
    async fn tool_call(
        &self,
        event: &mut ToolCallEvent,
        _cancel: &CancellationToken,
    ) -> HookResult<ToolCallDecision> {
        self.saw(format!("tool_call {} {}", event.tool_name, event.input));
        if self.fail {
            return Err(HookError("probe exploded".into()));
        }
        if let Some(command) = &self.rewrite_command {
            event.input["command"] = json!(command);
        }
        Ok(match &self.block {
            Some(reason) => ToolCallDecision::Block {
                reason: Some(reason.clone()),
            },
            None => ToolCallDecision::Continue,
        })
    }

    async fn tool_result(&self, event: &ToolResultEvent) -> HookResult<Option<ToolResultPatch>> {
        self.saw(format!("tool_result {}", event.is_error));
        Ok(self.result_text.as_ref().map(|text| ToolResultPatch {
            content: Some(vec![dreb_ai::UserBlock::Text(dreb_ai::TextContent {
                text: text.clone(),
                text_signature: None,
                ..Default::default()
            })]),
            ..Default::default()
        }))
    }

    async fn context(&self, messages: &[AgentMessage]) -> HookResult<Option<Vec<AgentMessage>>> {
        self.saw(format!("context {}", messages.len()));
        Ok(self.inject.as_ref().map(|text| {
            let mut messages = messages.to_vec();
            messages.push(AgentMessage::User(dreb_ai::UserMessage {
                role: Default::default(),
                content: dreb_ai::UserContent::Text(text.clone()),
                timestamp: 0,
            }));
            messages
        }))
    }

    async fn user_bash(&self, event: &UserBashEvent) -> HookResult<Option<UserBashResult>> {
        self.saw(format!("user_bash {}", event.command));
        Ok(self.bash_output.as_ref().map(|output| UserBashResult {
            output: output.clone(),
            exit_code: Some(0),
            cancelled: false,
            truncated: false,
        }))
    }

    async fn before_provider_request(&self, payload: &Value) -> HookResult<Option<Value>> {
        Ok(self.temperature.map(|t| {
            let mut payload = payload.clone();
            payload["temperature"] = json!(t);
            payload
        }))
    }

    async fn input(&self, event: &InputEvent) -> HookResult<InputDecision> {
        self.saw(format!("input {}", event.text));
        Ok(self.input.clone().unwrap_or_default())
    }

    async fn before_agent_start(
        &self,
        event: &BeforeAgentStartEvent,
    ) -> HookResult<Option<BeforeAgentStartResult>> {
        self.saw(format!("before_agent_start {}", event.prompt));
        Ok(self.start.clone())
    }

    async fn session_before(
        &self,
        event: &SessionBeforeEvent,
    ) -> HookResult<SessionBeforeDecision> {
        self.saw(event.name());
        Ok(self.before.clone().unwrap_or_default())
    }

    async fn notify(&self, notice: Notice<'_>) -> HookResult<()> {
        match notice {
            Notice::Agent(event) => self.saw(format!("event {}", event.type_name())),
            Notice::SessionStart(reason) => self.saw(format!("session_start {reason:?}")),
            Notice::SessionShutdown => self.saw("session_shutdown"),
            Notice::ModelSelect { model, previous } => {
                self.saw(format!("model_select {model} from {previous:?}"))
            }
        }
        Ok(())
    }
}

struct Harness {
    rt: Runtime,
    sink: Arc<SpecSink>,
    _dirs: (TempDir, TempDir),
}

fn ctx() -> RequestContext {
    RequestContext::detached(None)
}

/// A runtime on `faux` whose first reply calls `bash` with `command` (then "done"), with `probe` on the bus.
fn start(command: &str, probe: Arc<Probe>) -> Harness {
    start_with(
        json!({"turns": [
            {"when": {"afterToolResult": false}, "toolCalls": [{"name": "bash", "arguments": {"command": command}}]},
            {"when": {"afterToolResult": true}, "text": ["done"], "repeat": true}
        ]}),
        probe,
    )
}

fn start_with(scenario: Value, probe: Arc<Probe>) -> Harness {
    let agent_dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let scenario: Scenario = serde_json::from_value(scenario).unwrap();
    // Small sessions can be compacted.
    std::fs::write(
        agent_dir.path().join("settings.json"),
        json!({"compaction": {"keepRecentTokens": 1}}).to_string(),
    )
    .unwrap();
    // A model to switch to (never called).
    std::fs::write(
        agent_dir.path().join("models.json"),
        json!({"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions",
            "apiKey": "k", "models": [{"id": "other-model"}]}}})
        .to_string(),
    )
    .unwrap();
    let sink = Arc::new(SpecSink::default());
    let options = RuntimeOptions {
        cwd: cwd.path().to_path_buf(),
        agent_dir: agent_dir.path().to_path_buf(),
        provider: Some("faux".into()),
        session_dir: Some(agent_dir.path().join("sessions")),
        providers: Some(Providers::new().with_faux_scenario(scenario)),
        hooks: vec![("/ext/probe.ts".into(), probe as Arc<dyn HookHandler>)],
        ..Default::default()
    };
    let rt = Runtime::start(options, sink.clone()).unwrap();
    Harness {
        rt,
        sink,
        _dirs: (agent_dir, cwd),
    }
}

impl Harness {
    /// Prompt and wait for the run's `agent_end`; the frames written meanwhile.
    async fn run(&self, text: &str) -> Vec<Value> {
        self.sink.clear();
        self.rt
            .prompt(
                &ctx(),
                PromptParams {
                    message: text.into(),
                    images: None,
                    streaming_behavior: None,
                },
            )
            .await
            .unwrap();
        for _ in 0..6000 {
            let frames = self.sink.frames();
            if frames.iter().any(|f| f["type"] == "agent_end") {
                return frames;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!("no agent_end: {:#?}", self.sink.frames());
    }
}

fn tool_end(frames: &[Value]) -> Value {
    frames
        .iter()
        .find(|f| f["type"] == "tool_execution_end")
        .cloned()
        .expect("tool_execution_end")
}

fn result_text(tool_end: &Value) -> String {
    tool_end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_changes_the_arguments_and_the_result_and_hears_events_before_the_host() {
    let probe = Arc::new(Probe {
        rewrite_command: Some("echo rewritten".into()),
        ..Default::default()
    });
    let h = start("echo original", probe.clone());
    let frames = h.run("go").await;
    let end = tool_end(&frames);
    assert_eq!(result_text(&end), "rewritten", "{end:#}");
    assert_eq!(end["isError"], false);
    let seen = probe.seen();
    assert!(
        seen.contains(&r#"tool_call bash {"command":"echo original"}"#.to_string()),
        "{seen:#?}"
    );
    assert!(seen.contains(&"tool_result false".to_string()), "{seen:#?}");
    // Every event the host got, the handler heard first, in the same order.
    let host: Vec<String> = frames
        .iter()
        .filter(|f| f["type"] != "response")
        .map(|f| format!("event {}", f["type"].as_str().unwrap()))
        .collect();
    let heard: Vec<String> = seen
        .iter()
        .filter(|s| s.starts_with("event "))
        .cloned()
        .collect();
    assert_eq!(heard, host);
    // The context handler was asked before each of the two LLM calls.
    assert_eq!(seen.iter().filter(|s| s.starts_with("context ")).count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_blocks_a_call_with_its_reason() {
    let probe = Arc::new(Probe {
        block: Some("Not in this repository".into()),
        result_text: Some("never used".into()),
        ..Default::default()
    });
    let h = start("echo never", probe.clone());
    let end = tool_end(&h.run("go").await);
    assert_eq!(end["isError"], true);
    assert_eq!(result_text(&end), "Not in this repository");
    // As in the reference, a call that never ran has no tool_result to change.
    assert!(
        !probe.seen().iter().any(|s| s.starts_with("tool_result")),
        "{:?}",
        probe.seen()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_guards_run_before_the_handlers() {
    // `rm -rf /` is refused by the forbidden-commands guard; the handler behind it is never asked.
    let probe = Arc::new(Probe::default());
    let h = start("rm -rf /", probe.clone());
    let end = tool_end(&h.run("go").await);
    assert_eq!(end["isError"], true, "{end:#}");
    assert!(
        !probe.seen().iter().any(|s| s.starts_with("tool_call")),
        "{:?}",
        probe.seen()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_handler_blocks_the_call_reports_extension_error_and_the_run_goes_on() {
    let probe = Arc::new(Probe {
        fail: true,
        ..Default::default()
    });
    let h = start("echo hi", probe);
    let frames = h.run("go").await;
    let errors: Vec<&Value> = frames
        .iter()
        .filter(|f| f["type"] == "extension_error")
        .collect();
    assert_eq!(
        errors,
        [
            &json!({"type": "extension_error", "extensionPath": "/ext/probe.ts", "event": "tool_call", "error": "probe exploded"})
        ]
    );
    let end = tool_end(&frames);
    assert_eq!(end["isError"], true);
    assert!(result_text(&end).contains("probe exploded"), "{end:#}");
    let last = frames.last().unwrap();
    assert_eq!(last["type"], "agent_end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_handler_rewrites_what_the_model_is_sent_but_not_the_session() {
    let probe = Arc::new(Probe {
        inject: Some("injected by the handler".into()),
        ..Default::default()
    });
    // The model answers "seen" only when the last user text it is sent is the injected one.
    let h = start_with(
        json!({"turns": [
            {"when": {"lastUserContains": "injected by the handler"}, "text": ["seen"]}
        ], "fallback": "error"}),
        probe,
    );
    let frames = h.run("go").await;
    let end = frames.last().unwrap();
    let reply = end["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(reply["content"][0]["text"], "seen", "{reply:#}");
    let messages = serde_json::to_string(&h.rt.agent().messages()).unwrap();
    assert!(
        !messages.contains("injected by the handler"),
        "the agent's own messages are unchanged"
    );
}

// ---------------------------------------------------------------------------------------------------------------
// session_before_*

/// A session with two exchanges (plain text replies) and `probe` answering every `session_before_*`.
async fn two_exchanges(before: SessionBeforeDecision) -> (Harness, Arc<Probe>) {
    let probe = Arc::new(Probe {
        before: Some(before),
        ..Default::default()
    });
    let h = start_with(
        json!({"turns": [{"repeat": true, "text": ["hello"]}], "fallback": "error"}),
        probe.clone(),
    );
    h.run("first question").await;
    h.run("second question").await;
    (h, probe)
}

/// The session file in use (a new session or a switch changes it).
fn session_id(h: &Harness) -> String {
    h.rt.session_file()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_before_switch_cancels_new_session_and_switch_session() {
    let (h, probe) = two_exchanges(SessionBeforeDecision::Cancel).await;
    let before = session_id(&h);
    let r =
        h.rt.new_session(
            &ctx(),
            NewSessionParams {
                parent_session: None,
            },
        )
        .await
        .unwrap();
    assert!(r.cancelled);
    let r =
        h.rt.switch_session(
            &ctx(),
            SwitchSessionParams {
                session_path: "/tmp/elsewhere.jsonl".into(),
            },
        )
        .await
        .unwrap();
    assert!(r.cancelled);
    assert_eq!(session_id(&h), before, "still the same session");
    assert_eq!(h.rt.agent().messages().len(), 4, "nothing was reset");
    let asked: Vec<String> = probe
        .seen()
        .into_iter()
        .filter(|s| s.starts_with("session_before"))
        .collect();
    assert_eq!(asked, ["session_before_switch", "session_before_switch"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_before_switch_lets_new_session_through_when_no_one_cancels() {
    let (h, _) = two_exchanges(SessionBeforeDecision::Continue).await;
    let before = session_id(&h);
    let r =
        h.rt.new_session(
            &ctx(),
            NewSessionParams {
                parent_session: None,
            },
        )
        .await
        .unwrap();
    assert!(!r.cancelled);
    assert_ne!(session_id(&h), before);
    assert!(h.rt.agent().messages().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_before_fork_cancels_with_the_text_a_fork_would_return() {
    let (h, _) = two_exchanges(SessionBeforeDecision::Cancel).await;
    let before = session_id(&h);
    let forkable =
        h.rt.get_fork_messages(&ctx(), GetForkMessagesParams {})
            .await
            .unwrap();
    let second = serde_json::to_value(&forkable).unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["text"] == "second question")
        .cloned()
        .unwrap();
    let r =
        h.rt.fork(
            &ctx(),
            ForkParams {
                entry_id: second["entryId"].as_str().unwrap().into(),
            },
        )
        .await
        .unwrap();
    assert!(r.cancelled);
    assert_eq!(r.text, "second question");
    assert_eq!(session_id(&h), before, "no new session file");
    // A bad entry still fails before the handlers are asked.
    let err =
        h.rt.fork(
            &ctx(),
            ForkParams {
                entry_id: "nope".into(),
            },
        )
        .await
        .unwrap_err()
        .wire_text();
    assert!(err.contains("Invalid entry ID for forking"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_before_tree_cancels_or_supplies_the_branch_summary() {
    let (h, _) = two_exchanges(SessionBeforeDecision::Cancel).await;
    let first = first_user_entry(&h).await;
    let r = h.rt.navigate_tree(&ctx(), navigate(&first)).await.unwrap();
    assert!(r.cancelled);
    assert_eq!(h.rt.agent().messages().len(), 4, "the leaf did not move");

    let supplied = SessionBeforeDecision::Supply(SuppliedSummary {
        summary: "What the abandoned branch did".into(),
        details: None,
    });
    let (h, _) = two_exchanges(supplied).await;
    let first = first_user_entry(&h).await;
    let r = h.rt.navigate_tree(&ctx(), navigate(&first)).await.unwrap();
    assert!(!r.cancelled);
    assert_eq!(r.editor_text.as_deref(), Some("first question"));
    let file = h.rt.session_file().unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    let summary = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "branch_summary")
        .expect("a branch_summary entry");
    assert_eq!(summary["summary"], "What the abandoned branch did");
    assert_eq!(summary["fromHook"], true);
}

async fn first_user_entry(h: &Harness) -> String {
    let forkable =
        h.rt.get_fork_messages(&ctx(), GetForkMessagesParams {})
            .await
            .unwrap();
    serde_json::to_value(&forkable).unwrap()["messages"][0]["entryId"]
        .as_str()
        .unwrap()
        .to_string()
}

fn navigate(target: &str) -> NavigateTreeParams {
    NavigateTreeParams {
        target_id: target.into(),
        summarize: Some(true),
        custom_instructions: None,
        replace_instructions: None,
        label: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_before_compact_cancels_or_supplies_the_compaction() {
    let (h, _) = two_exchanges(SessionBeforeDecision::Cancel).await;
    let err =
        h.rt.compact(
            &ctx(),
            CompactParams {
                custom_instructions: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.wire_text(), "Command failed: Compaction cancelled");

    let supplied = SessionBeforeDecision::Supply(SuppliedSummary {
        summary: "## Goal\nsupplied by the handler".into(),
        details: Some(json!({"readFiles": ["a.rs"], "modifiedFiles": []})),
    });
    // A summary from the model would read "hello".
    let (h, _) = two_exchanges(supplied).await;
    let result =
        h.rt.compact(
            &ctx(),
            CompactParams {
                custom_instructions: None,
            },
        )
        .await
        .unwrap();
    let wire = serde_json::to_value(&result).unwrap();
    assert_eq!(wire["summary"], "## Goal\nsupplied by the handler");
    assert_eq!(
        wire["details"],
        json!({"readFiles": ["a.rs"], "modifiedFiles": []})
    );
    let text = std::fs::read_to_string(h.rt.session_file().unwrap()).unwrap();
    let entry = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "compaction")
        .expect("a compaction entry");
    assert_eq!(entry["fromHook"], true);
}

// ---------------------------------------------------------------------------------------------------------------
// input and before_agent_start

fn answers_when(contains: &str) -> Value {
    json!({"turns": [{"when": {"lastUserContains": contains}, "text": ["seen"], "repeat": true}], "fallback": "error"})
}

/// The text of the run's last message (its `agent_end`), or the frames when there is none.
fn last_reply(frames: &[Value]) -> Value {
    let end = frames.last().unwrap();
    let last = end["messages"].as_array().and_then(|m| m.last());
    match last.map(|m| m["content"][0]["text"].clone()) {
        Some(Value::String(text)) => Value::String(text),
        _ => panic!("no reply text: {frames:#?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_transforms_the_prompt() {
    let probe = Arc::new(Probe {
        input: Some(InputDecision::Transform {
            text: "TRANSFORMED prompt".into(),
            images: None,
        }),
        ..Default::default()
    });
    let h = start_with(answers_when("TRANSFORMED"), probe.clone());
    let frames = h.run("original prompt").await;
    assert_eq!(last_reply(&frames), "seen");
    assert!(probe.seen().contains(&"input original prompt".to_string()));
    let first = serde_json::to_value(&h.rt.agent().messages()[0]).unwrap();
    assert_eq!(first["content"][0]["text"], "TRANSFORMED prompt");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_handled_starts_no_run() {
    let probe = Arc::new(Probe {
        input: Some(InputDecision::Handled),
        ..Default::default()
    });
    let h = start_with(answers_when("anything"), probe.clone());
    h.rt.prompt(
        &ctx(),
        PromptParams {
            message: "/my-extension-thing".into(),
            images: None,
            streaming_behavior: None,
        },
    )
    .await
    .unwrap();
    h.rt.wait_for_idle().await;
    assert!(
        !h.sink.frames().iter().any(|f| f["type"] == "agent_start"),
        "{:#?}",
        h.sink.frames()
    );
    assert!(h.rt.agent().messages().is_empty());
    assert!(
        !probe
            .seen()
            .iter()
            .any(|s| s.starts_with("before_agent_start"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_agent_start_adds_a_message_and_replaces_the_system_prompt_for_the_run() {
    let probe = Arc::new(Probe {
        start: Some(BeforeAgentStartResult {
            message: Some(dreb_agent::CustomMessage {
                role: Default::default(),
                custom_type: "probe-note".into(),
                content: dreb_ai::UserContent::Text("a note from the handler".into()),
                display: true,
                details: None,
                timestamp: 1,
            }),
            system_prompt: Some("You are the probe's agent.".into()),
        }),
        ..Default::default()
    });
    // The model answers only when the handler's note is the last user-side text it gets.
    let h = start_with(answers_when("a note from the handler"), probe.clone());
    let frames = h.run("hello").await;
    assert_eq!(last_reply(&frames), "seen");
    let roles: Vec<String> =
        h.rt.agent()
            .messages()
            .iter()
            .map(|m| {
                serde_json::to_value(m).unwrap()["role"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
    assert_eq!(roles, ["user", "custom", "assistant"]);
    assert_eq!(
        h.rt.agent().with_state(|s| s.system_prompt.clone()),
        "You are the probe's agent."
    );
    assert!(
        probe
            .seen()
            .contains(&"before_agent_start hello".to_string())
    );
}

// ---------------------------------------------------------------------------------------------------------------
// Notices

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_hear_session_starts_reloads_and_model_changes() {
    let probe = Arc::new(Probe::default());
    let h = start_with(
        json!({"turns": [{"repeat": true, "text": ["hello"]}], "fallback": "error"}),
        probe.clone(),
    );
    let notices = || -> Vec<String> {
        probe
            .seen()
            .into_iter()
            .filter(|s| {
                !s.starts_with("event ")
                    && !s.starts_with("context ")
                    && !s.starts_with("input ")
                    && !s.starts_with("before_agent_start")
            })
            .collect()
    };
    // Announced without holding up start-up.
    for _ in 0..2000 {
        if !notices().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(notices(), ["session_start Startup"]);
    h.run("hi").await;
    h.rt.new_session(
        &ctx(),
        NewSessionParams {
            parent_session: None,
        },
    )
    .await
    .unwrap();
    h.rt.reload(&ctx(), ReloadParams {}).await.unwrap();
    h.rt.set_model(
        &ctx(),
        SetModelParams {
            provider: "local".into(),
            model_id: "other-model".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(
        notices(),
        [
            "session_start Startup",
            "session_before_switch",
            "session_start New",
            "session_shutdown",
            "session_start Reload",
            "model_select local/other-model from Some(\"faux/faux\")",
        ]
    );
}

// ---------------------------------------------------------------------------------------------------------------
// before_provider_request

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn before_provider_request_rewrites_the_body_sent_over_http() {
    let mock = dreb_mock_llm::MockLlm::start(Default::default()).unwrap();
    let agent_dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        agent_dir.path().join("models.json"),
        json!({"providers": {"mock": {"baseUrl": format!("{}/v1", mock.base_url()), "api": "openai-completions",
            "apiKey": "k", "models": [{"id": "mock-model"}]}}})
        .to_string(),
    )
    .unwrap();
    let probe = Arc::new(Probe {
        temperature: Some(0.25),
        ..Default::default()
    });
    let sink = Arc::new(SpecSink::default());
    let options = RuntimeOptions {
        cwd: cwd.path().to_path_buf(),
        agent_dir: agent_dir.path().to_path_buf(),
        provider: Some("mock".into()),
        model: Some("mock-model".into()),
        no_session: true,
        hooks: vec![("/ext/probe.ts".into(), probe as Arc<dyn HookHandler>)],
        ..Default::default()
    };
    let h = Harness {
        rt: Runtime::start(options, sink.clone()).unwrap(),
        sink,
        _dirs: (agent_dir, cwd),
    };
    let frames = h.run("hello").await;
    assert_eq!(frames.last().unwrap()["type"], "agent_end");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["temperature"], json!(0.25));
    assert_eq!(
        requests[0].body["model"], "mock-model",
        "the rest is as built"
    );
}

// ---------------------------------------------------------------------------------------------------------------
// user_bash

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_bash_runs_the_hosts_command_elsewhere() {
    let probe = Arc::new(Probe {
        bash_output: Some("ran in the sandbox\n".into()),
        ..Default::default()
    });
    let h = start_with(json!({"turns": [], "fallback": "error"}), probe.clone());
    let marker = h._dirs.1.path().join("must-not-exist");
    let result =
        h.rt.bash(
            &ctx(),
            BashParams {
                command: format!("touch {}", marker.display()),
            },
        )
        .await
        .unwrap();
    let wire = serde_json::to_value(&result).unwrap();
    assert_eq!(
        wire,
        json!({"output": "ran in the sandbox\n", "exitCode": 0, "cancelled": false, "truncated": false})
    );
    assert!(!marker.exists(), "the session did not run it");
    // Recorded as a bash execution, as our own run would be.
    let last = serde_json::to_value(h.rt.agent().messages().last().unwrap()).unwrap();
    assert_eq!(last["role"], "bashExecution");
    assert_eq!(last["output"], "ran in the sandbox\n");
    assert!(
        probe
            .seen()
            .iter()
            .any(|s| s.starts_with("user_bash touch"))
    );
}
