//! What an MCP tool call costs on top of the server's own time (stdio, server-everything's `echo`), and what three
//! configured servers do to the binary's start-up. Run: `cargo bench -p dreb-mcp --bench tool_call` (after
//! `npm ci` in tests/mcp-peers; the start-up part needs a release binary: `cargo build --release -p dreb`, or
//! `DREB_BIN=<path>`). Results: docs/benchmarks.md.
//!
//! - floor: a minimal client of our own writing JSON-RPC lines straight to the server's stdin and reading its
//!   answers (the server's time plus the pipe);
//! - ours: the same calls through `McpTool::execute` (the agent's tool interface, rmcp, progress routing,
//!   result mapping).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use dreb_agent::Tool;
use dreb_mcp::{ConfigScope, DialogUi, McpEnv, McpManager, ServerConfig, Transport};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const CALLS: usize = 2000;
const WARMUP: usize = 100;

fn everything_js() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(
        "../../tests/mcp-peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )
}

fn stats(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (
        us(v[v.len() / 2]),
        us(v[v.len() * 9 / 10]),
        us(v[v.len() * 99 / 100]),
    )
}

fn floor() -> Vec<Duration> {
    let mut child = Command::new("node")
        .arg(everything_js())
        .arg("stdio")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let send = |v: Value, stdin: &mut std::process::ChildStdin| {
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "floor", "version": "0"}}}),
        &mut stdin,
    );
    stdout.read_line(&mut line).unwrap();
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        &mut stdin,
    );
    let mut out = Vec::new();
    for i in 0..WARMUP + CALLS {
        let start = Instant::now();
        send(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "hello"}, "_meta": {"progressToken": i + 1}}}),
            &mut stdin,
        );
        loop {
            line.clear();
            stdout.read_line(&mut line).unwrap();
            if line.contains("\"result\"") || line.contains("\"error\"") {
                break;
            }
        }
        if i >= WARMUP {
            out.push(start.elapsed());
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    out
}

struct NoDialogs;

#[async_trait]
impl DialogUi for NoDialogs {
    async fn confirm(&self, _: &str, _: &str) -> bool {
        false
    }
    async fn select(&self, _: &str, _: &[String]) -> Option<String> {
        None
    }
    async fn input(&self, _: &str, _: Option<&str>) -> Option<String> {
        None
    }
}

async fn ours() -> Vec<Duration> {
    let manager = McpManager::new(McpEnv {
        dialogs: Arc::new(NoDialogs),
        on_tools_changed: Arc::new(|| {}),
        on_failure: Arc::new(|_, _, e| eprintln!("failure: {e}")),
        startup_timeout: Duration::from_secs(30),
        tool_timeout: Duration::from_secs(30),
        client_name: "bench".into(),
        client_version: "0".into(),
    });
    manager.start(
        vec![ServerConfig {
            name: "everything".into(),
            transport: Transport::Stdio {
                command: "node".into(),
                args: vec![
                    everything_js().to_string_lossy().into_owned(),
                    "stdio".into(),
                ],
                env: Default::default(),
                cwd: None,
            },
            scope: ConfigScope::User,
            disabled: false,
            tool_timeout_ms: None,
        }],
        Vec::new(),
    );
    assert!(manager.ready(Duration::from_secs(30)).await);
    let echo = manager
        .tools()
        .into_iter()
        .find(|t| t.definition().name == "mcp__everything__echo")
        .expect("echo");
    let mut out = Vec::new();
    for i in 0..WARMUP + CALLS {
        let start = Instant::now();
        echo.execute(
            "c",
            json!({"message": "hello"}),
            CancellationToken::new(),
            Arc::new(|_| {}),
        )
        .await
        .unwrap();
        if i >= WARMUP {
            out.push(start.elapsed());
        }
    }
    manager.shutdown().await;
    out
}

/// Start `bin` with this home, agent dir and cwd, and read the answer to a `get_state` sent at once: the start
/// instant, the process and its pipes.
fn first_response(
    bin: &str,
    home: &std::path::Path,
    agent: &std::path::Path,
    cwd: &std::path::Path,
) -> (
    Instant,
    std::process::Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
) {
    let start = Instant::now();
    let mut child = Command::new(bin)
        .args(["--mode", "rpc", "--provider", "faux", "--no-session"])
        .env("HOME", home)
        .env("DREB_CODING_AGENT_DIR", agent)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("dreb");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    writeln!(stdin, "{}", json!({"id": "s", "type": "get_state"})).unwrap();
    stdout.read_line(&mut line).unwrap();
    (start, child, stdin, stdout)
}

/// Start-up of the binary with three configured servers: the first response, and until all three are ready;
/// runs alternate with a binary without servers (the baseline).
fn startup(bin: &str) {
    let home = tempfile::tempdir().unwrap();
    let agent = home.path().join(".dreb/agent");
    let cwd = home.path().join("project");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let js = everything_js().to_string_lossy().into_owned();
    let servers: serde_json::Map<String, Value> = ["a", "b", "c"]
        .iter()
        .map(|n| {
            (
                n.to_string(),
                json!({"command": "node", "args": [js, "stdio"]}),
            )
        })
        .collect();
    std::fs::write(
        agent.join("settings.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .unwrap();
    let empty = tempfile::tempdir().unwrap();
    let empty_agent = empty.path().join(".dreb/agent");
    std::fs::create_dir_all(&empty_agent).unwrap();
    let mut first = Vec::new();
    let mut ready = Vec::new();
    let mut baseline = Vec::new();
    for _ in 0..20 {
        let (start, mut child, stdin, _) =
            first_response(bin, empty.path(), &empty_agent, empty.path());
        baseline.push(start.elapsed());
        drop(stdin);
        let _ = child.wait();

        let (start, mut child, mut stdin, mut stdout) =
            first_response(bin, home.path(), &agent, &cwd);
        let mut line = String::new();
        first.push(start.elapsed());
        loop {
            writeln!(stdin, "{}", json!({"id": "r", "type": "get_resources"})).unwrap();
            line.clear();
            while !line.contains("\"get_resources\"") {
                line.clear();
                stdout.read_line(&mut line).unwrap();
            }
            let v: Value = serde_json::from_str(&line).unwrap();
            let all = v["data"]["mcpServers"]
                .as_array()
                .is_some_and(|s| s.len() == 3 && s.iter().all(|s| s["state"] == "ready"));
            if all {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        ready.push(start.elapsed());
        drop(stdin);
        let _ = child.wait();
    }
    let (b50, b90, _) = stats(baseline);
    let (f50, f90, _) = stats(first);
    let (r50, r90, _) = stats(ready);
    println!(
        "start-up (20 alternating runs each): first response without servers median {:.2} ms (p90 {:.2}); \
         with 3 servers median {:.2} ms (p90 {:.2}); all 3 servers' tools ready median {:.1} ms (p90 {:.1})",
        b50 / 1e3,
        b90 / 1e3,
        f50 / 1e3,
        f90 / 1e3,
        r50 / 1e3,
        r90 / 1e3
    );
}

fn main() {
    assert!(
        everything_js().exists(),
        "run `npm ci` in tests/mcp-peers first"
    );
    let floor = floor();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let ours = rt.block_on(ours());
    let (f50, f90, f99) = stats(floor);
    let (o50, o90, o99) = stats(ours);
    println!("echo over stdio, {CALLS} sequential calls after {WARMUP} warm-up:");
    println!("  floor (raw JSON-RPC lines): median {f50:.0} µs, p90 {f90:.0} µs, p99 {f99:.0} µs");
    println!("  dreb McpTool::execute:      median {o50:.0} µs, p90 {o90:.0} µs, p99 {o99:.0} µs");
    println!("  added by the client: median {:.0} µs", o50 - f50);
    let bin = std::env::var("DREB_BIN").unwrap_or_else(|_| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/release/dreb")
            .to_string_lossy()
            .into_owned()
    });
    if std::path::Path::new(&bin).exists() {
        startup(&bin);
    } else {
        println!("start-up: {bin} not found (cargo build --release -p dreb, or DREB_BIN)");
    }
}
