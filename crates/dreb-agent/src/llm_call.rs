//! The LLM call inside the loop (runtime-behaviour §1.3): context conversion, per-call API key, streaming into
//! `message_start/update/end`, stream-drop retries and length retries.

use std::time::{Duration, Instant};

use dreb_ai::{
    AssistantBlock, AssistantMessage, AssistantMessageEvent, Context, StopReason, StreamOptions,
};
use futures::StreamExt;

use crate::event::{AgentEvent, into_stream_event_message};
use crate::message::AgentMessage;
use crate::run_context::{Fatal, RunCtx, error_assistant_message};

/// Provider default output budget when no explicit `maxTokens` is set: `min(model.maxTokens, 32000)`.
pub use dreb_ai::thinking::DEFAULT_MAX_OUTPUT_TOKENS;

/// Error text a provider (or this loop) uses when a stream ends without its terminal event.
pub const STREAM_ENDED_WITHOUT_TERMINAL: &str =
    "Stream ended without terminal event — connection likely dropped";
const STREAM_DROPPED_REPEATEDLY: &str = "Stream dropped repeatedly — connection likely unstable";

/// Whether an error text means the connection dropped mid-stream (the only errors retried at loop level).
pub fn is_stream_drop_error(message: &str) -> bool {
    dreb_ai::is_stream_drop(message)
}

fn length_exhausted_text(attempts: u32) -> String {
    format!(
        "Response truncated at token limit after {attempts} attempt{} — output exceeded the model's maximum token budget",
        if attempts == 1 { "" } else { "s" }
    )
}

async fn sleep_or_cancel(ctx: &RunCtx, delay: Duration) {
    tokio::select! {
        _ = tokio::time::sleep(delay) => {}
        _ = ctx.cancel.cancelled() => {}
    }
}

/// Streams one assistant response, retrying dropped streams and truncated responses. The final message is
/// appended to `messages` and returned; errors and aborts come back as messages with that stop reason.
pub(crate) async fn stream_assistant_response(
    ctx: &RunCtx,
    messages: &mut Vec<AgentMessage>,
) -> Result<AssistantMessage, Fatal> {
    let transformed = ctx
        .hooks
        .transform_context(messages.clone(), &ctx.cancel)
        .await
        .map_err(Fatal)?;
    let llm_messages = ctx.hooks.convert_to_llm(&transformed).map_err(Fatal)?;
    let context = Context {
        system_prompt: (!ctx.system_prompt.is_empty()).then(|| ctx.system_prompt.clone()),
        messages: llm_messages,
        tools: ctx.tool_defs.clone(),
    };
    let api_key = ctx
        .hooks
        .get_api_key(&ctx.model.provider)
        .await
        .map_err(Fatal)?;
    let thinking = crate::thinking::effective_thinking_level(&ctx.model, ctx.thinking_level);
    let retry = &ctx.config.retry;
    let started_at = Instant::now();

    let mut request_max_tokens = ctx.config.max_tokens;
    let mut length_attempts = 0u32;
    let mut drop_attempt = 0u32;

    loop {
        let options = StreamOptions {
            api_key: api_key.clone(),
            max_tokens: request_max_tokens,
            thinking,
            cancel: ctx.cancel.clone(),
            session_id: ctx.config.session_id.clone(),
            headers: Default::default(),
            on_payload: ctx.hooks.payload_hook(),
            // The loop keeps the last partial anyway: text and thinking deltas need not copy the reply so far.
            deltas_without_content: true,
        };
        let mut stream = ctx.llm.stream(&ctx.model, &context, options);
        // The last partial seen (set by `start`, replaced by every update), as the reference tracks it.
        let mut partial: Option<AssistantMessage> = None;
        let result = loop {
            match stream.next().await {
                Some(AssistantMessageEvent::Start { partial: p }) => {
                    let ev = AgentEvent::MessageStart {
                        message: AgentMessage::Assistant(p),
                    };
                    ctx.emit(&ev).await;
                    if let AgentEvent::MessageStart {
                        message: AgentMessage::Assistant(p),
                    } = ev
                    {
                        partial = Some(p);
                    }
                }
                Some(AssistantMessageEvent::Done { message, .. }) => break message,
                Some(AssistantMessageEvent::Error { error, .. }) => break error,
                Some(mut update) => {
                    // Updates before `start` are not forwarded (the reference ignores them too).
                    if let Some(previous) = partial.as_mut() {
                        restore_content(&mut update, previous);
                        let ev = AgentEvent::MessageUpdate {
                            assistant_message_event: update,
                        };
                        ctx.emit(&ev).await;
                        if let AgentEvent::MessageUpdate {
                            assistant_message_event,
                        } = ev
                        {
                            partial = Some(into_stream_event_message(assistant_message_event));
                        }
                    }
                }
                None => {
                    break error_assistant_message(
                        &ctx.model,
                        partial.as_ref(),
                        STREAM_ENDED_WITHOUT_TERMINAL.to_owned(),
                        ctx.cancel.is_cancelled(),
                    );
                }
            }
        };
        drop(stream);
        let started = partial.is_some();

        let is_drop = result.stop_reason == StopReason::Error
            && result
                .error_message
                .as_deref()
                .is_some_and(is_stream_drop_error);
        if is_drop && drop_attempt < retry.stream_retries && !ctx.cancel.is_cancelled() {
            ctx.emit(&AgentEvent::StreamRetry {
                attempt: drop_attempt + 1,
                max_attempts: retry.stream_retries,
                error: result
                    .error_message
                    .clone()
                    .unwrap_or_else(|| STREAM_ENDED_WITHOUT_TERMINAL.to_owned()),
                discarded_partial: partial,
            })
            .await;
            sleep_or_cancel(
                ctx,
                retry
                    .stream_retry_base_delay
                    .saturating_mul(1 << drop_attempt.min(20)),
            )
            .await;
            drop_attempt += 1;
            continue;
        }
        let final_message = if is_drop {
            error_assistant_message(
                &ctx.model,
                partial.as_ref(),
                STREAM_DROPPED_REPEATEDLY.to_owned(),
                ctx.cancel.is_cancelled(),
            )
        } else if result.stop_reason == StopReason::Length {
            let ceiling = ctx.model.max_output_tokens();
            let effective =
                request_max_tokens.unwrap_or_else(|| ceiling.min(DEFAULT_MAX_OUTPUT_TOKENS));
            if length_attempts < retry.length_retries
                && effective < ceiling
                && !ctx.cancel.is_cancelled()
            {
                let next = ((effective as f64 * retry.length_budget_multiplier).ceil() as u64)
                    .min(ceiling);
                ctx.emit(&AgentEvent::LengthRetry {
                    attempt: length_attempts + 1,
                    max_attempts: retry.length_retries,
                    previous_max_tokens: effective,
                    next_max_tokens: next,
                    discarded_partial: partial,
                })
                .await;
                request_max_tokens = Some(next);
                length_attempts += 1;
                // A length retry is a fresh request: the stream-drop budget starts over.
                drop_attempt = 0;
                continue;
            }
            error_assistant_message(
                &ctx.model,
                partial.as_ref(),
                length_exhausted_text(length_attempts + 1),
                ctx.cancel.is_cancelled(),
            )
        } else {
            result
        };
        return Ok(finalize(ctx, messages, final_message, started, started_at).await);
    }
}

/// A text or thinking delta whose partial came without content (`StreamOptions::deltas_without_content`) gets the
/// previous partial's content with the delta appended: the provider's message, without a copy of the reply so far.
fn restore_content(update: &mut AssistantMessageEvent, previous: &mut AssistantMessage) {
    use AssistantMessageEvent as E;
    let thinking = matches!(update, E::ThinkingDelta { .. });
    let (E::TextDelta {
        content_index,
        delta,
        partial,
    }
    | E::ThinkingDelta {
        content_index,
        delta,
        partial,
    }) = update
    else {
        return;
    };
    if !partial.content.is_empty() {
        return;
    }
    let mut content = std::mem::take(&mut previous.content);
    match content.get_mut(*content_index) {
        Some(AssistantBlock::Text(t)) if !thinking => t.text.push_str(delta),
        Some(AssistantBlock::Thinking(t)) if thinking => t.thinking.push_str(delta),
        _ => tracing::warn!(
            "a streamed delta for content block {content_index} that the partial lacks"
        ),
    }
    partial.content = content;
}

async fn finalize(
    ctx: &RunCtx,
    messages: &mut Vec<AgentMessage>,
    mut message: AssistantMessage,
    started: bool,
    started_at: Instant,
) -> AssistantMessage {
    message.duration_ms = Some((started_at.elapsed().as_secs_f64() * 1000.0).into());
    let message = AgentMessage::Assistant(message);
    if !started {
        // Providers that fail before `start` still get a message_start.
        ctx.emit(&AgentEvent::MessageStart {
            message: message.clone(),
        })
        .await;
    }
    let end = AgentEvent::MessageEnd { message };
    ctx.emit(&end).await;
    let AgentEvent::MessageEnd { message } = end else {
        unreachable!()
    };
    messages.push(message.clone());
    match message {
        AgentMessage::Assistant(m) => m,
        _ => unreachable!(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dreb_ai::{TextContent, ThinkingContent};

    fn message(blocks: Vec<AssistantBlock>) -> AssistantMessage {
        let model = dreb_ai::registry::builtin_models().remove(0);
        let mut m = AssistantMessage::empty(&model, 1);
        m.content = blocks;
        m
    }

    fn text(s: &str) -> AssistantBlock {
        AssistantBlock::Text(TextContent {
            text: s.into(),
            text_signature: None,
            ..Default::default()
        })
    }

    fn thinking(s: &str) -> AssistantBlock {
        AssistantBlock::Thinking(ThinkingContent {
            thinking: s.into(),
            thinking_signature: None,
            redacted: None,
            ..Default::default()
        })
    }

    #[test]
    fn a_delta_without_content_gets_the_previous_content_plus_the_delta() {
        let mut previous = message(vec![thinking("hm"), text("Hel")]);
        let mut newer = message(Vec::new());
        newer.usage.output = 7;
        let mut update = AssistantMessageEvent::TextDelta {
            content_index: 1,
            delta: "lo".into(),
            partial: newer,
        };
        restore_content(&mut update, &mut previous);
        let AssistantMessageEvent::TextDelta { partial, .. } = &update else {
            unreachable!()
        };
        let mut expected = message(vec![thinking("hm"), text("Hello")]);
        expected.usage.output = 7;
        assert_eq!(
            partial, &expected,
            "content restored, the rest is the newer partial's"
        );

        let mut previous = partial.clone();
        let mut update = AssistantMessageEvent::ThinkingDelta {
            content_index: 0,
            delta: "m".into(),
            partial: message(Vec::new()),
        };
        restore_content(&mut update, &mut previous);
        assert_eq!(
            into_stream_event_message(update).content,
            vec![thinking("hmm"), text("Hello")]
        );
    }

    #[test]
    fn a_delta_with_its_content_is_left_as_it_came() {
        let mut previous = message(vec![text("stale")]);
        let full = message(vec![text("Hello")]);
        let mut update = AssistantMessageEvent::TextDelta {
            content_index: 0,
            delta: "lo".into(),
            partial: full.clone(),
        };
        restore_content(&mut update, &mut previous);
        assert_eq!(into_stream_event_message(update), full);
        assert_eq!(previous.content, vec![text("stale")]);
    }

    #[test]
    fn drop_detection_and_texts() {
        assert!(is_stream_drop_error(STREAM_ENDED_WITHOUT_TERMINAL));
        assert!(is_stream_drop_error(
            "WebSocket stream closed before response.completed"
        ));
        assert!(!is_stream_drop_error("429 rate limited"));
        assert_eq!(
            length_exhausted_text(1),
            "Response truncated at token limit after 1 attempt — output exceeded the model's maximum token budget"
        );
        assert!(length_exhausted_text(3).contains("after 3 attempts"));
    }
}
