//! Extensions in their own processes, against the real binary: a Python extension written with the SDK
//! (`tests/fixtures/extensions/kitchen_sink.py`, `clients/python/src/dreb_extension`) covering tools, hooks,
//! commands, dialogs, messages, session operations, faults, reload and shutdown.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Dreb, Env, Frame, is_response, result_text, tool_end};
use dreb_mock_llm::Scenario;
use serde_json::{Value, json};

fn scenario(v: Value) -> Scenario {
    serde_json::from_value(v).expect("scenario")
}

fn python_path() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../clients/python/src")
        .canonicalize()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn kitchen_sink() -> String {
    common::local_fixture("extensions/kitchen_sink.py")
        .to_string_lossy()
        .into_owned()
}

/// `dreb --mode rpc` with the kitchen-sink extension (`-e`) plus `extra`.
fn spawn(env: &Env, extra: &[&str], envs: &[(&str, &str)]) -> Dreb {
    let sink = kitchen_sink();
    let mut args = vec![
        "--mode",
        "rpc",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "-e",
        sink.as_str(),
    ];
    args.extend_from_slice(extra);
    let pp = python_path();
    let mut all: Vec<(&str, &str)> = vec![("PYTHONPATH", pp.as_str())];
    all.extend_from_slice(envs);
    env.spawn_raw(&args, &all)
}

fn ok(dreb: &mut Dreb, cmd: Value) -> Value {
    dreb.send(&cmd);
    let r = dreb
        .read_until(|f| is_response(f) && f["id"] == cmd["id"])
        .pop()
        .unwrap();
    assert_eq!(r["success"], true, "{r}");
    r
}

fn response(dreb: &mut Dreb, cmd: Value) -> Value {
    dreb.send(&cmd);
    dreb.read_until(|f| is_response(f) && f["id"] == cmd["id"])
        .pop()
        .unwrap()
}

fn notify_text(f: &Frame) -> Option<String> {
    (f["type"] == "extension_ui_request" && f["method"] == "notify")
        .then(|| f["message"].as_str().unwrap_or_default().to_string())
}

/// Reads until a notify arrives; returns its text.
fn next_notify(dreb: &mut Dreb) -> String {
    let frames = dreb.read_until(|f| notify_text(f).is_some());
    notify_text(frames.last().unwrap()).unwrap()
}

#[test]
fn an_extension_tool_is_offered_called_and_its_result_reaches_the_model() {
    let env = Env::with_scenario(scenario(json!({"turns": [
        {"when": {"afterToolResult": false}, "toolCalls": [{"name": "hello", "arguments": {"name": "Ada"}}]},
        {"when": {"afterToolResult": true}, "text": ["done"]},
    ]})));
    let mut dreb = spawn(&env, &[], &[]);
    let frames = dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "greet Ada"}));
    let end = tool_end(&frames);
    assert_eq!(end["isError"], false, "{end}");
    assert_eq!(result_text(&end), "Hello, Ada!");
    assert_eq!(end["result"]["details"], json!({"greeted": "Ada"}));
    assert!(
        frames.iter().any(|f| f["type"] == "tool_execution_update"
            && f["partialResult"]["content"][0]["text"] == "greeting..."),
        "the tool's progress reaches the host: {frames:#?}"
    );
    let requests = env.mock.requests();
    let first = requests[0].body.to_string();
    assert!(
        first.contains("\"hello\"") && first.contains("Greets someone"),
        "{first}"
    );
    let second = requests[1].body.to_string();
    assert!(second.contains("Hello, Ada!"), "{second}");
}

#[test]
fn tool_call_blocks_and_rewrites_bash_and_tool_result_changes_the_result() {
    let env = Env::with_scenario(scenario(json!({"turns": [
        {"when": {"lastUserContains": "danger", "afterToolResult": false}, "toolCalls": [{"name": "bash", "arguments": {"command": "rm -rf /tmp/nothing-here"}}]},
        {"when": {"lastUserContains": "rewrite", "afterToolResult": false}, "toolCalls": [{"name": "bash", "arguments": {"command": "echo rewrite-me"}}]},
        {"when": {"afterToolResult": true}, "text": ["ok"], "repeat": true},
    ]})));
    let mut dreb = spawn(&env, &[], &[]);
    let frames = dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "danger"}));
    let end = tool_end(&frames);
    assert_eq!(end["isError"], true, "{end}");
    assert!(
        result_text(&end).contains("Blocked by kitchen-sink"),
        "{end}"
    );
    let frames = dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "rewrite"}));
    let end = tool_end(&frames);
    assert_eq!(end["isError"], false, "{end}");
    assert_eq!(result_text(&end), "rewritten\n[seen by kitchen-sink]");
}

#[test]
fn input_transforms_or_handles_a_prompt_and_context_rewrites_what_the_provider_receives() {
    let env = Env::with_scenario(scenario(
        json!({"turns": [{"text": ["fine"], "repeat": true}]}),
    ));
    let mut dreb = spawn(&env, &[], &[]);
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "shout:make it loud"}));
    dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "keep SECRET-CONTEXT out"}));
    let r = ok(
        &mut dreb,
        json!({"id": "p3", "type": "prompt", "message": "swallow"}),
    );
    assert_eq!(
        r,
        json!({"id": "p3", "type": "response", "command": "prompt", "success": true})
    );
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2, "a handled prompt starts no run");
    let first = requests[0].body.to_string();
    assert!(first.contains("MAKE IT LOUD"), "{first}");
    let second = requests[1].body.to_string();
    assert!(second.contains("[rewritten by context hook]"), "{second}");
    assert!(!second.contains("SECRET-CONTEXT"), "{second}");
    // The session keeps what the user sent; only the request was rewritten.
    let messages = ok(&mut dreb, json!({"id": "m", "type": "get_messages"}));
    assert!(messages.to_string().contains("SECRET-CONTEXT"));
}

#[test]
fn an_extension_command_runs_at_once_even_while_streaming_and_cannot_be_queued() {
    let env = Env::with_scenario(scenario(json!({"turns": [
        {"text": ["a", "b", "c", "d", "e", "f", "g", "h"], "deltaDelayMs": 150},
    ]})));
    let mut dreb = spawn(&env, &[], &[]);
    ok(
        &mut dreb,
        json!({"id": "p", "type": "prompt", "message": "stream slowly"}),
    );
    dreb.read_until(|f| f["type"] == "message_update");
    dreb.send(&json!({"id": "c", "type": "prompt", "message": "/stats  now "}));
    let frames = dreb.read_until(|f| is_response(f) && f["id"] == "c");
    let notify = frames
        .iter()
        .find_map(notify_text)
        .expect("the command notified first");
    assert!(
        notify.contains("idle=False") && notify.ends_with("args=now"),
        "{notify}"
    );
    assert_eq!(frames.last().unwrap()["success"], true);
    assert!(
        !frames.iter().any(|f| f["type"] == "agent_end"),
        "ran during the stream"
    );
    let r = response(
        &mut dreb,
        json!({"id": "s", "type": "steer", "message": "/stats"}),
    );
    assert_eq!(
        r["error"],
        "Command failed: Extension command \"/stats\" cannot be queued. Use prompt() or execute the command when not streaming."
    );
    let r = response(
        &mut dreb,
        json!({"id": "f", "type": "follow_up", "message": "/stats x"}),
    );
    assert_eq!(r["success"], false);
    dreb.read_until(|f| f["type"] == "agent_end");
}

#[test]
fn get_commands_and_get_resources_list_the_extension() {
    let env = Env::new();
    let mut dreb = spawn(&env, &[], &[]);
    let commands = ok(&mut dreb, json!({"id": "c", "type": "get_commands"}));
    let list = commands["data"]["commands"].as_array().unwrap();
    let stats = &list[0];
    assert_eq!(stats["name"], "stats");
    assert_eq!(stats["description"], "Show statistics");
    assert_eq!(stats["source"], "extension");
    assert_eq!(stats["sourceInfo"]["path"], kitchen_sink());
    assert_eq!(
        stats["sourceInfo"],
        json!({"path": kitchen_sink(), "source": "cli", "scope": "temporary", "origin": "top-level"})
    );
    let resources = ok(&mut dreb, json!({"id": "r", "type": "get_resources"}));
    assert_eq!(
        resources["data"]["extensions"],
        json!([{"name": "kitchen-sink", "path": kitchen_sink()}])
    );
}

#[test]
fn each_cancellable_operation_is_cancelled_by_the_extension() {
    let env = Env::with_scenario(scenario(
        json!({"turns": [{"text": ["reply"], "repeat": true}]}),
    ));
    let mut dreb = spawn(&env, &["--cancel-sessions"], &[]);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    let r = ok(&mut dreb, json!({"id": "n", "type": "new_session"}));
    assert_eq!(r["data"], json!({"cancelled": true}));
    let r = ok(
        &mut dreb,
        json!({"id": "sw", "type": "switch_session", "sessionPath": "/nonexistent/x.jsonl"}),
    );
    assert_eq!(r["data"], json!({"cancelled": true}));
    let msgs = ok(&mut dreb, json!({"id": "fm", "type": "get_fork_messages"}));
    let entry = msgs["data"]["messages"][0]["entryId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = ok(
        &mut dreb,
        json!({"id": "fk", "type": "fork", "entryId": entry}),
    );
    assert_eq!(r["data"]["cancelled"], true);
    let tree = ok(&mut dreb, json!({"id": "t", "type": "get_tree"}));
    let root = tree["data"]["roots"][0]["id"].as_str().unwrap().to_string();
    let r = ok(
        &mut dreb,
        json!({"id": "nt", "type": "navigate_tree", "targetId": root}),
    );
    assert_eq!(r["data"]["cancelled"], true);
    let r = response(&mut dreb, json!({"id": "cp", "type": "compact"}));
    assert_eq!(r["error"], "Command failed: Compaction cancelled", "{r}");
    // A command's own session operation goes through the same hooks.
    dreb.send(&json!({"id": "ns", "type": "prompt", "message": "/newsession"}));
    assert_eq!(next_notify(&mut dreb), "new_session cancelled=True");
}

#[test]
fn an_extension_supplies_the_compaction_summary() {
    let env = Env::with_scenario(scenario(
        json!({"turns": [{"text": ["reply"], "repeat": true}]}),
    ));
    let mut dreb = spawn(&env, &[], &[]);
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "one"}));
    dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "two"}));
    let before = env.mock.requests().len();
    let r = ok(&mut dreb, json!({"id": "c", "type": "compact"}));
    assert_eq!(r["data"]["summary"], "Summary supplied by kitchen-sink");
    assert_eq!(r["data"]["details"], json!({"by": "kitchen-sink"}));
    assert_eq!(
        env.mock.requests().len(),
        before,
        "no LLM call for a supplied summary"
    );
}

#[test]
fn dialogs_from_an_extension_are_answered_cancelled_and_time_out() {
    let env = Env::new();
    let mut dreb = spawn(&env, &[], &[]);
    for (answer, expected) in [
        (json!({"value": "B"}), "picked B"),
        (json!({"cancelled": true}), "picked None"),
    ] {
        dreb.send(&json!({"id": "pick", "type": "prompt", "message": "/pick"}));
        let frames =
            dreb.read_until(|f| f["type"] == "extension_ui_request" && f["method"] == "select");
        let request = frames.last().unwrap().clone();
        assert_eq!(request["title"], "Pick one");
        assert_eq!(request["options"], json!(["A", "B"]));
        let mut reply = json!({"type": "extension_ui_response", "id": request["id"]});
        for (k, v) in answer.as_object().unwrap() {
            reply[k] = v.clone();
        }
        dreb.send(&reply);
        assert_eq!(next_notify(&mut dreb), expected);
    }
    dreb.send(&json!({"id": "pt", "type": "prompt", "message": "/pick 200"}));
    let frames =
        dreb.read_until(|f| f["type"] == "extension_ui_request" && f["method"] == "select");
    assert_eq!(frames.last().unwrap()["timeout"], 200);
    assert_eq!(next_notify(&mut dreb), "picked None");
    dreb.send(&json!({"id": "cf", "type": "prompt", "message": "/confirm"}));
    let frames =
        dreb.read_until(|f| f["type"] == "extension_ui_request" && f["method"] == "confirm");
    let id = frames.last().unwrap()["id"].clone();
    dreb.send(&json!({"type": "extension_ui_response", "id": id, "confirmed": true}));
    assert_eq!(next_notify(&mut dreb), "confirmed True");
}

#[test]
fn send_message_appends_when_idle_triggers_a_turn_and_waits_for_the_next_turn() {
    let env = Env::with_scenario(scenario(
        json!({"turns": [{"text": ["answer"], "repeat": true}]}),
    ));
    let mut dreb = spawn(&env, &[], &[]);
    dreb.send(&json!({"id": "r1", "type": "prompt", "message": "/remind"}));
    let frames = dreb.read_until(|f| f["type"] == "message_end");
    let message = &frames.last().unwrap()["message"];
    assert_eq!(message["role"], "custom");
    assert_eq!(message["customType"], "reminder");
    assert_eq!(message["content"], "reminder (None)");
    assert!(
        env.mock.requests().is_empty(),
        "appending does not start a run"
    );
    // nextTurn: held for the next prompt, sent with it.
    ok(
        &mut dreb,
        json!({"id": "r2", "type": "prompt", "message": "/remind nextTurn"}),
    );
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "go on"}));
    let body = env.mock.requests().last().unwrap().body.to_string();
    assert!(
        body.contains("reminder (nextTurn)") && body.contains("go on"),
        "{body}"
    );
    // triggerTurn: a run starts with the message.
    dreb.send(&json!({"id": "r3", "type": "prompt", "message": "/remind trigger"}));
    dreb.read_until(|f| f["type"] == "agent_end");
    let body = env.mock.requests().last().unwrap().body.to_string();
    assert!(body.contains("reminder (trigger)"), "{body}");
}

#[test]
fn append_entry_and_session_name_reach_the_session_file() {
    let env = Env::new();
    let mut dreb = spawn(&env, &[], &[]);
    // The session file is written from the first reply on (as in the reference).
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    dreb.send(&json!({"id": "e", "type": "prompt", "message": "/entry 42"}));
    let frames = dreb.read_until(|f| f["type"] == "session_name_changed");
    assert_eq!(frames.last().unwrap()["name"], "named 42");
    let state = ok(&mut dreb, json!({"id": "s", "type": "get_state"}));
    let file = state["data"]["sessionFile"].as_str().unwrap().to_string();
    let lines = common::read_jsonl(std::path::Path::new(&file));
    assert!(
        lines.iter().any(|l| l["type"] == "custom"
            && l["customType"] == "kitchen-state"
            && l["data"] == json!({"value": "42"})),
        "{lines:#?}"
    );
}

#[test]
fn a_throwing_or_hanging_hook_is_an_extension_error_and_the_agent_goes_on() {
    let env = Env::with_scenario(scenario(json!({"turns": [
        {"when": {"lastUserContains": "throw", "afterToolResult": false}, "toolCalls": [{"name": "bash", "arguments": {"command": "echo throw-in-hook"}}]},
        {"when": {"lastUserContains": "hang", "afterToolResult": false}, "toolCalls": [{"name": "bash", "arguments": {"command": "echo hang-in-hook"}}]},
        {"when": {"afterToolResult": true}, "text": ["ok"], "repeat": true},
    ]})));
    let mut dreb = spawn(&env, &[], &[("DREB_EXTENSION_HOOK_TIMEOUT_MS", "300")]);
    let frames = dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "throw"}));
    let error = frames
        .iter()
        .find(|f| f["type"] == "extension_error")
        .unwrap_or_else(|| panic!("{frames:#?}"));
    assert_eq!(error["extensionPath"], kitchen_sink());
    assert_eq!(error["event"], "tool_call");
    assert_eq!(error["error"], "the guard threw");
    // A failing tool_call handler blocks the call (a guard that could not decide).
    assert_eq!(tool_end(&frames)["isError"], true);
    let frames = dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "hang"}));
    let error = frames
        .iter()
        .find(|f| f["type"] == "extension_error")
        .unwrap();
    assert_eq!(error["error"], "Extension hook timed out after 300 ms");
    assert!(frames.iter().any(|f| f["type"] == "agent_end"));
    // A command that throws is reported the same way; the prompt still succeeds.
    dreb.send(&json!({"id": "f", "type": "prompt", "message": "/fail"}));
    let frames = dreb.read_until(|f| is_response(f) && f["id"] == "f");
    let error = frames
        .iter()
        .find(|f| f["type"] == "extension_error")
        .unwrap();
    assert_eq!(error["event"], "command:fail");
    assert_eq!(error["error"], "the command failed on purpose");
    assert_eq!(frames.last().unwrap()["success"], true);
}

#[test]
fn a_crashed_extension_is_reported_its_tool_fails_cleanly_and_it_is_started_again() {
    let env = Env::with_scenario(scenario(json!({"turns": [
        {"when": {"lastUserContains": "crash", "afterToolResult": false}, "toolCalls": [{"name": "hello", "arguments": {"name": "crash"}}]},
        {"when": {"afterToolResult": true}, "text": ["ok"], "repeat": true},
    ]})));
    let pids = env.home.path().join("pids");
    let pid_file = pids.to_string_lossy().into_owned();
    let mut dreb = spawn(&env, &[], &[("KITCHEN_SINK_PID_FILE", pid_file.as_str())]);
    let frames = dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "crash please"}));
    let end = tool_end(&frames);
    assert_eq!(end["isError"], true);
    assert!(
        result_text(&end).starts_with("Extension process exited ("),
        "{end}"
    );
    let process_error = dreb
        .seen
        .iter()
        .chain(frames.iter())
        .find(|f| f["type"] == "extension_error" && f["event"] == "process")
        .cloned();
    let process_error = match process_error {
        Some(e) => e,
        None => dreb
            .read_until(|f| f["type"] == "extension_error")
            .pop()
            .unwrap(),
    };
    assert!(
        process_error["error"]
            .as_str()
            .unwrap()
            .contains("exit status: 3"),
        "{process_error}"
    );
    // The next use starts it again.
    dreb.send(&json!({"id": "s", "type": "prompt", "message": "/stats"}));
    let text = next_notify(&mut dreb);
    let started: Vec<String> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(started.len(), 2, "{started:?}");
    assert!(text.starts_with(&format!("pid={}", started[1])), "{text}");
}

#[test]
fn reload_restarts_the_extension_and_stop_leaves_no_process_behind() {
    let env = Env::new();
    let pids = env.home.path().join("pids");
    let pid_file = pids.to_string_lossy().into_owned();
    let mut dreb = spawn(&env, &[], &[("KITCHEN_SINK_PID_FILE", pid_file.as_str())]);
    ok(&mut dreb, json!({"id": "c", "type": "get_commands"}));
    ok(&mut dreb, json!({"id": "r", "type": "reload"}));
    ok(&mut dreb, json!({"id": "c2", "type": "get_commands"}));
    let started: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(
        started.len(),
        2,
        "reload started a new process: {started:?}"
    );
    assert!(
        !std::path::Path::new(&format!("/proc/{}", started[0])).exists()
            || std::fs::read_to_string(format!("/proc/{}/stat", started[0]))
                .is_ok_and(|s| s.contains(") Z ")),
        "the first process was stopped by the reload"
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    std::thread::sleep(Duration::from_millis(100));
    for pid in started {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "extension process {pid} outlived dreb"
        );
    }
}

/// The binary without `-e`: only discovered extensions load.
fn spawn_discovering(env: &Env, python_path: &str) -> Dreb {
    env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
        ],
        &[("PYTHONPATH", python_path)],
    )
}

#[test]
fn an_untrusted_project_runs_no_project_extension() {
    let env = Env::new();
    let dir = env.cwd().join(".dreb/extensions");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(kitchen_sink(), dir.join("sink.py")).unwrap();
    let pp = python_path();
    let mut dreb = spawn_discovering(&env, &pp);
    let resources = ok(&mut dreb, json!({"id": "r", "type": "get_resources"}));
    assert_eq!(resources["data"]["extensions"], json!([]));
    let error = dreb
        .seen
        .iter()
        .find(|f| f["type"] == "extension_error")
        .cloned()
        .expect("the skipped extension is reported");
    assert_eq!(error["event"], "load");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("is not a trusted folder"),
        "{error}"
    );
    drop(dreb);
    // Trusted (the global context-trust policy grants the cwd): it loads.
    env.write_settings(&json!({"context": {"trustedFolders": [env.cwd()]}}));
    let mut dreb = spawn_discovering(&env, &pp);
    let resources = ok(&mut dreb, json!({"id": "r", "type": "get_resources"}));
    assert_eq!(resources["data"]["extensions"][0]["name"], "kitchen-sink");
}

#[test]
fn hooks_see_runs_and_can_run_bash_elsewhere_and_add_a_message_before_the_run() {
    let env = Env::with_scenario(scenario(
        json!({"turns": [{"text": ["fine"], "repeat": true}]}),
    ));
    let mut dreb = spawn(&env, &[], &[]);
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "please note me"}));
    let body = env.mock.requests()[0].body.to_string();
    assert!(body.contains("[note from before_agent_start]"), "{body}");
    // user_bash: the extension ran it (in its "sandbox"); the host gets its result as our own run's.
    let r = ok(
        &mut dreb,
        json!({"id": "b", "type": "bash", "command": "echo sandbox"}),
    );
    assert_eq!(
        r["data"]["output"], "ran in the kitchen-sink sandbox",
        "{r}"
    );
    assert_eq!(r["data"]["exitCode"], 0);
    let r = ok(
        &mut dreb,
        json!({"id": "b2", "type": "bash", "command": "echo local"}),
    );
    assert_eq!(r["data"]["output"], "local\n", "{r}");
    // Agent events reach a subscriber (agent_end), and session_start told it why the session started.
    dreb.send(&json!({"id": "s", "type": "prompt", "message": "/stats"}));
    let text = next_notify(&mut dreb);
    assert!(text.contains("runs=1 starts=startup "), "{text}");
    ok(&mut dreb, json!({"id": "n", "type": "new_session"}));
    dreb.send(&json!({"id": "s2", "type": "prompt", "message": "/stats"}));
    let text = next_notify(&mut dreb);
    assert!(text.contains("starts=startup,new "), "{text}");
    dreb.send(&json!({"id": "x", "type": "prompt", "message": "/exec"}));
    assert_eq!(next_notify(&mut dreb), "exec code=0 out=from exec");
}

#[test]
fn a_hanging_hook_never_blocks_get_state_or_abort() {
    let env = Env::with_scenario(scenario(json!({"turns": [
        {"when": {"afterToolResult": false}, "toolCalls": [{"name": "bash", "arguments": {"command": "echo hang-in-hook"}}]},
        {"when": {"afterToolResult": true}, "text": ["ok"], "repeat": true},
    ]})));
    let mut dreb = spawn(&env, &[], &[("DREB_EXTENSION_HOOK_TIMEOUT_MS", "600000")]);
    ok(
        &mut dreb,
        json!({"id": "p", "type": "prompt", "message": "hang"}),
    );
    dreb.read_until(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant");
    // The tool_call hook now waits (30 s by default): the session still answers, and abort ends the run.
    let state = ok(&mut dreb, json!({"id": "st", "type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], true);
    // (The hook timeout is far beyond the harness's hang guard: a wait for it would fail the test.)
    dreb.send(&json!({"id": "a", "type": "abort"}));
    let frames = dreb.read_until(|f| is_response(f) && f["id"] == "a");
    assert_eq!(frames.last().unwrap()["success"], true);
    assert!(
        frames.iter().any(|f| f["type"] == "agent_end"),
        "{frames:#?}"
    );
}

/// The reference-style TypeScript extension, run by the Node extension host of this checkout
/// (`clients/extension-host`, its dependencies installed by `npm ci`, which `scripts/test-all.sh` runs first).
fn reference_style() -> String {
    let host =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../clients/extension-host/node_modules");
    assert!(
        host.is_dir(),
        "the Node extension host's dependencies are missing: run `npm ci` in clients/extension-host"
    );
    common::local_fixture("extensions/reference_style.ts")
        .to_string_lossy()
        .into_owned()
}

fn spawn_ts(env: &Env, extra: &[&str]) -> Dreb {
    let ts = reference_style();
    let mut args = vec![
        "--mode",
        "rpc",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "-e",
        ts.as_str(),
    ];
    args.extend_from_slice(extra);
    env.spawn_raw(&args, &[])
}

#[test]
fn a_reference_typescript_extension_runs_unchanged() {
    let env = Env::with_scenario(scenario(json!({"turns": [
        {"when": {"lastUserContains": "shout", "afterToolResult": false}, "toolCalls": [{"name": "shout", "arguments": {"word": "hey"}}]},
        {"when": {"lastUserContains": "danger", "afterToolResult": false}, "toolCalls": [{"name": "bash", "arguments": {"command": "echo dangerous"}}]},
        {"when": {"afterToolResult": true}, "text": ["ok"], "repeat": true},
        {"text": ["plain"], "repeat": true},
    ]})));
    let mut dreb = spawn_ts(&env, &[]);
    let commands = ok(&mut dreb, json!({"id": "c", "type": "get_commands"}));
    let names: Vec<&str> = commands["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["source"] == "extension")
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["count", "explode"]);
    // A TypeBox-typed tool with progress.
    let frames = dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "shout it"}));
    let end = tool_end(&frames);
    assert_eq!(result_text(&end), "HEY!");
    assert_eq!(end["result"]["details"], json!({"shouted": "hey"}));
    assert!(frames.iter().any(|f| f["type"] == "tool_execution_update"));
    // tool_call asking the user through ctx.ui.confirm: declined, so blocked.
    dreb.send(&json!({"id": "p2", "type": "prompt", "message": "danger"}));
    let frames =
        dreb.read_until(|f| f["type"] == "extension_ui_request" && f["method"] == "confirm");
    let id = frames.last().unwrap()["id"].clone();
    dreb.send(&json!({"type": "extension_ui_response", "id": id, "confirmed": false}));
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    let end = tool_end(&frames);
    assert_eq!(end["isError"], true);
    assert!(result_text(&end).contains("Blocked by the user"), "{end}");
    // input transform.
    dreb.exchange(&json!({"id": "p3", "type": "prompt", "message": "?quick why"}));
    let body = env.mock.requests().last().unwrap().body.to_string();
    assert!(body.contains("Answer briefly: why"), "{body}");
    // A command reading ctx.sessionManager and ctx.model, then dreb.sendMessage.
    dreb.send(&json!({"id": "cnt", "type": "prompt", "message": "/count"}));
    let text = next_notify(&mut dreb);
    assert!(
        text.starts_with("entries=") && text.ends_with("model=mock-model"),
        "{text}"
    );
    let frames =
        dreb.read_until(|f| f["type"] == "message_end" && f["message"]["role"] == "custom");
    assert!(
        frames.last().unwrap()["message"]["content"]
            .as_str()
            .unwrap()
            .starts_with("counted ")
    );
    // A throwing command handler is an extension_error.
    dreb.send(&json!({"id": "x", "type": "prompt", "message": "/explode"}));
    let frames = dreb.read_until(|f| is_response(f) && f["id"] == "x");
    let error = frames
        .iter()
        .find(|f| f["type"] == "extension_error")
        .unwrap();
    assert_eq!(error["extensionPath"], reference_style());
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("exploded on purpose"),
        "{error}"
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_typescript_extension_flag_cancels_a_session_switch() {
    let env = Env::new();
    let mut dreb = spawn_ts(&env, &["--lock-sessions"]);
    let r = ok(&mut dreb, json!({"id": "n", "type": "new_session"}));
    assert_eq!(r["data"], json!({"cancelled": true}));
    drop(dreb);
    let mut dreb = spawn_ts(&env, &[]);
    let r = ok(&mut dreb, json!({"id": "n", "type": "new_session"}));
    assert_eq!(r["data"], json!({"cancelled": false}));
}

#[test]
fn send_message_while_streaming_steers_or_follows_up() {
    let env = Env::with_scenario(scenario(json!({"turns": [
        {"when": {"afterToolResult": false, "lastUserContains": "work"}, "toolCalls": [{"name": "bash", "arguments": {"command": "sleep 1; echo slept"}}]},
        {"when": {"afterToolResult": true}, "text": ["after the tool"]},
        {"text": ["and then"], "repeat": true},
    ]})));
    let mut dreb = spawn(&env, &[], &[]);
    ok(
        &mut dreb,
        json!({"id": "p", "type": "prompt", "message": "work"}),
    );
    dreb.read_until(|f| f["type"] == "tool_execution_start");
    ok(
        &mut dreb,
        json!({"id": "s", "type": "prompt", "message": "/remind steer"}),
    );
    ok(
        &mut dreb,
        json!({"id": "f", "type": "prompt", "message": "/remind followUp"}),
    );
    dreb.read_until(|f| f["type"] == "agent_end");
    let bodies: Vec<String> = env
        .mock
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert_eq!(
        bodies.len(),
        3,
        "the follow-up continued the run: {bodies:#?}"
    );
    // The steering message goes with the tool result; the follow-up only once the run would have ended.
    assert!(bodies[1].contains("reminder (steer)") && !bodies[1].contains("reminder (followUp)"));
    assert!(bodies[2].contains("reminder (followUp)"));
}

#[test]
fn an_executable_in_any_language_is_an_extension_and_its_garbage_is_dropped() {
    let env = Env::new();
    let sh = common::local_fixture("extensions/shell_extension.sh")
        .to_string_lossy()
        .into_owned();
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-e",
            sh.as_str(),
        ],
        &[],
    );
    let resources = ok(&mut dreb, json!({"id": "r", "type": "get_resources"}));
    assert_eq!(
        resources["data"]["extensions"],
        json!([{"name": "shell", "path": sh}])
    );
    dreb.send(&json!({"id": "h", "type": "prompt", "message": "/shell-hi"}));
    let frames = dreb.read_until(|f| is_response(f) && f["id"] == "h");
    assert_eq!(
        frames.iter().find_map(notify_text).as_deref(),
        Some("hi from sh")
    );
    assert!(
        !frames.iter().any(|f| f["type"] == "extension_error"),
        "{frames:#?}"
    );
    let (code, rest, _) = dreb.finish();
    assert_eq!(code, 0);
    assert!(
        !rest.iter().any(|f| f["type"] == "extension_error"),
        "{rest:#?}"
    );
}

#[test]
fn the_agent_api_sets_tools_model_and_thinking_and_later_registrations_count() {
    let env = Env::with_scenario(scenario(
        json!({"turns": [{"text": ["fine"], "repeat": true}]}),
    ));
    let mut dreb = spawn(&env, &[], &[]);
    dreb.send(&json!({"id": "a", "type": "prompt", "message": "/agent-api"}));
    // `low` is clamped to `off`: the mock model does not reason (the rule `set_thinking_level` applies).
    assert_eq!(
        next_notify(&mut dreb),
        format!(
            "hello={} bash=builtin ok=True bad=False thinking=off models=True",
            kitchen_sink()
        )
    );
    // The active tools apply from the next run: only `read` and the extension's `hello` are offered.
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "which tools"}));
    let body = env.mock.requests().last().unwrap().body.clone();
    let offered: Vec<String> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            t["name"]
                .as_str()
                .or(t["function"]["name"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(offered, ["read", "hello"], "{body}");
    // `register` adds a command after initialize; get_commands lists it and a prompt runs it.
    dreb.send(&json!({"id": "r", "type": "prompt", "message": "/register-more"}));
    assert_eq!(next_notify(&mut dreb), "registered");
    let commands = ok(&mut dreb, json!({"id": "c", "type": "get_commands"}));
    assert!(commands.to_string().contains("Registered later"));
    dreb.send(&json!({"id": "l", "type": "prompt", "message": "/late"}));
    assert_eq!(next_notify(&mut dreb), "late command ran");
}

/// `dreb --mode rpc` with the TypeScript fixtures `names` (`-e` each), their `node_modules` checked, plus `envs`.
fn spawn_ts_many(env: &Env, names: &[&str], envs: &[(&str, &str)]) -> Dreb {
    reference_style();
    let paths: Vec<String> = names
        .iter()
        .map(|n| {
            common::local_fixture(&format!("extensions/{n}"))
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let mut args = vec![
        "--mode",
        "rpc",
        "--provider",
        "mock",
        "--model",
        "mock-model",
    ];
    for p in &paths {
        args.extend_from_slice(&["-e", p.as_str()]);
    }
    env.spawn_raw(&args, envs)
}

fn fixture_path(name: &str) -> String {
    common::local_fixture(&format!("extensions/{name}"))
        .to_string_lossy()
        .into_owned()
}

/// The number after `pid=` in a notify text.
fn pid_in(text: &str) -> u32 {
    text.rsplit("pid=").next().unwrap().parse().unwrap()
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
}

#[test]
fn typescript_extensions_share_one_node_host_and_its_event_bus() {
    let env = Env::new();
    let mut dreb = spawn_ts_many(&env, &["shared_a.ts", "shared_b.ts"], &[]);
    let resources = ok(&mut dreb, json!({"id": "r", "type": "get_resources"}));
    assert_eq!(
        resources["data"]["extensions"],
        json!([
            {"name": "cli", "path": fixture_path("shared_a.ts")},
            {"name": "cli", "path": fixture_path("shared_b.ts")},
        ])
    );
    dreb.send(&json!({"id": "a", "type": "prompt", "message": "/pid-a"}));
    let a = pid_in(&next_notify(&mut dreb));
    dreb.send(&json!({"id": "b", "type": "prompt", "message": "/pid-b"}));
    let b = pid_in(&next_notify(&mut dreb));
    assert_eq!(a, b, "both extensions run in one host process");
    // The one Node process is dreb's child: no other process serves the extensions.
    let stat = std::fs::read_to_string(format!("/proc/{a}/stat")).unwrap();
    let ppid: u32 = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let siblings = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit(')').next().unwrap().split_whitespace().nth(1) == Some(&ppid.to_string())
                    && s.contains("(node)")
            })
        })
        .count();
    assert_eq!(siblings, 1, "one node process for two extensions");
    // dreb.events crosses between the extensions of the host.
    dreb.send(&json!({"id": "e", "type": "prompt", "message": "/emit hello"}));
    assert_eq!(next_notify(&mut dreb), "b heard hello");
    // reload stops the host with its extensions and starts a new one for both.
    ok(&mut dreb, json!({"id": "rl", "type": "reload"}));
    assert!(!alive(a), "the Node host {a} outlived the reload");
    dreb.send(&json!({"id": "a2", "type": "prompt", "message": "/pid-a"}));
    let a2 = pid_in(&next_notify(&mut dreb));
    dreb.send(&json!({"id": "b2", "type": "prompt", "message": "/pid-b"}));
    assert_eq!(pid_in(&next_notify(&mut dreb)), a2);
    assert_ne!(a2, a);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    std::thread::sleep(Duration::from_millis(100));
    assert!(!alive(a2), "the Node host {a2} outlived dreb");
}

#[test]
fn a_crash_of_the_node_host_is_reported_for_each_extension_and_it_starts_again() {
    let env = Env::with_scenario(scenario(json!({"turns": [
        {"when": {"lastUserContains": "echo", "afterToolResult": false}, "toolCalls": [{"name": "echo_b", "arguments": {"text": "back"}}]},
        {"when": {"afterToolResult": true}, "text": ["done"], "repeat": true},
    ]})));
    let mut dreb = spawn_ts_many(&env, &["shared_a.ts", "shared_b.ts"], &[]);
    dreb.send(&json!({"id": "b", "type": "prompt", "message": "/pid-b"}));
    let before = pid_in(&next_notify(&mut dreb));
    dreb.send(&json!({"id": "x", "type": "prompt", "message": "/crash"}));
    let mut errors = Vec::new();
    dreb.read_until(|f| {
        if f["type"] == "extension_error" && f["event"] == "process" {
            errors.push(f.clone());
        }
        errors.len() == 2
    });
    let mut paths: Vec<&str> = errors
        .iter()
        .map(|e| e["extensionPath"].as_str().unwrap())
        .collect();
    paths.sort();
    assert_eq!(
        paths,
        [fixture_path("shared_a.ts"), fixture_path("shared_b.ts")]
    );
    for e in &errors {
        assert_eq!(
            e["error"], "Extension process exited (exit status: 3)",
            "{e}"
        );
    }
    // The next use starts the host again: b's tool works.
    let frames = dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "echo please"}));
    let frames = if frames.iter().any(|f| f["type"] == "agent_end") {
        frames
    } else {
        dreb.read_until(|f| f["type"] == "agent_end")
    };
    let end = tool_end(&frames);
    assert_eq!(result_text(&end), "echo: back", "{end}");
    dreb.send(&json!({"id": "b2", "type": "prompt", "message": "/pid-b"}));
    let after = pid_in(&next_notify(&mut dreb));
    assert_ne!(before, after);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !alive(after),
        "the restarted Node host {after} outlived dreb"
    );
}

#[test]
fn without_node_each_javascript_extension_is_a_clear_load_error() {
    let env = Env::new();
    let bin = env.home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let path = bin.to_string_lossy().into_owned();
    let mut dreb = spawn_ts_many(
        &env,
        &["shared_a.ts", "shared_b.ts"],
        &[("PATH", path.as_str())],
    );
    ok(&mut dreb, json!({"id": "c", "type": "get_commands"}));
    let errors: Vec<&Frame> = dreb
        .seen
        .iter()
        .filter(|f| f["type"] == "extension_error")
        .collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    for e in errors {
        assert_eq!(e["event"], "load");
        assert_eq!(
            e["error"],
            "TypeScript/JavaScript extensions need Node.js: `node` was not found on PATH (or set DREB_NODE)"
        );
    }
    let resources = ok(&mut dreb, json!({"id": "r", "type": "get_resources"}));
    assert_eq!(resources["data"]["extensions"], json!([]));
}

#[test]
fn an_extension_provider_is_a_model_source() {
    let env = Env::new();
    let url = format!("{}/v1", env.mock.base_url());
    let mut dreb = spawn_ts_many(
        &env,
        &["provider.ts"],
        &[("EXT_PROVIDER_URL", url.as_str())],
    );
    ok(&mut dreb, json!({"id": "c", "type": "get_commands"}));
    // A config the registry refuses: the reference's text.
    let refused = dreb
        .seen
        .iter()
        .find(|f| f["type"] == "extension_error")
        .cloned()
        .expect("an extension_error for the refused provider");
    assert_eq!(refused["event"], "register_provider");
    assert_eq!(refused["extensionPath"], fixture_path("provider.ts"));
    assert_eq!(
        refused["error"],
        "Provider no-url: \"baseUrl\" is required when defining models."
    );
    let models = ok(
        &mut dreb,
        json!({"id": "m", "type": "get_available_models"}),
    );
    let ext: Vec<&Value> = models["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["provider"] == "ext-mock")
        .collect();
    assert_eq!(ext.len(), 1, "{models}");
    assert_eq!(ext[0]["id"], "ext-model");
    assert_eq!(ext[0]["name"], "Extension model");
    assert_eq!(ext[0]["baseUrl"], url);
    assert_eq!(ext[0]["contextWindow"], 100000);
    let set = ok(
        &mut dreb,
        json!({"id": "s", "type": "set_model", "provider": "ext-mock", "modelId": "ext-model"}),
    );
    assert_eq!(set["data"]["provider"], "ext-mock");
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello there"}));
    let request = env.mock.requests().last().unwrap().clone();
    assert_eq!(request.body["model"], "ext-model");
    // unregisterProvider takes the models away.
    dreb.send(&json!({"id": "d", "type": "prompt", "message": "/drop-provider"}));
    dreb.read_until(|f| is_response(f) && f["id"] == "d");
    let models = ok(
        &mut dreb,
        json!({"id": "m2", "type": "get_available_models"}),
    );
    assert!(
        !models["data"]["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["provider"] == "ext-mock"),
        "{models}"
    );
}

#[test]
fn resources_discover_adds_skills_and_prompt_templates_at_startup_and_reload() {
    let env = Env::new();
    let dir = env.home.path().join("ext-resources");
    std::fs::create_dir_all(dir.join("skills/ext-skill")).unwrap();
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(
        dir.join("skills/ext-skill/SKILL.md"),
        "---\nname: ext-skill\ndescription: A skill an extension found\n---\nDo it well.\n",
    )
    .unwrap();
    for reason in ["startup", "reload"] {
        std::fs::write(
            dir.join(format!("prompts/ext-{reason}.md")),
            format!("---\ndescription: The {reason} template\n---\nSay {reason}.\n"),
        )
        .unwrap();
    }
    let d = dir.to_string_lossy().into_owned();
    let url = format!("{}/v1", env.mock.base_url());
    let mut dreb = spawn_ts_many(
        &env,
        &["provider.ts"],
        &[
            ("EXT_RESOURCES_DIR", d.as_str()),
            ("EXT_PROVIDER_URL", url.as_str()),
        ],
    );
    let names = |dreb: &mut Dreb, id: &str| -> Vec<(String, String)> {
        let c = ok(dreb, json!({"id": id, "type": "get_commands"}));
        c["data"]["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["sourceInfo"]["scope"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    };
    // The extension's skill and this load's template, with the `temporary` scope; not the other load's template.
    let check = |list: &[(String, String)], has: &str, lacks: &str| {
        for name in ["skill:ext-skill", has] {
            assert!(
                list.contains(&(name.into(), "temporary".into())),
                "{name}: {list:?}"
            );
        }
        assert!(!list.iter().any(|(n, _)| n == lacks), "{lacks}: {list:?}");
    };
    check(&names(&mut dreb, "c1"), "ext-startup", "ext-reload");
    // The skill is offered to the model.
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hi"}));
    let body = env.mock.requests().last().unwrap().body.to_string();
    assert!(body.contains("ext-skill"), "{body}");
    ok(&mut dreb, json!({"id": "r", "type": "reload"}));
    check(&names(&mut dreb, "c2"), "ext-reload", "ext-startup");
}

const SMALL_PY_EXTENSION: &str = r#"
from dreb_extension import Extension
ext = Extension(name="{name}")

@ext.command("{name}", description="{name} command")
def run(args, ctx):
    ctx.ui.notify("{name} ran")

ext.run()
"#;

#[test]
fn a_package_manifest_and_settings_extensions_are_loaded() {
    let env = Env::new();
    let pkg = env.agent_dir().join("extensions/pkg");
    std::fs::create_dir_all(pkg.join("src")).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        r#"{"name": "pkg", "dreb": {"extensions": ["./src/main.py"]}}"#,
    )
    .unwrap();
    std::fs::write(
        pkg.join("index.js"),
        "throw new Error('not the entry point')",
    )
    .unwrap();
    std::fs::write(
        pkg.join("src/main.py"),
        SMALL_PY_EXTENSION.replace("{name}", "from-manifest"),
    )
    .unwrap();
    let other = env.home.path().join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    let declared = other.join("declared.py");
    std::fs::write(
        &declared,
        SMALL_PY_EXTENSION.replace("{name}", "from-settings"),
    )
    .unwrap();
    env.write_settings(&json!({"extensions": [declared.to_string_lossy()]}));
    let mut dreb = spawn_discovering(&env, &python_path());
    let resources = ok(&mut dreb, json!({"id": "r", "type": "get_resources"}));
    let manifest_entry = pkg.join("src/main.py").to_string_lossy().into_owned();
    assert_eq!(
        resources["data"]["extensions"],
        json!([
            {"name": "from-manifest", "path": manifest_entry},
            {"name": "from-settings", "path": declared.to_string_lossy()},
        ])
    );
    let commands = ok(&mut dreb, json!({"id": "c", "type": "get_commands"}));
    let list = commands["data"]["commands"].as_array().unwrap();
    assert_eq!(
        list[0],
        json!({"name": "from-manifest", "description": "from-manifest command", "source": "extension",
               "sourceInfo": {"path": manifest_entry, "source": "local", "scope": "user", "origin": "top-level",
                              "baseDir": env.agent_dir().join("extensions").to_string_lossy()}})
    );
    assert_eq!(
        list[1],
        json!({"name": "from-settings", "description": "from-settings command", "source": "extension",
               "sourceInfo": {"path": declared.to_string_lossy(), "source": "local", "scope": "user",
                              "origin": "top-level", "baseDir": other.to_string_lossy()}})
    );
    dreb.send(&json!({"id": "m", "type": "prompt", "message": "/from-settings"}));
    assert_eq!(next_notify(&mut dreb), "from-settings ran");
    assert!(
        !dreb.seen.iter().any(|f| f["type"] == "extension_error"),
        "{:?}",
        dreb.seen
    );
}

/// `dreb --mode rpc` with the session-hooks TypeScript extension (`session_hooks.ts`) plus `extra`.
fn spawn_session_hooks(env: &Env, extra: &[&str], envs: &[(&str, &str)]) -> Dreb {
    reference_style(); // the Node host's dependencies must be there
    let ts = fixture_path("session_hooks.ts");
    let mut args = extra.to_vec();
    args.extend(["-e", ts.as_str()]);
    env.spawn_with_env(&args, envs)
}

fn session_file(dreb: &mut Dreb) -> PathBuf {
    let state = ok(dreb, json!({"id": "st", "type": "get_state"}));
    PathBuf::from(state["data"]["sessionFile"].as_str().unwrap())
}

fn jsonl_files(dir: &std::path::Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn session_directory_places_the_session_below_the_flag_and_the_setting() {
    let env = Env::with_scenario(scenario(
        json!({"turns": [{"text": ["reply"], "repeat": true}]}),
    ));
    let hook_root = env.home.path().join("hook-sessions");
    let hook_dir = hook_root.join("project");
    let root = hook_root.to_string_lossy().into_owned();
    let envs = [("SESSION_HOOK_DIR", root.as_str())];

    // The hook's directory: the first prompt waits for the extensions, so the file is written only there.
    let mut dreb = spawn_session_hooks(&env, &[], &envs);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    let file = session_file(&mut dreb);
    assert_eq!(file.parent().unwrap(), hook_dir, "{}", file.display());
    assert!(file.is_file());
    assert!(
        jsonl_files(&env.session_dir()).is_empty(),
        "nothing in the default directory"
    );
    // Sessions started later go there too, and `get_sessions` lists that directory.
    ok(&mut dreb, json!({"id": "n", "type": "new_session"}));
    assert_eq!(session_file(&mut dreb).parent().unwrap(), hook_dir);
    drop(dreb);

    // `--continue` continues the most recent session of the hook's directory (the default one has none).
    let mut dreb = spawn_session_hooks(&env, &["-c"], &envs);
    ok(&mut dreb, json!({"id": "c", "type": "get_commands"})); // the extensions are ready
    assert_eq!(session_file(&mut dreb), file);
    let messages = ok(&mut dreb, json!({"id": "m", "type": "get_messages"}));
    assert_eq!(messages["data"]["messages"].as_array().unwrap().len(), 2);
    drop(dreb);

    // `--session-dir` wins over the hook, and so does the `sessionDir` setting.
    let flag_dir = env.home.path().join("flag-sessions");
    let flag = flag_dir.to_string_lossy().into_owned();
    let mut dreb = spawn_session_hooks(&env, &["--session-dir", flag.as_str()], &envs);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    assert_eq!(session_file(&mut dreb).parent().unwrap(), flag_dir);
    drop(dreb);
    let settings_dir = env.home.path().join("settings-sessions");
    env.write_settings(&json!({"sessionDir": settings_dir}));
    let mut dreb = spawn_session_hooks(&env, &[], &envs);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    assert_eq!(session_file(&mut dreb).parent().unwrap(), settings_dir);
    drop(dreb);
    assert_eq!(
        jsonl_files(&hook_dir).len(),
        1,
        "only the first session was written there"
    );
}

#[test]
fn session_directory_answers_of_python_and_typescript_extensions_the_last_one_wins() {
    let env = Env::with_scenario(scenario(
        json!({"turns": [{"text": ["reply"], "repeat": true}]}),
    ));
    let py_root = env.home.path().join("py");
    let ts_root = env.home.path().join("ts");
    let (py, ts) = (
        py_root.to_string_lossy().into_owned(),
        ts_root.to_string_lossy().into_owned(),
    );
    let pp = python_path();
    let sink = kitchen_sink();
    // Load order: the Python extension first, then the TypeScript one, whose answer wins.
    let mut dreb = spawn_session_hooks(
        &env,
        &["-e", sink.as_str()],
        &[
            ("PYTHONPATH", pp.as_str()),
            ("KITCHEN_SESSION_DIR", py.as_str()),
            ("SESSION_HOOK_DIR", ts.as_str()),
        ],
    );
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    assert_eq!(
        session_file(&mut dreb).parent().unwrap(),
        ts_root.join("project")
    );
    drop(dreb);
    // The Python extension alone: its own directory (a relative answer would be against the cwd).
    let mut dreb = spawn(&env, &[], &[("KITCHEN_SESSION_DIR", py.as_str())]);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    assert_eq!(
        session_file(&mut dreb).parent().unwrap(),
        py_root.join("py-project")
    );
}

/// Sends `cmd` and reads until both its response and a notify starting with `prefix` arrived (a hook's
/// fire-and-forget `ui.notify` may reach the host before or after the command's response).
fn response_and_notify(dreb: &mut Dreb, cmd: Value, prefix: &str) -> (Value, String) {
    dreb.send(&cmd);
    let (mut response, mut notify) = (None, None);
    while response.is_none() || notify.is_none() {
        let f = dreb.next_frame().expect("a frame");
        if is_response(&f) && f["id"] == cmd["id"] {
            response = Some(f);
        } else if let Some(text) = notify_text(&f).filter(|t| t.starts_with(prefix)) {
            notify = Some(text);
        }
    }
    (response.unwrap(), notify.unwrap())
}

#[test]
fn session_before_hooks_get_the_reference_payloads_and_cancel_or_supply() {
    let env = Env::with_scenario(scenario(
        json!({"turns": [{"text": ["reply"], "repeat": true}]}),
    ));
    // Keep almost nothing verbatim, so that the first exchange is summarised.
    env.write_settings(&json!({"compaction": {"keepRecentTokens": 1}}));
    let mut dreb = spawn_session_hooks(&env, &[], &[]);
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "one"}));
    dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "two"}));

    // session_before_switch: the target file; session_before_fork: the entry id.
    let locked = env.cwd().join("locked.jsonl");
    let (r, seen) = response_and_notify(
        &mut dreb,
        json!({"id": "sw", "type": "switch_session", "sessionPath": locked}),
        "switch ",
    );
    assert_eq!(seen, format!("switch resume {}", locked.display()));
    assert_eq!(r["data"], json!({"cancelled": true}), "{r}");
    let msgs = ok(&mut dreb, json!({"id": "fm", "type": "get_fork_messages"}));
    let first_user = msgs["data"]["messages"][0]["entryId"]
        .as_str()
        .unwrap()
        .to_string();
    let (r, seen) = response_and_notify(
        &mut dreb,
        json!({"id": "fk", "type": "fork", "entryId": first_user}),
        "fork ",
    );
    assert_eq!(seen, "fork one");
    assert_eq!(r["data"]["cancelled"], true, "{r}");

    // session_before_compact: the preparation and the branch, then a cancel.
    let (r, seen) = response_and_notify(
        &mut dreb,
        json!({"id": "c1", "type": "compact", "customInstructions": "cancel"}),
        "summarize=",
    );
    // One token kept: the cut falls inside the second turn (its user message is the turn prefix).
    assert!(
        seen.starts_with("summarize=one|reply prefix=1 split=true tokens="),
        "{seen}"
    );
    assert!(
        seen.ends_with(" previous=- read= keepRecent=1 branch=6 firstKept=reply"),
        "{seen}"
    );
    assert_eq!(r["error"], "Command failed: Compaction cancelled", "{r}");

    // A supplied compaction with its own first kept entry and size: no LLM call, written as given.
    let before = env.mock.requests().len();
    let (r, _) = response_and_notify(
        &mut dreb,
        json!({"id": "c2", "type": "compact", "customInstructions": "supply"}),
        "summarize=",
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(
        r["data"]["summary"],
        "Compacted by session_hooks: 2 messages"
    );
    assert_eq!(r["data"]["tokensBefore"], 4242);
    assert_eq!(r["data"]["details"], json!({"by": "session_hooks"}));
    assert_eq!(env.mock.requests().len(), before, "no LLM call");
    let file = session_file(&mut dreb);
    let entries = common::read_jsonl(&file);
    let compaction = entries.iter().find(|e| e["type"] == "compaction").unwrap();
    let second_user = entries
        .iter()
        .find(|e| e["type"] == "message" && e["message"]["content"][0]["text"] == "two")
        .unwrap()
        .clone();
    assert_eq!(compaction["firstKeptEntryId"], second_user["id"]);
    assert_eq!(compaction["fromHook"], true);

    // session_before_tree: the abandoned branch after the common ancestor; a supplied summary, then a cancel.
    let (r, seen) = response_and_notify(
        &mut dreb,
        json!({"id": "nt", "type": "navigate_tree", "targetId": first_user, "summarize": true, "label": "back"}),
        "tree ",
    );
    assert_eq!(r["data"]["cancelled"], false, "{r}");
    assert_eq!(
        seen,
        "tree common=one old=true left=reply|two|reply wants=true label=back"
    );
    let entries = common::read_jsonl(&file);
    let summary = entries
        .iter()
        .find(|e| e["type"] == "branch_summary")
        .unwrap();
    assert!(
        summary["summary"]
            .as_str()
            .unwrap()
            .starts_with("Left behind: reply, two, reply"),
        "{summary}"
    );
    assert_eq!(summary["fromHook"], true);
    let (r, _) = response_and_notify(
        &mut dreb,
        json!({"id": "nt2", "type": "navigate_tree", "targetId": second_user["id"], "label": "cancel"}),
        "tree ",
    );
    assert_eq!(r["data"]["cancelled"], true, "{r}");

    // session_before_tree overrides the request's instructions and label: the model is asked with the handler's
    // instructions instead of the default ones, and the summary entry gets the handler's label.
    let before = env.mock.requests().len();
    let (r, _) = response_and_notify(
        &mut dreb,
        json!({"id": "nt3", "type": "navigate_tree", "targetId": second_user["id"], "summarize": true,
               "customInstructions": "Summarize everything.", "label": "override"}),
        "tree ",
    );
    assert_eq!(r["data"]["cancelled"], false, "{r}");
    let requests = env.mock.requests();
    assert_eq!(requests.len(), before + 1, "one summary call");
    let asked = requests.last().unwrap().body.to_string();
    assert!(asked.contains("Only list the file names."), "{asked}");
    assert!(!asked.contains("Summarize everything."), "{asked}");
    assert!(
        !asked.contains("a conversation branch the user is leaving"),
        "the default instructions were replaced: {asked}"
    );
    let entries = common::read_jsonl(&file);
    let summary = entries
        .iter()
        .rfind(|e| e["type"] == "branch_summary")
        .unwrap();
    assert_eq!(summary["fromHook"], false, "{summary}");
    let label = entries.iter().rfind(|e| e["type"] == "label").unwrap();
    assert_eq!(
        (&label["targetId"], &label["label"]),
        (&summary["id"], &json!("relabelled")),
        "{label}"
    );

    // session_before_fork with skipConversationRestore: the fork happens (a new session file), but the agent keeps
    // the conversation it had.
    let kept =
        ok(&mut dreb, json!({"id": "m1", "type": "get_messages"}))["data"]["messages"].clone();
    // The branch summary is on the current branch, not on the path to the fork's entry: a restored conversation
    // would lose it.
    assert_eq!(
        kept.as_array().unwrap().last().unwrap()["role"],
        "branchSummary",
        "{kept}"
    );
    let (r, seen) = response_and_notify(
        &mut dreb,
        json!({"id": "fk2", "type": "fork", "entryId": second_user["id"]}),
        "fork ",
    );
    assert_eq!(seen, "fork two");
    assert_eq!(r["data"]["cancelled"], false, "{r}");
    assert_ne!(session_file(&mut dreb), file, "a new session file");
    let after =
        ok(&mut dreb, json!({"id": "m2", "type": "get_messages"}))["data"]["messages"].clone();
    assert_eq!(after, kept);
}

#[test]
fn input_editor_and_ask_are_answered_cancelled_and_time_out_and_the_ui_methods_reach_the_host() {
    let env = Env::new();
    let mut dreb = spawn(&env, &[], &[]);
    let request = |dreb: &mut Dreb, method: &str| -> Value {
        dreb.read_until(|f| f["type"] == "extension_ui_request" && f["method"] == method)
            .pop()
            .unwrap()
    };
    // Answered: the fire-and-forget methods arrive first, in order, then each dialog.
    dreb.send(&json!({"id": "f1", "type": "prompt", "message": "/forms"}));
    let status = request(&mut dreb, "setStatus");
    assert_eq!(
        (&status["statusKey"], &status["statusText"]),
        (&json!("sink"), &json!("working"))
    );
    let widget = request(&mut dreb, "setWidget");
    assert_eq!(widget["widgetLines"], json!(["line 1", "line 2"]));
    assert_eq!(widget["widgetPlacement"], "belowEditor");
    assert_eq!(request(&mut dreb, "setTitle")["title"], "kitchen sink");
    assert_eq!(request(&mut dreb, "set_editor_text")["text"], "prefilled");
    let input = request(&mut dreb, "input");
    assert_eq!(
        (&input["title"], &input["placeholder"]),
        (&json!("Name?"), &json!("your name"))
    );
    dreb.send(&json!({"type": "extension_ui_response", "id": input["id"], "value": "Ada"}));
    let editor = request(&mut dreb, "editor");
    assert_eq!(editor["prefill"], "draft");
    dreb.send(&json!({"type": "extension_ui_response", "id": editor["id"], "value": "edited"}));
    let ask = request(&mut dreb, "ask");
    assert_eq!(ask["title"], "Choose");
    assert_eq!(ask["questions"][0]["options"], json!(["x", "y"]));
    dreb.send(&json!({"type": "extension_ui_response", "id": ask["id"], "answers": [{"selected": ["y"]}]}));
    let cleared = request(&mut dreb, "setStatus");
    assert!(cleared.get("statusText").is_none(), "{cleared}");
    assert_eq!(
        next_notify(&mut dreb),
        "forms name=Ada text=edited answers=[{'selected': ['y'], 'skipped': False}]"
    );
    // Cancelled.
    dreb.send(&json!({"id": "f2", "type": "prompt", "message": "/forms"}));
    for method in ["input", "editor", "ask"] {
        let r = request(&mut dreb, method);
        dreb.send(&json!({"type": "extension_ui_response", "id": r["id"], "cancelled": true}));
    }
    assert_eq!(
        next_notify(&mut dreb),
        "forms name=None text=None answers=None"
    );
    // Timed out (the editor has no timeout in the protocol: answered).
    dreb.send(&json!({"id": "f3", "type": "prompt", "message": "/forms 200"}));
    assert_eq!(request(&mut dreb, "input")["timeout"], 200);
    let editor = request(&mut dreb, "editor");
    dreb.send(&json!({"type": "extension_ui_response", "id": editor["id"], "value": "kept"}));
    assert_eq!(request(&mut dreb, "ask")["timeout"], 200);
    assert_eq!(
        next_notify(&mut dreb),
        "forms name=None text=kept answers=None"
    );
}
