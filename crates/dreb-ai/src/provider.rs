//! The streaming interface between the agent loop and the providers.

use std::pin::Pin;

use futures::Stream;
use indexmap::IndexMap;
use tokio_util::sync::CancellationToken;

use crate::types::{AssistantMessage, AssistantMessageEvent, Context, Model, ThinkingLevel};

/// A provider response as a stream of assistant events. It always ends with exactly one `Done` or `Error` event:
/// failures (HTTP errors, dropped streams, cancellation) are reported as an `Error` event whose message carries
/// `stopReason` `error`/`aborted` and an `errorMessage`, never as a Rust error, so the loop has one path.
pub type AssistantEventStream = Pin<Box<dyn Stream<Item = AssistantMessageEvent> + Send>>;

/// The rewritten request body, when it is ready.
pub type PayloadFuture = Pin<Box<dyn std::future::Future<Output = serde_json::Value> + Send>>;

/// Rewrites a provider request body just before it is sent (`before_provider_request`).
#[derive(Clone)]
pub struct PayloadHook(
    pub std::sync::Arc<dyn Fn(serde_json::Value) -> PayloadFuture + Send + Sync>,
);

impl std::fmt::Debug for PayloadHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PayloadHook")
    }
}

impl PayloadHook {
    /// `body` as the hook rewrites it.
    pub async fn apply(&self, body: serde_json::Value) -> serde_json::Value {
        (self.0)(body).await
    }
}

/// `body` as `hook` rewrites it (unchanged without one).
pub(crate) async fn rewrite_payload(
    hook: &Option<PayloadHook>,
    body: serde_json::Value,
) -> serde_json::Value {
    match hook {
        Some(hook) => hook.apply(body).await,
        None => body,
    }
}

/// Per-request options.
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// Resolved credential for the model's provider (None for providers that need none, e.g. `faux`).
    pub api_key: Option<String>,
    /// Output token budget; None means the provider default `min(model.maxTokens, 32000)`.
    pub max_tokens: Option<u64>,
    /// Requested reasoning level; providers clamp it to what the model supports.
    pub thinking: ThinkingLevel,
    /// Cancelling this ends the stream promptly with an `Error { reason: Aborted }` event.
    pub cancel: CancellationToken,
    /// Session id, for providers that support prompt-cache affinity.
    pub session_id: Option<String>,
    /// Extra HTTP headers (merged over the model's `headers`).
    pub headers: IndexMap<String, String>,
    /// Rewrites the request body before it is sent (HTTP providers; `faux` sends none).
    pub on_payload: Option<PayloadHook>,
    /// The consumer keeps the reply's content itself: a `text_delta` or `thinking_delta` may then carry its
    /// `partial` without content (`content` empty), meaning the previous event's partial content with this delta
    /// appended to block `content_index`; every other event, and a delta after any other change to the content,
    /// carries the full partial. Spares a copy of the reply so far on every delta. Off by default.
    pub deltas_without_content: bool,
}

/// Drains `stream` to its terminal event: `Ok` with the message of `Done`, `Err` with the error message of `Error`
/// (`stopReason` `error` or `aborted`). `None` only when the stream ended without one (a contract violation).
pub async fn final_message(
    mut stream: AssistantEventStream,
) -> Option<Result<AssistantMessage, AssistantMessage>> {
    use futures::StreamExt;
    while let Some(event) = stream.next().await {
        match event {
            AssistantMessageEvent::Done { message, .. } => return Some(Ok(message)),
            AssistantMessageEvent::Error { error, .. } => return Some(Err(error)),
            _ => {}
        }
    }
    None
}

/// Anything that can stream an assistant response for a model: the provider registry, or a scripted test double.
pub trait LlmClient: Send + Sync {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantEventStream;
}
