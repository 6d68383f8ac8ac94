//! The client against real servers nobody here wrote: `@modelcontextprotocol/server-everything` (stdio and
//! Streamable HTTP) and a FastMCP server on the official Python SDK, plus faulty ones. The peers are installed in
//! `tests/mcp-peers` by `scripts/test-all.sh` (`npm ci`, a venv with `mcp`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolOutput};
use dreb_ai::UserBlock;
use dreb_mcp::{ConfigScope, DialogUi, McpEnv, McpManager, ServerConfig, ServerState, Transport};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn everything_js() -> PathBuf {
    let p = root()
        .join("tests/mcp-peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        p.exists(),
        "{} is missing: run `npm ci` in tests/mcp-peers (scripts/test-all.sh does)",
        p.display()
    );
    p
}

fn python() -> PathBuf {
    let p = root().join("tests/mcp-peers/.venv/bin/python");
    assert!(
        p.exists(),
        "{} is missing: create the venv in tests/mcp-peers with requirements.txt (scripts/test-all.sh does)",
        p.display()
    );
    p
}

fn stdio(name: &str, command: &str, args: &[&str]) -> ServerConfig {
    ServerConfig {
        name: name.into(),
        transport: Transport::Stdio {
            command: command.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            env: BTreeMap::new(),
            cwd: None,
        },
        scope: ConfigScope::User,
        disabled: false,
        tool_timeout_ms: None,
    }
}

fn everything() -> ServerConfig {
    let js = everything_js();
    stdio("everything", "node", &[js.to_str().unwrap(), "stdio"])
}

/// Dialog answers from a script, recording what was asked.
#[derive(Default)]
struct Scripted {
    answers: Mutex<Vec<String>>,
    asked: Mutex<Vec<String>>,
}

impl Scripted {
    fn with(answers: &[&str]) -> Arc<Self> {
        Arc::new(Scripted {
            answers: Mutex::new(answers.iter().rev().map(|s| s.to_string()).collect()),
            asked: Mutex::default(),
        })
    }
    fn next(&self, what: String) -> Option<String> {
        self.asked.lock().unwrap().push(what);
        self.answers.lock().unwrap().pop()
    }
}

#[async_trait]
impl DialogUi for Scripted {
    async fn confirm(&self, title: &str, _message: &str) -> bool {
        self.next(format!("confirm {title}")).as_deref() == Some("yes")
    }
    async fn select(&self, title: &str, options: &[String]) -> Option<String> {
        let a = self.next(format!("select {title}"))?;
        // "#n": the n-th option.
        match a.strip_prefix('#') {
            Some(i) => options.get(i.parse::<usize>().unwrap()).cloned(),
            None => Some(a),
        }
    }
    async fn input(&self, title: &str, _placeholder: Option<&str>) -> Option<String> {
        self.next(format!("input {title}"))
    }
}

struct Setup {
    manager: McpManager,
    failures: Arc<Mutex<Vec<String>>>,
}

fn manager(dialogs: Arc<Scripted>, tool_timeout: Duration) -> Setup {
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let f = failures.clone();
    let manager = McpManager::new(McpEnv {
        dialogs,
        on_tools_changed: Arc::new(|| {}),
        on_failure: Arc::new(move |server, what, error| {
            f.lock().unwrap().push(format!("{server} {what}: {error}"))
        }),
        startup_timeout: Duration::from_secs(20),
        tool_timeout,
        client_name: "dreb-test".into(),
        client_version: "0".into(),
    });
    Setup { manager, failures }
}

fn tool(manager: &McpManager, name: &str) -> Arc<dreb_mcp::McpTool> {
    manager
        .tools()
        .into_iter()
        .find(|t| t.definition().name == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

fn texts(out: &ToolOutput) -> Vec<String> {
    out.content
        .iter()
        .map(|b| match b {
            UserBlock::Text(t) => t.text.clone(),
            UserBlock::Image(i) => format!("<image {}>", i.mime_type),
        })
        .collect()
}

fn no_updates() -> dreb_agent::ToolUpdateFn {
    Arc::new(|_| {})
}

async fn call(
    manager: &McpManager,
    name: &str,
    args: Value,
) -> Result<ToolOutput, dreb_agent::ToolError> {
    tool(manager, name)
        .execute("call-1", args, CancellationToken::new(), no_updates())
        .await
}

fn alive(pid: i32) -> bool {
    // A zombie is dead for this purpose.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.split(") ").nth(1).is_some_and(|r| r.starts_with('Z')),
        Err(_) => false,
    }
}

/// The pids of this test process's children whose command line mentions `needle`.
fn pids_with(needle: &str) -> Vec<i32> {
    let me = std::process::id().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline"))
            && String::from_utf8_lossy(&cmd).contains(needle)
            && alive(pid)
            && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.split(") ").nth(1).and_then(|r| r.split(' ').nth(1)) == Some(me.as_str())
            })
        {
            out.push(pid);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_stdio_tools_images_progress_cancel_prompts_elicitation_and_no_orphans() {
    let dialogs = Scripted::with(&[]);
    let setup = manager(dialogs.clone(), Duration::from_secs(30));
    let m = &setup.manager;
    m.start(vec![everything()], Vec::new());
    assert!(m.ready(Duration::from_secs(30)).await);
    let status = &m.statuses()[0];
    assert_eq!(
        status.state,
        ServerState::Ready,
        "{:?}",
        setup.failures.lock().unwrap()
    );
    assert!(status.tool_count >= 10, "{status:?}");
    let names: Vec<String> = m
        .tools()
        .iter()
        .map(|t| t.definition().name.clone())
        .collect();
    for expected in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__get-tiny-image",
    ] {
        assert!(names.iter().any(|n| n == expected), "{names:?}");
    }
    // Its JSON Schema is offered as it is.
    let sum = tool(m, "mcp__everything__get-sum");
    assert_eq!(
        sum.definition().parameters["properties"]["a"]["type"],
        "number"
    );

    let out = call(m, "mcp__everything__echo", json!({"message": "hi there"}))
        .await
        .unwrap();
    assert_eq!(texts(&out), ["Echo: hi there"]);
    let out = call(m, "mcp__everything__get-sum", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(texts(&out)[0].contains("42"), "{:?}", texts(&out));
    let out = call(m, "mcp__everything__get-tiny-image", json!({}))
        .await
        .unwrap();
    assert!(
        texts(&out).contains(&"<image image/png>".to_string()),
        "{:?}",
        texts(&out)
    );
    let out = call(
        m,
        "mcp__everything__get-structured-content",
        json!({"location": "Chicago"}),
    )
    .await
    .unwrap();
    assert!(out.details.as_ref().unwrap()["structuredContent"].is_object());
    // Invalid arguments: the server's error, as a tool error.
    let err = call(m, "mcp__everything__get-sum", json!({"a": "x"}))
        .await
        .unwrap_err();
    assert!(!err.message.is_empty());

    // Progress notifications reach the update callback.
    let updates: Arc<Mutex<Vec<Value>>> = Arc::default();
    let u = updates.clone();
    let long = tool(m, "mcp__everything__trigger-long-running-operation");
    let out = long
        .execute(
            "c2",
            json!({"duration": 1, "steps": 3}),
            CancellationToken::new(),
            Arc::new(move |o: ToolOutput| u.lock().unwrap().push(o.details.unwrap())),
        )
        .await
        .unwrap();
    assert!(!texts(&out).is_empty());
    let seen = updates.lock().unwrap().clone();
    // The last notification may cross the result (the SDK delivers them on separate paths).
    assert!(seen.len() >= 2, "{seen:?}");
    assert_eq!(seen[0]["progress"], 1.0);
    assert_eq!(seen[1]["progress"], 2.0);
    assert_eq!(seen[0]["total"], 3.0);

    // Cancellation: an abort ends the call at once and the server is told; the connection keeps serving.
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c.cancel();
    });
    let started = std::time::Instant::now();
    let err = long
        .execute(
            "c3",
            json!({"duration": 30, "steps": 30}),
            cancel,
            no_updates(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.message, "Tool call aborted");
    assert!(started.elapsed() < Duration::from_secs(20));
    let out = call(m, "mcp__everything__echo", json!({"message": "after"}))
        .await
        .unwrap();
    assert_eq!(texts(&out), ["Echo: after"]);

    // Prompts, with arguments from a command line.
    let prompts: Vec<String> = m
        .prompt_commands()
        .iter()
        .map(|p| p.command.clone())
        .collect();
    assert!(
        prompts.contains(&"mcp__everything__simple-prompt".to_string()),
        "{prompts:?}"
    );
    let text = m
        .expand_prompt("mcp__everything__args-prompt", "Paris")
        .await
        .unwrap()
        .unwrap();
    assert!(text.contains("Paris"), "{text}");
    let e = m
        .expand_prompt("mcp__everything__args-prompt", "")
        .await
        .unwrap()
        .unwrap_err();
    assert!(e.contains("city"), "{e}");
    assert!(m.expand_prompt("not-mcp", "").await.is_none());

    // Elicitation: declined, then answered field by field.
    let err_or_out = call(m, "mcp__everything__trigger-elicitation-request", json!({})).await;
    let declined = format!("{err_or_out:?}");
    assert!(declined.to_lowercase().contains("decline"), "{declined}");
    assert_eq!(
        dialogs.asked.lock().unwrap()[0],
        "confirm MCP server \"everything\" asks"
    );
    for a in [
        "yes",
        "Ada",
        "yes",
        "",
        "ada@example.com",
        "",
        "",
        "7",
        "",
        "#1",
        "Piano, Drums",
        "#2",
        "",
        "#1",
    ]
    .iter()
    .rev()
    {
        dialogs.answers.lock().unwrap().push(a.to_string());
    }
    let out = call(m, "mcp__everything__trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    let all = texts(&out).join("\n");
    assert!(all.contains("- Name: Ada"), "{all}");
    assert!(all.contains("- Favorite Integer: 7"), "{all}");
    assert!(all.contains("- Pet Type") || all.contains("pet-2"), "{all}");
    assert!(all.contains("\"hero-3\""), "{all}");
    assert!(all.contains("\"Piano\""), "{all}");

    // Stopping leaves no process behind.
    let js = everything_js();
    let before = pids_with(&format!("{}\0stdio", js.display()));
    assert_eq!(before.len(), 1, "{before:?}");
    m.shutdown().await;
    for _ in 0..40 {
        if !alive(before[0]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(before[0]), "the server outlived shutdown");
}

fn py_server() -> ServerConfig {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/py_server.py");
    let py = python();
    stdio("py", py.to_str().unwrap(), &[script.to_str().unwrap()])
}

async fn wait_for_tool(m: &McpManager, name: &str) {
    for _ in 0..100 {
        if m.tools().iter().any(|t| t.definition().name == name) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("tool {name} never appeared");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_server_tools_list_changed_prompts_elicitation_crash_restart_and_hang() {
    let dialogs = Scripted::with(&["yes", "teal", "7"]);
    let setup = manager(dialogs.clone(), Duration::from_millis(800));
    let m = &setup.manager;
    m.start(vec![py_server()], Vec::new());
    assert!(m.ready(Duration::from_secs(30)).await);
    assert_eq!(
        m.statuses()[0].state,
        ServerState::Ready,
        "{:?}",
        setup.failures.lock().unwrap()
    );

    let out = call(m, "mcp__py__add", json!({"a": 20, "b": 22}))
        .await
        .unwrap();
    assert_eq!(texts(&out), ["42"]);

    // Elicitation answered through the dialogs.
    let out = call(m, "mcp__py__ask_color", json!({})).await.unwrap();
    assert_eq!(texts(&out), ["color=teal shade=7"]);
    // Declined.
    dialogs.answers.lock().unwrap().push("no".into());
    let out = call(m, "mcp__py__ask_color", json!({})).await.unwrap();
    assert_eq!(texts(&out), ["action=decline"]);

    // tools/list_changed refreshes the tool set.
    call(m, "mcp__py__grow", json!({})).await.unwrap();
    wait_for_tool(m, "mcp__py__late").await;
    let out = call(m, "mcp__py__late", json!({})).await.unwrap();
    assert_eq!(texts(&out), ["late tool ran"]);

    // Prompts.
    let text = m
        .expand_prompt("mcp__py__greet", "Grace Hopper")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text, "Please greet Grace Hopper warmly.");

    // A call that never answers ends at the call timeout with a clear error, and the server keeps serving.
    let marker = tempfile::tempdir().unwrap();
    let marker = marker.path().join("cancelled");
    let err = call(m, "mcp__py__hang", json!({"marker": marker}))
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "MCP server py gave no answer within 800 ms for tool hang; the call was cancelled"
    );
    // The server was told (notifications/cancelled): its handler saw the cancellation.
    for _ in 0..100 {
        if marker.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(marker.exists(), "the server never saw the cancellation");
    let out = call(m, "mcp__py__add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(texts(&out), ["2"]);

    // A server that exits mid-call: a clear error for that call; the next use after the back-off restarts it.
    let first_pid: i32 = texts(&call(m, "mcp__py__pid", json!({})).await.unwrap())[0]
        .parse()
        .unwrap();
    let err = call(m, "mcp__py__crash", json!({})).await.unwrap_err();
    assert!(
        err.message.starts_with("MCP server py: the server exited"),
        "{}",
        err.message
    );
    assert!(
        err.message.ends_with("it will be restarted on next use"),
        "{}",
        err.message
    );
    assert!(matches!(m.statuses()[0].state, ServerState::Failed(_)));
    // Within the back-off the tools are gone and a call says when the restart comes.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let py_tool = dreb_mcp::McpTool::new(
        m_server(m),
        &dreb_mcp::server::ServerTool {
            name: "pid".into(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
        },
    );
    let out = py_tool
        .execute("c", json!({}), CancellationToken::new(), no_updates())
        .await
        .unwrap();
    let second_pid: i32 = texts(&out)[0].parse().unwrap();
    assert_ne!(first_pid, second_pid);
    assert_eq!(m.statuses()[0].state, ServerState::Ready);
    assert!(!alive(first_pid));

    m.shutdown().await;
    for _ in 0..40 {
        if !alive(second_pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(second_pid), "the restarted server outlived shutdown");
}

/// The manager's one server (for calling a tool by the server's own name).
fn m_server(m: &McpManager) -> Arc<dreb_mcp::McpServer> {
    m.tools()
        .first()
        .map(|t| t.server().clone())
        .or_else(|| m.server("py"))
        .expect("a server")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_cannot_start_fail_with_clear_errors() {
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let f = failures.clone();
    let m = McpManager::new(McpEnv {
        dialogs: Scripted::with(&[]),
        on_tools_changed: Arc::new(|| {}),
        on_failure: Arc::new(move |server, what, error| {
            f.lock().unwrap().push(format!("{server} {what}: {error}"))
        }),
        startup_timeout: Duration::from_millis(1500),
        tool_timeout: Duration::from_secs(5),
        client_name: "dreb-test".into(),
        client_version: "0".into(),
    });
    // A sleep whose command line is unique to this test run.
    let marker = format!("600.{}", std::process::id());
    m.start(
        vec![
            stdio("missing", "/nonexistent/mcp-server", &[]),
            // Never answers `initialize`.
            stdio("silent", "sh", &["-c", &format!("sleep {marker}")]),
            // Answers garbage and exits.
            stdio(
                "garbage",
                "sh",
                &["-c", "echo 'this is not JSON-RPC'; echo oops >&2; exit 1"],
            ),
        ],
        Vec::new(),
    );
    assert!(m.ready(Duration::from_secs(30)).await);
    let states: BTreeMap<String, ServerState> = m
        .statuses()
        .into_iter()
        .map(|s| (s.name, s.state))
        .collect();
    let ServerState::Failed(missing) = &states["missing"] else {
        panic!("{states:?}")
    };
    assert!(
        missing.starts_with("cannot start /nonexistent/mcp-server:"),
        "{missing}"
    );
    let ServerState::Failed(silent) = &states["silent"] else {
        panic!("{states:?}")
    };
    assert_eq!(silent, "did not finish starting within 1500 ms");
    let ServerState::Failed(garbage) = &states["garbage"] else {
        panic!("{states:?}")
    };
    assert!(garbage.starts_with("initialization failed"), "{garbage}");
    assert_eq!(
        failures.lock().unwrap().len(),
        3,
        "{:?}",
        failures.lock().unwrap()
    );
    // The silent one was stopped when its start timed out.
    for _ in 0..40 {
        if pids_with(&marker).is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        pids_with(&marker).is_empty(),
        "the silent server was left running"
    );
    // They offer no tools (a working server beside them is shown in crates/dreb/tests/mcp.rs; here the short
    // start-up bound would be too tight for a Python server on a loaded machine).
    assert!(m.tools().is_empty());
    m.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http_on_loopback() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut child = tokio::process::Command::new("node")
        .arg(everything_js())
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let setup = manager(Scripted::with(&[]), Duration::from_secs(30));
    let m = &setup.manager;
    m.start(
        vec![ServerConfig {
            name: "web".into(),
            transport: Transport::Http {
                url: format!("http://127.0.0.1:{port}/mcp"),
                headers: [("X-Test".to_string(), "1".to_string())].into(),
            },
            scope: ConfigScope::User,
            disabled: false,
            tool_timeout_ms: None,
        }],
        Vec::new(),
    );
    assert!(m.ready(Duration::from_secs(30)).await);
    assert_eq!(
        m.statuses()[0].state,
        ServerState::Ready,
        "{:?}",
        setup.failures.lock().unwrap()
    );
    assert_eq!(m.statuses()[0].transport, "http");
    let out = call(m, "mcp__web__echo", json!({"message": "over http"}))
        .await
        .unwrap();
    assert_eq!(texts(&out), ["Echo: over http"]);
    let updates: Arc<Mutex<Vec<Value>>> = Arc::default();
    let u = updates.clone();
    tool(m, "mcp__web__trigger-long-running-operation")
        .execute(
            "c",
            json!({"duration": 1, "steps": 2}),
            CancellationToken::new(),
            Arc::new(move |o: ToolOutput| u.lock().unwrap().push(o.details.unwrap())),
        )
        .await
        .unwrap();
    assert!(!updates.lock().unwrap().is_empty());
    // Disable and enable by command.
    let s = m.set_enabled("web", false).await.unwrap();
    assert_eq!(s.state, ServerState::Disabled);
    assert!(m.tools().is_empty());
    let s = m.set_enabled("web", true).await.unwrap();
    assert_eq!(s.state, ServerState::Ready);
    assert_eq!(
        m.reconnect("nope").await.unwrap_err().to_string(),
        "MCP server not found: nope"
    );
    m.shutdown().await;
    let _ = child.kill().await;
}
