//! Test kit: a scripted mock LLM server speaking the real provider wire formats on loopback.
//!
//! ```no_run
//! use dreb_mock_llm::MockLlm;
//! let mock = MockLlm::start(Default::default()).unwrap(); // the reference mock's trigger rules
//! let openai_base = format!("{}/v1", mock.base_url());
//! // ... point a model at it, stream, then:
//! let sent = mock.requests();
//! ```
//!
//! Routes (POST): `…/messages` (anthropic-messages), `…/chat/completions` (openai-completions), `…/responses`
//! (openai-responses), `…/models/<id>:streamGenerateContent` (google-generative-ai). Replies follow a
//! [`Scenario`] (see `dreb_ai::scenario`); every request is recorded.

mod summary;
mod wire;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
pub use dreb_ai::scenario::{
    Fault, Reply, Scenario, ScenarioPlayer, ScriptedToolCall, ScriptedUsage, Turn, When,
};
use futures::StreamExt;
use serde_json::Value;

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Header names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The JSON body (`Value::Null` if the body was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Which wire format a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAiCompletions,
    OpenAiResponses,
    Google,
}

struct Shared {
    player: Mutex<ScenarioPlayer>,
    requests: Mutex<Vec<RecordedRequest>>,
    counter: Mutex<u64>,
}

/// A running mock server; dropping it shuts the server down.
pub struct MockLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockLlm {
    /// Binds 127.0.0.1 on a random port and serves `scenario` on a background thread (usable from sync and async
    /// code alike).
    pub fn start(scenario: Scenario) -> std::io::Result<MockLlm> {
        Self::start_on(scenario, 0)
    }

    /// Like [`MockLlm::start`] on a fixed port (0 = random).
    pub fn start_on(scenario: Scenario, port: u16) -> std::io::Result<MockLlm> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            player: Mutex::new(ScenarioPlayer::new(scenario)),
            requests: Mutex::new(Vec::new()),
            counter: Mutex::new(0),
        });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let state = shared.clone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let thread = std::thread::Builder::new()
            .name("dreb-mock-llm".into())
            .spawn(move || {
                rt.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            tracing::error!("mock LLM listener: {e}");
                            return;
                        }
                    };
                    let app = axum::Router::new().fallback(handle).with_state(state);
                    let _ = axum::serve(listener, app)
                        .with_graceful_shutdown(async {
                            let _ = rx.await;
                        })
                        .await;
                });
            })?;
        Ok(MockLlm {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:<port>` (use as the Anthropic baseUrl; add `/v1` for OpenAI, `/v1beta` for Google).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Base URL for `openai-completions` / `openai-responses` models (`<base>/v1`).
    pub fn openai_base_url(&self) -> String {
        format!("{}/v1", self.base_url())
    }

    /// Base URL for `google-generative-ai` models (`<base>/v1beta`).
    pub fn google_base_url(&self) -> String {
        format!("{}/v1beta", self.base_url())
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        // Graceful shutdown waits for open streams; don't block the dropping thread on them.
        drop(self.thread.take());
    }
}

fn wire_of(path: &str) -> Option<Wire> {
    let p = path.split('?').next().unwrap_or(path);
    if p.ends_with("/messages") {
        Some(Wire::Anthropic)
    } else if p.ends_with("/chat/completions") {
        Some(Wire::OpenAiCompletions)
    } else if p.ends_with("/responses") {
        Some(Wire::OpenAiResponses)
    } else if p.contains(":streamGenerateContent") {
        Some(Wire::Google)
    } else {
        None
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| uri.path().to_string());
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let recorded = RecordedRequest {
        method: method.to_string(),
        path: path.clone(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: json.clone(),
    };
    shared
        .requests
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(recorded);
    let Some(wire) = wire_of(&path).filter(|_| method == Method::POST) else {
        return plain(
            StatusCode::NOT_FOUND,
            "application/json",
            r#"{"error":{"message":"not found"}}"#.into(),
        );
    };
    let n = {
        let mut c = shared.counter.lock().unwrap_or_else(|e| e.into_inner());
        *c += 1;
        *c
    };
    let summary = summary::summarize(wire, &json);
    let reply = shared
        .player
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .next(&summary);
    let turn = match reply {
        Reply::Turn(t) => t,
        Reply::Exhausted => {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "application/json",
                wire::error_body(wire, 500, "api_error", "mock scenario exhausted"),
            );
        }
    };
    if turn.first_byte_delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(turn.first_byte_delay_ms)).await;
    }
    if let Some(f) = &turn.fault {
        let (kind, message) = f.kind();
        let body = f
            .body
            .clone()
            .unwrap_or_else(|| wire::error_body(wire, f.status, kind, message));
        let mut resp = plain(
            StatusCode::from_u16(f.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            "application/json",
            body,
        );
        if let Some(ms) = f.retry_after_ms {
            resp.headers_mut().insert(
                "retry-after-ms",
                ms.to_string().parse().expect("digits are a valid header"),
            );
        }
        return resp;
    }
    let model = json
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("mock")
        .to_string();
    let frames = wire::render(wire, &turn, n, &model);
    let delay = turn.delta_delay_ms;
    let stream = futures::stream::iter(frames).then(move |(is_delta, bytes)| async move {
        if is_delta && delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        Ok::<_, std::convert::Infallible>(Bytes::from(bytes))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(stream))
        .expect("valid response")
}

fn plain(status: StatusCode, content_type: &str, body: String) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Body::from(body))
        .expect("valid response")
}
