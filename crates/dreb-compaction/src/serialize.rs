//! The transcript text sent to the summariser.

use serde_json::Value;

/// Tool results longer than this are cut in the transcript; the summary needs their gist, not their bulk.
const TOOL_RESULT_MAX_CHARS: usize = 2000;

fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The text a bash execution becomes in the LLM context (the `bash` command's output, seen on the next prompt).
pub fn bash_execution_text(m: &Value) -> String {
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
    let output = s("output");
    let mut text = format!("Ran `{}`\n", s("command"));
    if output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{output}\n```"));
    }
    if m.get("cancelled").and_then(Value::as_bool) == Some(true) {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = m
        .get("exitCode")
        .and_then(Value::as_i64)
        .filter(|&c| c != 0)
    {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if m.get("truncated").and_then(Value::as_bool) == Some(true)
        && let Some(path) = m.get("fullOutputPath").and_then(Value::as_str)
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

/// The user text a compaction summary becomes in the LLM context.
pub fn compaction_summary_text(summary: &str) -> String {
    format!(
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\n{summary}\n</summary>"
    )
}

/// The user text a branch summary becomes in the LLM context.
pub fn branch_summary_text(summary: &str) -> String {
    format!(
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n{summary}\n</summary>"
    )
}

fn truncate_chars(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n\n[... {} more characters truncated]", total - max)
}

/// Render agent messages as a plain transcript: one `[Role]: text` paragraph per part.
pub fn serialize_conversation(messages: &[Value]) -> String {
    let mut parts: Vec<String> = Vec::new();
    for m in messages {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        match role {
            "user" | "custom" => {
                let text = content_text(m.get("content"));
                if !text.is_empty() {
                    parts.push(format!("[User]: {text}"));
                }
            }
            "bashExecution"
                if m.get("excludeFromContext").and_then(Value::as_bool) != Some(true) =>
            {
                parts.push(format!("[User]: {}", bash_execution_text(m)));
            }
            "compactionSummary" | "branchSummary" => {
                let summary = m.get("summary").and_then(Value::as_str).unwrap_or("");
                let text = if role == "compactionSummary" {
                    compaction_summary_text(summary)
                } else {
                    branch_summary_text(summary)
                };
                parts.push(format!("[User]: {text}"));
            }
            "assistant" => {
                let blocks = m
                    .get("content")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let of = |ty: &str, key: &str| -> Vec<String> {
                    blocks
                        .iter()
                        .filter(|b| b.get("type").and_then(Value::as_str) == Some(ty))
                        .filter_map(|b| b.get(key).and_then(Value::as_str).map(str::to_string))
                        .collect()
                };
                let thinking = of("thinking", "thinking");
                if !thinking.is_empty() {
                    parts.push(format!("[Assistant thinking]: {}", thinking.join("\n")));
                }
                let text = of("text", "text");
                if !text.is_empty() {
                    parts.push(format!("[Assistant]: {}", text.join("\n")));
                }
                let calls: Vec<String> = blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
                    .map(|b| {
                        let name = b.get("name").and_then(Value::as_str).unwrap_or("");
                        let args = b
                            .get("arguments")
                            .and_then(Value::as_object)
                            .map(|a| {
                                a.iter()
                                    .map(|(k, v)| {
                                        format!(
                                            "{k}={}",
                                            serde_json::to_string(v).unwrap_or_default()
                                        )
                                    })
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            })
                            .unwrap_or_default();
                        format!("{name}({args})")
                    })
                    .collect();
                if !calls.is_empty() {
                    parts.push(format!("[Assistant tool calls]: {}", calls.join("; ")));
                }
            }
            "toolResult" => {
                let text = content_text(m.get("content"));
                if !text.is_empty() {
                    parts.push(format!(
                        "[Tool result]: {}",
                        truncate_chars(&text, TOOL_RESULT_MAX_CHARS)
                    ));
                }
            }
            _ => {}
        }
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_each_role() {
        let msgs = [
            json!({"role":"user","content":[{"type":"text","text":"fix it"}]}),
            json!({"role":"assistant","content":[
                {"type":"thinking","thinking":"look first"},
                {"type":"text","text":"Reading."},
                {"type":"toolCall","id":"1","name":"read","arguments":{"path":"a.rs","limit":10}}
            ]}),
            json!({"role":"toolResult","toolCallId":"1","toolName":"read","content":[{"type":"text","text":"y".repeat(2005)}],"isError":false}),
            json!({"role":"bashExecution","command":"false","output":"","exitCode":1,"cancelled":false,"truncated":false}),
        ];
        let text = serialize_conversation(&msgs);
        assert!(text.starts_with(
            "[User]: fix it\n\n[Assistant thinking]: look first\n\n[Assistant]: Reading.\n\n"
        ));
        assert!(text.contains("[Assistant tool calls]: read(path=\"a.rs\", limit=10)"));
        assert!(text.contains("[... 5 more characters truncated]"));
        assert!(text.ends_with("[User]: Ran `false`\n(no output)\n\nCommand exited with code 1"));
    }

    #[test]
    fn bash_text_mentions_truncation_path() {
        let m = json!({"command":"ls","output":"a","exitCode":0,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/x.log"});
        assert_eq!(
            bash_execution_text(&m),
            "Ran `ls`\n```\na\n```\n\n[Output truncated. Full output: /tmp/x.log]"
        );
    }
}
