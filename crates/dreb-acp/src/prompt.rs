//! An ACP prompt (content blocks) as the runtime's prompt: text joined, images passed on, a resource link as a
//! reference the agent can `read`, an embedded text resource inlined with its URI (so the agent sees the editor's
//! buffer as sent). Audio and binary resources are refused (`initialize` does not offer them).

use agent_client_protocol_schema::v1::{ContentBlock, EmbeddedResourceResource};
use dreb_protocol::{ImageContent, PromptParams};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PromptError {
    #[error("audio prompts are not supported (promptCapabilities.audio is false)")]
    Audio,
    #[error("binary embedded resources are not supported: {0}")]
    Blob(String),
    #[error("the prompt is empty")]
    Empty,
}

/// `file:///a/b` as `/a/b`; other URIs stay as they are.
fn display_uri(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

pub fn to_params(blocks: &[ContentBlock]) -> Result<PromptParams, PromptError> {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::Image(i) => images.push(
                serde_json::from_value::<ImageContent>(serde_json::json!({
                    "type": "image", "data": i.data, "mimeType": i.mime_type,
                }))
                .expect("an image block always fits"),
            ),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("@{}", display_uri(&link.uri)));
            }
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => parts.push(format!(
                    "<context ref=\"{}\">\n{}\n</context>",
                    display_uri(&t.uri),
                    t.text
                )),
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    return Err(PromptError::Blob(b.uri.clone()));
                }
                _ => return Err(PromptError::Blob(String::new())),
            },
            ContentBlock::Audio(_) => return Err(PromptError::Audio),
            _ => return Err(PromptError::Audio),
        }
    }
    if parts.is_empty() && images.is_empty() {
        return Err(PromptError::Empty);
    }
    Ok(PromptParams {
        message: parts.join("\n\n"),
        images: (!images.is_empty()).then_some(images),
        streaming_behavior: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn blocks(v: serde_json::Value) -> Vec<ContentBlock> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn text_links_and_embedded_resources() {
        let p = to_params(&blocks(json!([
            {"type": "text", "text": "fix"},
            {"type": "resource_link", "name": "a.rs", "uri": "file:///w/a.rs"},
            {"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        ])))
        .unwrap();
        assert_eq!(
            p.message,
            "fix\n\n@/w/a.rs\n\n<context ref=\"/w/b.rs\">\nfn b() {}\n</context>"
        );
        assert_eq!(p.images.unwrap()[0].mime_type, "image/png");
    }

    #[test]
    fn audio_blobs_and_empty_prompts_are_refused() {
        assert_eq!(
            to_params(&blocks(
                json!([{"type": "audio", "data": "AA", "mimeType": "audio/wav"}])
            )),
            Err(PromptError::Audio)
        );
        assert!(matches!(
            to_params(&blocks(
                json!([{"type": "resource", "resource": {"uri": "x:y", "blob": "AA"}}])
            )),
            Err(PromptError::Blob(_))
        ));
        assert_eq!(to_params(&[]), Err(PromptError::Empty));
    }
}
