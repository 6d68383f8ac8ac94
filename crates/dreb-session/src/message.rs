//! Read-only helpers over agent messages kept as JSON (`{role, content, ...}`), and the synthetic messages the
//! session context contains (compaction/branch summaries, custom messages).
//!
//! Messages stay `serde_json::Value` so every field written by any producer survives a load/save unchanged; the
//! agent loop owns the typed `AgentMessage`.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::time::parse_iso_ms;

/// JavaScript's notion of whitespace (`\s`, `String#trim`): Unicode White_Space minus U+0085, plus U+FEFF.
pub fn is_js_space(c: char) -> bool {
    c != '\u{85}' && (c.is_whitespace() || c == '\u{feff}')
}

/// `String#trim()`.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

pub fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

pub fn str_field<'a>(message: &'a Value, key: &str) -> Option<&'a str> {
    message.get(key).and_then(Value::as_str)
}

pub fn stop_reason(message: &Value) -> Option<&str> {
    str_field(message, "stopReason")
}

/// Text of a `content` value: a string as is, or the `text` of its text blocks joined with `separator`.
pub fn content_text(content: Option<&Value>, separator: &str) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let mut out = String::new();
            let mut first = true;
            for block in blocks {
                if block.get("type").and_then(Value::as_str) != Some("text") {
                    continue;
                }
                if !first {
                    out.push_str(separator);
                }
                first = false;
                if let Some(t) = block.get("text").and_then(Value::as_str) {
                    out.push_str(t);
                }
            }
            out
        }
        _ => String::new(),
    }
}

/// The message's text blocks concatenated (what fork and tree navigation put in the editor).
pub fn message_text(message: &Value) -> String {
    content_text(message.get("content"), "")
}

/// An assistant turn can be forked from unless it errored, was aborted, or has tool calls (whose results would be
/// left behind in descendant entries).
pub fn is_forkable_assistant(message: &Value) -> bool {
    if matches!(stop_reason(message), Some("error") | Some("aborted")) {
        return false;
    }
    let has_tool_call = message
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
        });
    !has_tool_call
}

fn iso_to_ms_value(timestamp: &str) -> Value {
    // `new Date(ts).getTime()`; NaN serialises as null.
    parse_iso_ms(timestamp).map_or(Value::Null, Value::from)
}

/// `{role: "branchSummary", summary, fromId, timestamp}` for an entry timestamp.
pub fn branch_summary_message(summary: &str, from_id: &str, entry_timestamp: &str) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), "branchSummary".into());
    m.insert("summary".into(), summary.into());
    m.insert("fromId".into(), from_id.into());
    m.insert("timestamp".into(), iso_to_ms_value(entry_timestamp));
    Value::Object(m)
}

/// `{role: "compactionSummary", summary, tokensBefore, timestamp}` for an entry timestamp.
pub fn compaction_summary_message(
    summary: &str,
    tokens_before: Value,
    entry_timestamp: &str,
) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), "compactionSummary".into());
    m.insert("summary".into(), summary.into());
    m.insert("tokensBefore".into(), tokens_before);
    m.insert("timestamp".into(), iso_to_ms_value(entry_timestamp));
    Value::Object(m)
}

/// `{role: "custom", customType, content, display, details?, timestamp}` for a `custom_message` entry. Missing
/// fields stay absent (JavaScript drops `undefined` properties).
pub fn custom_message(
    custom_type: Option<Value>,
    content: Option<Value>,
    display: Option<Value>,
    details: Option<Value>,
    entry_timestamp: &str,
) -> Value {
    let mut m = Map::new();
    m.insert("role".into(), "custom".into());
    for (k, v) in [
        ("customType", custom_type),
        ("content", content),
        ("display", display),
        ("details", details),
    ] {
        if let Some(v) = v {
            m.insert(k.into(), v);
        }
    }
    m.insert("timestamp".into(), iso_to_ms_value(entry_timestamp));
    Value::Object(m)
}

/// Text of the last assistant message that is not an empty aborted one: text blocks concatenated and trimmed;
/// `None` when there is none or the text is empty (`get_last_assistant_text`).
pub fn last_assistant_text(messages: &[Value]) -> Option<String> {
    let last = messages.iter().rev().find(|m| {
        if role(m) != Some("assistant") {
            return false;
        }
        let empty = m
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty);
        !(stop_reason(m) == Some("aborted") && empty)
    })?;
    let text = message_text(last);
    let trimmed = js_trim(&text);
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// Token totals of `get_session_stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenTotals {
    #[serde(serialize_with = "dreb_js::serialize_number")]
    pub input: f64,
    #[serde(serialize_with = "dreb_js::serialize_number")]
    pub output: f64,
    #[serde(serialize_with = "dreb_js::serialize_number")]
    pub cache_read: f64,
    #[serde(serialize_with = "dreb_js::serialize_number")]
    pub cache_write: f64,
    #[serde(serialize_with = "dreb_js::serialize_number")]
    pub total: f64,
}

/// The message-derived part of `SessionStats` (the runtime adds `sessionFile`, `sessionId`, `contextUsage`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageStats {
    pub user_messages: u64,
    pub assistant_messages: u64,
    pub tool_calls: u64,
    pub tool_results: u64,
    pub total_messages: u64,
    pub tokens: TokenTotals,
    #[serde(serialize_with = "dreb_js::serialize_number")]
    pub cost: f64,
}

/// Counts and usage sums over the live agent messages, as `get_session_stats` reports them.
pub fn message_stats(messages: &[Value]) -> MessageStats {
    let mut stats = MessageStats {
        total_messages: messages.len() as u64,
        ..Default::default()
    };
    let num = |v: Option<&Value>| v.and_then(Value::as_f64).unwrap_or(0.0);
    for m in messages {
        match role(m) {
            Some("user") => stats.user_messages += 1,
            Some("toolResult") => stats.tool_results += 1,
            Some("assistant") => {
                stats.assistant_messages += 1;
                if let Some(blocks) = m.get("content").and_then(Value::as_array) {
                    stats.tool_calls += blocks
                        .iter()
                        .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
                        .count() as u64;
                }
                let usage = m.get("usage");
                let field = |k: &str| num(usage.and_then(|u| u.get(k)));
                stats.tokens.input += field("input");
                stats.tokens.output += field("output");
                stats.tokens.cache_read += field("cacheRead");
                stats.tokens.cache_write += field("cacheWrite");
                stats.cost += num(usage
                    .and_then(|u| u.get("cost"))
                    .and_then(|c| c.get("total")));
            }
            _ => {}
        }
    }
    let t = &mut stats.tokens;
    t.total = t.input + t.output + t.cache_read + t.cache_write;
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_and_forkability() {
        let m = json!({"role":"assistant","content":[{"type":"text","text":"a"},{"type":"thinking","thinking":"x"},{"type":"text","text":"b"}],"stopReason":"stop"});
        assert_eq!(message_text(&m), "ab");
        assert_eq!(content_text(m.get("content"), " "), "a b");
        assert!(is_forkable_assistant(&m));
        let tool = json!({"role":"assistant","content":[{"type":"toolCall","id":"1","name":"bash","arguments":{}}],"stopReason":"toolUse"});
        assert!(!is_forkable_assistant(&tool));
        assert!(!is_forkable_assistant(
            &json!({"role":"assistant","content":[],"stopReason":"aborted"})
        ));
    }

    #[test]
    fn last_assistant_text_skips_empty_aborted() {
        let msgs = vec![
            json!({"role":"assistant","content":[{"type":"text","text":"  first \n"}],"stopReason":"stop"}),
            json!({"role":"assistant","content":[],"stopReason":"aborted"}),
        ];
        assert_eq!(last_assistant_text(&msgs).as_deref(), Some("first"));
        assert_eq!(
            last_assistant_text(&[json!({"role":"assistant","content":[],"stopReason":"stop"})]),
            None
        );
        assert_eq!(last_assistant_text(&[]), None);
    }

    #[test]
    fn summary_messages_carry_ms_timestamps() {
        let m = compaction_summary_message("s", json!(102), "2026-12-01T06:29:04.331Z");
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"role":"compactionSummary","summary":"s","tokensBefore":102,"timestamp":1796106544331}"#
        );
        assert_eq!(
            branch_summary_message("s", "root", "bad")["timestamp"],
            Value::Null
        );
    }

    #[test]
    fn js_whitespace() {
        assert_eq!(js_trim("\u{feff} a\u{a0}"), "a");
        assert_eq!(js_trim("\u{85}a"), "\u{85}a");
    }
}
