//! Entry points for the benchmark: turn an in-memory SSE byte stream into assistant events with the real provider
//! parsers (no network). Not a stable API.

use bytes::Bytes;
use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::output::{Output, event_stream};
use crate::provider::AssistantEventStream;
use crate::types::{Context, Model, api};

/// Streams `chunks` (raw SSE bytes as a server would send them) through the parser for `model.api`.
pub fn parse_sse(model: &Model, chunks: Vec<Bytes>) -> AssistantEventStream {
    let api_name = model.api.clone();
    event_stream(
        model,
        CancellationToken::new(),
        move |mut out: Output| async move {
            let source =
                futures::stream::iter(chunks.into_iter().map(Ok::<_, std::convert::Infallible>));
            let mut events = crate::sse::SseStream::new(source).boxed();
            out.start();
            let ctx = Context::default();
            let r = match api_name.as_str() {
                api::ANTHROPIC_MESSAGES => {
                    crate::providers::anthropic::process_stream(&mut out, &ctx, false, &mut events)
                        .await
                }
                api::OPENAI_RESPONSES => {
                    crate::providers::openai_responses::process_stream(&mut out, &mut events).await
                }
                api::GOOGLE_GENERATIVE_AI => {
                    crate::providers::google::process_stream(&mut out, &mut events).await
                }
                _ => {
                    crate::providers::openai_completions::process_stream(&mut out, &mut events)
                        .await
                }
            };
            out.finish(r).await
        },
    )
}
