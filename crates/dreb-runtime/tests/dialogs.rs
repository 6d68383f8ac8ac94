//! Extension-UI dialogs and tool guards through the runtime: `ask_user` answered over `handle_input`, timed out and
//! cancelled; pending dialogs in the dashboard snapshot; shutdown settling them; the forbidden-command and
//! sensitive-path guards; the permission gate; secret scrubbing. Offline `faux` provider, real tools, `SpecSink`.

use std::sync::Arc;
use std::time::Duration;

use dreb_ai::Providers;
use dreb_ai::scenario::Scenario;
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_runtime::{Runtime, RuntimeOptions};

mod common;
use common::SpecSink;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

struct Harness {
    rt: Runtime,
    sink: Arc<SpecSink>,
    stop: CancellationToken,
    _dirs: (TempDir, TempDir),
}

fn ctx() -> RequestContext {
    RequestContext::detached(None)
}

/// A runtime on `faux`: the first reply calls `tool` with `args`, the reply after the tool result says "done".
fn start(tool: &str, args: Value, settings: Value) -> Harness {
    let agent_dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(agent_dir.path().join("settings.json"), settings.to_string()).unwrap();
    let scenario: Scenario = serde_json::from_value(json!({"turns": [
        {"toolCalls": [{"name": tool, "arguments": args}]},
        {"when": {"afterToolResult": true}, "text": ["done"]}
    ], "fallback": "error"}))
    .unwrap();
    let sink = Arc::new(SpecSink::default());
    let stop = CancellationToken::new();
    let options = RuntimeOptions {
        cwd: cwd.path().to_path_buf(),
        agent_dir: agent_dir.path().to_path_buf(),
        provider: Some("faux".into()),
        no_session: true,
        providers: Some(Providers::new().with_faux_scenario(scenario)),
        stop: stop.clone(),
        ..Default::default()
    };
    let rt = Runtime::start(options, sink.clone()).unwrap();
    Harness {
        rt,
        sink,
        stop,
        _dirs: (agent_dir, cwd),
    }
}

/// Poll until `f` holds (the bound only guards against a hung test; nothing is timed).
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..6000 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting for {what}");
}

fn of_type(frames: &[Value], t: &str) -> Vec<Value> {
    frames.iter().filter(|f| f["type"] == t).cloned().collect()
}

fn input(frame: Value) -> Input {
    let Value::Object(map) = frame else {
        panic!("an object")
    };
    Input::from_wire("extension_ui_response", map).unwrap()
}

/// Frames written after a test's last read are checked here (not while a failing test is already unwinding).
impl Drop for Harness {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.sink.assert_spec();
        }
    }
}

impl Harness {
    async fn prompt(&self) {
        self.rt
            .prompt(
                &ctx(),
                PromptParams {
                    message: "go".into(),
                    images: None,
                    streaming_behavior: None,
                },
            )
            .await
            .unwrap();
    }

    /// The first dialog request the host saw (waits for it).
    async fn request(&self) -> Value {
        until("a dialog request", || {
            !of_type(&self.sink.frames(), "extension_ui_request").is_empty()
        })
        .await;
        of_type(&self.sink.frames(), "extension_ui_request").remove(0)
    }

    /// The one `tool_execution_end` of the run: (result text, isError).
    fn tool_end(&self) -> (String, bool) {
        let ends = of_type(&self.sink.frames(), "tool_execution_end");
        assert_eq!(ends.len(), 1, "{ends:?}");
        let text = ends[0]["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (text, ends[0]["isError"] == true)
    }

    /// True when the reply after the tool result completed (the run was not stopped; a stopped run ends that
    /// reply as `aborted`).
    fn continued(&self) -> bool {
        of_type(&self.sink.frames(), "message_end")
            .iter()
            .any(|m| m["message"]["role"] == "assistant" && m["message"]["stopReason"] == "stop")
    }

    fn handled(&self) -> Vec<String> {
        of_type(&self.sink.frames(), "extension_ui_response_handled")
            .iter()
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect()
    }
}

fn ask_args(extra: Value) -> Value {
    let mut args =
        json!({"questions": [{"question": "Which database?", "options": ["sqlite", "postgres"]}]});
    if let (Some(a), Value::Object(e)) = (args.as_object_mut(), extra) {
        a.extend(e);
    }
    args
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_answered_over_handle_input() {
    let h = start("ask_user", ask_args(json!({})), json!({}));
    h.prompt().await;
    let request = h.request().await;
    assert_eq!(request["method"], "ask");
    assert_eq!(request["questions"][0]["question"], "Which database?");
    let id = request["id"].as_str().unwrap().to_string();

    // The open ask is in the dashboard snapshot, exactly as emitted.
    let snap =
        h.rt.get_dashboard_snapshot(&ctx(), GetDashboardSnapshotParams {})
            .await
            .unwrap();
    let snap = serde_json::to_value(&snap).unwrap();
    assert_eq!(snap["pendingExtensionUiRequests"], json!([request]));

    h.rt.handle_input(&input(
        json!({"type": "extension_ui_response", "id": id, "answers": [{"selected": ["sqlite"]}]}),
    ));
    h.rt.wait_for_idle().await;
    assert_eq!(h.handled(), vec![id.clone()]);
    let (text, is_error) = h.tool_end();
    assert!(!is_error);
    assert!(text.contains("sqlite"), "{text}");
    assert!(h.continued());

    // A second answer for the settled id is ignored; the snapshot has no open dialog any more.
    h.rt.handle_input(&input(
        json!({"type": "extension_ui_response", "id": id, "cancelled": true}),
    ));
    assert_eq!(h.handled().len(), 1);
    let snap =
        h.rt.get_dashboard_snapshot(&ctx(), GetDashboardSnapshotParams {})
            .await
            .unwrap();
    assert_eq!(
        serde_json::to_value(&snap).unwrap()["pendingExtensionUiRequests"],
        json!([])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_cancelled_by_the_host_stops_the_run() {
    let h = start("ask_user", ask_args(json!({})), json!({}));
    h.prompt().await;
    let id = h.request().await["id"].as_str().unwrap().to_string();
    h.rt.handle_input(&input(
        json!({"type": "extension_ui_response", "id": id, "cancelled": true}),
    ));
    h.rt.wait_for_idle().await;
    assert_eq!(h.handled(), vec![id]);
    let (text, _) = h.tool_end();
    assert_eq!(text, "The questions closed without an answer.");
    assert!(!h.continued(), "the cancelled ask stops the run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_user_timeout_settles_and_stops_the_run() {
    let h = start(
        "ask_user",
        ask_args(json!({"timeoutSeconds": 5})),
        json!({}),
    );
    h.prompt().await;
    let request = h.request().await;
    assert_eq!(request["timeout"], 5000); // the tool's minimum
    h.rt.wait_for_idle().await;
    assert_eq!(
        h.handled(),
        vec![request["id"].as_str().unwrap().to_string()]
    );
    let (text, _) = h.tool_end();
    assert_eq!(text, "The questions closed without an answer.");
    assert!(!h.continued(), "the timed-out ask stops the run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_settles_open_dialogs() {
    let h = start("ask_user", ask_args(json!({})), json!({}));
    h.prompt().await;
    let id = h.request().await["id"].as_str().unwrap().to_string();
    h.stop.cancel();
    h.rt.wait_for_idle().await;
    assert_eq!(h.handled(), vec![id]);
    assert!(!h.continued());
    let snap =
        h.rt.get_dashboard_snapshot(&ctx(), GetDashboardSnapshotParams {})
            .await
            .unwrap();
    assert_eq!(
        serde_json::to_value(&snap).unwrap()["pendingExtensionUiRequests"],
        json!([])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_bash_command_is_blocked_with_the_reference_reason() {
    let h = start("bash", json!({"command": "sudo ls"}), json!({}));
    h.prompt().await;
    h.rt.wait_for_idle().await;
    let (text, is_error) = h.tool_end();
    assert!(is_error);
    let expected = format!(
        "Command blocked by forbidden-commands guard: \"^(?:/\\S+/)?sudo\\b\" matched \"sudo ls\".\n\n{}",
        dreb_tools::guards::FORBIDDEN_COMMAND_GUIDANCE
    );
    assert_eq!(text, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_commands_from_settings_are_blocked() {
    let h = start(
        "bash",
        json!({"command": "make deploy"}),
        json!({"forbiddenCommands": ["^make deploy"]}),
    );
    h.prompt().await;
    h.rt.wait_for_idle().await;
    let (text, is_error) = h.tool_end();
    assert!(is_error);
    assert!(
        text.starts_with("Command blocked by forbidden-commands guard: \"^make deploy\" matched \"make deploy\".\n\n"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sensitive_read_path_is_blocked() {
    let h = start(
        "read",
        json!({"path": "secrets/token.txt"}),
        json!({"sensitiveFilePaths": ["secrets/*"]}),
    );
    h.prompt().await;
    h.rt.wait_for_idle().await;
    let (text, is_error) = h.tool_end();
    assert!(is_error);
    assert_eq!(
        text,
        "File blocked by sensitive-path guard: \"secrets/*\". This file contains credentials that should not be sent to the model."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_scrubbed_from_tool_results() {
    let h = start(
        "bash",
        json!({"command": "echo key AKIAIOSFODNN7EXAMPLE; echo ticket TCK-12345"}),
        json!({"secretOutputPatterns": [{"name": "ticket", "pattern": "TCK-[0-9]+"}]}),
    );
    h.prompt().await;
    h.rt.wait_for_idle().await;
    let (text, is_error) = h.tool_end();
    assert!(!is_error);
    assert!(text.contains("key <REDACTED:aws_access_key>"), "{text}");
    assert!(text.contains("ticket <REDACTED:ticket>"), "{text}");
    assert!(!text.contains("AKIA") && !text.contains("TCK-"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_commands_see_the_agent_bin_dir_on_path() {
    let h = start("bash", json!({"command": "echo \"$PATH\""}), json!({}));
    h.prompt().await;
    h.rt.wait_for_idle().await;
    let (text, _) = h.tool_end();
    let bin = h._dirs.0.path().join("bin");
    assert!(text.starts_with(&format!("{}:", bin.display())), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_gate_denies_an_unanswered_dangerous_command() {
    let h = start(
        "bash",
        json!({"command": "rm -rf build"}),
        json!({"permissionGate": {"enabled": true, "timeoutMs": 10}}),
    );
    h.prompt().await;
    let request = h.request().await;
    assert_eq!(request["method"], "select");
    assert_eq!(request["options"], json!(["Allow", "Block"]));
    h.rt.wait_for_idle().await;
    assert_eq!(
        h.handled(),
        vec![request["id"].as_str().unwrap().to_string()]
    );
    let (text, is_error) = h.tool_end();
    assert!(is_error);
    assert_eq!(
        text,
        "Dangerous command (recursive delete) blocked: the user did not confirm it."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_gate_runs_an_allowed_command_and_blocks_a_refused_one() {
    let h = start(
        "bash",
        json!({"command": "mkdir -p build && rm -rf build && echo removed"}),
        json!({"permissionGate": {"enabled": true, "timeoutMs": 0}}),
    );
    h.prompt().await;
    let id = h.request().await["id"].as_str().unwrap().to_string();
    h.rt.handle_input(&input(
        json!({"type": "extension_ui_response", "id": id, "value": "Allow"}),
    ));
    h.rt.wait_for_idle().await;
    let (text, is_error) = h.tool_end();
    assert!(!is_error);
    assert!(text.contains("removed"), "{text}");

    let h = start(
        "bash",
        json!({"command": "rm -rf build"}),
        json!({"permissionGate": {"enabled": true, "timeoutMs": 0}}),
    );
    h.prompt().await;
    let id = h.request().await["id"].as_str().unwrap().to_string();
    h.rt.handle_input(&input(
        json!({"type": "extension_ui_response", "id": id, "value": "Block"}),
    ));
    h.rt.wait_for_idle().await;
    let (text, is_error) = h.tool_end();
    assert!(is_error);
    assert_eq!(
        text,
        "Dangerous command (recursive delete) blocked by the user."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_gate_is_off_by_default() {
    let h = start(
        "bash",
        json!({"command": "mkdir -p build && rm -rf build && echo removed"}),
        json!({}),
    );
    h.prompt().await;
    h.rt.wait_for_idle().await;
    let (text, is_error) = h.tool_end();
    assert!(!is_error);
    assert!(text.contains("removed"), "{text}");
    assert!(of_type(&h.sink.frames(), "extension_ui_request").is_empty());
}
