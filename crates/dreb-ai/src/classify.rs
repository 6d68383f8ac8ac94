//! Error classification shared by the agent loop and the session's auto-retry.

use std::sync::LazyLock;

use regex::Regex;

use crate::types::{AssistantMessage, StopReason};

/// Messages that mean the provider's stream ended early; the agent loop retries these itself.
pub fn is_stream_drop(message: &str) -> bool {
    message.contains("Stream ended without")
        || message.contains("connection likely dropped")
        || message.contains("WebSocket stream closed before")
}

static RETRYABLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)overloaded|provider returned error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|timed? ?out|timeout|terminated|retry delay",
    )
    .expect("valid regex")
});

/// True when an error message describes a transient failure worth retrying (overloaded, rate limits, 5xx, network
/// drops). Context overflow is not retryable: check [`is_context_overflow`] first.
pub fn is_retryable_error(message: &str) -> bool {
    RETRYABLE.is_match(message)
}

static OVERFLOW: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"(?i)prompt is too long",
        r"(?i)input is too long for requested model",
        r"(?i)exceeds the context window",
        r"(?i)input token count.*exceeds the maximum",
        r"(?i)maximum prompt length is \d+",
        r"(?i)reduce the length of the messages",
        r"(?i)maximum context length is \d+ tokens",
        r"(?i)exceeds the limit of \d+",
        r"(?i)exceeds the available context size",
        r"(?i)greater than the context length",
        r"(?i)context window exceeds limit",
        r"(?i)exceeded model token limit",
        r"(?i)too large for model with \d+ maximum context length",
        r"(?i)model_context_window_exceeded",
        r"(?i)context[_ ]length[_ ]exceeded",
        r"(?i)too many tokens",
        r"(?i)token limit exceeded",
        r"(?i)^4(00|13)\s*(status code)?\s*\(no body\)",
    ]
    .iter()
    .map(|p| Regex::new(p).expect("valid regex"))
    .collect()
});

/// True when an error message says the request exceeded the model's context window.
pub fn is_context_overflow_message(message: &str) -> bool {
    OVERFLOW.iter().any(|r| r.is_match(message))
}

/// The reference's overflow rule for a finished message: an error whose text matches a known overflow pattern, or a
/// "silent" overflow where a successful reply reports more input tokens than the context window holds.
pub fn is_context_overflow(message: &AssistantMessage, context_window: Option<u64>) -> bool {
    if message.stop_reason == StopReason::Error
        && let Some(err) = &message.error_message
        && is_context_overflow_message(err)
    {
        return true;
    }
    if let Some(window) = context_window.filter(|w| *w > 0)
        && message.stop_reason == StopReason::Stop
        && message.usage.input + message.usage.cache_read
            > i64::try_from(window).unwrap_or(i64::MAX)
    {
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_messages() {
        assert!(is_retryable_error(
            r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
        ));
        assert!(is_retryable_error("429 Rate limit reached for requests"));
        assert!(is_retryable_error("500 Internal server error"));
        assert!(is_retryable_error("Connection error."));
        assert!(is_retryable_error(
            "Stream ended without finish_reason — connection likely dropped"
        ));
        assert!(!is_retryable_error("400 Invalid request: tools.0.name"));
        assert!(!is_retryable_error("Request was aborted"));
        assert!(is_stream_drop(
            "Stream ended without message_delta — connection likely dropped"
        ));
    }

    #[test]
    fn overflow_messages() {
        assert!(is_context_overflow_message(
            "400 prompt is too long: 210000 tokens > 200000 maximum"
        ));
        assert!(is_context_overflow_message("400 status code (no body)"));
        assert!(is_context_overflow_message(
            "This model's maximum context length is 128000 tokens"
        ));
        assert!(!is_context_overflow_message("529 overloaded"));
    }
}
