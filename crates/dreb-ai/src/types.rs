//! The LLM-facing data model shared by providers, the agent loop and the runtime.
//!
//! The data types are the spec's (`dreb_types`, generated from `protocol/rpc.yaml`), re-exported here: the same
//! types the protocol writes to RPC hosts and session files. What is defined here is what the spec does not
//! describe: the tool definitions and context of a request, and the provider stream's own events.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Unix time in milliseconds.
pub type TimestampMs = i64;

/// Well-known `Model::api` values as strings (`ModelApi` compares with them; `faux` is not in the spec's list and is
/// `ModelApi::Other("faux")`).
pub mod api {
    pub const ANTHROPIC_MESSAGES: &str = "anthropic-messages";
    pub const OPENAI_COMPLETIONS: &str = "openai-completions";
    pub const OPENAI_RESPONSES: &str = "openai-responses";
    /// The Responses wire at an Azure OpenAI resource.
    pub const AZURE_OPENAI_RESPONSES: &str = "azure-openai-responses";
    pub const GOOGLE_GENERATIVE_AI: &str = "google-generative-ai";
    /// The built-in offline, scripted provider used by the quick start and tests.
    pub const FAUX: &str = "faux";
}

/// A number written as JavaScript writes it (prices, costs, durations).
pub use dreb_types::JsNumber;
/// Price per million tokens, in dollars (the spec's type; numbers written as JavaScript writes them).
pub use dreb_types::ModelCost;

/// An input modality a model accepts (the spec's `ModelInput`).
pub use dreb_types::ModelInput as InputKind;

/// A model the agent can talk to (built-in catalog or `models.json`): the spec's type. `api` is the open
/// [`ModelApi`] (it compares with the [`api`] strings; `models.json` may name any API, kept in `ModelApi::Other`),
/// the token limits are `i64` as on the wire (`Model::context_window_tokens` / `max_output_tokens` give them as
/// `u64`), and `wire_id()` is the id sent to the provider.
pub use dreb_types::{AuthMode, Model, ModelApi};

/// A block of an assistant message (the spec's `AssistantContentBlock`).
pub use dreb_types::AssistantContentBlock as AssistantBlock;
/// A block of a user message or tool result (the spec's `UserContentBlock`).
pub use dreb_types::UserContentBlock as UserBlock;
/// The content blocks and their unions: the spec's types. Each block struct carries its tag (`r#type`, a
/// `dreb_types::consts` marker: `Default::default()`) and the spec's streaming scratch fields (`index`; a tool call's
/// `partialArgs` / `partialJson`), absent unless set, so a block is built with `..Default::default()`. The unions
/// write no tag of their own (each variant does) and parse the tag first (`dreb_types::support::deserialize_tagged`).
pub use dreb_types::{ImageContent, TextContent, ThinkingContent, ToolCall};

/// User content: a plain string (`Text`) or a list of text/image blocks (`Blocks`), both occur on the wire and in
/// session files (the spec's `oneOf`, read by its first JSON token; `text()` joins the text).
pub use dreb_types::UserContent;

/// Token usage and its cost of one response (the spec's types: token counts are `i64`, dollars `JsNumber`).
pub use dreb_types::{Usage, UsageCost};

/// Why an assistant response ended (the spec's type, `stop` by default).
pub use dreb_types::StopReason;

/// The messages of an LLM context (the spec's types). Each carries its `role` (a `dreb_types::consts` marker:
/// `Default::default()`); `AssistantMessage.api` is the open `ModelApi` (it compares with the [`api`] strings) and
/// `durationMs` a `JsNumber`, printed as JavaScript prints it. `AssistantMessage::empty`, `text()` and
/// `tool_calls()` are in `dreb_types`' `values.rs`.
pub use dreb_types::{AssistantMessage, ToolResultMessage, UserMessage};

/// A message in an LLM context: the three roles providers understand (the spec's `LlmMessage`; written untagged,
/// each message writes its `role`; parsed tag first).
pub use dreb_types::LlmMessage as Message;

/// Reasoning effort (the spec's type). `Off` (the default) disables thinking; providers clamp to what the model
/// supports. `ThinkingLevel::ALL` lists the levels in spec order, lowest effort first.
pub use dreb_types::ThinkingLevel;

/// A tool as the model sees it: name, description and a JSON Schema of its parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Everything one LLM request needs besides the model and options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Context {
    pub system_prompt: Option<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolDefinition>,
}

/// How a finished stream ended (`done` event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DoneReason {
    Stop,
    Length,
    ToolUse,
}

/// How a failed stream ended (`error` event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ErrorReason {
    Aborted,
    Error,
}

/// The assistant stream events (wire name `assistantMessageEvent`). Every event but `done`/`error` carries the
/// partial message as it stands after the event. A provider stream always ends with exactly one `done` or `error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantMessageEvent {
    Start {
        partial: AssistantMessage,
    },
    #[serde(rename_all = "camelCase")]
    TextStart {
        content_index: usize,
        partial: AssistantMessage,
    },
    #[serde(rename_all = "camelCase")]
    TextDelta {
        content_index: usize,
        delta: String,
        partial: AssistantMessage,
    },
    #[serde(rename_all = "camelCase")]
    TextEnd {
        content_index: usize,
        content: String,
        partial: AssistantMessage,
    },
    #[serde(rename_all = "camelCase")]
    ThinkingStart {
        content_index: usize,
        partial: AssistantMessage,
    },
    #[serde(rename_all = "camelCase")]
    ThinkingDelta {
        content_index: usize,
        delta: String,
        partial: AssistantMessage,
    },
    #[serde(rename_all = "camelCase")]
    ThinkingEnd {
        content_index: usize,
        content: String,
        partial: AssistantMessage,
    },
    #[serde(rename = "toolcall_start", rename_all = "camelCase")]
    ToolcallStart {
        content_index: usize,
        partial: AssistantMessage,
    },
    #[serde(rename = "toolcall_delta", rename_all = "camelCase")]
    ToolcallDelta {
        content_index: usize,
        delta: String,
        partial: AssistantMessage,
    },
    #[serde(rename = "toolcall_end", rename_all = "camelCase")]
    ToolcallEnd {
        content_index: usize,
        tool_call: ToolCall,
        partial: AssistantMessage,
    },
    Done {
        reason: DoneReason,
        message: AssistantMessage,
    },
    Error {
        reason: ErrorReason,
        error: AssistantMessage,
    },
}

impl AssistantMessageEvent {
    /// True for the terminal `done` / `error` events.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            AssistantMessageEvent::Done { .. } | AssistantMessageEvent::Error { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_serialise_as_javascript_writes_them() {
        // serde_json alone would write `1.5e-6`, `3e-6` and `1e21`; the reference writes these.
        let line = r#"{"input":0.0000015,"output":0.000003,"cacheRead":0,"cacheWrite":1e+21,"total":0.30000000000000004}"#;
        let cost: UsageCost = serde_json::from_str(line).unwrap();
        assert_eq!(serde_json::to_string(&cost).unwrap(), line);
    }

    #[test]
    fn assistant_message_round_trips_reference_json_with_key_order() {
        // A message as the reference writes it in session files.
        let line = r#"{"role":"assistant","content":[{"type":"toolCall","id":"call_mock_14","name":"bash","arguments":{"command":"echo hello-from-bash"}}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":100,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":105,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1796106532691,"responseId":"chatcmpl-mock-14","durationMs":66.53081300000008}"#;
        let msg: Message = serde_json::from_str(line).unwrap();
        let back: Value = serde_json::to_value(&msg).unwrap();
        let orig: Value = serde_json::from_str(line).unwrap();
        assert_eq!(back, orig);
        assert_eq!(
            serde_json::to_string(&msg).unwrap(),
            line,
            "byte-identical to the reference"
        );
        let keys: Vec<_> = back.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys,
            [
                "role",
                "content",
                "api",
                "provider",
                "model",
                "usage",
                "stopReason",
                "timestamp",
                "responseId",
                "durationMs"
            ]
        );
    }

    #[test]
    fn user_content_accepts_string_and_blocks() {
        let a: Message =
            serde_json::from_str(r#"{"role":"user","content":"hi","timestamp":1}"#).unwrap();
        let b: Message = serde_json::from_str(
            r#"{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}"#,
        )
        .unwrap();
        match (a, b) {
            (Message::User(a), Message::User(b)) => assert_eq!(a.content.text(), b.content.text()),
            _ => panic!("expected user messages"),
        }
    }

    #[test]
    fn stream_event_tags_match_the_wire() {
        let model_json = r#"{"role":"assistant","content":[],"api":"x","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":0}"#;
        let partial: AssistantMessage = serde_json::from_str(model_json).unwrap();
        let ev = AssistantMessageEvent::ToolcallDelta {
            content_index: 0,
            delta: "{".into(),
            partial,
        };
        let v = serde_json::to_value(&ev).unwrap();
        assert_eq!(v["type"], "toolcall_delta");
        assert_eq!(v["contentIndex"], 0);
        assert_eq!(ThinkingLevel::parse("xhigh"), Some(ThinkingLevel::Xhigh));
    }
}

/// The messages, blocks and user content parse through the spec's tag-first decoding
/// (`dreb_types::support::deserialize_tagged`, `string_or_list`).
#[cfg(test)]
mod parse_tests {
    use super::{AssistantBlock, Message, UserBlock, UserContent};
    use serde_json::json;

    #[test]
    fn tag_first_tag_later_and_from_a_value_parse_the_same() {
        let first = r#"{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}"#;
        let later = r#"{"content":[{"text":"hi","type":"text"}],"timestamp":1,"role":"user"}"#;
        let a: Message = serde_json::from_str(first).unwrap();
        let b: Message = serde_json::from_str(later).unwrap();
        let c: Message = serde_json::from_value(serde_json::from_str(first).unwrap()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert!(matches!(a, Message::User(_)));
        // The tag is seen by the variant too (an escaped tag key or value still parses).
        let escaped = r#"{"r\u006fle":"t\u006folResult","toolCallId":"c","toolName":"t","content":[],"isError":false,"timestamp":2}"#;
        assert!(matches!(
            serde_json::from_str::<Message>(escaped).unwrap(),
            Message::ToolResult(_)
        ));
    }

    #[test]
    fn errors_read_as_serde_words_them() {
        let e = serde_json::from_str::<Message>(r#"{"role":"system","content":"x"}"#).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "unknown variant `system`, expected one of `user`, `assistant`, `toolResult`"
            ),
            "{e}"
        );
        // `Message` is the spec's `LlmMessage` (`dreb_types::support::deserialize_tagged`): a missing or
        // non-string tag, or not an object, is the spec's missing-tag error.
        let e = serde_json::from_str::<Message>(r#"{"content":"x"}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("missing string tag `role` of LlmMessage"),
            "{e}"
        );
        let e = serde_json::from_str::<Message>(r#"{"role":"user","timestamp":1}"#).unwrap_err();
        assert!(e.to_string().starts_with("missing field `content`"), "{e}");
        let e = serde_json::from_str::<Message>("3").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("missing string tag `role` of LlmMessage"),
            "{e}"
        );
        let e = serde_json::from_value::<Message>(json!({"content": "x", "role": 5})).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("missing string tag `role` of LlmMessage"),
            "{e}"
        );
        // The content blocks are the spec's unions (`dreb_types::support::deserialize_tagged`, also tag first):
        // the same texts where serde words them, the spec's own where a tag is missing.
        let e = serde_json::from_str::<UserBlock>(r#"{"type":"video","url":"x"}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown variant `video`, expected `text` or `image`"),
            "{e}"
        );
        let e = serde_json::from_str::<AssistantBlock>(r#"{"type":"text"}"#).unwrap_err();
        assert!(e.to_string().starts_with("missing field `text`"), "{e}");
        let e = serde_json::from_str::<UserBlock>(r#"{"text":"x"}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("missing string tag `type` of UserContentBlock"),
            "{e}"
        );
    }

    #[test]
    fn user_content_is_a_string_or_blocks() {
        let t: UserContent = serde_json::from_str(r#""plain""#).unwrap();
        assert_eq!(t, UserContent::Text("plain".into()));
        let b: UserContent =
            serde_json::from_str(r#"[{"type":"image","data":"AA==","mimeType":"image/png"}]"#)
                .unwrap();
        assert!(matches!(b, UserContent::Blocks(ref v) if matches!(v[0], UserBlock::Image(_))));
        assert!(serde_json::from_str::<UserContent>("{}").is_err());
    }
}
