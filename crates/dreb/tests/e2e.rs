//! End-to-end scenarios through the real binary and the mock LLM over HTTP: tool calls on all four wire formats,
//! steering during a tool call, abort during a slow stream, and fork / navigate_tree on a real session file.

mod common;

use common::{Dreb, Env, is_response};
use dreb_mock_llm::{Scenario, Turn, When};
use serde_json::{Value, json};

/// Text of the last assistant message in an `agent_end`.
fn last_assistant(agent_end: &Value) -> Value {
    agent_end["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .cloned()
        .unwrap()
}

fn text_of(message: &Value) -> String {
    message["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

fn event_types(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|f| match f["type"].as_str().unwrap() {
            "message_update" => format!(
                "message_update {}",
                f["assistantMessageEvent"]["type"].as_str().unwrap()
            ),
            "response" => format!("response {}", f["command"].as_str().unwrap_or("?")),
            t => t.to_string(),
        })
        .collect()
}

fn tool_call_round_trip(env: &Env, provider: &str, model: &str, path: &str) -> Vec<String> {
    let mut dreb = env.spawn_raw(
        &["--mode", "rpc", "--provider", provider, "--model", model],
        &[],
    );
    let frames = dreb.exchange(
        &json!({"id": "p1", "type": "prompt", "message": "Run it [[tool=bash:echo hi]]"}),
    );
    // The acknowledgement is not ordered against the run's events (under load it can follow agent_start, see
    // e2e_flows.rs), so it is checked on its own and left out of the event order.
    let responses: Vec<&Value> = frames.iter().filter(|f| is_response(f)).collect();
    assert_eq!(
        responses,
        [&json!({"id": "p1", "type": "response", "command": "prompt", "success": true})]
    );
    let tool_end = frames
        .iter()
        .find(|f| f["type"] == "tool_execution_end")
        .expect("tool_execution_end");
    assert_eq!(tool_end["toolName"], "bash");
    assert_eq!(tool_end["isError"], false);
    assert_eq!(text_of(&tool_end["result"]).trim(), "hi");
    let end = frames.last().unwrap();
    assert_eq!(text_of(&last_assistant(end)), "Tool finished; done.");
    let (code, rest, _) = dreb.finish();
    assert_eq!(code, 0);
    assert!(rest.is_empty(), "{rest:?}");
    // Two real HTTP requests on the right wire; the second carries the tool's output back.
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests.iter().all(|r| r.path == path),
        "{:?}",
        requests.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    // The conversation is under `messages`, `input` or `contents` depending on the wire.
    let second = requests[1].body.to_string();
    assert!(
        second.contains("hi\\n") || second.contains("\"hi\""),
        "{second}"
    );
    let events: Vec<Value> = frames.iter().filter(|f| !is_response(f)).cloned().collect();
    let kinds = event_types(&events);
    // Every wire gives the same event order; only the number of streamed deltas differs.
    let mut collapsed = kinds.clone();
    collapsed.dedup();
    assert_eq!(collapsed, TOOL_ROUND_TRIP_ORDER, "{kinds:#?}");
    kinds
}

/// A prompt whose reply calls `bash`, then a text reply after the tool result (repeated events collapsed).
const TOOL_ROUND_TRIP_ORDER: &[&str] = &[
    "agent_start",
    "turn_start",
    "message_start",
    "message_end",
    "message_start",
    "message_update toolcall_start",
    "message_update toolcall_delta",
    "message_update toolcall_end",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "message_start",
    "message_end",
    "turn_end",
    "turn_start",
    "message_start",
    "message_update text_start",
    "message_update text_delta",
    "message_update text_end",
    "message_end",
    "turn_end",
    "agent_end",
];

#[test]
fn tool_call_over_openai_completions() {
    let kinds = tool_call_round_trip(&Env::new(), "mock", "mock-model", "/v1/chat/completions");
    insta::assert_json_snapshot!(kinds);
}

#[test]
fn tool_call_over_anthropic_messages() {
    let kinds = tool_call_round_trip(&Env::new(), "mock-anthropic", "mock-claude", "/v1/messages");
    insta::assert_json_snapshot!(kinds);
}

fn all_wires() -> Env {
    Env::with_setup("models-all-wires.json", Scenario::default(), &json!({}))
}

#[test]
fn tool_call_over_openai_responses() {
    let kinds = tool_call_round_trip(&all_wires(), "mock-responses", "mock-gpt", "/v1/responses");
    insta::assert_json_snapshot!(kinds);
}

#[test]
fn tool_call_over_google_generative_ai() {
    let kinds = tool_call_round_trip(
        &all_wires(),
        "mock-google",
        "mock-gemini",
        "/v1beta/models/mock-gemini:streamGenerateContent?alt=sse",
    );
    insta::assert_json_snapshot!(kinds);
}

#[test]
fn steer_during_a_tool_call() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    // The tool waits for a file the test creates once the steer was accepted: no timing involved.
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Wait [[tool=bash:while [ ! -e go ]; do sleep 0.02; done; echo hi]]"}));
    dreb.read_until(|f| f["type"] == "tool_execution_start");
    dreb.send(&json!({"id": "s1", "type": "steer", "message": "Reply with just: steered"}));
    let steer = dreb.read_until(|f| f["id"] == "s1").pop().unwrap();
    assert_eq!(
        steer,
        json!({"id": "s1", "type": "response", "command": "steer", "success": true})
    );
    std::fs::write(env.cwd().join("go"), "").unwrap();
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    let end = frames.last().unwrap();
    let messages = end["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // The steering message is delivered after the tool result, before the next LLM call.
    assert_eq!(
        roles,
        ["user", "assistant", "toolResult", "user", "assistant"],
        "{messages:#?}"
    );
    assert_eq!(text_of(&messages[3]), "Reply with just: steered");
    assert_eq!(text_of(&messages[4]), "steered");
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].body["messages"]
            .to_string()
            .contains("Reply with just: steered")
    );
    // The system prompt names the UI (the mode's: rpc) and, last, the model.
    let system = &requests[0].body["messages"][0];
    assert_eq!(system["role"], "system", "{system}");
    let system = system["content"].as_str().unwrap();
    assert!(system.contains("\nUI: RPC ("), "{system}");
    assert!(
        system.ends_with("\nYou are running on: mock/mock-model"),
        "{system}"
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn abort_during_a_slow_stream() {
    // 200 deltas, 100 ms apart: far longer than the test waits before aborting.
    let slow = Turn {
        when: Some(When {
            last_user_contains: Some("slowly".into()),
            ..Default::default()
        }),
        text: vec!["tick ".into(); 200],
        delta_delay_ms: 100,
        ..Default::default()
    };
    let env = Env::with_scenario(Scenario {
        turns: vec![slow],
        ..Default::default()
    });
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Count slowly"}));
    dreb.read_until(|f| f["assistantMessageEvent"]["type"] == "text_delta");
    dreb.send(&json!({"id": "a1", "type": "abort"}));
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    let abort = frames.iter().find(|f| f["id"] == "a1");
    let end = frames.last().unwrap();
    let assistant = last_assistant(end);
    assert_eq!(assistant["stopReason"], "aborted", "{assistant:#}");
    assert!(text_of(&assistant).len() < 200 * 5);
    // The abort response may follow agent_end; either way there is exactly one.
    let abort = match abort {
        Some(a) => a.clone(),
        None => dreb.read_until(|f| f["id"] == "a1").pop().unwrap(),
    };
    assert_eq!(
        abort,
        json!({"id": "a1", "type": "response", "command": "abort", "success": true})
    );
    // Still serving: the next prompt runs normally.
    let next =
        dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "Reply with just: after"}));
    assert_eq!(text_of(&last_assistant(next.last().unwrap())), "after");
    let (code, rest, _) = dreb.finish();
    assert_eq!(code, 0);
    assert!(rest.iter().all(|f| !is_response(f)), "{rest:?}");
}

fn response(dreb: &mut Dreb, cmd: Value) -> Value {
    let frames = dreb.exchange(&cmd);
    let r = frames
        .into_iter()
        .find(|f| f["id"] == cmd["id"] && is_response(f))
        .unwrap();
    assert_eq!(r["success"], true, "{r}");
    r
}

fn find_node<'a>(nodes: &'a [Value], id: &str) -> Option<&'a Value> {
    nodes.iter().find_map(|n| {
        if n["id"] == id {
            Some(n)
        } else {
            find_node(
                n["children"].as_array().map(Vec::as_slice).unwrap_or(&[]),
                id,
            )
        }
    })
}

#[test]
fn navigate_tree_and_fork_on_a_real_session_file() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "Reply with just: alpha"}));
    dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "Reply with just: beta"}));
    let fm = response(&mut dreb, json!({"id": "fm1", "type": "get_fork_messages"}));
    let entry = |text: &str| {
        fm["data"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["text"] == text)
            .unwrap()["entryId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (alpha, beta) = (
        entry("Reply with just: alpha"),
        entry("Reply with just: beta"),
    );

    // Back to before "alpha": the editor gets its text, the label lands on it, and a second branch grows.
    let nav = response(
        &mut dreb,
        json!({"id": "n1", "type": "navigate_tree", "targetId": alpha, "label": "first"}),
    );
    assert_eq!(
        nav["data"],
        json!({"cancelled": false, "editorText": "Reply with just: alpha"})
    );
    dreb.exchange(&json!({"id": "p3", "type": "prompt", "message": "Reply with just: gamma"}));
    let tree = response(&mut dreb, json!({"id": "t1", "type": "get_tree"}));
    let roots = tree["data"]["roots"].as_array().unwrap();
    let alpha_node = find_node(roots, &alpha).expect("alpha in tree");
    assert_eq!(alpha_node["label"], "first");
    let parent =
        find_node(roots, alpha_node["parentId"].as_str().unwrap()).expect("alpha's parent");
    let branches: Vec<&str> = parent["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        branches.len(),
        2,
        "two branches under alpha's parent: {parent:#}"
    );

    let state = response(&mut dreb, json!({"id": "s1", "type": "get_state"}));
    let original = state["data"]["sessionFile"].as_str().unwrap().to_string();
    let original_text = std::fs::read_to_string(&original).unwrap();
    assert!(original_text.contains("\"label\":\"first\""));

    // Fork at "beta": a new session file whose header names the original, holding the path up to beta's parent.
    let fork = response(
        &mut dreb,
        json!({"id": "f1", "type": "fork", "entryId": beta}),
    );
    assert_eq!(
        fork["data"],
        json!({"text": "Reply with just: beta", "cancelled": false})
    );
    dreb.exchange(&json!({"id": "p4", "type": "prompt", "message": "Reply with just: forked"}));
    let state = response(&mut dreb, json!({"id": "s2", "type": "get_state"}));
    let forked = state["data"]["sessionFile"].as_str().unwrap().to_string();
    assert_ne!(forked, original);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);

    let forked_text = std::fs::read_to_string(&forked).unwrap();
    let header: Value = serde_json::from_str(forked_text.lines().next().unwrap()).unwrap();
    assert_eq!(header["type"], "session");
    assert_eq!(header["parentSession"], original.as_str());
    assert!(
        forked_text.contains("Reply with just: alpha")
            && forked_text.contains("Reply with just: forked")
    );
    assert!(!forked_text.contains("Reply with just: beta") && !forked_text.contains("gamma"));
    // Forking leaves the original alone.
    assert_eq!(std::fs::read_to_string(&original).unwrap(), original_text);

    // Reopening the original with --session gives the same tree.
    let mut again = env.spawn(&["--session", &original]);
    let tree_again = response(&mut again, json!({"id": "t1", "type": "get_tree"}));
    assert_eq!(tree_again["data"], tree["data"]);
    let (code, _, _) = again.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_local_server_on_loopback_is_used_without_an_api_key() {
    let env = Env::new();
    // As an Ollama or llama.cpp user writes it: no apiKey.
    std::fs::write(
        env.agent_dir().join("models.json"),
        json!({"providers": {"local": {"baseUrl": format!("{}/v1", env.mock.base_url()),
            "api": "openai-completions", "models": [{"id": "qwen3:8b"}]}}})
        .to_string(),
    )
    .unwrap();
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "local",
            "--model",
            "qwen3:8b",
        ],
        &[],
    );
    let models = dreb.exchange(&json!({"id": "m", "type": "get_available_models"}));
    let listed = &models.last().unwrap()["data"]["models"];
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["provider"] == "local"),
        "{listed}"
    );
    let frames = dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hello"}));
    let end = frames.last().unwrap();
    assert_eq!(end["type"], "agent_end");
    assert_ne!(last_assistant(end)["stopReason"], "error", "{end:#}");
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("authorization"), None);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}
