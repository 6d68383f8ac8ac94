//! MCP tool results as the agent's tool-result content: text and images as they are, embedded resources and links
//! as text the model can read (image blobs as images), structured content kept in `details` (and as JSON text when
//! the server sent nothing else), `isError` as a tool error. Read from the spec's wire shapes, so a newer SDK's
//! extra content kinds degrade to a note instead of failing the call.

use dreb_agent::{ToolError, ToolOutput};
use dreb_ai::{ImageContent, TextContent, UserBlock};
use serde_json::{Value, json};

fn text(s: impl Into<String>) -> UserBlock {
    UserBlock::Text(TextContent {
        text: s.into(),
        text_signature: None,
        ..Default::default()
    })
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// One MCP content block (`{"type": "text" | "image" | "audio" | "resource" | "resource_link", ...}`).
pub fn block(v: &Value) -> UserBlock {
    match str_of(v, "type") {
        Some("text") => text(str_of(v, "text").unwrap_or_default()),
        Some("image") => match (str_of(v, "data"), str_of(v, "mimeType")) {
            (Some(data), Some(mime)) => UserBlock::Image(ImageContent {
                data: data.to_string(),
                mime_type: mime.to_string(),
                ..Default::default()
            }),
            _ => text("[image without data]"),
        },
        Some("audio") => text(format!(
            "[audio: {}, {} bytes of base64]",
            str_of(v, "mimeType").unwrap_or("unknown type"),
            str_of(v, "data").map_or(0, str::len)
        )),
        Some("resource") => resource(v.get("resource").unwrap_or(&Value::Null)),
        Some("resource_link") => {
            let uri = str_of(v, "uri").unwrap_or_default();
            let name = str_of(v, "name").unwrap_or(uri);
            let mut s = format!("[resource link: {name} <{uri}>");
            if let Some(mime) = str_of(v, "mimeType") {
                s.push_str(&format!(" ({mime})"));
            }
            if let Some(d) = str_of(v, "description") {
                s.push_str(&format!(": {d}"));
            }
            s.push(']');
            text(s)
        }
        other => text(format!(
            "[unsupported MCP content type {}]",
            other.unwrap_or("(none)")
        )),
    }
}

fn resource(r: &Value) -> UserBlock {
    let uri = str_of(r, "uri").unwrap_or_default();
    let mime = str_of(r, "mimeType");
    if let Some(t) = str_of(r, "text") {
        return text(format!("[resource {uri}]\n{t}"));
    }
    match (str_of(r, "blob"), mime) {
        (Some(blob), Some(m)) if m.starts_with("image/") => UserBlock::Image(ImageContent {
            data: blob.to_string(),
            mime_type: m.to_string(),
            ..Default::default()
        }),
        (Some(blob), _) => text(format!(
            "[resource {uri} ({}), {} bytes of base64]",
            mime.unwrap_or("binary"),
            blob.len()
        )),
        (None, _) => text(format!("[resource {uri}]")),
    }
}

/// A `tools/call` result (its JSON form) as the tool's output or error.
pub fn tool_result(result: &Value) -> Result<ToolOutput, ToolError> {
    let mut content: Vec<UserBlock> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().map(block).collect())
        .unwrap_or_default();
    let structured = result.get("structuredContent").cloned();
    if content.is_empty()
        && let Some(s) = &structured
    {
        content.push(text(s.to_string()));
    }
    let details = structured.map(|s| json!({ "structuredContent": s }));
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let message = content
            .iter()
            .filter_map(|b| match b {
                UserBlock::Text(t) => Some(t.text.as_str()),
                UserBlock::Image(_) => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        return Err(ToolError {
            message: if message.is_empty() {
                "The MCP tool reported an error without a message".into()
            } else {
                message
            },
            details,
        });
    }
    Ok(ToolOutput {
        content,
        details,
        end_turn: false,
    })
}

/// A `prompts/get` result as the text of one user message: each message's text (resources inlined), with the
/// role named when the prompt is a conversation rather than one user message.
pub fn prompt_text(result: &Value) -> String {
    let messages = result
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let single_user = messages.iter().all(|m| str_of(m, "role") == Some("user"));
    let mut parts = Vec::new();
    for m in &messages {
        let body = match m.get("content").map(block) {
            Some(UserBlock::Text(t)) => t.text,
            Some(UserBlock::Image(i)) => format!("[image: {}]", i.mime_type),
            None => String::new(),
        };
        if single_user {
            parts.push(body);
        } else {
            parts.push(format!("{}: {body}", str_of(m, "role").unwrap_or("user")));
        }
    }
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(out: &ToolOutput) -> Vec<String> {
        out.content
            .iter()
            .map(|b| match b {
                UserBlock::Text(t) => t.text.clone(),
                UserBlock::Image(i) => format!("image {}", i.mime_type),
            })
            .collect()
    }

    #[test]
    fn every_content_kind_maps() {
        let out = tool_result(&json!({"content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "demo://a", "mimeType": "text/plain", "text": "body"}},
            {"type": "resource", "resource": {"uri": "demo://b", "mimeType": "image/png", "blob": "BBBB"}},
            {"type": "resource", "resource": {"uri": "demo://c", "mimeType": "application/gzip", "blob": "CCCCCC"}},
            {"type": "resource_link", "uri": "demo://d", "name": "d.txt", "mimeType": "text/plain"},
            {"type": "hologram"}
        ]}))
        .unwrap();
        assert_eq!(
            texts(&out),
            [
                "hi",
                "image image/png",
                "[audio: audio/wav, 4 bytes of base64]",
                "[resource demo://a]\nbody",
                "image image/png",
                "[resource demo://c (application/gzip), 6 bytes of base64]",
                "[resource link: d.txt <demo://d> (text/plain)]",
                "[unsupported MCP content type hologram]",
            ]
        );
        assert_eq!(out.details, None);
    }

    #[test]
    fn structured_content_is_kept_and_shown_when_alone() {
        let out = tool_result(&json!({"content": [], "structuredContent": {"t": 21}})).unwrap();
        assert_eq!(texts(&out), [r#"{"t":21}"#]);
        assert_eq!(out.details, Some(json!({"structuredContent": {"t": 21}})));
        let out = tool_result(
            &json!({"content": [{"type": "text", "text": "21"}], "structuredContent": {"t": 21}}),
        )
        .unwrap();
        assert_eq!(texts(&out), ["21"]);
    }

    #[test]
    fn is_error_becomes_a_tool_error() {
        let e = tool_result(
            &json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}),
        )
        .unwrap_err();
        assert_eq!(e.message, "no such file");
        let e = tool_result(&json!({"isError": true})).unwrap_err();
        assert!(e.message.contains("without a message"));
    }

    #[test]
    fn prompts_flatten_to_one_message() {
        let one = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Weather in Paris?"}}]});
        assert_eq!(prompt_text(&one), "Weather in Paris?");
        let convo = json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "q"}},
            {"role": "assistant", "content": {"type": "text", "text": "a"}}
        ]});
        assert_eq!(prompt_text(&convo), "user: q\n\nassistant: a");
    }
}
