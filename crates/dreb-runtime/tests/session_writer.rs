//! The session file is written off the agent's event path (ADR 0016), yet a host that sees a turn end finds the
//! turn's messages in the file: each `turn_end` and the `agent_end` are checked against the file at the moment the
//! host receives them.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use dreb_ai::Providers;
use dreb_ai::scenario::Scenario;
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_runtime::{FrameSink, Runtime, RuntimeOptions};
use serde_json::{Value, json};

/// On each `turn_end` / `agent_end` frame, reads the session file and records `(frame type, message roles in the
/// file)`.
#[derive(Default)]
struct FileAtTurnEnd {
    file: Mutex<Option<PathBuf>>,
    seen: Mutex<Vec<(String, Vec<String>)>>,
}

impl FrameSink for FileAtTurnEnd {
    fn send_frame(&self, frame: Vec<u8>) {
        for line in frame.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let v: Value = serde_json::from_slice(line).unwrap();
            let kind = v["type"].as_str().unwrap_or("").to_string();
            if kind != "turn_end" && kind != "agent_end" {
                continue;
            }
            let file = self.file.lock().unwrap().clone().expect("the session file");
            let roles = std::fs::read_to_string(&file)
                .unwrap_or_default()
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|e| e["type"] == "message")
                .map(|e| e["message"]["role"].as_str().unwrap().to_string())
                .collect();
            self.seen.lock().unwrap().push((kind, roles));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_end_reaches_the_host_after_its_messages_reach_the_file() {
    let agent_dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let scenario: Scenario = serde_json::from_value(json!({"turns": [
        {"when": {"afterToolResult": false}, "toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
        {"when": {"afterToolResult": true}, "text": ["done"], "repeat": true}
    ]}))
    .unwrap();
    let sink = Arc::new(FileAtTurnEnd::default());
    let options = RuntimeOptions {
        cwd: cwd.path().to_path_buf(),
        agent_dir: agent_dir.path().to_path_buf(),
        provider: Some("faux".into()),
        session_dir: Some(agent_dir.path().join("sessions")),
        providers: Some(Providers::new().with_faux_scenario(scenario)),
        ..Default::default()
    };
    let rt = Runtime::start(options, sink.clone()).unwrap();
    *sink.file.lock().unwrap() = rt.session_file();

    PromptingHandler::prompt(
        &rt,
        &RequestContext::detached(None),
        PromptParams {
            message: "run it".into(),
            images: None,
            streaming_behavior: None,
        },
    )
    .await
    .unwrap();
    rt.wait_until_settled().await;

    let seen = sink.seen.lock().unwrap().clone();
    let roles = |r: &[&str]| r.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        seen,
        vec![
            (
                "turn_end".to_string(),
                roles(&["user", "assistant", "toolResult"])
            ),
            (
                "turn_end".to_string(),
                roles(&["user", "assistant", "toolResult", "assistant"])
            ),
            (
                "agent_end".to_string(),
                roles(&["user", "assistant", "toolResult", "assistant"])
            ),
        ]
    );
}
