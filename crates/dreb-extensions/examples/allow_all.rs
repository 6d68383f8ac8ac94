//! A minimal extension written directly against the protocol (no SDK): it subscribes to `tool_call` and lets
//! every call through. The benchmark's fast peer (`HOOK_BENCH_EXTENSION=target/release/examples/allow_all`), so
//! that a round trip measures the runtime's side and the pipes, not an interpreter.

use std::io::{BufRead, Write};

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(frame) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let (Some(id), Some(kind)) = (frame.get("id"), frame["type"].as_str()) else {
            continue;
        };
        let data = match kind {
            "initialize" => {
                serde_json::json!({"protocolVersion": "1", "registration": {"events": ["tool_call"]}})
            }
            _ => serde_json::json!({}),
        };
        let response = serde_json::json!({"id": id, "type": "response", "command": kind, "success": true, "data": data});
        if writeln!(out, "{response}")
            .and_then(|()| out.flush())
            .is_err()
        {
            break;
        }
    }
}
