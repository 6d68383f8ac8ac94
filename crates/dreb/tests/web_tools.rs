//! `web_fetch`, `web_search` and `watch_github_ci` through the real binary: the mock model calls each tool, the
//! tool reaches a loopback server (or a fake `gh` on PATH), and the result goes back to the model. Nothing here
//! leaves 127.0.0.1: the search backends' base URLs point at the test server, and `web_fetch` reaches loopback
//! only with its test-only escape hatch (`DREB_WEB_FETCH_ALLOW_PRIVATE=1`).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use common::{Env, Frame};
use dreb_mock_llm::Scenario;
use serde_json::{Value, json};

/// Serves `routes` (request target, or a prefix ending in `*`) on 127.0.0.1 from a thread; records the targets.
struct Server {
    base: String,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(routes: Vec<(&'static str, &'static str, Vec<u8>)>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                }
                let target = first.split(' ').nth(1).unwrap_or("/").to_string();
                log.lock().unwrap().push(target.clone());
                let found = routes.iter().find(|(t, _, _)| match t.strip_suffix('*') {
                    Some(prefix) => target.starts_with(prefix),
                    None => *t == target,
                });
                let (status, content_type, body) = match found {
                    Some((_, ct, body)) => (200, *ct, body.clone()),
                    None => (404, "text/plain", b"no such page".to_vec()),
                };
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: \
                     close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            }
        });
        Server { base, seen }
    }
}

/// A mock that makes `call` (tool name and arguments) for the first prompt, then answers "Done".
fn env_calling(tool: &str, arguments: Value) -> Env {
    let scenario: Scenario = serde_json::from_value(json!({"turns": [
        {"when": {"afterToolResult": false}, "toolCalls": [{"name": tool, "arguments": arguments}]},
        {"when": {"afterToolResult": true}, "repeat": true, "text": ["Done"]}
    ]}))
    .unwrap();
    Env::with_scenario(scenario)
}

fn tool_end(frames: &[Frame], tool: &str) -> Value {
    frames
        .iter()
        .find(|f| f["type"] == "tool_execution_end" && f["toolName"] == tool)
        .unwrap_or_else(|| panic!("no {tool} result in {frames:?}"))
        .clone()
}

fn result_text(end: &Value) -> String {
    end["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Every string in the model's last request (the tool result is among them once it reached the model).
fn strings_sent_to_model(env: &Env) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let requests = env.mock.requests();
    let mut out = Vec::new();
    walk(
        &requests.last().expect("a request").body["messages"],
        &mut out,
    );
    out
}

fn run(env: &Env, envs: &[(&str, &str)]) -> Vec<Frame> {
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--no-session",
        ],
        envs,
    );
    let frames = dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "go"}));
    let (code, _, stderr) = dreb.finish();
    assert_eq!(code, 0, "{stderr}");
    frames
}

fn assert_reached_model(env: &Env, text: &str) {
    let sent = strings_sent_to_model(env);
    assert!(
        sent.iter().any(|s| s.contains(text)),
        "{text:?} not in the model's request: {sent:?}"
    );
}

const PAGE: &str = "<html><head><title>Release notes</title><script>track()</script></head><body>\
    <nav>Home</nav><h2>Version 2</h2><p>Now with <em>faster</em> builds; see \
    <a href=\"https://example.com/changelog\">the changelog</a>.</p></body></html>";

#[test]
fn web_fetch_reads_a_page_as_markdown_and_the_model_gets_it() {
    let server = Server::start(vec![("/notes", "text/html; charset=utf-8", PAGE.into())]);
    let url = format!("{}/notes", server.base);
    let env = env_calling("web_fetch", json!({ "url": url }));
    let frames = run(&env, &[("DREB_WEB_FETCH_ALLOW_PRIVATE", "1")]);
    let end = tool_end(&frames, "web_fetch");
    assert_eq!(end["isError"], false);
    let text = result_text(&end);
    let (head, body) = text.split_once("\n\n").unwrap();
    let head: Vec<&str> = head.lines().collect();
    assert_eq!(head[0], "Release notes");
    assert_eq!(head[1], url);
    assert!(head[2].starts_with("Fetched: 20"), "{text}");
    assert_eq!(
        body,
        "## Version 2\n\nNow with *faster* builds; see [the changelog](https://example.com/changelog)."
    );
    assert_eq!(end["result"].get("details"), None, "{end}");
    assert_reached_model(&env, body);
    assert_eq!(*server.seen.lock().unwrap(), vec!["/notes"]);
}

#[test]
fn web_fetch_blocks_loopback_by_default() {
    let server = Server::start(vec![("/notes", "text/plain", b"private".to_vec())]);
    let url = format!("{}/notes", server.base);
    let env = env_calling("web_fetch", json!({ "url": url }));
    let frames = run(&env, &[]);
    let end = tool_end(&frames, "web_fetch");
    let expected =
        format!("Failed to fetch {url}: Blocked: 127.0.0.1 is a private/internal address");
    assert_eq!(result_text(&end), expected);
    assert_reached_model(&env, &expected);
    assert!(
        server.seen.lock().unwrap().is_empty(),
        "no request was made"
    );
}

fn ddg_fixture() -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../dreb-tools/tests/fixtures/web/ddg_results.html"),
    )
    .unwrap()
}

#[test]
fn web_search_asks_the_configured_backend_and_the_model_gets_the_results() {
    let server = Server::start(vec![("/html/*", "text/html", ddg_fixture())]);
    let env = env_calling("web_search", json!({"query": "tokio tutorial"}));
    let frames = run(
        &env,
        &[
            ("DREB_DDG_URL", server.base.as_str()),
            ("DREB_WEB_SEARCH_RATE_LIMIT_MS", "0"),
        ],
    );
    let end = tool_end(&frames, "web_search");
    let text = result_text(&end);
    assert!(
        text.starts_with(
            "Search results for: tokio tutorial\n\n1. Tutorial | Tokio - An asynchronous Rust runtime\n   \
             https://tokio.rs/tokio/tutorial\n   Tokio is an asynchronous runtime"
        ),
        "{text}"
    );
    assert!(
        text.contains("\n\n3. tokio - Rust\n   https://docs.rs/tokio/latest/tokio/"),
        "{text}"
    );
    assert_reached_model(&env, &text);
    assert_eq!(
        *server.seen.lock().unwrap(),
        vec!["/html/?q=tokio%20tutorial"]
    );
    // The queue's time file is in the agent dir, in the reference's format.
    let stamp: Value = serde_json::from_str(
        &std::fs::read_to_string(env.agent_dir().join("web-search-queue.time")).unwrap(),
    )
    .unwrap();
    assert!(stamp["lastSearchTime"].as_f64().unwrap() > 0.0);
}

#[test]
fn web_search_with_searxng_from_the_project_config_file() {
    let body = json!({"results": [{"title": "Tokio", "url": "https://tokio.rs/", "content": "A runtime."}]});
    let server = Server::start(vec![(
        "/search?*",
        "application/json",
        body.to_string().into_bytes(),
    )]);
    let env = env_calling("web_search", json!({"query": "tokio"}));
    std::fs::create_dir_all(env.cwd().join(".dreb")).unwrap();
    std::fs::write(
        env.cwd().join(".dreb/config.json"),
        json!({"search": {"backend": "searxng", "searxng_url": server.base, "rate_limit_ms": 0}})
            .to_string(),
    )
    .unwrap();
    let frames = run(&env, &[]);
    let expected = "Search results for: tokio\n\n1. Tokio\n   https://tokio.rs/\n   A runtime.";
    assert_eq!(result_text(&tool_end(&frames, "web_search")), expected);
    assert_reached_model(&env, expected);
    assert_eq!(
        *server.seen.lock().unwrap(),
        vec!["/search?q=tokio&format=json"]
    );
}

/// A temp dir holding the fixture `gh` (copied, so its mode does not depend on the checkout).
fn gh_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let gh = dir.path().join("gh");
    std::fs::copy(common::local_fixture("web/gh"), &gh).unwrap();
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn path_with(dir: &Path) -> String {
    let mut parts = vec![dir.to_path_buf()];
    parts.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(parts)
        .unwrap()
        .to_string_lossy()
        .to_string()
}

#[test]
fn watch_github_ci_runs_gh_and_reports_passed_and_failed_checks() {
    let bin = gh_dir();
    let path = path_with(bin.path());
    for (pr, status, code, first) in [
        (
            "42",
            "passed",
            0,
            "GitHub CI checks passed.\n\ngh pr checks 42 --watch --fail-fast\n",
        ),
        (
            "43",
            "failed",
            1,
            "GitHub CI checks did not pass. The GitHub CLI exited with code 1.\n\ngh pr checks 43 --watch --fail-fast\n",
        ),
    ] {
        let env = env_calling("watch_github_ci", json!({ "pr": pr }));
        let frames = run(&env, &[("PATH", &path)]);
        let end = tool_end(&frames, "watch_github_ci");
        assert_eq!(end["isError"], false, "{end}");
        let text = result_text(&end);
        assert!(text.starts_with(first), "{text}");
        assert!(text.contains("pager=cat no_color=1\nbuild\t"), "{text}");
        assert_eq!(
            end["result"]["details"],
            json!({"status": status, "exitCode": code, "outputTruncated": false})
        );
        // Partial results stream while it watches.
        let updates: Vec<&Frame> = frames
            .iter()
            .filter(|f| f["type"] == "tool_execution_update" && f["toolName"] == "watch_github_ci")
            .collect();
        assert!(!updates.is_empty());
        assert_eq!(updates[0]["partialResult"]["details"]["status"], "watching");
        assert_reached_model(&env, first.trim_end());
    }
}

#[test]
fn watch_github_ci_without_a_pull_request_or_without_gh_is_a_tool_error() {
    let bin = gh_dir();
    let env = env_calling("watch_github_ci", json!({}));
    let frames = run(&env, &[("PATH", &path_with(bin.path()))]);
    let end = tool_end(&frames, "watch_github_ci");
    assert_eq!(end["isError"], true);
    let text = result_text(&end);
    assert!(
        text.starts_with(
            "GitHub CI watch could not query checks: the GitHub CLI reported an error (matched \"no pull requests \
             found\")."
        ),
        "{text}"
    );
    assert_reached_model(&env, "no pull requests found for branch");

    // No `gh` anywhere on PATH.
    let empty = tempfile::tempdir().unwrap();
    let env = env_calling("watch_github_ci", json!({"pr": "42"}));
    let frames = run(&env, &[("PATH", &empty.path().to_string_lossy())]);
    let end = tool_end(&frames, "watch_github_ci");
    assert_eq!(end["isError"], true);
    let expected = "GitHub CI watch could not run: the GitHub CLI (`gh`) was not found on PATH (spawn gh ENOENT). \
                    Install it (https://cli.github.com) and sign in with `gh auth login`.";
    assert_eq!(result_text(&end), expected);
    assert_reached_model(&env, expected);
}

#[test]
fn the_model_is_offered_the_web_tools_in_the_reference_order() {
    let env = env_calling("wait", json!({}));
    run(&env, &[]);
    let body = &env.mock.requests()[0].body;
    let names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "read",
            "bash",
            "edit",
            "write",
            "grep",
            "find",
            "ls",
            "web_search",
            "web_fetch",
            "subagent",
            "wait",
            "watch_github_ci",
            "ask_user",
            "skill",
            "tasks_update",
            "search",
            "suggest_next"
        ]
    );
}
