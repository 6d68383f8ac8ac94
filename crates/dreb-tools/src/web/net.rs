//! HTTP for `web_fetch` and `web_search`: the private-address block (SSRF), the manual same-host redirect loop,
//! time and size limits, body decoding.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Per request (headers and body), as the reference's `AbortSignal.timeout`.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Redirect hops followed on the same host.
pub const MAX_REDIRECTS: usize = 10;
/// Bodies are read at most this far (the reference read any size into memory); more is an error.
pub const MAX_BODY_BYTES: usize = 20 * 1024 * 1024;
/// Test and development only: `1` lets `web_fetch` reach private and loopback hosts (the tests' mock servers).
pub const ALLOW_PRIVATE_ENV: &str = "DREB_WEB_FETCH_ALLOW_PRIVATE";

const FETCH_USER_AGENT: &str = "dreb/1.0 (web fetch tool)";
const FETCH_ACCEPT: &str = "text/html,application/xhtml+xml,text/plain,application/pdf";

/// Why a fetch failed; the text follows the reference's wording where it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("Blocked: {0} is a private/internal address")]
    BlockedHost(String),
    #[error("Blocked: redirect to private/internal address")]
    BlockedRedirect,
    /// A public-looking name whose every address is private (the reference checked only the literal host).
    #[error("Blocked: {0} resolves to a private/internal address")]
    BlockedResolved(String),
    #[error("HTTP {0}: redirect with no Location header")]
    NoLocation(u16),
    #[error("HTTP {0}: invalid redirect location {1:?}")]
    BadLocation(u16, String),
    #[error("HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("Too many redirects ({MAX_REDIRECTS})")]
    TooManyRedirects,
    /// Node's text for an `AbortSignal.timeout`, which the reference showed.
    #[error("The operation was aborted due to timeout")]
    Timeout,
    #[error("Response body exceeds {} MB", MAX_BODY_BYTES / (1024 * 1024))]
    TooLarge,
    #[error("{0}")]
    Transport(String),
}

/// Loopback, private, link-local, unspecified, CGNAT and broadcast IPv4; loopback, unspecified, ULA, link-local
/// and IPv4-mapped private IPv6.
pub fn is_private_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => {
            let [first, second, ..] = a.octets();
            a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_broadcast()
                || first == 0
                || (first == 100 && (second & 0xc0) == 64)
        }
        IpAddr::V6(a) => {
            let head = a.segments()[0];
            a.is_loopback()
                || a.is_unspecified()
                || (head & 0xfe00) == 0xfc00
                || (head & 0xffc0) == 0xfe80
                || a.to_ipv4_mapped()
                    .is_some_and(|v4| is_private_ip(IpAddr::V4(v4)))
        }
    }
}

/// The host part of a parsed URL. The `url` crate normalises IPv4 spellings (`127.1`, `0x7f.0.0.1`,
/// `2130706433`) to the address, so each of those is caught here.
pub fn is_private_host(host: &Host<&str>) -> bool {
    match host {
        Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Host::Ipv4(a) => is_private_ip(IpAddr::V4(*a)),
        Host::Ipv6(a) => is_private_ip(IpAddr::V6(*a)),
    }
}

fn allow_private_from_env() -> bool {
    std::env::var(ALLOW_PRIVATE_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Drops private addresses from every name lookup, so a public name that points inside the network (or is
/// rebound to do so) is refused at connect time too.
struct PublicOnlyResolver;

impl Resolve for PublicOnlyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<SocketAddr> = found
                .into_iter()
                .filter(|a| !is_private_ip(a.ip()))
                .collect();
            if public.is_empty() {
                return Err(Box::new(FetchError::BlockedResolved(host)) as _);
            }
            Ok(Box::new(public.into_iter()) as Addrs)
        })
    }
}

fn builder() -> reqwest::ClientBuilder {
    // reqwest is built without a bundled crypto provider; install ring once (a no-op if one is installed).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().connect_timeout(FETCH_TIMEOUT)
}

/// `web_fetch`: redirects handled by hand, private addresses refused at resolution.
static GUARDED: LazyLock<reqwest::Client> = LazyLock::new(|| {
    builder()
        .redirect(reqwest::redirect::Policy::none())
        .dns_resolver(Arc::new(PublicOnlyResolver))
        .build()
        .expect("HTTP client")
});
/// `web_fetch` with the private-address escape hatch: loopback servers are never reached through a proxy.
static UNGUARDED: LazyLock<reqwest::Client> = LazyLock::new(|| {
    builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .build()
        .expect("HTTP client")
});
/// Search backends follow redirects (as the reference's `redirect: "follow"`).
static SEARCH: LazyLock<reqwest::Client> =
    LazyLock::new(|| builder().build().expect("HTTP client"));
static SEARCH_LOOPBACK: LazyLock<reqwest::Client> =
    LazyLock::new(|| builder().no_proxy().build().expect("HTTP client"));

/// The first error in `e`'s source chain that is ours, else every message of the chain joined (reqwest's top
/// level alone says only "error sending request").
fn transport_error(e: &reqwest::Error) -> FetchError {
    if e.is_timeout() {
        return FetchError::Timeout;
    }
    let mut parts = vec![e.to_string()];
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(ours) = s.downcast_ref::<FetchError>() {
            return ours.clone();
        }
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    FetchError::Transport(parts.join(": "))
}

/// A response body as the tools use it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub body: Vec<u8>,
    pub content_type: String,
}

impl Fetched {
    /// The body decoded with the `charset` of its content type (UTF-8 when absent or unknown; a BOM wins).
    pub fn text(&self) -> String {
        decode_text(&self.body, &self.content_type)
    }
}

fn header_charset(content_type: &str) -> Option<&'static encoding_rs::Encoding> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        if !k.trim().eq_ignore_ascii_case("charset") {
            return None;
        }
        encoding_rs::Encoding::for_label(v.trim().trim_matches('"').as_bytes())
    })
}

pub fn decode_text(body: &[u8], content_type: &str) -> String {
    let encoding = header_charset(content_type).unwrap_or(encoding_rs::UTF_8);
    encoding.decode(body).0.into_owned()
}

static META_CHARSET: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
    regex::bytes::Regex::new(r#"(?i-u)<meta\s[^>]*charset\s*=\s*["']?([a-z0-9_.:-]+)"#)
        .expect("regex")
});

/// An HTML body: the header's charset, else a `<meta charset>` (or `http-equiv` content type) in the first 1024
/// bytes, as browsers prescan, else UTF-8. A BOM wins over both.
pub fn decode_html(body: &[u8], content_type: &str) -> String {
    let encoding = header_charset(content_type)
        .or_else(|| {
            let head = &body[..body.len().min(1024)];
            let label = META_CHARSET.captures(head)?.get(1)?.as_bytes().to_vec();
            encoding_rs::Encoding::for_label(&label)
        })
        .unwrap_or(encoding_rs::UTF_8);
    encoding.decode(body).0.into_owned()
}

async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, FetchError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport_error(&e))? {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(FetchError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// What one hop gave.
enum Hop {
    Redirect(u16, Option<String>),
    Done(Fetched),
}

async fn one_hop(client: &reqwest::Client, url: &Url) -> Result<Hop, FetchError> {
    let response = client
        .get(url.clone())
        .header(reqwest::header::USER_AGENT, FETCH_USER_AGENT)
        .header(reqwest::header::ACCEPT, FETCH_ACCEPT)
        .send()
        .await
        .map_err(|e| transport_error(&e))?;
    let status = response.status().as_u16();
    if (300..400).contains(&status) {
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        return Ok(Hop::Redirect(status, location));
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let ok = response.status().is_success();
    let body = read_body(response).await?;
    if !ok {
        let text = decode_text(&body, &content_type);
        return Err(FetchError::Status {
            status,
            body: text.chars().take(200).collect(),
        });
    }
    Ok(Hop::Done(Fetched { body, content_type }))
}

/// Where a redirect leads.
#[derive(Debug, PartialEq, Eq)]
enum NextHop {
    Follow(Url),
    /// Off the original host: reported, not followed.
    CrossHost(Url),
}

fn next_hop(
    current: &Url,
    status: u16,
    location: &str,
    original_host: &str,
    allow_private: bool,
) -> Result<NextHop, FetchError> {
    let target = current
        .join(location)
        .map_err(|_| FetchError::BadLocation(status, location.to_string()))?;
    // Checked before the cross-host note so a private target is never revealed.
    if !allow_private && target.host().is_some_and(|h| is_private_host(&h)) {
        return Err(FetchError::BlockedRedirect);
    }
    if target.host_str().unwrap_or_default() != original_host {
        return Ok(NextHop::CrossHost(target));
    }
    Ok(NextHop::Follow(target))
}

/// How [`http_fetch`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchOptions {
    /// `None`: as [`ALLOW_PRIVATE_ENV`] says.
    pub allow_private: Option<bool>,
    /// Per request (headers and body).
    pub timeout: Duration,
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions {
            allow_private: None,
            timeout: FETCH_TIMEOUT,
        }
    }
}

/// GET `url`, following redirects only while they stay on the original host; a redirect elsewhere answers with a
/// note naming the target instead (the model decides whether to fetch it).
pub async fn http_fetch(url: &Url, options: FetchOptions) -> Result<Fetched, FetchError> {
    let allow_private = options.allow_private.unwrap_or_else(allow_private_from_env);
    let original_host = url.host_str().unwrap_or_default().to_string();
    if !allow_private && url.host().is_some_and(|h| is_private_host(&h)) {
        return Err(FetchError::BlockedHost(original_host));
    }
    let client: &reqwest::Client = if allow_private { &UNGUARDED } else { &GUARDED };
    let mut current = url.clone();
    for _ in 0..=MAX_REDIRECTS {
        let hop = tokio::time::timeout(options.timeout, one_hop(client, &current))
            .await
            .map_err(|_| FetchError::Timeout)??;
        match hop {
            Hop::Done(fetched) => return Ok(fetched),
            Hop::Redirect(status, None) => return Err(FetchError::NoLocation(status)),
            Hop::Redirect(status, Some(location)) => {
                match next_hop(&current, status, &location, &original_host, allow_private)? {
                    NextHop::Follow(target) => current = target,
                    NextHop::CrossHost(target) => {
                        let note = format!(
                            "Cross-host redirect detected.\nOriginal: {url}\nRedirects to: {target}\n\nThe \
                             redirect target is on a different host. Fetch the new URL directly if you want to \
                             follow it."
                        );
                        return Ok(Fetched {
                            body: note.into_bytes(),
                            content_type: "text/plain".into(),
                        });
                    }
                }
            }
        }
    }
    Err(FetchError::TooManyRedirects)
}

/// A search backend's request: redirects followed, the same time limit, the status and body returned as they
/// are (each backend words its own failure).
pub async fn search_get(
    url: &str,
    headers: &[(&str, &str)],
) -> Result<(u16, Vec<u8>, String), FetchError> {
    let parsed = Url::parse(url).map_err(|e| FetchError::Transport(format!("{e}: {url}")))?;
    let loopback = match parsed.host() {
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(a)) => a.is_loopback(),
        Some(Host::Ipv6(a)) => a.is_loopback(),
        None => false,
    };
    let client: &reqwest::Client = if loopback { &SEARCH_LOOPBACK } else { &SEARCH };
    let fut = async {
        let mut req = client.get(parsed);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let response = req.send().await.map_err(|e| transport_error(&e))?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        let body = read_body(response).await?;
        Ok((status, body, content_type))
    };
    tokio::time::timeout(FETCH_TIMEOUT, fut)
        .await
        .map_err(|_| FetchError::Timeout)?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_blocked(url: &str) -> bool {
        let u = Url::parse(url).unwrap();
        is_private_host(&u.host().unwrap())
    }

    #[test]
    fn private_hosts_are_recognised_in_every_spelling() {
        for url in [
            "http://localhost/",
            "http://LOCALHOST./",
            "http://app.localhost/",
            "http://127.0.0.1/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f.0.0.1/",
            "http://0.0.0.0/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://172.31.255.255/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data",
            "http://100.64.0.1/",
            "http://[::1]/",
            "http://[::]/",
            "http://[fe80::1]/",
            "http://[fc00::1]/",
            "http://[fd12:3456::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:10.0.0.1]/",
        ] {
            assert!(host_blocked(url), "{url} should be blocked");
        }
        for url in [
            "http://example.com/",
            "http://172.32.0.1/",
            "http://172.15.0.1/",
            "http://8.8.8.8/",
            "http://100.128.0.1/",
            "http://[2606:4700::1111]/",
            "http://localhost.example.com/",
        ] {
            assert!(!host_blocked(url), "{url} should be allowed");
        }
    }

    #[test]
    fn text_is_decoded_with_the_declared_charset() {
        assert_eq!(
            decode_text(b"caf\xe9", "text/plain; charset=ISO-8859-1"),
            "café"
        );
        assert_eq!(
            decode_text("café".as_bytes(), "text/html; charset=\"utf-8\""),
            "café"
        );
        assert_eq!(decode_text("café".as_bytes(), "text/html"), "café");
        assert_eq!(decode_text(b"ok", "text/plain; charset=bogus"), "ok");
        assert_eq!(
            decode_text(b"\xef\xbb\xbfok", "text/plain; charset=latin1"),
            "ok"
        );
    }

    #[test]
    fn html_without_a_header_charset_uses_its_meta_tag() {
        let page = b"<html><head><meta charset=\"windows-1252\"><title>caf\xe9</title>";
        assert!(decode_html(page, "text/html").contains("caf\u{e9}"));
        let equiv =
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=ISO-8859-1\">\xe9";
        assert!(decode_html(equiv, "text/html").ends_with('\u{e9}'));
        // The header wins over the meta tag.
        let utf8 = "<meta charset=\"windows-1252\">\u{e9}".as_bytes();
        assert!(decode_html(utf8, "text/html; charset=utf-8").ends_with('\u{e9}'));
        assert_eq!(decode_html("\u{e9}".as_bytes(), "text/html"), "\u{e9}");
    }

    #[test]
    fn redirects_stay_on_the_host_and_never_lead_inside() {
        let here = Url::parse("https://example.com/a/b").unwrap();
        let hop =
            |location: &str, allow: bool| next_hop(&here, 302, location, "example.com", allow);
        assert_eq!(
            hop("c?x=1", false),
            Ok(NextHop::Follow(
                Url::parse("https://example.com/a/c?x=1").unwrap()
            ))
        );
        assert_eq!(
            hop("https://docs.example.org/", false),
            Ok(NextHop::CrossHost(
                Url::parse("https://docs.example.org/").unwrap()
            ))
        );
        for inside in [
            "http://127.0.0.1/admin",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]:8080/",
            "http://localhost/",
            "//10.0.0.7/",
        ] {
            assert_eq!(
                hop(inside, false),
                Err(FetchError::BlockedRedirect),
                "{inside}"
            );
        }
        assert!(matches!(
            hop("http://127.0.0.1/", true),
            Ok(NextHop::CrossHost(_))
        ));
        assert_eq!(
            hop("http://[bad", false),
            Err(FetchError::BadLocation(302, "http://[bad".into()))
        );
    }

    fn blocked() -> FetchOptions {
        FetchOptions {
            allow_private: Some(false),
            ..FetchOptions::default()
        }
    }

    #[tokio::test]
    async fn a_literal_private_host_is_refused_before_any_connection() {
        let u = Url::parse("http://127.0.0.1:9/x").unwrap();
        assert_eq!(
            http_fetch(&u, blocked()).await,
            Err(FetchError::BlockedHost("127.0.0.1".into()))
        );
        let u = Url::parse("http://[::1]:9/x").unwrap();
        assert_eq!(
            http_fetch(&u, blocked()).await.unwrap_err().to_string(),
            "Blocked: [::1] is a private/internal address"
        );
    }

    #[tokio::test]
    async fn a_name_resolving_only_to_private_addresses_is_refused() {
        // `localhost` resolves from /etc/hosts (no network); the literal check is bypassed by asking the
        // resolver directly, as a public-looking name rebound to 127.0.0.1 would reach it.
        let r = PublicOnlyResolver
            .resolve("localhost".parse::<Name>().unwrap())
            .await;
        let err = r.err().expect("blocked");
        assert_eq!(
            err.downcast_ref::<FetchError>(),
            Some(&FetchError::BlockedResolved("localhost".into()))
        );
    }
}
