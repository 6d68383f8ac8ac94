//! The mock server over raw HTTP/1.1: what it records, what it streams, how it fails.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;

use dreb_mock_llm::{MockLlm, Scenario};
use serde_json::{Value, json};

/// Sends one request and returns (status, headers, body).
fn post(addr: std::net::SocketAddr, path: &str, body: &Value) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let body = body.to_string();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nX-Api-Key: k\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    // Undo chunked transfer encoding.
    let body = if head.to_lowercase().contains("transfer-encoding: chunked") {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, tail)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap();
            if n == 0 {
                break;
            }
            out.push_str(&tail[..n]);
            rest = &tail[n + 2..];
        }
        out
    } else {
        body.to_string()
    };
    (status, head.to_string(), body)
}

fn sse_types(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| match serde_json::from_str::<Value>(d) {
            Ok(v) => v["type"].as_str().unwrap_or("chunk").to_string(),
            Err(_) => d.to_string(),
        })
        .collect()
}

#[test]
fn records_requests_and_streams_the_reference_reply() {
    let mock = MockLlm::start(Scenario::default()).unwrap();
    let req = json!({"model": "mock-claude", "messages": [{"role": "user", "content": "Say hello"}], "stream": true});
    let (status, head, body) = post(mock.addr(), "/v1/messages", &req);
    assert_eq!(status, 200);
    assert!(
        head.to_lowercase()
            .contains("content-type: text/event-stream")
    );
    let types = sse_types(&body);
    assert_eq!(types.first().map(String::as_str), Some("message_start"));
    assert_eq!(
        types.iter().filter(|t| *t == "content_block_delta").count(),
        6
    );
    assert_eq!(&types[types.len() - 2..], ["message_delta", "message_stop"]);
    assert!(body.contains("\"id\":\"msg_mock_1\""));

    let recorded = mock.requests();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].method, "POST");
    assert_eq!(recorded[0].path, "/v1/messages");
    assert_eq!(recorded[0].header("x-api-key"), Some("k"));
    assert_eq!(recorded[0].body, req);
}

#[test]
fn openai_stream_ends_with_finish_usage_and_done() {
    let mock = MockLlm::start(Scenario::default()).unwrap();
    let req =
        json!({"model": "m", "messages": [{"role": "user", "content": "x [[tool=bash:ls -la]]"}]});
    let (_, _, body) = post(mock.addr(), "/v1/chat/completions", &req);
    let frames: Vec<&str> = body
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .collect();
    assert_eq!(frames.last(), Some(&"[DONE]"));
    let chunks: Vec<Value> = frames[..frames.len() - 1]
        .iter()
        .map(|f| serde_json::from_str(f).unwrap())
        .collect();
    let usage = &chunks[chunks.len() - 1];
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 100);
    assert_eq!(
        chunks[chunks.len() - 2]["choices"][0]["finish_reason"],
        "tool_calls"
    );
    let args: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(args, "{\"command\": \"ls -la\"}");
    assert_eq!(
        chunks[1]["choices"][0]["delta"]["tool_calls"][0]["id"],
        "call_mock_1"
    );
}

#[test]
fn faults_unknown_routes_and_exhaustion() {
    let sc: Scenario = serde_json::from_value(
        json!({"turns": [{"fault": {"status": 529, "retryAfterMs": 5}}], "fallback": "error"}),
    )
    .unwrap();
    let mock = MockLlm::start(sc).unwrap();
    let (status, head, body) = post(mock.addr(), "/v1/messages", &json!({}));
    assert_eq!(status, 529);
    assert!(head.to_lowercase().contains("retry-after-ms: 5"));
    assert_eq!(
        body,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
    );
    let (status, _, _) = post(mock.addr(), "/v1/messages", &json!({}));
    assert_eq!(status, 500, "scenario exhausted");
    let (status, _, _) = post(mock.addr(), "/v1/nothing", &json!({}));
    assert_eq!(status, 404);
    assert_eq!(mock.requests().len(), 3, "every request is recorded");
}

#[test]
fn a_cut_stream_has_no_terminal_frames() {
    let sc: Scenario =
        serde_json::from_value(json!({"turns": [{"text": ["a", "b", "c"], "cutAfter": 2}]}))
            .unwrap();
    let mock = MockLlm::start(sc).unwrap();
    let (_, _, body) = post(
        mock.addr(),
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        &json!({"contents": []}),
    );
    assert_eq!(body.matches("\"text\"").count(), 2);
    assert!(!body.contains("finishReason"));
}

#[test]
fn binary_serves_a_scenario_file_until_stdin_closes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    std::fs::write(&file, r#"{"turns": [{"text": ["from file"]}]}"#).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_dreb-mock-llm"))
        .arg("--scenario")
        .arg(&file)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr: std::net::SocketAddr = line
        .trim()
        .strip_prefix("http://")
        .unwrap()
        .parse()
        .unwrap();
    assert!(addr.ip().is_loopback());
    let (_, _, body) = post(addr, "/v1/responses", &json!({"input": []}));
    assert!(body.contains("\"delta\":\"from file\""));
    assert!(body.contains("response.completed"));
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_dreb-mock-llm"))
        .arg("--scenario")
        .arg(dir.path().join("none.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("none.json"));
}
