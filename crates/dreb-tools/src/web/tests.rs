//! `web_fetch` and `web_search` against a loopback HTTP server that serves canned responses (nothing here leaves
//! 127.0.0.1).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use dreb_agent::Tool;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::fetch::{WebFetchTool, github_fetch_guidance};
use super::search::{Backend, SearchConfig, WebSearchTool, encode_uri_component, parse_ddg_html};
use crate::tools::test_util::{noop_update, text_of};

#[derive(Clone)]
struct Canned {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn canned(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Canned {
    Canned {
        status,
        headers: vec![("Content-Type".into(), content_type.into())],
        body: body.into(),
    }
}

fn redirect(status: u16, location: &str) -> Canned {
    Canned {
        status,
        headers: vec![("Location".into(), location.into())],
        body: vec![],
    }
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    target: String,
    headers: HashMap<String, String>,
}

/// Serves `routes` (by request target, query included; a route ending in `*` matches by prefix) on 127.0.0.1.
struct Server {
    base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    async fn start(routes: Vec<(&str, Canned)>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let routes: Vec<(String, Canned)> = routes
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let routes = routes.clone();
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 4096];
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&buf).to_string();
                    let mut lines = head.split("\r\n");
                    let target = lines
                        .next()
                        .and_then(|l| l.split(' ').nth(1))
                        .unwrap_or("/")
                        .to_string();
                    let headers = lines
                        .filter_map(|l| l.split_once(": "))
                        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
                        .collect();
                    log.lock().unwrap().push(Seen {
                        target: target.clone(),
                        headers,
                    });
                    let found = routes.iter().find(|(k, _)| match k.strip_suffix('*') {
                        Some(prefix) => target.starts_with(prefix),
                        None => *k == target,
                    });
                    let c = found
                        .map(|(_, c)| c.clone())
                        .unwrap_or_else(|| canned(404, "text/plain", "no such page"));
                    let mut out = format!(
                        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                        c.status,
                        c.body.len()
                    );
                    for (k, v) in &c.headers {
                        out.push_str(&format!("{k}: {v}\r\n"));
                    }
                    out.push_str("\r\n");
                    let _ = sock.write_all(out.as_bytes()).await;
                    let _ = sock.write_all(&c.body).await;
                    let _ = sock.shutdown().await;
                });
            }
        });
        Server { base, seen }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn targets(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.target.clone())
            .collect()
    }
}

async fn fetch_with(tool: &WebFetchTool, url: &str) -> dreb_agent::ToolOutput {
    tool.execute(
        "f",
        json!({ "url": url }),
        CancellationToken::new(),
        noop_update(),
    )
    .await
    .unwrap()
}

async fn fetch(url: &str) -> dreb_agent::ToolOutput {
    fetch_with(&WebFetchTool::new().allow_private(true), url).await
}

/// `Fetched: <ISO time>` replaced by a placeholder.
fn without_time(text: &str) -> String {
    let re = regex::Regex::new(r"Fetched: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z").unwrap();
    re.replace(text, "Fetched: <time>").to_string()
}

const PAGE: &str = "<html><head><title>Example Domain</title></head><body><nav>Home | About</nav>\
    <h1>Example</h1><p>This domain is for <a href=\"https://iana.org/x\">examples</a>.</p></body></html>";

#[tokio::test]
async fn an_html_page_comes_back_as_markdown_with_its_title_then_from_the_cache() {
    let server = Server::start(vec![(
        "/page",
        canned(200, "text/html; charset=utf-8", PAGE),
    )])
    .await;
    let url = server.url("/page");
    let out = fetch(&url).await;
    assert_eq!(
        without_time(&text_of(&out)),
        format!(
            "Example Domain\n{url}\nFetched: <time>\n\n# Example\n\nThis domain is for [examples](https://iana.org/x)."
        )
    );
    assert_eq!(out.details, None);
    let headers = server.seen.lock().unwrap()[0].headers.clone();
    assert_eq!(headers["user-agent"], "dreb/1.0 (web fetch tool)");
    assert_eq!(
        headers["accept"],
        "text/html,application/xhtml+xml,text/plain,application/pdf"
    );

    let first = text_of(&out);
    let again = text_of(&fetch(&url).await);
    let fetched_line = first.lines().nth(2).unwrap();
    assert_eq!(
        again,
        first.replacen(fetched_line, &format!("{fetched_line} (cached)"), 1)
    );
    assert_eq!(server.targets(), vec!["/page"], "served once");
}

#[tokio::test]
async fn same_host_redirects_are_followed_and_cross_host_ones_are_reported() {
    let server = Server::start(vec![
        ("/old", redirect(301, "/mid")),
        ("/mid", redirect(302, "new?x=1")),
        ("/new?x=1", canned(200, "text/plain", "arrived")),
        ("/away", redirect(307, "https://other.example/landing")),
        ("/loop", redirect(302, "/loop")),
    ])
    .await;
    let out = text_of(&fetch(&server.url("/old")).await);
    assert!(out.ends_with("\n\narrived"), "{out}");
    assert_eq!(server.targets(), vec!["/old", "/mid", "/new?x=1"]);

    let away = server.url("/away");
    let out = text_of(&fetch(&away).await);
    assert_eq!(
        without_time(&out),
        format!(
            "{away}\n{away}\nFetched: <time>\n\nCross-host redirect detected.\nOriginal: {away}\nRedirects to: \
             https://other.example/landing\n\nThe redirect target is on a different host. Fetch the new URL \
             directly if you want to follow it."
        )
    );
    let lp = server.url("/loop");
    assert_eq!(
        text_of(&fetch(&lp).await),
        format!("Failed to fetch {lp}: Too many redirects (10)")
    );
    assert_eq!(
        server.targets().iter().filter(|t| *t == "/loop").count(),
        11
    );
}

#[tokio::test]
async fn a_redirect_without_location_and_error_statuses_fail_with_the_status() {
    let mut no_location = redirect(302, "");
    no_location.headers.clear();
    let long_body = "e".repeat(500);
    let server = Server::start(vec![
        ("/bare", no_location),
        ("/gone", canned(410, "text/plain", long_body.clone())),
    ])
    .await;
    let bare = server.url("/bare");
    assert_eq!(
        text_of(&fetch(&bare).await),
        format!("Failed to fetch {bare}: HTTP 302: redirect with no Location header")
    );
    let gone = server.url("/gone");
    assert_eq!(
        text_of(&fetch(&gone).await),
        format!("Failed to fetch {gone}: HTTP 410: {}", &long_body[..200])
    );
    let missing = server.url("/missing");
    assert_eq!(
        text_of(&fetch(&missing).await),
        format!("Failed to fetch {missing}: HTTP 404: no such page")
    );
}

#[tokio::test]
async fn content_types_are_read_their_own_way() {
    let pdf = crate::web::pdf::tests::pdf_with(b"BT (Quarterly report) Tj ET", true);
    let server = Server::start(vec![
        ("/a.txt", canned(200, "text/plain", "plain <b>kept</b>")),
        ("/a.json", canned(200, "application/json", "{\"a\": 1}")),
        (
            "/a.md",
            canned(200, "text/markdown; charset=utf-8", "# Notes"),
        ),
        ("/a.pdf", canned(200, "application/pdf", pdf)),
        (
            "/a.png",
            canned(200, "image/png", vec![0x89, b'P', b'N', b'G']),
        ),
        (
            "/latin1",
            canned(200, "text/plain; charset=iso-8859-1", b"caf\xe9".to_vec()),
        ),
    ])
    .await;
    let body = |out: &dreb_agent::ToolOutput| {
        text_of(out)
            .split_once("\n\n")
            .map(|(_, b)| b.to_string())
            .unwrap()
    };
    assert_eq!(
        body(&fetch(&server.url("/a.txt")).await),
        "plain <b>kept</b>"
    );
    assert_eq!(body(&fetch(&server.url("/a.json")).await), "{\"a\": 1}");
    assert_eq!(body(&fetch(&server.url("/a.md")).await), "# Notes");
    let pdf_out = fetch(&server.url("/a.pdf")).await;
    let pdf_url = server.url("/a.pdf");
    assert!(
        text_of(&pdf_out).starts_with(&format!("{pdf_url}\n{pdf_url}\nFetched: ")),
        "a PDF is titled by its URL"
    );
    assert_eq!(body(&pdf_out), "Quarterly report");
    assert_eq!(
        text_of(&fetch(&server.url("/a.png")).await),
        "Unsupported content type: image/png"
    );
    assert_eq!(body(&fetch(&server.url("/latin1")).await), "café");
}

#[tokio::test]
async fn long_content_is_cut_at_the_content_limit_then_the_output_limit() {
    let text = "word ".repeat(30_000);
    let server = Server::start(vec![("/long", canned(200, "text/plain", text))]).await;
    let out = fetch(&server.url("/long")).await;
    let details = out.details.clone().unwrap();
    assert_eq!(details["truncatedContent"], true);
    assert_eq!(details["truncation"]["truncated"], true);
    assert_eq!(details["truncation"]["truncatedBy"], "bytes");
    assert_eq!(details["truncation"]["maxBytes"], 50 * 1024);
    assert!(text_of(&out).len() <= 50 * 1024);

    // Between the two limits: only the output limit, and the content notice is absent.
    let server = Server::start(vec![(
        "/mid",
        canned(200, "text/plain", "x".repeat(60_000)),
    )])
    .await;
    let out = fetch(&server.url("/mid")).await;
    let details = out.details.clone().unwrap();
    assert_eq!(details.get("truncatedContent"), None);
    assert_eq!(details["truncation"]["truncated"], true);
}

#[test]
fn over_the_content_limit_the_text_ends_with_the_notice() {
    // Counted in characters, not bytes.
    let (content, cut) = super::fetch::limit_content("é".repeat(100_001));
    assert!(cut);
    assert!(content.ends_with("é\n\n[Content truncated at ~98KB]"));
    assert_eq!(content.chars().filter(|c| *c == 'é').count(), 100_000);
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_time_limit() {
    // Accepts and reads, never writes.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/slow", listener.local_addr().unwrap());
    let held = Arc::new(Mutex::new(Vec::new()));
    let keep = held.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            keep.lock().unwrap().push(sock);
        }
    });
    let tool = WebFetchTool::new()
        .allow_private(true)
        .with_timeout(std::time::Duration::from_millis(200));
    assert_eq!(
        text_of(&fetch_with(&tool, &url).await),
        format!("Failed to fetch {url}: The operation was aborted due to timeout")
    );
    assert_eq!(
        held.lock().unwrap().len(),
        1,
        "the request did reach the server"
    );
}

#[tokio::test]
async fn private_hosts_are_blocked_by_default_without_a_request() {
    let server = Server::start(vec![("/secret", canned(200, "text/plain", "internal"))]).await;
    let url = server.url("/secret");
    let out = fetch_with(&WebFetchTool::new().allow_private(false), &url).await;
    assert_eq!(
        text_of(&out),
        format!("Failed to fetch {url}: Blocked: 127.0.0.1 is a private/internal address")
    );
    let localhost = url.replace("127.0.0.1", "localhost");
    let out = fetch_with(&WebFetchTool::new().allow_private(false), &localhost).await;
    assert_eq!(
        text_of(&out),
        format!("Failed to fetch {localhost}: Blocked: localhost is a private/internal address")
    );
    assert!(server.targets().is_empty());
}

#[tokio::test]
async fn bad_urls_github_urls_and_aborted_calls_are_answered_without_fetching() {
    let tool = WebFetchTool::new();
    assert_eq!(
        text_of(&fetch_with(&tool, "not a url").await),
        "Invalid URL: not a url"
    );
    assert_eq!(
        text_of(&fetch_with(&tool, "ftp://example.com/file").await),
        "Unsupported protocol: ftp:"
    );
    let out = text_of(&fetch_with(&tool, "https://github.com/owner/repo/blob/main/src/a.rs").await);
    assert!(
        out.starts_with("web_fetch does not work reliably on GitHub URLs"),
        "{out}"
    );
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = tool
        .execute(
            "f",
            json!({"url": "https://example.com/"}),
            cancel,
            noop_update(),
        )
        .await
        .unwrap();
    assert_eq!(
        text_of(&out),
        "Fetch cancelled for https://example.com/ (aborted)."
    );
}

#[test]
fn github_guidance_names_the_right_command() {
    let g = |u: &str| github_fetch_guidance(&url::Url::parse(u).unwrap());
    let blob = g("https://github.com/owner/repo/blob/main/src/file.ts").unwrap();
    assert!(blob.contains("clone") && blob.contains("gh api"));
    assert!(
        g("https://github.com/owner/repo/raw/main/f")
            .unwrap()
            .contains("clone")
    );
    assert!(
        g("https://raw.githubusercontent.com/o/r/main/f")
            .unwrap()
            .contains("clone")
    );
    assert!(
        g("https://objects.githubusercontent.com/x")
            .unwrap()
            .contains("clone")
    );
    assert!(g("https://gist.github.com/owner/abc").is_some());
    let api = g("https://api.github.com/repos/owner/repo/contents/src").unwrap();
    assert!(
        api.contains("`gh api repos/owner/repo/contents/src`"),
        "{api}"
    );
    assert!(
        g("https://github.com/o/r/pull/42")
            .unwrap()
            .contains("gh pr view")
    );
    assert!(
        g("https://github.com/o/r/issues/42")
            .unwrap()
            .contains("gh issue view")
    );
    let root = g("https://WWW.GitHub.com/owner/repo").unwrap();
    assert!(root.contains("gh") && root.contains("/tmp"));
    assert_eq!(g("https://example.com/page"), None);
    assert_eq!(g("https://github.com.evil.example/owner/repo"), None);
}

// -- web_search --------------------------------------------------------------------------------------------

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/web")
        .join(name);
    std::fs::read(path).unwrap()
}

struct SearchEnv {
    tool: WebSearchTool,
    _dirs: tempfile::TempDir,
}

fn search_tool(vars: &[(&str, &str)]) -> SearchEnv {
    let dirs = tempfile::tempdir().unwrap();
    let cwd = dirs.path().join("cwd");
    let home = dirs.path().join("home");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let mut env: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.entry("DREB_WEB_SEARCH_RATE_LIMIT_MS".into())
        .or_insert_with(|| "0".into());
    let tool = WebSearchTool::new(cwd).with_context(home, dirs.path().join("agent"), move |k| {
        env.get(k).cloned()
    });
    SearchEnv { tool, _dirs: dirs }
}

async fn search(env: &SearchEnv, query: &str) -> String {
    text_of(
        &env.tool
            .execute(
                "s",
                json!({ "query": query }),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap(),
    )
}

const QUERY: &str = "rust async & tokio";

#[tokio::test]
async fn duckduckgo_results_are_parsed_from_its_html_page() {
    let server = Server::start(vec![(
        "/html/*",
        canned(200, "text/html; charset=utf-8", fixture("ddg_results.html")),
    )])
    .await;
    let env = search_tool(&[("DREB_DDG_URL", &server.base)]);
    assert_eq!(
        search(&env, QUERY).await,
        "Search results for: rust async & tokio\n\n\
         1. Tutorial | Tokio - An asynchronous Rust runtime\n   https://tokio.rs/tokio/tutorial\n   Tokio is an \
         asynchronous runtime for the Rust programming language. It provides the building blocks needed for \
         writing network applications & services.\n\n\
         2. Asynchronous Programming in Rust\n   https://rust-lang.github.io/async-book/?q=1&r=é\n   The async \
         book: async/.await, futures <and> executors.\n\n\
         3. tokio - Rust\n   https://docs.rs/tokio/latest/tokio/\n   "
    );
    let seen = server.seen.lock().unwrap()[0].clone();
    assert_eq!(
        seen.target,
        format!("/html/?q={}", encode_uri_component(QUERY))
    );
    assert_eq!(seen.target, "/html/?q=rust%20async%20%26%20tokio");
    assert_eq!(seen.headers["user-agent"], "dreb/1.0 (web search tool)");
}

#[tokio::test]
async fn searxng_and_brave_answer_from_their_json_apis() {
    let server = Server::start(vec![
        (
            "/searx/search?*",
            canned(200, "application/json", fixture("searxng_results.json")),
        ),
        (
            "/res/v1/web/search?*",
            canned(200, "application/json", fixture("brave_results.json")),
        ),
    ])
    .await;
    let searx = search_tool(&[
        ("DREB_SEARCH_BACKEND", "searxng"),
        ("DREB_SEARXNG_URL", &server.url("/searx")),
    ]);
    assert_eq!(
        search(&searx, "rust async tokio").await,
        "Search results for: rust async tokio\n\n\
         1. Tokio - An asynchronous Rust runtime\n   https://tokio.rs/\n   Build reliable network applications \
         without compromising speed.\n\n\
         2. tokio - Rust\n   https://docs.rs/tokio\n   "
    );
    let brave = search_tool(&[
        ("DREB_SEARCH_BACKEND", "brave"),
        ("DREB_BRAVE_API_KEY", "key-123"),
        ("DREB_BRAVE_URL", &server.base),
    ]);
    let out = search(&brave, "rust async tokio").await;
    assert!(
        out.starts_with(
            "Search results for: rust async tokio\n\n1. Tokio - An asynchronous Rust runtime\n   https://tokio.rs/\n"
        ),
        "{out}"
    );
    assert!(out.contains(
        "\n\n2. Announcing Tokio 1.0\n   https://tokio.rs/blog/2020-12-tokio-1-0\n   We are"
    ));
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(
        seen[0].target,
        "/searx/search?q=rust%20async%20tokio&format=json"
    );
    assert_eq!(seen[0].headers["accept"], "application/json");
    assert_eq!(seen[1].target, "/res/v1/web/search?q=rust%20async%20tokio");
    assert_eq!(seen[1].headers["x-subscription-token"], "key-123");
}

#[tokio::test]
async fn search_failures_and_empty_results_are_worded_as_the_reference_does() {
    let server = Server::start(vec![
        ("/down/html/*", canned(503, "text/html", "busy")),
        (
            "/empty/html/*",
            canned(200, "text/html", "<html><body>No results.</body></html>"),
        ),
        ("/bad/search?*", canned(200, "application/json", "not json")),
    ])
    .await;
    let down = search_tool(&[("DREB_DDG_URL", &server.url("/down"))]);
    assert_eq!(
        search(&down, "q").await,
        "Search failed for \"q\": DuckDuckGo search failed: HTTP 503"
    );
    let empty = search_tool(&[("DREB_DDG_URL", &server.url("/empty"))]);
    assert_eq!(search(&empty, "q").await, "No results found for: q");
    let no_key = search_tool(&[
        ("DREB_SEARCH_BACKEND", "brave"),
        ("DREB_BRAVE_URL", &server.base),
    ]);
    assert_eq!(
        search(&no_key, "q").await,
        "Search failed for \"q\": DREB_BRAVE_API_KEY not set"
    );
    let bad = search_tool(&[
        ("DREB_SEARCH_BACKEND", "searxng"),
        ("DREB_SEARXNG_URL", &server.url("/bad")),
    ]);
    let out = search(&bad, "q").await;
    assert!(
        out.starts_with("Search failed for \"q\": SearXNG search failed: invalid JSON ("),
        "{out}"
    );
    assert!(
        !server.targets().iter().any(|t| t.starts_with("/res/")),
        "no key, no request"
    );
}

#[test]
fn search_settings_come_from_the_config_files_then_the_environment() {
    let dirs = tempfile::tempdir().unwrap();
    let (cwd, home) = (dirs.path().join("cwd"), dirs.path().join("home"));
    std::fs::create_dir_all(cwd.join(".dreb")).unwrap();
    std::fs::create_dir_all(home.join(".dreb")).unwrap();
    let none = |_: &str| None;
    let defaults = SearchConfig::load(&cwd, &home, &none);
    assert_eq!(defaults.backend, Backend::Ddg);
    assert_eq!(defaults.searxng_url, "http://localhost:8888");
    assert_eq!(defaults.rate_limit.as_millis(), 10_000);
    assert_eq!(defaults.ddg_url, "https://html.duckduckgo.com");
    assert_eq!(defaults.brave_url, "https://api.search.brave.com");
    assert_eq!(defaults.brave_api_key, None);

    std::fs::write(
        home.join(".dreb/config.json"),
        json!({"search": {"backend": "brave", "brave_api_key": "home-key", "rate_limit_ms": 50}})
            .to_string(),
    )
    .unwrap();
    let from_home = SearchConfig::load(&cwd, &home, &none);
    assert_eq!(from_home.backend, Backend::Brave);
    assert_eq!(from_home.brave_api_key.as_deref(), Some("home-key"));
    assert_eq!(from_home.rate_limit.as_millis(), 50);

    // The project's file wins whole (first file found), and the environment over it.
    std::fs::write(
        cwd.join(".dreb/config.json"),
        json!({"search": {"backend": "searxng", "searxng_url": "http://searx.lan", "rate_limit_ms": "-5"}})
            .to_string(),
    )
    .unwrap();
    let project = SearchConfig::load(&cwd, &home, &none);
    assert_eq!(project.backend, Backend::Searxng);
    assert_eq!(project.searxng_url, "http://searx.lan");
    assert_eq!(project.brave_api_key, None);
    assert_eq!(project.rate_limit.as_millis(), 10_000, "invalid: default");
    let vars: HashMap<&str, &str> = [
        ("DREB_SEARCH_BACKEND", "bogus"),
        ("DREB_WEB_SEARCH_RATE_LIMIT_MS", "250"),
        ("DREB_BRAVE_API_KEY", "env-key"),
        ("DREB_SEARXNG_URL", ""),
    ]
    .into();
    let env = move |k: &str| vars.get(k).map(|v| v.to_string());
    let over = SearchConfig::load(&cwd, &home, &env);
    assert_eq!(over.backend, Backend::Ddg, "unknown backend falls back");
    assert_eq!(over.rate_limit.as_millis(), 250);
    assert_eq!(over.brave_api_key.as_deref(), Some("env-key"));
    assert_eq!(over.searxng_url, "http://searx.lan", "empty env is unset");

    // A file that does not parse is skipped for the next one.
    std::fs::write(cwd.join(".dreb/config.json"), "{ nope").unwrap();
    assert_eq!(
        SearchConfig::load(&cwd, &home, &none).backend,
        Backend::Brave
    );
}

#[test]
fn the_ddg_parser_skips_ads_and_unwraps_redirect_links() {
    let html = String::from_utf8(fixture("ddg_results.html")).unwrap();
    let results = parse_ddg_html(&html);
    let urls: Vec<&str> = results.iter().map(|r| r.url.as_str()).collect();
    assert_eq!(
        urls,
        [
            "https://tokio.rs/tokio/tutorial",
            "https://rust-lang.github.io/async-book/?q=1&r=é",
            "https://docs.rs/tokio/latest/tokio/"
        ]
    );
    assert!(parse_ddg_html("<html></html>").is_empty());
}

#[tokio::test]
async fn an_aborted_search_says_so() {
    let env = search_tool(&[]);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let out = env
        .tool
        .execute("s", json!({"query": "q"}), cancel, noop_update())
        .await
        .unwrap();
    assert_eq!(text_of(&out), "Search cancelled for \"q\" (aborted).");
}
