//! HTTP plumbing shared by the providers: one pooled client, SDK-style retries, error texts, SSE decoding.

use std::sync::LazyLock;
use std::time::Duration;

use eventsource_stream::Event;
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::output::{Output, ProviderError};

fn build_client(use_proxy: bool, system_roots: bool) -> reqwest::Client {
    // reqwest is built without a bundled crypto provider; install ring once for the process (a no-op if the host
    // application already installed one).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut b = reqwest::Client::builder().connect_timeout(Duration::from_secs(30));
    if !use_proxy {
        b = b.no_proxy();
    }
    if !system_roots {
        // No TLS is spoken, so the system's root certificates are not loaded (the platform verifier reads and
        // parses them all when the client is built: about 5 ms of CPU at a process's first request).
        b = b.tls_certs_only(Vec::new());
    }
    b.build().expect("HTTP client with the ring TLS provider")
}

static CLIENT: LazyLock<reqwest::Client> = LazyLock::new(|| build_client(true, true));
// Loopback servers (local models, the mock) are never reached through a proxy.
static LOOPBACK_CLIENT: LazyLock<reqwest::Client> = LazyLock::new(|| build_client(false, true));
// Plain `http://` loopback servers (Ollama, llama.cpp, the mock): no TLS, so no root certificates either. (One that
// redirected to an `https://` address would fail verification there; such a server is reached with `https://`.)
static PLAIN_LOOPBACK_CLIENT: LazyLock<reqwest::Client> =
    LazyLock::new(|| build_client(false, false));

fn is_loopback(url: &str) -> bool {
    reqwest::Url::parse(url)
        .ok()
        .and_then(|u| u.host_str().map(|h| h.to_string()))
        .is_some_and(|h| h == "localhost" || h == "[::1]" || h == "::1" || h.starts_with("127."))
}

pub(crate) fn client_for(url: &str) -> &'static reqwest::Client {
    if is_loopback(url) {
        if reqwest::Url::parse(url).is_ok_and(|u| u.scheme() == "http") {
            return &PLAIN_LOOPBACK_CLIENT;
        }
        &LOOPBACK_CLIENT
    } else {
        &CLIENT
    }
}

/// How a provider's official SDK words HTTP errors (hosts and the retry classifier match on these texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorStyle {
    /// `<status> <JSON body>` (the whole error body, or its `message` field when it has one).
    Anthropic,
    /// `<status> <body.error.message>` (or the JSON of `body.error`).
    OpenAi,
    /// The JSON error body itself.
    Google,
}

/// A non-2xx response.
#[derive(Debug, Clone)]
pub(crate) struct HttpFailure {
    pub status: u16,
    pub body: String,
    pub is_json: bool,
}

pub(crate) fn format_http_error(f: &HttpFailure, style: ErrorStyle) -> String {
    let parsed: Option<Value> = serde_json::from_str(&f.body).ok();
    match style {
        ErrorStyle::Google => {
            let body = match parsed.filter(|_| f.is_json) {
                Some(v) => v,
                None => {
                    serde_json::json!({"error": {"message": f.body, "code": f.status, "status": status_text(f.status)}})
                }
            };
            body.to_string()
        }
        ErrorStyle::Anthropic | ErrorStyle::OpenAi => {
            let error = match (&parsed, style) {
                (Some(v), ErrorStyle::Anthropic) => Some(v.clone()),
                (Some(v), _) => v.get("error").cloned(),
                _ => None,
            };
            let text = match &error {
                Some(e) => match e.get("message") {
                    Some(Value::String(s)) if !s.is_empty() => s.clone(),
                    Some(m) if !m.is_null() && m != &Value::Bool(false) => m.to_string(),
                    _ => e.to_string(),
                },
                // A body that is not JSON is the message; a JSON body without the expected key has none.
                None if parsed.is_none() => f.body.clone(),
                None => String::new(),
            };
            if text.is_empty() {
                format!("{} status code (no body)", f.status)
            } else {
                format!("{} {}", f.status, text)
            }
        }
    }
}

fn status_text(status: u16) -> &'static str {
    reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

/// The SDKs' text for a request that never got a response.
pub(crate) const CONNECTION_ERROR: &str = "Connection error.";

pub(crate) fn header_map(headers: &[(String, String)]) -> Result<HeaderMap, ProviderError> {
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| ProviderError::msg(format!("Invalid header name: {k}")))?;
        let value = HeaderValue::from_str(v)
            .map_err(|_| ProviderError::msg(format!("Invalid value for header {k}")))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Sets a header, replacing any existing one with the same name (case-insensitive).
pub(crate) fn set_header(
    headers: &mut Vec<(String, String)>,
    name: &str,
    value: impl Into<String>,
) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    headers.push((name.to_string(), value.into()));
}

/// How [`post_json`] retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    pub max_retries: u32,
    /// A retry the server asks to delay longer than this fails the request instead (0: no cap).
    pub max_server_delay_ms: u64,
}

/// The reference's text for a server-requested delay above the cap (whole seconds, rounded up).
fn delay_over_cap_text(requested_ms: f64, cap_ms: u64, err: &str) -> String {
    let secs = |ms: f64| (ms / 1000.0).ceil() as u64;
    format!(
        "Server requested {}s retry delay (max: {}s). {err}",
        secs(requested_ms),
        secs(cap_ms as f64)
    )
}

/// SDK rule: a server hint is used when it is under 60 s, otherwise the computed backoff.
fn delay_from_hint(hint_ms: Option<f64>) -> Option<Duration> {
    hint_ms
        .filter(|ms| (0.0..60_000.0).contains(ms))
        .map(|ms| Duration::from_millis(ms as u64))
}

/// The credential header `name: value`, or none when there is no key (a local server on loopback).
pub(crate) fn credential_header(name: &str, value: &str, key: &str) -> Vec<(String, String)> {
    if key.is_empty() {
        Vec::new()
    } else {
        vec![(name.to_string(), value.to_string())]
    }
}

/// Whether `url` names this machine (`localhost`, `127.0.0.0/8`, `[::1]`): a local model server, which may be
/// used without an API key.
pub fn is_loopback_url(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return false;
    };
    let Some(host) = parsed.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// POSTs a JSON body. Retries like the vendor SDKs do (connection errors, 408, 409, 429, 5xx; `x-should-retry`
/// decides when present; `retry-after-ms` / `retry-after` honoured up to 60 s, else 0.5 s·2ⁿ capped at 8 s), except
/// that a retry the server asks to delay beyond `max_server_delay_ms` fails at once (the reference's
/// `maxRetryDelayMs`). Cancellation is checked around every wait.
pub(crate) async fn post_json(
    out: &mut Output,
    url: &str,
    headers: &[(String, String)],
    body: &Value,
    retries: RetryPolicy,
    style: ErrorStyle,
) -> Result<reqwest::Response, ProviderError> {
    let header_map = header_map(headers)?;
    let bytes = serde_json::to_vec(body).map_err(|e| ProviderError::msg(e.to_string()))?;
    let client = client_for(url);
    let mut attempt = 0u32;
    loop {
        let req = client
            .post(url)
            .headers(header_map.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes.clone());
        let result = out.wait(req.send()).await?;
        let (retry, delay, err) = match result {
            Ok(resp) if resp.status().is_success() => return Ok(resp),
            Ok(resp) => {
                let status = resp.status().as_u16();
                let should = should_retry(&resp);
                let delay = retry_after(&resp);
                let is_json = resp
                    .headers()
                    .get(reqwest::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.contains("json"));
                let text = out.wait(resp.text()).await?.unwrap_or_default();
                let msg = format_http_error(
                    &HttpFailure {
                        status,
                        body: text,
                        is_json,
                    },
                    style,
                );
                (should, delay, msg)
            }
            Err(e) => {
                tracing::debug!(error = %e, url, "request failed");
                (true, None, CONNECTION_ERROR.to_string())
            }
        };
        if !retry || attempt >= retries.max_retries {
            return Err(ProviderError::Message(err));
        }
        let cap = retries.max_server_delay_ms;
        if let Some(requested) = delay.filter(|ms| cap > 0 && *ms > cap as f64) {
            return Err(ProviderError::Message(delay_over_cap_text(
                requested, cap, &err,
            )));
        }
        let delay = delay_from_hint(delay).unwrap_or_else(|| backoff(attempt));
        tracing::debug!(attempt, ?delay, "retrying request after: {err}");
        out.wait(tokio::time::sleep(delay)).await?;
        attempt += 1;
    }
}

fn should_retry(resp: &reqwest::Response) -> bool {
    match resp
        .headers()
        .get("x-should-retry")
        .and_then(|v| v.to_str().ok())
    {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    let s = resp.status().as_u16();
    s == 408 || s == 409 || s == 429 || s >= 500
}

/// The server's requested retry delay in ms (`retry-after-ms`, else `retry-after` seconds), unfiltered.
fn retry_after(resp: &reqwest::Response) -> Option<f64> {
    let h = resp.headers();
    let ms = h
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .or_else(|| {
            h.get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .map(|s| s * 1000.0)
        })?;
    ms.is_finite().then_some(ms)
}

fn backoff(attempt: u32) -> Duration {
    let base = (0.5 * 2f64.powi(attempt as i32)).min(8.0);
    // Up to 25 % jitter, from the clock (good enough to spread clients apart).
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let jitter = 1.0 - (nanos % 1000) as f64 / 1000.0 * 0.25;
    Duration::from_secs_f64(base * jitter)
}

/// The response body as server-sent events. A transport error mid-stream ends the stream (the provider then reports
/// the missing terminal event as a dropped connection).
pub(crate) fn sse_events(resp: reqwest::Response) -> impl Stream<Item = Event> + Send + Unpin {
    crate::sse::SseStream::new(resp.bytes_stream()).boxed()
}

/// Joins a base URL and a path with exactly one slash.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_over_the_cap_is_reported_in_whole_seconds_rounded_up() {
        assert_eq!(
            delay_over_cap_text(120_000.0, 60_000, "429 Too many"),
            "Server requested 120s retry delay (max: 60s). 429 Too many"
        );
        assert_eq!(
            delay_over_cap_text(60_001.0, 1_500, "x"),
            "Server requested 61s retry delay (max: 2s). x"
        );
    }

    #[test]
    fn only_hints_under_a_minute_set_the_delay() {
        assert_eq!(
            delay_from_hint(Some(59_999.0)),
            Some(Duration::from_millis(59_999))
        );
        assert_eq!(delay_from_hint(Some(60_000.0)), None);
        assert_eq!(delay_from_hint(Some(-1.0)), None);
        assert_eq!(delay_from_hint(None), None);
    }

    fn f(status: u16, body: &str) -> HttpFailure {
        HttpFailure {
            status,
            body: body.into(),
            is_json: body.starts_with('{'),
        }
    }

    #[test]
    fn tls_clients_build_with_the_ring_provider() {
        // Building only: no request leaves the machine.
        let remote = client_for("https://api.anthropic.com/v1/messages");
        let local = client_for("http://127.0.0.1:8080/v1");
        let local_tls = client_for("https://localhost:8443/v1");
        assert!(
            !std::ptr::eq(remote, local) && !std::ptr::eq(remote, local_tls),
            "loopback gets its own proxy-free clients"
        );
        assert!(
            !std::ptr::eq(local, local_tls),
            "plain http skips the root certificates, https keeps them"
        );
        assert!(
            is_loopback("http://localhost:1234")
                && is_loopback("http://[::1]:80/")
                && !is_loopback("https://example.com")
        );
    }

    #[test]
    fn sdk_error_texts() {
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            format_http_error(&f(529, overloaded), ErrorStyle::Anthropic),
            format!("529 {overloaded}")
        );
        let rl = r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert_eq!(
            format_http_error(&f(429, rl), ErrorStyle::OpenAi),
            "429 Rate limit reached"
        );
        assert_eq!(
            format_http_error(&f(502, "Bad gateway"), ErrorStyle::OpenAi),
            "502 Bad gateway"
        );
        assert_eq!(
            format_http_error(&f(400, ""), ErrorStyle::Anthropic),
            "400 status code (no body)"
        );
        assert_eq!(
            format_http_error(&f(503, "down"), ErrorStyle::Google),
            r#"{"error":{"message":"down","code":503,"status":"Service Unavailable"}}"#
        );
    }
}
