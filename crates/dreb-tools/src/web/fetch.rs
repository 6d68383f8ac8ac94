//! `web_fetch`: one URL as readable text. HTML becomes Markdown, PDFs give their text, plain text, JSON and XML
//! come as they are; GitHub URLs get guidance for `gh` or a clone instead. Results are cached for 15 minutes per
//! process, as in the reference.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use url::Url;

use super::net::{FetchOptions, http_fetch};
use crate::common::{definition, parse_params, text_output};
use crate::truncate::{Limits, truncate_head};

/// Characters of extracted text kept (the reference's `MAX_CONTENT_LENGTH`).
pub const MAX_CONTENT_LENGTH: usize = 100_000;
pub const CACHE_TTL: Duration = Duration::from_secs(15 * 60);

#[derive(Debug, Clone)]
struct CachedPage {
    url: String,
    title: String,
    content: String,
    fetched_at: String,
}

/// Per process, keyed by the URL as the model wrote it (the reference's module-level map).
static CACHE: LazyLock<Mutex<HashMap<String, (Instant, CachedPage)>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn cache_get(url: &str) -> Option<CachedPage> {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    match cache.get(url) {
        Some((at, page)) if at.elapsed() < CACHE_TTL => Some(page.clone()),
        Some(_) => {
            cache.remove(url);
            None
        }
        None => None,
    }
}

fn cache_put(page: CachedPage) {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    // Stale entries go whenever something is added, so the map does not grow without bound over a long session.
    cache.retain(|_, (at, _)| at.elapsed() < CACHE_TTL);
    cache.insert(page.url.clone(), (Instant::now(), page));
}

/// Guidance instead of a fetch for GitHub hosts (`/blob/` pages are HTML chrome, private repositories answer
/// 404 without auth, the API wants its own headers); `None` for any other host.
pub fn github_fetch_guidance(url: &Url) -> Option<String> {
    let host = url.host_str()?.to_ascii_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host);
    let is_github = matches!(
        host,
        "github.com" | "gist.github.com" | "api.github.com" | "raw.githubusercontent.com"
    ) || host.ends_with(".githubusercontent.com");
    if !is_github {
        return None;
    }
    let path = url.path();
    let hint = if host == "api.github.com" {
        format!(
            "Use the `gh api` command instead, e.g. `gh api {}`.",
            path.trim_start_matches('/')
        )
    } else if host.ends_with("githubusercontent.com")
        || path.contains("/blob/")
        || path.contains("/raw/")
    {
        "To read file contents, clone the repo to /tmp (`git clone <repo> /tmp/<name>`) and read the file locally, \
         or use `gh api` to fetch the raw content."
            .to_string()
    } else if path.contains("/pull/") {
        "Use `gh pr view <number>` (add `--comments`) or `gh pr diff <number>` instead.".to_string()
    } else if path.contains("/issues/") {
        "Use `gh issue view <number>` (add `--comments`) instead.".to_string()
    } else {
        "Use the `gh` CLI (e.g. `gh repo view`, `gh api`, `gh pr view`, `gh issue view`) or clone the repo to /tmp \
         and read files locally."
            .to_string()
    };
    Some(format!(
        "web_fetch does not work reliably on GitHub URLs (private repos 404, /blob/ pages return HTML chrome, not \
         file content). {hint}"
    ))
}

/// How a body of `content_type` is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pdf,
    Html,
    Text,
}

fn kind_of(content_type: &str) -> Option<Kind> {
    let ct = content_type.to_ascii_lowercase();
    let mime = ct.split(';').next().unwrap_or_default().trim();
    if ct.contains("application/pdf") {
        Some(Kind::Pdf)
    } else if ct.contains("text/html") || ct.contains("application/xhtml") {
        Some(Kind::Html)
    } else if ct.contains("text/plain")
        || ct.contains("application/json")
        || ct.contains("text/xml")
        || ct.contains("application/xml")
        // Beyond the reference: any other text type (Markdown, CSV, source files) and the JSON/XML families.
        || mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
    {
        Some(Kind::Text)
    } else {
        None
    }
}

/// `text` cut to [`MAX_CONTENT_LENGTH`] characters, with the reference's notice; whether it was cut.
pub(crate) fn limit_content(text: String) -> (String, bool) {
    match text.char_indices().nth(MAX_CONTENT_LENGTH) {
        None => (text, false),
        Some((at, _)) => (
            format!(
                "{}\n\n[Content truncated at ~{}KB]",
                &text[..at],
                (MAX_CONTENT_LENGTH as f64 / 1024.0).round()
            ),
            true,
        ),
    }
}

fn now_iso() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[derive(Deserialize)]
struct FetchParams {
    url: String,
}

pub fn web_fetch_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"url": {"type": "string", "description": "The URL to fetch"}},
        "required": ["url"]
    })
}

pub struct WebFetchTool {
    /// Private hosts blocked unless [`super::net::ALLOW_PRIVATE_ENV`] is `1`; 30 s per request.
    options: FetchOptions,
    def: ToolDefinition,
}

impl Default for WebFetchTool {
    fn default() -> Self {
        Self::new()
    }
}

impl WebFetchTool {
    pub fn new() -> Self {
        WebFetchTool {
            options: FetchOptions::default(),
            def: definition(
                "web_fetch",
                format!(
                    "Fetch a URL and return its text content. Extracts readable text from HTML pages. Supports PDF \
                     text extraction. Content truncated to ~{}KB. Results cached for 15 minutes. GitHub URLs are \
                     redirected to guidance for the `gh` CLI or a local clone instead of being fetched.",
                    (MAX_CONTENT_LENGTH as f64 / 1024.0).round()
                ),
                web_fetch_schema(),
            ),
        }
    }

    /// Whether private and loopback hosts may be fetched (tests point this at their loopback servers).
    pub fn allow_private(mut self, allow: bool) -> Self {
        self.options.allow_private = Some(allow);
        self
    }

    /// Another per-request time limit (tests).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = timeout;
        self
    }

    async fn fetch(&self, raw: &str) -> ToolOutput {
        let url = match Url::parse(raw) {
            Ok(u) => u,
            Err(_) => return text_output(format!("Invalid URL: {raw}"), None),
        };
        if !url.scheme().starts_with("http") {
            return text_output(format!("Unsupported protocol: {}:", url.scheme()), None);
        }
        if let Some(guidance) = github_fetch_guidance(&url) {
            return text_output(guidance, None);
        }
        if let Some(page) = cache_get(raw) {
            return text_output(
                format!(
                    "{}\n{}\nFetched: {} (cached)\n\n{}",
                    page.title, page.url, page.fetched_at, page.content
                ),
                None,
            );
        }
        let fetched = match http_fetch(&url, self.options).await {
            Ok(f) => f,
            Err(e) => return text_output(format!("Failed to fetch {raw}: {e}"), None),
        };
        let Some(kind) = kind_of(&fetched.content_type) else {
            return text_output(
                format!("Unsupported content type: {}", fetched.content_type),
                None,
            );
        };
        // Parsing a large page is CPU work: off the async threads.
        let (title, text) = tokio::task::spawn_blocking(move || match kind {
            Kind::Pdf => (None, super::pdf::extract_text(&fetched.body)),
            Kind::Html => {
                let html = super::net::decode_html(&fetched.body, &fetched.content_type);
                let page = super::html::readable(&html);
                (Some(page.title).filter(|t| !t.is_empty()), page.markdown)
            }
            Kind::Text => (None, fetched.text()),
        })
        .await
        .unwrap_or_else(|e| (None, format!("[content extraction failed: {e}]")));
        let title = title.unwrap_or_else(|| raw.to_string());
        let (content, cut) = limit_content(text);
        let mut details = Map::new();
        if cut {
            details.insert("truncatedContent".into(), Value::Bool(true));
        }
        let fetched_at = now_iso();
        let output = format!("{title}\n{raw}\nFetched: {fetched_at}\n\n{content}");
        cache_put(CachedPage {
            url: raw.to_string(),
            title,
            content,
            fetched_at,
        });
        let truncation = truncate_head(
            &output,
            Limits {
                // The reference's `Number.MAX_SAFE_INTEGER`: only the byte limit applies (and shows in details).
                max_lines: 9_007_199_254_740_991,
                ..Limits::default()
            },
        );
        if truncation.truncated {
            details.insert("truncation".into(), truncation.to_json());
        }
        text_output(
            truncation.content,
            (!details.is_empty()).then_some(Value::Object(details)),
        )
    }
}

#[async_trait]
impl Tool for WebFetchTool {
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
        let FetchParams { url } = parse_params("web_fetch", params)?;
        let cancelled = || text_output(format!("Fetch cancelled for {url} (aborted)."), None);
        if cancel.is_cancelled() {
            return Ok(cancelled());
        }
        Ok(tokio::select! {
            biased;
            _ = cancel.cancelled() => cancelled(),
            out = self.fetch(&url) => out,
        })
    }
}
