//! `dreb --mode acp` end to end: the real binary, the mock LLM on loopback, JSON-RPC 2.0 on stdin/stdout. Every
//! stdout line must be one JSON-RPC 2.0 object; every prompt is checked for the ordering rule (no update of a turn
//! after its response).

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};

use common::{Env, HANG_GUARD, REFERENCE_PACKAGE_DIR};
use dreb_mock_llm::{Scenario, ScriptedToolCall, Turn, When};
use serde_json::{Value, json};

/// dreb's stdin, shared with the threads that answer our test client's deferred requests.
type Stdin = Arc<Mutex<Option<ChildStdin>>>;

fn write_to(stdin: &Stdin, line: &str) {
    let mut stdin = stdin.lock().unwrap();
    let stdin = stdin.as_mut().expect("stdin is open");
    stdin.write_all(line.as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.flush().unwrap();
}

struct Acp {
    child: Child,
    stdin: Stdin,
    lines: Receiver<Result<Value, String>>,
    next_id: i64,
}

impl Acp {
    fn spawn(env: &Env, extra: &[&str]) -> Acp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dreb"))
            .args([
                "--mode",
                "acp",
                "--provider",
                "mock",
                "--model",
                "mock-model",
            ])
            .args(extra)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", env.home.path())
            .env("DREB_CODING_AGENT_DIR", env.agent_dir())
            .env("DREB_PACKAGE_DIR", REFERENCE_PACKAGE_DIR)
            .current_dir(env.cwd())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn dreb");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).split(b'\n') {
                let Ok(line) = line else { break };
                // Nothing but JSON-RPC 2.0 objects on stdout.
                let parsed = match serde_json::from_slice::<Value>(&line) {
                    Ok(v) if v.get("jsonrpc") == Some(&json!("2.0")) => Ok(v),
                    Ok(v) => Err(format!("not a JSON-RPC 2.0 message: {v}")),
                    Err(e) => Err(format!(
                        "stdout line is not JSON ({e}): {:?}",
                        String::from_utf8_lossy(&line)
                    )),
                };
                if tx.send(parsed).is_err() {
                    break;
                }
            }
        });
        Acp {
            stdin: Arc::new(Mutex::new(child.stdin.take())),
            child,
            lines,
            next_id: 100,
        }
    }

    fn write_line(&mut self, line: &str) {
        write_to(&self.stdin, line);
    }

    fn send(&mut self, v: &Value) {
        self.write_line(&v.to_string());
    }

    fn request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    fn next(&mut self) -> Value {
        match self.lines.recv_timeout(HANG_GUARD) {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => panic!("{e}"),
            Err(e) => panic!("no message from dreb: {e}"),
        }
    }

    /// Reads until the response to `id`; the messages before it (updates, our requests answered by `answer`).
    fn until_response(
        &mut self,
        id: i64,
        mut answer: impl FnMut(&Value) -> Value,
    ) -> (Vec<Value>, Value) {
        self.until_response_deferred(id, |m| Some(answer(m)))
    }

    /// As [`Acp::until_response`]; a request `answer` returns `None` for is answered later (by someone else).
    fn until_response_deferred(
        &mut self,
        id: i64,
        mut answer: impl FnMut(&Value) -> Option<Value>,
    ) -> (Vec<Value>, Value) {
        let mut seen = Vec::new();
        loop {
            let m = self.next();
            if m.get("method").is_some() && m.get("id").is_some() {
                if let Some(result) = answer(&m) {
                    let reply = json!({"jsonrpc": "2.0", "id": m["id"], "result": result});
                    self.send(&reply);
                }
                seen.push(m);
            } else if m.get("method").is_none() && m["id"] == json!(id) {
                return (seen, m);
            } else {
                seen.push(m);
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        let (_, response) = self.until_response(id, |m| panic!("unexpected request {m}"));
        response
    }

    fn initialize(&mut self) -> Value {
        let r = self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        );
        r["result"].clone()
    }

    fn new_session(&mut self, env: &Env) -> String {
        let r = self.call("session/new", json!({"cwd": env.cwd(), "mcpServers": []}));
        r["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {r}"))
            .to_string()
    }

    /// A prompt to its response; the session's updates before it. Checks the ordering rule: a request sent right
    /// after the response is answered with no update of the turn in between.
    fn prompt(
        &mut self,
        session: &str,
        text: &str,
        answer: impl FnMut(&Value) -> Value,
    ) -> (Vec<Value>, Value) {
        let id = self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        );
        let (seen, response) = self.until_response(id, answer);
        let probe = self.request("session/list", json!({}));
        let (after, _) = self.until_response(probe, |m| panic!("unexpected request {m}"));
        assert!(
            after.is_empty(),
            "messages after the prompt's response: {after:?}"
        );
        (seen, response)
    }

    fn finish(mut self) -> i32 {
        drop(self.stdin.lock().unwrap().take());
        self.child.wait().unwrap().code().unwrap_or(-1)
    }
}

fn updates<'a>(seen: &'a [Value], kind: &str) -> Vec<&'a Value> {
    seen.iter()
        .filter(|m| {
            m["method"] == "session/update" && m["params"]["update"]["sessionUpdate"] == kind
        })
        .map(|m| &m["params"]["update"])
        .collect()
}

fn chunk_text(seen: &[Value], kind: &str) -> String {
    updates(seen, kind)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

fn turn(when: &str, f: impl FnOnce(&mut Turn)) -> Turn {
    let mut t = Turn {
        when: Some(When {
            last_user_contains: Some(when.into()),
            after_tool_result: Some(false),
        }),
        ..Default::default()
    };
    f(&mut t);
    t
}

fn after_tool(text: &str) -> Turn {
    Turn {
        when: Some(When {
            after_tool_result: Some(true),
            ..Default::default()
        }),
        repeat: true,
        text: vec![text.into()],
        ..Default::default()
    }
}

fn call(name: &str, arguments: Value) -> ScriptedToolCall {
    ScriptedToolCall {
        id: None,
        name: name.into(),
        arguments: arguments.as_object().unwrap().clone(),
        chunk_size: None,
    }
}

#[test]
fn initialize_is_honest_and_malformed_messages_get_json_rpc_errors() {
    let env = Env::new();
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.write_line("{this is not json");
    acp.write_line("[1, 2]");
    acp.write_line(r#"{"jsonrpc":"1.0","id":7,"method":"initialize","params":{}}"#);
    acp.write_line(r#"{"jsonrpc":"2.0","id":8,"method":"no/such/method","params":{}}"#);
    acp.write_line(
        r#"{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":1}}"#,
    );
    acp.write_line(r#"{"jsonrpc":"2.0","id":10,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#);
    // A notification is never answered, not even when unknown.
    acp.write_line(r#"{"jsonrpc":"2.0","method":"no/such/notification","params":{}}"#);
    let mut errors = Vec::new();
    for _ in 0..6 {
        let m = acp.next();
        errors.push((m["id"].clone(), m["error"]["code"].clone()));
    }
    errors.sort_by_key(|(id, _)| id.to_string());
    assert_eq!(
        errors,
        [
            (json!(10), json!(-32002)),
            (json!(7), json!(-32600)),
            (json!(8), json!(-32601)),
            (json!(9), json!(-32602)),
            (Value::Null, json!(-32700)),
            (Value::Null, json!(-32600)),
        ]
    );
    // The process keeps serving.
    let init = acp.initialize();
    assert_eq!(init["protocolVersion"], 1);
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(caps["promptCapabilities"]["image"], true);
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(caps["promptCapabilities"]["audio"], false);
    assert_eq!(caps["mcpCapabilities"]["http"], true);
    assert_eq!(caps["mcpCapabilities"]["sse"], false);
    assert_eq!(init["authMethods"], json!([]));
    let probe = acp.request("session/list", json!({}));
    let (before, _) = acp.until_response(probe, |m| panic!("unexpected request {m}"));
    assert!(before.is_empty(), "an answer to a notification: {before:?}");
    assert_eq!(acp.finish(), 0);
}

#[test]
fn a_prompt_streams_thinking_text_and_an_edit_with_its_diff() {
    let scenario = Scenario {
        turns: vec![
            turn("fix the file", |t| {
                t.thinking = vec!["Let me ".into(), "look.".into()];
                t.text = vec!["Editing ".into(), "a.txt.".into()];
                t.tool_calls = vec![call(
                    "edit",
                    json!({"path": "a.txt", "oldText": "old line", "newText": "new line"}),
                )];
            }),
            after_tool("Done."),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    std::fs::write(env.cwd().join("a.txt"), "first\nold line\n").unwrap();
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.initialize();
    let session = acp.new_session(&env);
    let (seen, response) = acp.prompt(&session, "fix the file", |m| panic!("unexpected {m}"));
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(chunk_text(&seen, "agent_thought_chunk"), "Let me look.");
    assert_eq!(
        chunk_text(&seen, "agent_message_chunk"),
        "Editing a.txt.Done."
    );
    let path = env.cwd().join("a.txt").to_string_lossy().into_owned();
    let announced = updates(&seen, "tool_call");
    assert_eq!(announced.len(), 1);
    let described = announced[0];
    assert_eq!(described["kind"], "edit");
    assert_eq!(described["title"], "Edit a.txt");
    // `pending`, the default, which the schema leaves off the wire.
    assert!(described.get("status").is_none(), "{described}");
    assert_eq!(
        described["rawInput"],
        json!({"path": "a.txt", "oldText": "old line", "newText": "new line"})
    );
    assert_eq!(described["content"][0]["type"], "diff");
    assert_eq!(described["content"][0]["path"], path);
    assert_eq!(described["content"][0]["oldText"], "old line");
    assert_eq!(described["content"][0]["newText"], "new line");
    assert_eq!(described["locations"][0]["path"], path);
    let id = described["toolCallId"].clone();
    let calls = updates(&seen, "tool_call_update");
    assert!(calls.iter().all(|u| u["toolCallId"] == id));
    let statuses: Vec<_> = calls.iter().filter_map(|u| u["status"].as_str()).collect();
    assert_eq!(statuses, ["in_progress", "completed"]);
    let last = calls.last().unwrap();
    assert_eq!(last["locations"][0]["line"], 2);
    assert_eq!(last["content"][0]["type"], "diff");
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("a.txt")).unwrap(),
        "first\nnew line\n"
    );
    // The updates of the turn come in the order they happened: thinking, text, the tool call, the final text.
    let order: Vec<_> = seen
        .iter()
        .filter_map(|m| m["params"]["update"]["sessionUpdate"].as_str())
        .filter(|k| *k != "available_commands_update")
        .collect();
    let first_tool = order.iter().position(|k| *k == "tool_call").unwrap();
    assert!(order[..first_tool].contains(&"agent_thought_chunk"));
    assert_eq!(order.last(), Some(&"agent_message_chunk"));
    assert_eq!(acp.finish(), 0);
}

#[test]
fn the_permission_gate_asks_the_client_and_honours_each_answer() {
    let rm = json!({"command": "rm -r build"});
    let scenario = Scenario {
        turns: vec![
            turn("first", |t| t.tool_calls = vec![call("bash", rm.clone())]),
            turn("second", |t| t.tool_calls = vec![call("bash", rm.clone())]),
            turn("third", |t| t.tool_calls = vec![call("bash", rm.clone())]),
            after_tool("ok"),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    env.write_settings(&json!({"permissionGate": {"enabled": true, "timeoutMs": 0}}));
    let build = env.cwd().join("build");
    std::fs::create_dir_all(&build).unwrap();
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.initialize();
    let session = acp.new_session(&env);

    let mut asked = Vec::new();
    let (seen, response) = acp.prompt(&session, "first", |req| {
        asked.push(req.clone());
        json!({"outcome": {"outcome": "selected", "optionId": "reject"}})
    });
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(asked.len(), 1);
    let req = &asked[0]["params"];
    assert_eq!(asked[0]["method"], "session/request_permission");
    assert_eq!(req["sessionId"], session);
    let kinds: Vec<_> = req["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    // The request is about the bash call the editor was told of.
    let tool_id = &updates(&seen, "tool_call")[0]["toolCallId"];
    assert_eq!(&req["toolCall"]["toolCallId"], tool_id);
    assert_eq!(req["toolCall"]["kind"], "execute");
    assert!(build.exists(), "a blocked command ran");
    let failed = updates(&seen, "tool_call_update");
    assert_eq!(failed.last().unwrap()["status"], "failed");

    // The session's commands came once, first; an unchanged list is not sent again after a prompt.
    assert_eq!(updates(&seen, "available_commands_update").len(), 1);
    let mut asked = 0;
    let (seen, response) = acp.prompt(&session, "second", |_| {
        asked += 1;
        json!({"outcome": {"outcome": "selected", "optionId": "allow-always"}})
    });
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(asked, 1);
    assert!(!build.exists(), "an allowed command did not run");
    assert!(updates(&seen, "available_commands_update").is_empty());

    // Allowed for good: the same command runs without asking.
    std::fs::create_dir_all(&build).unwrap();
    let (seen, _) = acp.prompt(&session, "third", |m| panic!("asked again: {m}"));
    assert!(!build.exists());
    assert_eq!(
        updates(&seen, "tool_call_update").last().unwrap()["status"],
        "completed"
    );
    assert_eq!(acp.finish(), 0);
}

#[test]
fn cancel_mid_stream_ends_the_prompt_cancelled() {
    let scenario = Scenario {
        turns: vec![
            turn("long", |t| {
                t.text = (0..200).map(|i| format!("word{i} ")).collect();
                t.delta_delay_ms = 50;
            }),
            turn("again", |t| t.text = vec!["back".into()]),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.initialize();
    let session = acp.new_session(&env);
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "long"}]}),
    );
    // Cancel once the reply is streaming.
    loop {
        let m = acp.next();
        if m["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            break;
        }
    }
    acp.notify("session/cancel", json!({"sessionId": session}));
    let (seen, response) = acp.until_response(id, |m| panic!("unexpected {m}"));
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    assert!(chunk_text(&seen, "agent_message_chunk").len() < 200 * 6);
    let probe = acp.request("session/list", json!({}));
    let (after, _) = acp.until_response(probe, |m| panic!("unexpected {m}"));
    assert!(after.is_empty(), "updates after the response: {after:?}");
    // The session still serves the next prompt.
    let (_, response) = acp.prompt(&session, "hello again", |m| panic!("unexpected {m}"));
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(acp.finish(), 0);
}

#[test]
fn a_stored_session_is_listed_and_loaded_with_its_history() {
    let scenario = Scenario {
        turns: vec![turn("remember", |t| {
            t.text = vec!["I will remember.".into()]
        })],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    let mut acp = Acp::spawn(&env, &[]);
    acp.initialize();
    let session = acp.new_session(&env);
    let (_, response) = acp.prompt(&session, "remember the word kiwi", |m| panic!("{m}"));
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(acp.finish(), 0);

    let mut acp = Acp::spawn(&env, &[]);
    acp.initialize();
    let list = acp.call("session/list", json!({"cwd": env.cwd()}));
    let sessions = list["result"]["sessions"].as_array().unwrap();
    let listed = sessions
        .iter()
        .find(|s| s["sessionId"] == session)
        .unwrap_or_else(|| panic!("not listed: {list}"));
    assert_eq!(listed["title"], "remember the word kiwi");
    assert_eq!(listed["cwd"], env.cwd().to_string_lossy().as_ref());
    let id = acp.request(
        "session/load",
        json!({"sessionId": session, "cwd": env.cwd(), "mcpServers": []}),
    );
    let (seen, response) = acp.until_response(id, |m| panic!("{m}"));
    assert!(response.get("result").is_some(), "{response}");
    assert_eq!(
        chunk_text(&seen, "user_message_chunk"),
        "remember the word kiwi"
    );
    assert_eq!(chunk_text(&seen, "agent_message_chunk"), "I will remember.");
    // The loaded session takes prompts.
    let (_, response) = acp.prompt(&session, "and now?", |m| panic!("{m}"));
    assert_eq!(response["result"]["stopReason"], "end_turn");
    let missing = acp.call(
        "session/load",
        json!({"sessionId": "no-such-session", "cwd": env.cwd(), "mcpServers": []}),
    );
    assert_eq!(missing["error"]["code"], -32002);
    assert_eq!(acp.finish(), 0);

    // session/resume opens it without replaying the conversation.
    let mut acp = Acp::spawn(&env, &[]);
    let init = acp.initialize();
    assert!(init["agentCapabilities"]["sessionCapabilities"]["resume"].is_object());
    let id = acp.request(
        "session/resume",
        json!({"sessionId": session, "cwd": env.cwd(), "mcpServers": []}),
    );
    let (seen, response) = acp.until_response(id, |m| panic!("{m}"));
    assert!(response["result"]["configOptions"].is_array(), "{response}");
    assert!(seen.is_empty(), "replayed on resume: {seen:?}");
    let (seen, response) = acp.prompt(&session, "and now?", |m| panic!("{m}"));
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(updates(&seen, "user_message_chunk").is_empty());
    assert_eq!(acp.finish(), 0);
}

#[test]
fn the_task_list_is_a_plan_and_the_model_is_a_config_option() {
    let scenario = Scenario {
        turns: vec![
            turn("plan", |t| {
                t.tool_calls = vec![call(
                    "tasks_update",
                    json!({"tasks": [
                        {"id": "1", "title": "Read the code", "status": "completed"},
                        {"id": "2", "title": "Fix the bug", "status": "in_progress"}
                    ]}),
                )]
            }),
            after_tool("Planned."),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.initialize();
    let r = acp.call("session/new", json!({"cwd": env.cwd(), "mcpServers": []}));
    let session = r["result"]["sessionId"].as_str().unwrap().to_string();
    let options = r["result"]["configOptions"].as_array().unwrap();
    let model = options.iter().find(|o| o["id"] == "model").unwrap();
    assert_eq!(model["category"], "model");
    assert_eq!(model["currentValue"], "mock/mock-model");
    let values: Vec<_> = model["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert!(values.contains(&"mock-anthropic/mock-claude"), "{values:?}");

    let (seen, _) = acp.prompt(&session, "plan it", |m| panic!("{m}"));
    let plans = updates(&seen, "plan");
    assert_eq!(plans.len(), 1);
    assert_eq!(
        plans[0]["entries"],
        json!([
            {"content": "Read the code", "priority": "medium", "status": "completed"},
            {"content": "Fix the bug", "priority": "medium", "status": "in_progress"}
        ])
    );

    let set = acp.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "mock-anthropic/mock-claude"}),
    );
    let model = set["result"]["configOptions"]
        .as_array()
        .unwrap_or_else(|| panic!("{set}"))
        .iter()
        .find(|o| o["id"] == "model")
        .unwrap()
        .clone();
    assert_eq!(model["currentValue"], "mock-anthropic/mock-claude");
    let bad = acp.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "colour", "value": "red"}),
    );
    assert_eq!(bad["error"]["code"], -32602);
    assert_eq!(acp.finish(), 0);
}

#[test]
fn ask_user_questions_are_permission_requests_and_the_choice_reaches_the_agent() {
    let scenario = Scenario {
        turns: vec![
            turn("choose", |t| {
                t.tool_calls = vec![call(
                    "ask_user",
                    json!({"questions": [{"question": "Which database?", "options": ["SQLite", "Postgres"]}]}),
                )]
            }),
            after_tool("Using it."),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.initialize();
    let session = acp.new_session(&env);
    let mut asked = Vec::new();
    let (seen, response) = acp.prompt(&session, "choose one", |req| {
        asked.push(req["params"].clone());
        json!({"outcome": {"outcome": "selected", "optionId": "option-1"}})
    });
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(asked.len(), 1);
    let names: Vec<_> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["SQLite", "Postgres"]);
    assert_eq!(asked[0]["toolCall"]["title"], "Which database?");
    let call_id = &updates(&seen, "tool_call")[0]["toolCallId"];
    assert_eq!(&asked[0]["toolCall"]["toolCallId"], call_id);
    // The tool's result (what the agent reads) carries the chosen option.
    let done = updates(&seen, "tool_call_update");
    let result = done.last().unwrap();
    assert_eq!(result["status"], "completed");
    assert!(
        result["content"].to_string().contains("Postgres"),
        "{result}"
    );
    assert_eq!(acp.finish(), 0);
}

#[test]
fn with_the_clients_fs_methods_reads_and_edits_go_to_the_editors_buffers() {
    let scenario = Scenario {
        turns: vec![
            turn("open", |t| {
                t.tool_calls = vec![call("read", json!({"path": "a.txt"}))]
            }),
            turn("change", |t| {
                t.tool_calls = vec![call(
                    "edit",
                    json!({"path": "a.txt", "oldText": "unsaved", "newText": "edited"}),
                )]
            }),
            after_tool("ok"),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    let file = env.cwd().join("a.txt");
    std::fs::write(&file, "saved on disk\n").unwrap();
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    let init = acp.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}}}),
    );
    assert!(init.get("result").is_some());
    let session = acp.new_session(&env);
    let path = file.to_string_lossy().into_owned();
    let mut buffer = "unsaved buffer\n".to_string();
    let mut editor = |req: &Value| -> Value {
        let p = &req["params"];
        assert_eq!(p["sessionId"].as_str(), Some(session.as_str()));
        assert_eq!(p["path"], path.as_str());
        match req["method"].as_str().unwrap() {
            "fs/read_text_file" => json!({"content": buffer}),
            "fs/write_text_file" => {
                buffer = p["content"].as_str().unwrap().to_string();
                json!({})
            }
            other => panic!("unexpected {other}"),
        }
    };
    let (seen, _) = acp.prompt(&session, "open it", &mut editor);
    let read = updates(&seen, "tool_call_update");
    assert!(
        read.last().unwrap()["content"]
            .to_string()
            .contains("unsaved buffer"),
        "the agent did not read the buffer: {read:?}"
    );
    let (seen, _) = acp.prompt(&session, "change it", &mut editor);
    assert_eq!(
        updates(&seen, "tool_call_update").last().unwrap()["status"],
        "completed"
    );
    assert_eq!(buffer, "edited buffer\n");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "saved on disk\n");
    assert_eq!(acp.finish(), 0);
}

#[test]
fn a_permission_request_is_withdrawn_when_its_dialog_times_out() {
    let rm = json!({"command": "rm -r build"});
    let scenario = Scenario {
        turns: vec![
            turn("first", |t| t.tool_calls = vec![call("bash", rm.clone())]),
            after_tool("ok"),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    // The gate's own timeout decides (the client never answers): the request must be withdrawn.
    env.write_settings(&json!({"permissionGate": {"enabled": true, "timeoutMs": 300}}));
    std::fs::create_dir_all(env.cwd().join("build")).unwrap();
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.initialize();
    let session = acp.new_session(&env);
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "first"}]}),
    );
    let mut asked = None;
    let mut withdrawn = None;
    let response = loop {
        let m = acp.next();
        match m["method"].as_str() {
            Some("session/request_permission") => asked = Some(m["id"].clone()),
            Some("$/cancel_request") => withdrawn = Some(m["params"]["requestId"].clone()),
            _ if m["id"] == json!(id) => break m,
            _ => {}
        }
    };
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert!(asked.is_some(), "no permission request");
    assert_eq!(withdrawn, asked, "the unanswered request was not withdrawn");
    assert!(
        env.cwd().join("build").exists(),
        "an unconfirmed command ran"
    );
    // A late answer to the withdrawn request changes nothing; the agent keeps serving.
    acp.send(&json!({"jsonrpc": "2.0", "id": asked.unwrap(), "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}));
    let list = acp.call("session/list", json!({}));
    assert!(list.get("result").is_some());
    assert!(env.cwd().join("build").exists());
    assert_eq!(acp.finish(), 0);
}

#[test]
fn cancel_request_on_a_prompt_cancels_its_turn() {
    let scenario = Scenario {
        turns: vec![turn("long", |t| {
            t.text = (0..200).map(|i| format!("word{i} ")).collect();
            t.delta_delay_ms = 50;
        })],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.initialize();
    let session = acp.new_session(&env);
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "long"}]}),
    );
    loop {
        let m = acp.next();
        if m["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
            break;
        }
    }
    acp.notify("$/cancel_request", json!({"requestId": id}));
    let (_, response) = acp.until_response(id, |m| panic!("unexpected {m}"));
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    assert_eq!(acp.finish(), 0);
}

#[test]
fn the_clients_mcp_servers_are_started_and_their_tools_called() {
    // The MCP server on the official Python SDK (installed in tests/mcp-peers by scripts/test-all.sh).
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = root.join("tests/mcp-peers/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: create the venv in tests/mcp-peers",
        python.display()
    );
    let script = root
        .join("crates/dreb-mcp/tests/fixtures/py_server.py")
        .canonicalize()
        .unwrap();
    let scenario = Scenario {
        turns: vec![
            turn("add them", |t| {
                t.tool_calls = vec![call("mcp__py-tools__add", json!({"a": 40, "b": 2}))];
            }),
            after_tool("The sum is there."),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.initialize();
    // An ACP name with a space: tool names allow none, so it becomes `py-tools`.
    let r = acp.call(
        "session/new",
        json!({"cwd": env.cwd(), "mcpServers": [{
            "name": "py tools",
            "command": python,
            "args": [script],
            "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}]
        }]}),
    );
    let session = r["result"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    let (seen, response) = acp.prompt(&session, "add them", |m| panic!("unexpected {m}"));
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let done: Vec<&Value> = updates(&seen, "tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "completed")
        .collect();
    assert_eq!(done.len(), 1, "{seen:#?}");
    assert!(done[0].to_string().contains("42"), "{}", done[0]);
    let requests = env.mock.requests();
    let offered = requests[0].body["tools"].to_string();
    assert!(offered.contains("mcp__py-tools__add"), "{offered}");
    assert_eq!(acp.finish(), 0);
}

/// The editor's side of `terminal/*`, as an ACP client implements it: each terminal a real child process (in a
/// process group of its own) whose output is kept for `terminal/output`; `terminal/wait_for_exit` is answered
/// when the process exits (from the thread that reaps it).
struct Terminals {
    stdin: Stdin,
    live: HashMap<String, Term>,
    /// Every `terminal/*` request, in order: method and params.
    requests: Vec<(String, Value)>,
}

struct Term {
    pgid: i32,
    output: Arc<Mutex<Vec<u8>>>,
    exit: Arc<Mutex<Exit>>,
}

#[derive(Default)]
struct Exit {
    status: Option<Value>,
    waiters: Vec<Value>,
}

impl Terminals {
    fn new(acp: &Acp) -> Terminals {
        Terminals {
            stdin: acp.stdin.clone(),
            live: HashMap::new(),
            requests: Vec::new(),
        }
    }

    fn of(&self, method: &str) -> Vec<&Value> {
        self.requests
            .iter()
            .filter(|(m, _)| m == method)
            .map(|(_, p)| p)
            .collect()
    }

    fn output(&self, id: &str) -> String {
        String::from_utf8_lossy(&self.live[id].output.lock().unwrap()).into_owned()
    }

    /// The answer to a `terminal/*` request; `None` when it comes later (`wait_for_exit` of a running command).
    fn answer(&mut self, m: &Value) -> Option<Value> {
        use std::os::unix::process::{CommandExt, ExitStatusExt};
        let method = m["method"].as_str().unwrap().to_string();
        let p = m["params"].clone();
        self.requests.push((method.clone(), p.clone()));
        let term = |p: &Value| p["terminalId"].as_str().unwrap().to_string();
        match method.as_str() {
            "terminal/create" => {
                let strings = |v: &Value| -> Vec<String> {
                    v.as_array()
                        .into_iter()
                        .flatten()
                        .map(|s| s.as_str().unwrap().to_string())
                        .collect()
                };
                let mut cmd = Command::new(p["command"].as_str().unwrap());
                cmd.args(strings(&p["args"]))
                    .current_dir(p["cwd"].as_str().unwrap())
                    // Only a command run by this client sees it.
                    .env("ACP_TEST_CLIENT", "1")
                    .stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .process_group(0);
                for var in p["env"].as_array().into_iter().flatten() {
                    cmd.env(
                        var["name"].as_str().unwrap(),
                        var["value"].as_str().unwrap(),
                    );
                }
                let mut child = cmd.spawn().expect("the client's terminal starts");
                let output = Arc::new(Mutex::new(Vec::new()));
                let readers: Vec<Box<dyn Read + Send>> = vec![
                    Box::new(child.stdout.take().unwrap()),
                    Box::new(child.stderr.take().unwrap()),
                ];
                let mut reading = Vec::new();
                for mut pipe in readers {
                    let output = output.clone();
                    reading.push(std::thread::spawn(move || {
                        let mut buf = [0u8; 4096];
                        while let Ok(n @ 1..) = pipe.read(&mut buf) {
                            output.lock().unwrap().extend_from_slice(&buf[..n]);
                        }
                    }));
                }
                let exit = Arc::new(Mutex::new(Exit::default()));
                let pgid = child.id() as i32;
                let (exit2, stdin) = (exit.clone(), self.stdin.clone());
                std::thread::spawn(move || {
                    let status = child.wait().unwrap();
                    // The output is complete when the exit is reported.
                    for r in reading {
                        let _ = r.join();
                    }
                    let status = json!({
                        "exitCode": status.code(),
                        "signal": status.signal().map(|s| if s == libc::SIGKILL { "SIGKILL".to_string() } else { format!("SIG{s}") }),
                    });
                    let mut exit = exit2.lock().unwrap();
                    exit.status = Some(status.clone());
                    for id in exit.waiters.drain(..) {
                        let reply = json!({"jsonrpc": "2.0", "id": id, "result": status});
                        if let Some(stdin) = stdin.lock().unwrap().as_mut() {
                            let _ = writeln!(stdin, "{reply}");
                        }
                    }
                });
                let id = format!("term-{}", self.live.len() + 1);
                self.live.insert(id.clone(), Term { pgid, output, exit });
                Some(json!({"terminalId": id}))
            }
            "terminal/output" => {
                let id = term(&p);
                let status = self.live[&id].exit.lock().unwrap().status.clone();
                let mut out = json!({"output": self.output(&id), "truncated": false});
                if let Some(status) = status {
                    out["exitStatus"] = status;
                }
                Some(out)
            }
            "terminal/wait_for_exit" => {
                let mut exit = self.live[&term(&p)].exit.lock().unwrap();
                match exit.status.clone() {
                    Some(status) => Some(status), // the exit status is the result itself
                    None => {
                        exit.waiters.push(m["id"].clone());
                        None
                    }
                }
            }
            "terminal/kill" | "terminal/release" => {
                let t = &self.live[&term(&p)];
                if t.exit.lock().unwrap().status.is_none() {
                    // SAFETY: kill(2) on the terminal's process group.
                    unsafe { libc::kill(-t.pgid, libc::SIGKILL) };
                }
                Some(json!({}))
            }
            other => panic!("unexpected request {other}"),
        }
    }
}

fn terminal_content(u: &Value) -> Option<&str> {
    u["content"][0]
        .as_object()
        .filter(|c| c["type"] == "terminal")
        .and_then(|c| c["terminalId"].as_str())
}

#[test]
fn bash_runs_in_the_clients_terminal_when_it_offers_one() {
    let command = "echo \"client=$ACP_TEST_CLIENT\"; echo from-terminal; exit 3";
    let scenario = Scenario {
        turns: vec![
            turn("run it", |t| {
                t.tool_calls = vec![call("bash", json!({"command": command}))]
            }),
            after_tool("ran"),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    let init = acp.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"terminal": true}}),
    );
    assert!(init.get("result").is_some());
    let session = acp.new_session(&env);
    let mut terms = Terminals::new(&acp);
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}),
    );
    let (seen, response) = acp.until_response_deferred(id, |m| terms.answer(m));
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let probe = acp.request("session/list", json!({}));
    let (after, _) = acp.until_response(probe, |m| panic!("unexpected request {m}"));
    assert!(after.is_empty(), "messages after the response: {after:?}");

    // The command ran in the client's terminal, in the session's cwd, with the agent's bin dir on PATH.
    let created = terms.of("terminal/create");
    assert_eq!(created.len(), 1);
    let create = created[0];
    assert_eq!(create["sessionId"], session);
    assert_eq!(create["args"][0], "-c");
    assert_eq!(create["args"].as_array().unwrap().last().unwrap(), command);
    assert_eq!(create["cwd"], env.cwd().to_string_lossy().as_ref());
    let path = create["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "PATH")
        .unwrap_or_else(|| panic!("no PATH in {create}"));
    let bin = env.agent_dir().join("bin");
    assert!(
        path["value"]
            .as_str()
            .unwrap()
            .starts_with(bin.to_str().unwrap())
    );
    assert!(create["outputByteLimit"].as_u64().is_some());
    // Released last, after its exit was read.
    let methods: Vec<&str> = terms.requests.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods.first(), Some(&"terminal/create"));
    assert_eq!(methods.last(), Some(&"terminal/release"));
    assert!(methods.contains(&"terminal/wait_for_exit"));
    assert!(!methods.contains(&"terminal/kill"));
    assert_eq!(terms.of("terminal/release")[0]["terminalId"], "term-1");

    // The tool call shows the terminal; its result is what the agent read, with the exit status.
    let calls = updates(&seen, "tool_call_update");
    assert!(
        calls.iter().any(|u| terminal_content(u) == Some("term-1")),
        "{calls:#?}"
    );
    let last = calls.last().unwrap();
    assert_eq!(last["status"], "failed", "{last:#}");
    assert_eq!(terminal_content(last), Some("term-1"));
    let text = last["content"][1]["content"]["text"].as_str().unwrap();
    assert_eq!(
        text,
        "client=1\nfrom-terminal\n\nCommand exited with code 3"
    );
    assert!(terms.output("term-1").contains("from-terminal"));
    assert_eq!(acp.finish(), 0);
}

#[test]
fn cancel_kills_and_releases_the_clients_terminal() {
    let scenario = Scenario {
        turns: vec![
            turn("wait", |t| {
                t.tool_calls = vec![call("bash", json!({"command": "echo started; sleep 30"}))]
            }),
            after_tool("never"),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"terminal": true}}),
    );
    let session = acp.new_session(&env);
    let mut terms = Terminals::new(&acp);
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "wait"}]}),
    );
    let mut cancelled = false;
    let response = loop {
        let m = acp.next();
        if m.get("method").is_some() && m.get("id").is_some() {
            if let Some(result) = terms.answer(&m) {
                acp.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": result}));
            }
        } else if m["id"] == json!(id) {
            break m;
        } else if !cancelled && terminal_content(&m["params"]["update"]).is_some() {
            // Cancel once the command runs in the terminal.
            for _ in 0..500 {
                if terms.output("term-1").contains("started") {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            acp.notify("session/cancel", json!({"sessionId": session}));
            cancelled = true;
        }
    };
    assert!(cancelled, "the command never showed its terminal");
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    let probe = acp.request("session/list", json!({}));
    let (after, _) = acp.until_response(probe, |m| panic!("unexpected request {m}"));
    assert!(after.is_empty(), "messages after the response: {after:?}");
    assert_eq!(terms.of("terminal/kill").len(), 1);
    assert_eq!(terms.of("terminal/release").len(), 1);
    let methods: Vec<&str> = terms.requests.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(methods.last(), Some(&"terminal/release"));
    // The command is gone: killed by its signal, long before its 30 s.
    let exit = terms.live["term-1"].exit.clone();
    for _ in 0..500 {
        if exit.lock().unwrap().status.is_some() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        exit.lock()
            .unwrap()
            .status
            .as_ref()
            .map(|s| s["signal"].clone()),
        Some(json!("SIGKILL"))
    );
    assert_eq!(acp.finish(), 0);
}

#[test]
fn a_write_shows_the_whole_file_as_its_diff() {
    let scenario = Scenario {
        turns: vec![
            turn("write", |t| {
                t.tool_calls = vec![
                    call(
                        "write",
                        json!({"path": "a.txt", "content": "new content\n"}),
                    ),
                    call("write", json!({"path": "sub/b.txt", "content": "fresh\n"})),
                ]
            }),
            after_tool("written"),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);
    std::fs::write(env.cwd().join("a.txt"), "old content\nline two\n").unwrap();
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.initialize();
    let session = acp.new_session(&env);
    let (seen, response) = acp.prompt(&session, "write both", |m| panic!("unexpected {m}"));
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    let announced = updates(&seen, "tool_call");
    assert_eq!(announced.len(), 2);
    let last_of = |id: &Value| {
        updates(&seen, "tool_call_update")
            .into_iter()
            .rfind(|u| &u["toolCallId"] == id)
            .unwrap()
            .clone()
    };
    let a = last_of(&announced[0]["toolCallId"]);
    assert_eq!(a["status"], "completed");
    let diff = &a["content"][0];
    assert_eq!(diff["type"], "diff");
    assert_eq!(
        diff["path"],
        env.cwd().join("a.txt").to_string_lossy().as_ref()
    );
    assert_eq!(diff["oldText"], "old content\nline two\n");
    assert_eq!(diff["newText"], "new content\n");
    let b = last_of(&announced[1]["toolCallId"]);
    let diff = &b["content"][0];
    assert_eq!(diff["type"], "diff");
    // A new file: no old text (absent, which the schema reads as null).
    assert!(diff.get("oldText").is_none_or(Value::is_null), "{diff}");
    assert_eq!(diff["newText"], "fresh\n");
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("sub/b.txt")).unwrap(),
        "fresh\n"
    );
    assert_eq!(acp.finish(), 0);
}

#[test]
fn free_text_questions_are_an_elicitation_form_when_offered_and_skipped_otherwise() {
    let ask = json!({"questions": [
        {"question": "What should the release be called?"},
        {"question": "Which database?", "options": ["SQLite", "Postgres"]}
    ]});
    let scenario = Scenario {
        turns: vec![
            turn("ask me", |t| {
                t.tool_calls = vec![call("ask_user", ask.clone())];
                // Each of the two agent processes asks.
                t.repeat = true;
            }),
            after_tool("Thanks."),
        ],
        ..Default::default()
    };
    let env = Env::with_scenario(scenario);

    // A client with forms: one form for both questions, about the running ask_user call.
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.call(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"elicitation": {"form": {}}}}),
    );
    let session = acp.new_session(&env);
    let mut forms = Vec::new();
    let (seen, response) = acp.prompt(&session, "ask me", |m| {
        assert_eq!(m["method"], "elicitation/create", "{m}");
        forms.push(m["params"].clone());
        json!({"action": "accept", "content": {"q01": "Kiwi", "q02": "Postgres"}})
    });
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(forms.len(), 1);
    let form = &forms[0];
    assert_eq!(form["mode"], "form");
    assert_eq!(form["sessionId"], session);
    assert_eq!(
        form["toolCallId"],
        updates(&seen, "tool_call")[0]["toolCallId"]
    );
    let fields = &form["requestedSchema"]["properties"];
    assert_eq!(fields["q01"]["type"], "string");
    assert_eq!(fields["q01"]["title"], "What should the release be called?");
    assert_eq!(fields["q02"]["oneOf"][0]["const"], "SQLite");
    let result = updates(&seen, "tool_call_update")
        .last()
        .unwrap()
        .to_string();
    assert!(result.contains("wrote: \\\"Kiwi\\\""), "{result}");
    assert!(result.contains("Selected: Postgres"), "{result}");
    assert_eq!(acp.finish(), 0);

    // Without forms: the question with options is a permission request, the free-text one is skipped, and the
    // turn goes on.
    let mut acp = Acp::spawn(&env, &["--no-session"]);
    acp.initialize();
    let session = acp.new_session(&env);
    let mut asked = Vec::new();
    let (seen, response) = acp.prompt(&session, "ask me", |m| {
        asked.push(m["params"]["toolCall"]["title"].clone());
        json!({"outcome": {"outcome": "selected", "optionId": "option-0"}})
    });
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(asked, [json!("Which database?")], "{seen:#?}");
    let result = updates(&seen, "tool_call_update")
        .last()
        .unwrap()
        .to_string();
    assert!(result.contains("(no answer)"), "{result}");
    assert!(result.contains("Selected: SQLite"), "{result}");
    assert_eq!(chunk_text(&seen, "agent_message_chunk"), "Thanks.");
    assert_eq!(acp.finish(), 0);
}
