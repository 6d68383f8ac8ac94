//! Token estimates: `ceil(chars / 4)` per message, or the provider-reported usage where one exists.

use serde_json::Value;

use crate::{CompactionSettings, js_len};

/// An image counts as this many characters (about 1200 tokens).
const IMAGE_CHARS: u64 = 4800;

fn content_chars(content: &Value) -> u64 {
    match content {
        Value::String(s) => js_len(s),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b
                    .get("text")
                    .and_then(Value::as_str)
                    .map(js_len)
                    .unwrap_or(0),
                Some("image") => IMAGE_CHARS,
                _ => 0,
            })
            .sum(),
        _ => 0,
    }
}

fn str_field(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_str).map(js_len).unwrap_or(0)
}

/// Estimated tokens of one agent message (any role), `ceil(chars / 4)`.
pub fn estimate_message_tokens(message: &Value) -> u64 {
    let chars = match message.get("role").and_then(Value::as_str) {
        Some("user") | Some("toolResult") | Some("custom") => {
            message.get("content").map(content_chars).unwrap_or(0)
        }
        Some("assistant") => message
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .map(|b| match b.get("type").and_then(Value::as_str) {
                        Some("text") => str_field(b, "text"),
                        Some("thinking") => str_field(b, "thinking"),
                        Some("toolCall") => {
                            let args = b
                                .get("arguments")
                                .map(|a| serde_json::to_string(a).unwrap_or_default());
                            str_field(b, "name") + args.as_deref().map(js_len).unwrap_or(0)
                        }
                        _ => 0,
                    })
                    .sum()
            })
            .unwrap_or(0),
        Some("bashExecution") => str_field(message, "command") + str_field(message, "output"),
        Some("branchSummary") | Some("compactionSummary") => str_field(message, "summary"),
        _ => 0,
    };
    chars.div_ceil(4)
}

/// The context size of a message list: the last usable provider usage plus estimates of what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextEstimate {
    pub tokens: u64,
    /// Tokens reported by the provider for the last successful assistant message, if any.
    pub usage_tokens: u64,
    /// Estimated tokens of the messages after that assistant message.
    pub trailing_tokens: u64,
    /// Index of that assistant message.
    pub last_usage_index: Option<usize>,
}

/// Context tokens from a usage object: `totalTokens`, or the sum of its parts when that is missing or zero.
pub fn usage_context_tokens(usage: &Value) -> u64 {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
    match n("totalTokens") {
        0 => n("input") + n("output") + n("cacheRead") + n("cacheWrite"),
        t => t,
    }
}

fn usable_usage(message: &Value) -> Option<&Value> {
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    match message.get("stopReason").and_then(Value::as_str) {
        Some("aborted") | Some("error") => None,
        _ => message.get("usage"),
    }
}

/// Estimate the context size of `messages` the way the reference does for compaction decisions.
pub fn estimate_context_tokens(messages: &[Value]) -> ContextEstimate {
    let last = messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, m)| usable_usage(m).map(|u| (i, u)));
    match last {
        Some((i, usage)) => {
            let usage_tokens = usage_context_tokens(usage);
            let trailing_tokens = messages[i + 1..].iter().map(estimate_message_tokens).sum();
            ContextEstimate {
                tokens: usage_tokens + trailing_tokens,
                usage_tokens,
                trailing_tokens,
                last_usage_index: Some(i),
            }
        }
        None => {
            let trailing_tokens = messages.iter().map(estimate_message_tokens).sum();
            ContextEstimate {
                tokens: trailing_tokens,
                usage_tokens: 0,
                trailing_tokens,
                last_usage_index: None,
            }
        }
    }
}

/// Whether a context of `context_tokens` needs compacting for a model with `context_window`.
pub fn should_compact(
    context_tokens: u64,
    context_window: u64,
    settings: &CompactionSettings,
) -> bool {
    settings.enabled
        && context_window > 0
        && context_tokens > context_window.saturating_sub(settings.reserve_tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn estimates_each_role() {
        assert_eq!(
            estimate_message_tokens(&json!({"role":"user","content":"Reply with just: delta"})),
            6
        );
        assert_eq!(
            estimate_message_tokens(
                &json!({"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image","data":"x","mimeType":"image/png"}]})
            ),
            1201
        );
        let call = json!({"role":"assistant","content":[
            {"type":"thinking","thinking":"hmm"},
            {"type":"toolCall","id":"c","name":"bash","arguments":{"command":"ls"}}
        ]});
        // "hmm" (3) + "bash" (4) + {"command":"ls"} (16) = 23 chars → 6 tokens
        assert_eq!(estimate_message_tokens(&call), 6);
        assert_eq!(
            estimate_message_tokens(
                &json!({"role":"bashExecution","command":"ls","output":"a\nb"})
            ),
            2
        );
        assert_eq!(
            estimate_message_tokens(&json!({"role":"compactionSummary","summary":"12345"})),
            2
        );
        // UTF-16 code units, as JavaScript counts: one astral character is two units.
        assert_eq!(
            estimate_message_tokens(&json!({"role":"user","content":"😀😀"})),
            1
        );
    }

    #[test]
    fn context_uses_last_successful_usage_plus_trailing_estimates() {
        let usage = json!({"input":100,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":102});
        let msgs = vec![
            json!({"role":"user","content":"hi"}),
            json!({"role":"assistant","content":[{"type":"text","text":"a"}],"usage":usage,"stopReason":"stop"}),
            json!({"role":"user","content":"12345678"}),
            json!({"role":"assistant","content":[],"usage":{"totalTokens":999},"stopReason":"error"}),
        ];
        let e = estimate_context_tokens(&msgs);
        assert_eq!(e.last_usage_index, Some(1));
        assert_eq!(e.tokens, 102 + 2);
    }

    #[test]
    fn threshold_is_window_minus_reserve() {
        let s = CompactionSettings::default();
        assert!(!should_compact(200_000 - 16_384, 200_000, &s));
        assert!(should_compact(200_000 - 16_383, 200_000, &s));
        assert!(!should_compact(
            1_000_000,
            200_000,
            &CompactionSettings {
                enabled: false,
                ..s
            }
        ));
    }
}
