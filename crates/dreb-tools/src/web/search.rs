//! `web_search`: DuckDuckGo's HTML page (the default, no key), a SearXNG instance, or Brave's API with a key.
//!
//! Configuration as in the reference: the `search` block of `<cwd>/.dreb/config.json` or `~/.dreb/config.json`
//! (first file that parses), overridden by `DREB_SEARCH_BACKEND`, `DREB_SEARXNG_URL`, `DREB_BRAVE_API_KEY`,
//! `DREB_WEB_SEARCH_RATE_LIMIT_MS`. Added here: the DuckDuckGo and Brave base URLs (`DREB_DDG_URL` /
//! `search.ddg_url`, `DREB_BRAVE_URL` / `search.brave_url`), so a mirror or a test server can stand in.

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use markup5ever_rcdom::NodeData;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::net::{FetchError, search_get};
use super::search_queue::{DEFAULT_RATE_LIMIT, QueueError, WebSearchQueue};
use crate::common::{definition, parse_params, text_output};

pub const DEFAULT_DDG_URL: &str = "https://html.duckduckgo.com";
pub const DEFAULT_BRAVE_URL: &str = "https://api.search.brave.com";
pub const DEFAULT_SEARXNG_URL: &str = "http://localhost:8888";
/// Results kept per search.
const MAX_RESULTS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Ddg,
    Searxng,
    Brave,
}

impl Backend {
    fn parse(s: &str) -> Option<Backend> {
        match s {
            "ddg" => Some(Backend::Ddg),
            "searxng" => Some(Backend::Searxng),
            "brave" => Some(Backend::Brave),
            _ => None,
        }
    }
}

/// The effective search settings of one call (read again for every call, as the reference does).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    pub backend: Backend,
    pub searxng_url: String,
    pub brave_api_key: Option<String>,
    pub rate_limit: Duration,
    pub ddg_url: String,
    pub brave_url: String,
}

#[derive(Debug, Default, Deserialize)]
struct FileSearch {
    backend: Option<String>,
    searxng_url: Option<String>,
    brave_api_key: Option<String>,
    rate_limit_ms: Option<Value>,
    ddg_url: Option<String>,
    brave_url: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct FileConfig {
    search: Option<FileSearch>,
}

fn load_file_config(cwd: &Path, home: &Path) -> FileConfig {
    for path in [
        cwd.join(".dreb/config.json"),
        home.join(".dreb/config.json"),
    ] {
        if !path.exists() {
            continue;
        }
        match std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<FileConfig>(&t).map_err(|e| e.to_string()))
        {
            Ok(c) => return c,
            Err(e) => tracing::warn!("Warning: failed to parse config at {}: {e}", path.display()),
        }
    }
    FileConfig::default()
}

/// A non-negative integer (`parseInt`-like: leading digits count, so `"250ms"` is 250).
fn parse_ms(v: &str) -> Option<u64> {
    let digits: String = v
        .trim()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    if v.trim().starts_with('-') {
        return None;
    }
    digits.parse().ok()
}

impl SearchConfig {
    /// From the config files under `cwd` and `home`, then `env` (a variable's value, or `None`; empty counts as
    /// unset, like the reference's `||`).
    pub fn load(cwd: &Path, home: &Path, env: &dyn Fn(&str) -> Option<String>) -> SearchConfig {
        let env = |k: &str| env(k).filter(|v| !v.is_empty());
        let file = load_file_config(cwd, home).search.unwrap_or_default();
        let backend = match env("DREB_SEARCH_BACKEND").or(file.backend) {
            None => Backend::Ddg,
            Some(raw) => Backend::parse(&raw).unwrap_or_else(|| {
                tracing::warn!(
                    "Warning: unrecognized search backend \"{raw}\", falling back to ddg. Valid: ddg, searxng, brave"
                );
                Backend::Ddg
            }),
        };
        let rate_limit_ms = match env("DREB_WEB_SEARCH_RATE_LIMIT_MS") {
            Some(raw) => parse_ms(&raw).or_else(|| {
                tracing::warn!("Warning: invalid DREB_WEB_SEARCH_RATE_LIMIT_MS \"{raw}\", using default");
                None
            }),
            None => file.rate_limit_ms.and_then(|v| {
                let raw = match &v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                parse_ms(&raw).or_else(|| {
                    tracing::warn!(
                        "Warning: invalid search.rate_limit_ms in config file \"{raw}\", using default"
                    );
                    None
                })
            }),
        };
        let trim = |s: String| s.trim_end_matches('/').to_string();
        SearchConfig {
            backend,
            searxng_url: env("DREB_SEARXNG_URL")
                .or(file.searxng_url)
                .unwrap_or_else(|| DEFAULT_SEARXNG_URL.into()),
            brave_api_key: env("DREB_BRAVE_API_KEY").or(file.brave_api_key),
            rate_limit: rate_limit_ms.map_or(DEFAULT_RATE_LIMIT, Duration::from_millis),
            ddg_url: trim(
                env("DREB_DDG_URL")
                    .or(file.ddg_url)
                    .unwrap_or_else(|| DEFAULT_DDG_URL.into()),
            ),
            brave_url: trim(
                env("DREB_BRAVE_URL")
                    .or(file.brave_url)
                    .unwrap_or_else(|| DEFAULT_BRAVE_URL.into()),
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResult {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// Why a search gave no results; the texts follow the reference.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("{0} search failed: HTTP {1}")]
    Status(&'static str, u16),
    #[error("{0} search failed: {1}")]
    BadResponse(&'static str, String),
    #[error("DREB_BRAVE_API_KEY not set")]
    NoBraveKey,
    #[error(transparent)]
    Http(#[from] FetchError),
    #[error(transparent)]
    Queue(#[from] QueueError),
}

/// JS `encodeURIComponent`.
pub fn encode_uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// JS `decodeURIComponent`, leaving malformed escapes as they are.
fn decode_uri_component(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(hex) = std::str::from_utf8(&bytes[i + 1..i + 3])
            && let Ok(v) = u8::from_str_radix(hex, 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

// -- DuckDuckGo's HTML results page, read through the DOM ----------------------------------------------------

fn attr(node: &htmd::Node, name: &str) -> Option<String> {
    match &node.data {
        NodeData::Element { attrs, .. } => attrs
            .borrow()
            .iter()
            .find(|a| &*a.name.local == name)
            .map(|a| a.value.to_string()),
        _ => None,
    }
}

fn has_class(node: &htmd::Node, class: &str) -> bool {
    attr(node, "class").is_some_and(|c| c.split_whitespace().any(|x| x == class))
}

fn collapsed_text(node: &htmd::Node) -> String {
    fn walk(n: &htmd::Node, out: &mut String) {
        match &n.data {
            NodeData::Text { contents } => out.push_str(&contents.borrow()),
            _ => n.children.borrow().iter().for_each(|c| walk(c, out)),
        }
    }
    let mut s = String::new();
    walk(node, &mut s);
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn find_first(node: &Rc<htmd::Node>, pred: &dyn Fn(&htmd::Node) -> bool) -> Option<Rc<htmd::Node>> {
    if pred(node) {
        return Some(node.clone());
    }
    node.children
        .borrow()
        .iter()
        .find_map(|c| find_first(c, pred))
}

fn collect_results(node: &Rc<htmd::Node>, out: &mut Vec<Rc<htmd::Node>>) {
    if has_class(node, "result") && has_class(node, "results_links")
        || has_class(node, "result") && has_class(node, "results_links_deep")
    {
        out.push(node.clone());
        return;
    }
    for c in node.children.borrow().iter() {
        collect_results(c, out);
    }
}

/// The organic results of a DuckDuckGo HTML page (ads, `result--ad`, are skipped), first ten.
pub fn parse_ddg_html(html: &str) -> Vec<SearchResult> {
    let tree = super::html::parse(html);
    let mut blocks = Vec::new();
    collect_results(&tree, &mut blocks);
    let mut results = Vec::new();
    for block in blocks {
        if has_class(&block, "result--ad") {
            continue;
        }
        let Some(link) = find_first(&block, &|n| has_class(n, "result__a")) else {
            continue;
        };
        let mut url = attr(&link, "href").unwrap_or_default();
        // DDG links go through its redirector: `//duckduckgo.com/l/?uddg=<target>&rut=...`.
        if let Some(start) = url.find("uddg=") {
            let rest = &url[start + 5..];
            let end = rest.find('&').unwrap_or(rest.len());
            url = decode_uri_component(&rest[..end]);
        }
        let title = collapsed_text(&link);
        let snippet = find_first(&block, &|n| has_class(n, "result__snippet"))
            .map(|n| collapsed_text(&n))
            .unwrap_or_default();
        if !title.is_empty() && !url.is_empty() {
            results.push(SearchResult {
                title,
                url,
                snippet,
            });
        }
        if results.len() == MAX_RESULTS {
            break;
        }
    }
    if results.is_empty() && html.len() > 1000 {
        tracing::warn!(
            "Warning: DDG returned HTML but 0 results were parsed. The HTML structure may have changed."
        );
    }
    results
}

async fn search_ddg(query: &str, config: &SearchConfig) -> Result<Vec<SearchResult>, SearchError> {
    let url = format!("{}/html/?q={}", config.ddg_url, encode_uri_component(query));
    let (status, body, content_type) = search_get(
        &url,
        &[
            ("User-Agent", "dreb/1.0 (web search tool)"),
            ("Accept", "text/html"),
        ],
    )
    .await?;
    if !(200..300).contains(&status) {
        return Err(SearchError::Status("DuckDuckGo", status));
    }
    let html = super::net::decode_text(&body, &content_type);
    Ok(parse_ddg_html(&html))
}

#[derive(Deserialize)]
struct SearxngResponse {
    #[serde(default)]
    results: Vec<SearxngResult>,
}

#[derive(Deserialize)]
struct SearxngResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: Option<String>,
}

async fn search_searxng(
    query: &str,
    config: &SearchConfig,
) -> Result<Vec<SearchResult>, SearchError> {
    let base = config.searxng_url.trim_end_matches('/');
    let url = format!(
        "{base}/search?q={}&format=json",
        encode_uri_component(query)
    );
    let (status, body, _) = search_get(&url, &[("Accept", "application/json")]).await?;
    if !(200..300).contains(&status) {
        return Err(SearchError::Status("SearXNG", status));
    }
    let data: SearxngResponse = serde_json::from_slice(&body)
        .map_err(|e| SearchError::BadResponse("SearXNG", format!("invalid JSON ({e})")))?;
    Ok(data
        .results
        .into_iter()
        .take(MAX_RESULTS)
        .map(|r| SearchResult {
            title: r.title,
            url: r.url,
            snippet: r.content.unwrap_or_default(),
        })
        .collect())
}

#[derive(Deserialize)]
struct BraveResponse {
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: Option<String>,
}

async fn search_brave(
    query: &str,
    key: &str,
    config: &SearchConfig,
) -> Result<Vec<SearchResult>, SearchError> {
    let url = format!(
        "{}/res/v1/web/search?q={}",
        config.brave_url,
        encode_uri_component(query)
    );
    let (status, body, _) = search_get(
        &url,
        &[
            ("Accept", "application/json"),
            ("X-Subscription-Token", key),
        ],
    )
    .await?;
    if !(200..300).contains(&status) {
        return Err(SearchError::Status("Brave", status));
    }
    let data: BraveResponse = serde_json::from_slice(&body)
        .map_err(|e| SearchError::BadResponse("Brave", format!("invalid JSON ({e})")))?;
    Ok(data
        .web
        .map(|w| w.results)
        .unwrap_or_default()
        .into_iter()
        .take(MAX_RESULTS)
        .map(|r| SearchResult {
            title: r.title,
            url: r.url,
            snippet: r.description.unwrap_or_default(),
        })
        .collect())
}

/// One search through the queue with `config`'s backend.
pub async fn execute_search(
    query: &str,
    config: &SearchConfig,
    queue: &WebSearchQueue,
) -> Result<Vec<SearchResult>, SearchError> {
    queue
        .enqueue(async {
            match config.backend {
                Backend::Searxng => search_searxng(query, config).await,
                Backend::Brave => match &config.brave_api_key {
                    Some(key) => search_brave(query, key, config).await,
                    None => Err(SearchError::NoBraveKey),
                },
                Backend::Ddg => search_ddg(query, config).await,
            }
        })
        .await?
}

/// The text the model gets for a list of results.
pub fn format_results(query: &str, results: &[SearchResult]) -> String {
    if results.is_empty() {
        return format!("No results found for: {query}");
    }
    let list: Vec<String> = results
        .iter()
        .enumerate()
        .map(|(i, r)| format!("{}. {}\n   {}\n   {}", i + 1, r.title, r.url, r.snippet))
        .collect();
    format!("Search results for: {query}\n\n{}", list.join("\n\n"))
}

#[derive(Deserialize)]
struct SearchParams {
    query: String,
}

pub fn web_search_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"query": {"type": "string", "description": "The search query"}},
        "required": ["query"]
    })
}

type EnvLookup = dyn Fn(&str) -> Option<String> + Send + Sync;

pub struct WebSearchTool {
    cwd: PathBuf,
    home: PathBuf,
    agent_dir: PathBuf,
    env: Box<EnvLookup>,
    def: ToolDefinition,
}

impl WebSearchTool {
    /// Settings from the process environment, `~/.dreb/config.json` and `<cwd>/.dreb/config.json`; the queue
    /// files in the agent dir.
    pub fn new(cwd: PathBuf) -> Self {
        WebSearchTool {
            cwd,
            home: dreb_paths::home_dir(),
            agent_dir: dreb_paths::agent_dir(),
            env: Box::new(|k| std::env::var(k).ok()),
            def: definition(
                "web_search",
                "Search the web. Returns titles, URLs, and snippets. Configure backend via DREB_SEARCH_BACKEND env \
                 var (ddg, searxng, brave).",
                web_search_schema(),
            ),
        }
    }

    /// Other home, agent dir and environment (tests).
    pub fn with_context(
        mut self,
        home: PathBuf,
        agent_dir: PathBuf,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.home = home;
        self.agent_dir = agent_dir;
        self.env = Box::new(env);
        self
    }
}

#[async_trait]
impl Tool for WebSearchTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let SearchParams { query } = parse_params("web_search", params)?;
        let cancelled =
            || text_output(format!("Search cancelled for \"{query}\" (aborted)."), None);
        if cancel.is_cancelled() {
            return Ok(cancelled());
        }
        let config = SearchConfig::load(&self.cwd, &self.home, &*self.env);
        let queue = WebSearchQueue::in_dir(&self.agent_dir, config.rate_limit);
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Ok(cancelled()),
            r = execute_search(&query, &config, &queue) => r,
        };
        Ok(match outcome {
            Ok(results) => text_output(format_results(&query, &results), None),
            Err(e) => text_output(format!("Search failed for \"{query}\": {e}"), None),
        })
    }
}
