//! MCP servers end to end: the binary with the mock LLM, servers from the settings (`docs/mcp.md`):
//! `@modelcontextprotocol/server-everything` and a server on the official Python SDK
//! (`crates/dreb-mcp/tests/fixtures/py_server.py`), installed in `tests/mcp-peers` by `scripts/test-all.sh`.

mod common;

use std::path::PathBuf;

use common::{Dreb, Env, is_response, result_text, tool_end, tool_names};
use dreb_mock_llm::Scenario;
use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn everything_js() -> String {
    let p = root()
        .join("tests/mcp-peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        p.exists(),
        "{} is missing: run `npm ci` in tests/mcp-peers",
        p.display()
    );
    p.canonicalize().unwrap().to_string_lossy().into_owned()
}

fn py_server() -> Value {
    let py = root().join("tests/mcp-peers/.venv/bin/python");
    assert!(
        py.exists(),
        "{} is missing: create the venv in tests/mcp-peers",
        py.display()
    );
    let script = root().join("crates/dreb-mcp/tests/fixtures/py_server.py");
    json!({"command": py.to_string_lossy(), "args": [script.canonicalize().unwrap().to_string_lossy()]})
}

fn servers() -> Value {
    json!({
        "everything": {"command": "node", "args": [everything_js(), "stdio"]},
        "py": py_server(),
    })
}

/// Turns keyed by what the user asked; after a tool result the model says "done".
fn scenario() -> Scenario {
    serde_json::from_value(json!({"turns": [
        {"when": {"lastUserContains": "sum", "afterToolResult": false},
         "toolCalls": [{"name": "mcp__everything__get-sum", "arguments": {"a": 2, "b": 40}}]},
        {"when": {"lastUserContains": "image", "afterToolResult": false},
         "toolCalls": [{"name": "mcp__everything__get-tiny-image", "arguments": {}}]},
        {"when": {"lastUserContains": "long", "afterToolResult": false},
         "toolCalls": [{"name": "mcp__everything__trigger-long-running-operation", "arguments": {"duration": 30, "steps": 30}}]},
        {"when": {"lastUserContains": "color", "afterToolResult": false},
         "toolCalls": [{"name": "mcp__py__ask_color", "arguments": {}}]},
        {"when": {"lastUserContains": "unlucky", "afterToolResult": false},
         "toolCalls": [{"name": "mcp__py__add", "arguments": {"a": 13, "b": 1}}]},
        {"when": {"lastUserContains": "pid", "afterToolResult": false},
         "toolCalls": [{"name": "mcp__py__pid", "arguments": {}}]},
        {"when": {"afterToolResult": true}, "text": ["done"]},
        {"when": {"afterToolResult": false}, "text": ["plain answer"]}
    ]}))
    .unwrap()
}

fn env_with(settings: Value) -> Env {
    let env = Env::with_scenario(scenario());
    env.write_settings(&settings);
    env
}

fn call(dreb: &mut Dreb, cmd: Value) -> Value {
    dreb.send(&cmd);
    dreb.read_until(|f| is_response(f) && f["id"] == cmd["id"])
        .pop()
        .unwrap()
}

fn mcp_servers(dreb: &mut Dreb) -> Value {
    call(dreb, json!({"id": "r", "type": "get_resources"}))["data"]["mcpServers"].clone()
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')))
}

#[test]
fn mcp_tools_reach_the_model_and_results_come_back_with_status_prompts_and_no_orphans() {
    let env = env_with(json!({"mcpServers": servers()}));
    let mut dreb = env.spawn(&[]);

    // A prompt waits for the servers; the model is offered their tools with their schemas.
    let frames =
        dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "what is the sum?"}));
    let end = tool_end(&frames);
    assert_eq!(end["toolName"], "mcp__everything__get-sum");
    assert_eq!(end["isError"], false, "{end}");
    assert!(result_text(&end).contains("42"), "{end}");
    let requests = env.mock.requests();
    let names = tool_names(&requests[0].body);
    for expected in [
        "read",
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__py__add",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not offered: {names:?}"
        );
    }
    let second = requests[1].body.to_string();
    assert!(
        second.contains("42"),
        "the tool result reaches the model: {second}"
    );

    // An image result.
    let frames =
        dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "an image please"}));
    let end = tool_end(&frames);
    assert!(
        end["result"]["content"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "image"),
        "{end}"
    );

    // Status.
    let list = mcp_servers(&mut dreb);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    let everything = list.iter().find(|s| s["name"] == "everything").unwrap();
    assert_eq!(everything["state"], "ready");
    assert_eq!(everything["transport"], "stdio");
    assert_eq!(everything["scope"], "user");
    assert!(
        everything["toolCount"].as_i64().unwrap() >= 10,
        "{everything}"
    );

    // Prompts: listed, and expanded by `prompt`.
    let commands = call(&mut dreb, json!({"id": "c", "type": "get_commands"}));
    assert_eq!(commands["success"], true, "{commands}");
    let greet = commands["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "mcp__py__greet")
        .cloned()
        .unwrap_or_else(|| panic!("{commands}"));
    assert_eq!(
        greet,
        json!({"name": "mcp__py__greet", "description": "Greet someone.", "source": "mcp", "server": "py", "arguments": ["name"]})
    );
    dreb.exchange(
        &json!({"id": "p3", "type": "prompt", "message": "/mcp__py__greet Ada Lovelace"}),
    );
    let last = env.mock.requests().last().unwrap().body.to_string();
    assert!(last.contains("Please greet Ada Lovelace warmly."), "{last}");
    let r = call(
        &mut dreb,
        json!({"id": "p4", "type": "prompt", "message": "/mcp__py__greet"}),
    );
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "MCP prompt greet needs: name");

    // Disable / enable / unknown.
    let r = call(
        &mut dreb,
        json!({"id": "d", "type": "mcp_server", "name": "everything", "action": "disable"}),
    );
    assert_eq!(r["data"]["state"], "disabled", "{r}");
    assert_eq!(r["data"]["toolCount"], 0);
    let r = call(
        &mut dreb,
        json!({"id": "e", "type": "mcp_server", "name": "everything", "action": "enable"}),
    );
    assert_eq!(r["data"]["state"], "ready", "{r}");
    let r = call(
        &mut dreb,
        json!({"id": "u", "type": "mcp_server", "name": "nope", "action": "reconnect"}),
    );
    assert_eq!(
        r,
        json!({"id": "u", "type": "response", "command": "mcp_server", "success": false, "error": "MCP server not found: nope"})
    );

    // Exit stops the servers' processes.
    let frames = dreb.exchange(&json!({"id": "p5", "type": "prompt", "message": "pid"}));
    let pid: i32 = result_text(&tool_end(&frames)).trim().parse().unwrap();
    assert!(alive(pid));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    assert!(!alive(pid), "the MCP server outlived the agent");
}

#[test]
fn progress_becomes_tool_execution_update_and_abort_cancels_the_call() {
    let env = env_with(
        json!({"mcpServers": {"everything": {"command": "node", "args": [everything_js(), "stdio"]}}}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p", "type": "prompt", "message": "a long job"}));
    let frames = dreb.read_until(|f| f["type"] == "tool_execution_update");
    let update = frames.last().unwrap();
    assert_eq!(
        update["toolName"],
        "mcp__everything__trigger-long-running-operation"
    );
    assert_eq!(
        update["partialResult"]["details"]["total"], 30.0,
        "{update}"
    );
    dreb.send(&json!({"id": "a", "type": "abort"}));
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    let end = tool_end(&frames);
    assert_eq!(end["isError"], true, "{end}");
    // The connection keeps serving after the cancellation.
    let r = call(&mut dreb, json!({"id": "s", "type": "get_resources"}));
    assert_eq!(r["data"]["mcpServers"][0]["state"], "ready");
}

#[test]
fn an_elicitation_becomes_extension_ui_dialogs_and_the_answer_goes_back() {
    let env = env_with(json!({"mcpServers": {"py": py_server()}}));
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p", "type": "prompt", "message": "pick a color"}));
    let mut answers = vec![
        ("confirm", json!({"confirmed": true})),
        ("input", json!({"value": "teal"})),
        ("input", json!({"value": "7"})),
    ]
    .into_iter();
    let mut titles = Vec::new();
    let end = loop {
        let frames = dreb.read_until(|f| {
            f["type"] == "tool_execution_end"
                || (f["type"] == "extension_ui_request" && f["method"] != "notify")
        });
        let last = frames.last().unwrap().clone();
        if last["type"] == "tool_execution_end" {
            break last;
        }
        let (method, answer) = answers.next().expect("more dialogs than expected");
        assert_eq!(last["method"], method, "{last}");
        titles.push(last["title"].as_str().unwrap().to_string());
        let mut reply = json!({"type": "extension_ui_response", "id": last["id"]});
        for (k, v) in answer.as_object().unwrap() {
            reply[k] = v.clone();
        }
        dreb.send(&reply);
    };
    assert_eq!(titles[0], "MCP server \"py\" asks");
    assert_eq!(result_text(&end), "color=teal shade=7");
}

#[test]
fn tools_filter_untrusted_project_servers_and_startup_failures() {
    let env = env_with(json!({"mcpServers": {
        "py": py_server(),
        "missing": {"command": "/nonexistent/mcp-server"}
    }}));
    // A project .mcp.json in an untrusted project is not started.
    std::fs::write(
        env.cwd().join(".mcp.json"),
        json!({"mcpServers": {"repo": {"command": "sh", "args": ["-c", "touch started-by-repo"]}}})
            .to_string(),
    )
    .unwrap();
    let mut dreb = env.spawn(&["--tools", "read,mcp__py__add"]);
    let frames = dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    // The server that cannot start is reported to the host.
    let error = frames
        .iter()
        .chain(dreb.seen.iter())
        .find(|f| f["type"] == "extension_error")
        .cloned()
        .unwrap_or_else(|| panic!("no extension_error: {frames:#?}"));
    assert_eq!(error["extensionPath"], "mcp:missing");
    assert_eq!(error["event"], "startup");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .starts_with("cannot start /nonexistent/mcp-server"),
        "{error}"
    );
    // `--tools` names the MCP tools offered.
    let names = tool_names(&env.mock.requests()[0].body);
    assert!(names.contains(&"mcp__py__add".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n == "mcp__py__hang"), "{names:?}");
    let list = mcp_servers(&mut dreb);
    let by_name = |n: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == n)
            .cloned()
            .unwrap()
    };
    assert_eq!(by_name("py")["state"], "ready");
    assert_eq!(by_name("missing")["state"], "failed");
    let repo = by_name("repo");
    assert_eq!(repo["state"], "skipped");
    assert_eq!(repo["scope"], "mcp.json");
    assert!(
        repo["error"].as_str().unwrap().contains("trusted project"),
        "{repo}"
    );
    assert!(repo.get("transport").is_none());
    assert!(!env.cwd().join("started-by-repo").exists());
}

#[test]
fn without_servers_get_resources_keeps_the_reference_shape() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    let r = call(&mut dreb, json!({"id": "r", "type": "get_resources"}));
    assert!(r["data"].get("mcpServers").is_none(), "{r}");
}

#[test]
fn extension_tool_hooks_see_mcp_tools() {
    let env = env_with(json!({"mcpServers": {"py": py_server()}}));
    let guard = common::local_fixture("extensions/mcp_guard.py");
    let pp = root().join("clients/python/src").canonicalize().unwrap();
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-e",
            guard.to_str().unwrap(),
        ],
        &[("PYTHONPATH", pp.to_str().unwrap())],
    );
    let frames =
        dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "an unlucky addition"}));
    let end = tool_end(&frames);
    assert_eq!(end["toolName"], "mcp__py__add");
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(result_text(&end), "13 is unlucky");
}
