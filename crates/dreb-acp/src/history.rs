//! A stored conversation (the runtime's `get_messages`) replayed as `session/update`s for `session/load`: user
//! and assistant text as message chunks, thinking as thought chunks, each tool call and its result as a finished
//! `tool_call`. Summaries, custom and bash-execution messages are context, not conversation, and are not shown.

use std::path::Path;

use agent_client_protocol_schema::v1::{ContentChunk, SessionUpdate, ToolCall, ToolCallStatus};
use serde_json::{Map, Value};

use crate::tools;
use crate::translate::{content_blocks, result_content, text_chunk};

pub fn replay(messages: &[Value], cwd: &Path) -> Vec<SessionUpdate> {
    let mut out = Vec::new();
    // Tool calls wait for their result so that each is sent once, finished.
    let mut calls: Vec<(String, String, Map<String, Value>)> = Vec::new();
    for m in messages {
        match m.get("role").and_then(Value::as_str) {
            Some("user") => {
                for block in content_blocks(m.get("content").unwrap_or(&Value::Null)) {
                    out.push(SessionUpdate::UserMessageChunk(ContentChunk::new(block)));
                }
            }
            Some("assistant") => {
                for block in m
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let text = |k: &str| block.get(k).and_then(Value::as_str).unwrap_or("");
                    match text("type") {
                        "text" if !text("text").is_empty() => {
                            out.push(SessionUpdate::AgentMessageChunk(text_chunk(text("text"))))
                        }
                        "thinking" if !text("thinking").is_empty() => out.push(
                            SessionUpdate::AgentThoughtChunk(text_chunk(text("thinking"))),
                        ),
                        "toolCall" => calls.push((
                            text("id").to_string(),
                            text("name").to_string(),
                            block
                                .get("arguments")
                                .and_then(Value::as_object)
                                .cloned()
                                .unwrap_or_default(),
                        )),
                        _ => {}
                    }
                }
            }
            Some("toolResult") => {
                let id = m.get("toolCallId").and_then(Value::as_str).unwrap_or("");
                let Some(pos) = calls.iter().position(|(c, _, _)| c == id) else {
                    continue;
                };
                let (id, name, args) = calls.remove(pos);
                let failed = m.get("isError").and_then(Value::as_bool) == Some(true);
                let mut content: Vec<_> =
                    tools::diff(&name, &args, cwd, None).into_iter().collect();
                content.extend(result_content(Some(m)));
                out.push(SessionUpdate::ToolCall(
                    ToolCall::new(id, tools::title(&name, &args))
                        .kind(tools::kind(&name))
                        .status(if failed {
                            ToolCallStatus::Failed
                        } else {
                            ToolCallStatus::Completed
                        })
                        .raw_input(Value::Object(args.clone()))
                        .locations(tools::locations(&name, &args, cwd, None))
                        .content(content),
                ));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_conversation_with_a_tool_call_replays_in_order() {
        let messages = vec![
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}),
            json!({"role": "assistant", "content": [{"type": "thinking", "thinking": "t"}, {"type": "text", "text": "looking"},
                {"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "x"}}]}),
            json!({"role": "toolResult", "toolCallId": "c", "toolName": "read", "content": [{"type": "text", "text": "data"}], "isError": false}),
            json!({"role": "compactionSummary", "summary": "s"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "done"}]}),
        ];
        let out: Vec<Value> = replay(&messages, Path::new("/w"))
            .iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect();
        let kinds: Vec<_> = out.iter().map(|u| u["sessionUpdate"].clone()).collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_thought_chunk",
                "agent_message_chunk",
                "tool_call",
                "agent_message_chunk"
            ]
        );
        assert_eq!(out[3]["status"], "completed");
        assert_eq!(out[3]["locations"][0]["path"], "/w/x");
        assert_eq!(out[3]["content"][0]["content"]["text"], "data");
    }
}
