//! What the scenario looks at in a request: the last user text and whether the last message is a tool result.

use dreb_ai::scenario::RequestSummary;
use serde_json::Value;

use crate::Wire;

fn text_of(content: &Value, text_types: &[&str]) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p["type"].as_str().is_some_and(|t| text_types.contains(&t)))
                .filter_map(|p| p["text"].as_str())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

pub(crate) fn summarize(wire: Wire, body: &Value) -> RequestSummary {
    let empty = Vec::new();
    match wire {
        Wire::Anthropic => {
            let msgs = body["messages"].as_array().unwrap_or(&empty);
            let last_is_tool_result = msgs.last().is_some_and(|m| {
                m["role"] == "user"
                    && m["content"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"))
            });
            let last_user_text = msgs
                .iter()
                .rev()
                .filter(|m| m["role"] == "user")
                .find_map(|m| text_of(&m["content"], &["text"]))
                .unwrap_or_default();
            RequestSummary {
                last_user_text,
                last_is_tool_result,
            }
        }
        Wire::OpenAiCompletions => {
            let msgs = body["messages"].as_array().unwrap_or(&empty);
            let last_is_tool_result = msgs.last().is_some_and(|m| m["role"] == "tool");
            let last_user_text = msgs
                .iter()
                .rev()
                .filter(|m| m["role"] == "user")
                .find_map(|m| text_of(&m["content"], &["text"]))
                .unwrap_or_default();
            RequestSummary {
                last_user_text,
                last_is_tool_result,
            }
        }
        Wire::OpenAiResponses => {
            let items = body["input"].as_array().unwrap_or(&empty);
            let last_is_tool_result = items
                .last()
                .is_some_and(|m| m["type"] == "function_call_output");
            let last_user_text = items
                .iter()
                .rev()
                .filter(|m| m["role"] == "user")
                .find_map(|m| text_of(&m["content"], &["input_text"]))
                .unwrap_or_default();
            RequestSummary {
                last_user_text,
                last_is_tool_result,
            }
        }
        Wire::Google => {
            let contents = body["contents"].as_array().unwrap_or(&empty);
            let last_is_tool_result = contents.last().is_some_and(|c| {
                c["parts"]
                    .as_array()
                    .is_some_and(|p| p.iter().any(|x| x.get("functionResponse").is_some()))
            });
            let last_user_text = contents
                .iter()
                .rev()
                .filter(|c| c["role"] == "user")
                .find_map(|c| {
                    let texts: Vec<&str> = c["parts"]
                        .as_array()?
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect();
                    (!texts.is_empty()).then(|| texts.join("\n"))
                })
                .unwrap_or_default();
            RequestSummary {
                last_user_text,
                last_is_tool_result,
            }
        }
    }
}
