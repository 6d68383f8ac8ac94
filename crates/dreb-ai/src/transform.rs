//! Cross-provider clean-up applied to every request's history before it is converted to a wire format.
//!
//! - assistant messages that ended in `error`/`aborted` are dropped;
//! - tool calls left without a result get a synthetic error result "No result provided";
//! - history from another provider/api/model: redacted or empty thinking dropped, readable thinking turned into a
//!   text block wrapped in `<reformatted-pre-switch-reasoning>` (unless the target replays it structurally), text
//!   signatures and Google thought signatures dropped, tool call ids normalised (and the results follow them).

use std::collections::{HashMap, HashSet};

use crate::types::{
    AssistantBlock, AssistantMessage, Message, Model, StopReason, TextContent, ThinkingContent,
    ToolCall, ToolResultMessage, UserBlock,
};

pub(crate) type NormalizeId<'a> = &'a dyn Fn(&str, &AssistantMessage) -> String;
pub(crate) type PreserveThinking<'a> = &'a dyn Fn(&ThinkingContent, &AssistantMessage) -> bool;

pub(crate) fn transform_messages(
    messages: &[Message],
    model: &Model,
    normalize_id: Option<NormalizeId<'_>>,
    preserve_thinking: Option<PreserveThinking<'_>>,
) -> Vec<Message> {
    let mut id_map: HashMap<String, String> = HashMap::new();
    let mut transformed = Vec::with_capacity(messages.len());
    for msg in messages {
        match msg {
            Message::User(_) => transformed.push(msg.clone()),
            Message::ToolResult(r) => {
                let mut r = r.clone();
                if let Some(n) = id_map.get(&r.tool_call_id) {
                    r.tool_call_id = n.clone();
                }
                transformed.push(Message::ToolResult(r));
            }
            Message::Assistant(a) => {
                let same = a.provider == model.provider
                    && model.api == a.api.as_str()
                    && a.model == model.id;
                let mut content = Vec::with_capacity(a.content.len());
                for (i, block) in a.content.iter().enumerate() {
                    match block {
                        AssistantBlock::Thinking(t) => {
                            if t.redacted == Some(true) {
                                if same {
                                    content.push(block.clone());
                                }
                                continue;
                            }
                            if same
                                && t.thinking_signature
                                    .as_deref()
                                    .is_some_and(|s| !s.is_empty())
                            {
                                content.push(block.clone());
                                continue;
                            }
                            if t.thinking.trim().is_empty() {
                                continue;
                            }
                            if same || preserve_thinking.is_some_and(|f| f(t, a)) {
                                content.push(block.clone());
                                continue;
                            }
                            let visible = |b: &AssistantBlock| matches!(b, AssistantBlock::Text(x) if !x.text.trim().is_empty());
                            let before = if a.content[..i].iter().any(visible) {
                                "\n\n"
                            } else {
                                ""
                            };
                            let after = if a.content[i + 1..].iter().any(visible) {
                                "\n\n"
                            } else {
                                ""
                            };
                            content.push(AssistantBlock::Text(TextContent {
                                text: format!(
                                    "{before}<reformatted-pre-switch-reasoning>\n{}\n</reformatted-pre-switch-reasoning>{after}",
                                    t.thinking
                                ),
                                text_signature: None, ..Default::default()
                            }));
                        }
                        AssistantBlock::Text(t) => {
                            if same {
                                content.push(block.clone());
                            } else {
                                content.push(AssistantBlock::Text(TextContent {
                                    text: t.text.clone(),
                                    text_signature: None,
                                    ..Default::default()
                                }));
                            }
                        }
                        AssistantBlock::ToolCall(tc) => {
                            let mut tc = tc.clone();
                            if !same {
                                tc.thought_signature = None;
                                if let Some(f) = normalize_id {
                                    let n = f(&tc.id, a);
                                    if n != tc.id {
                                        id_map.insert(tc.id.clone(), n.clone());
                                        tc.id = n;
                                    }
                                }
                            }
                            content.push(AssistantBlock::ToolCall(tc));
                        }
                    }
                }
                let mut a = a.clone();
                a.content = content;
                transformed.push(Message::Assistant(a));
            }
        }
    }

    let mut result = Vec::with_capacity(transformed.len());
    let mut pending: Vec<ToolCall> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let flush =
        |pending: &mut Vec<ToolCall>, seen: &mut HashSet<String>, result: &mut Vec<Message>| {
            for tc in pending.drain(..) {
                if !seen.contains(&tc.id) {
                    result.push(Message::ToolResult(ToolResultMessage {
                        tool_call_id: tc.id.clone(),
                        tool_name: tc.name.clone(),
                        content: vec![UserBlock::Text(TextContent {
                            text: "No result provided".into(),
                            text_signature: None,
                            ..Default::default()
                        })],
                        details: None,
                        is_error: true,
                        timestamp: crate::cost::now_ms(),
                        ..Default::default()
                    }));
                }
            }
            seen.clear();
        };
    for msg in transformed {
        match &msg {
            Message::Assistant(a) => {
                flush(&mut pending, &mut seen, &mut result);
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    continue;
                }
                let calls: Vec<ToolCall> = a.tool_calls().cloned().collect();
                if !calls.is_empty() {
                    pending = calls;
                }
                result.push(msg);
            }
            Message::ToolResult(r) => {
                seen.insert(r.tool_call_id.clone());
                result.push(msg);
            }
            Message::User(_) => {
                flush(&mut pending, &mut seen, &mut result);
                result.push(msg);
            }
        }
    }
    result
}

/// Replaces every character outside `[a-zA-Z0-9_-]` with `_` and truncates to `max` characters.
pub(crate) fn sanitize_id(id: &str, max: usize) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(max)
        .collect()
}
