//! Hand-written additions to generated types that the spec cannot say: defaults and helpers the lower crates
//! rely on. Nothing here changes a wire shape.

use crate::{
    AgentMessage, AssistantContentBlock, AssistantMessage, LlmMessage, Model, ModelApi, QueueMode,
    StopReason, TextContent, ThinkingLevel, ToolCall, Usage, UserContent, UserContentBlock,
    UserMessage,
};

/// `off`: a session, a model switch and the settings start without reasoning.
impl Default for ThinkingLevel {
    fn default() -> Self {
        ThinkingLevel::Off
    }
}

impl ThinkingLevel {
    /// Parses a level as settings, CLI flags (`--thinking`, `model:level`) and session entries spell it (the wire
    /// value); `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::from_wire(s)
    }
}

/// `stop`: what a message under construction says until the provider reports why it ended.
impl Default for StopReason {
    fn default() -> Self {
        StopReason::Stop
    }
}

/// `one-at-a-time`: the reference's default for steering and follow-up queues.
impl Default for QueueMode {
    fn default() -> Self {
        QueueMode::OneAtATime
    }
}

impl QueueMode {
    /// Parses a mode as settings spell it (the wire value); `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Self::from_wire(s)
    }
}

impl UserContent {
    /// The concatenated text of the content (images skipped).
    pub fn text(&self) -> String {
        match self {
            UserContent::Text(s) => s.clone(),
            UserContent::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    UserContentBlock::Text(t) => Some(t.text.as_str()),
                    UserContentBlock::Image(_) => None,
                })
                .collect::<Vec<_>>()
                .join(""),
        }
    }
}

impl AgentMessage {
    /// The message's `timestamp` (an unknown role's, when it has an integer one; else 0).
    pub fn timestamp(&self) -> i64 {
        match self {
            AgentMessage::User(m) => m.timestamp,
            AgentMessage::Assistant(m) => m.timestamp,
            AgentMessage::ToolResult(m) => m.timestamp,
            AgentMessage::BashExecution(m) => m.timestamp,
            AgentMessage::Custom(m) => m.timestamp,
            AgentMessage::BranchSummary(m) => m.timestamp,
            AgentMessage::CompactionSummary(m) => m.timestamp,
            AgentMessage::Unknown(v) => v.get("timestamp").and_then(|t| t.as_i64()).unwrap_or(0),
        }
    }

    pub fn as_assistant(&self) -> Option<&AssistantMessage> {
        match self {
            AgentMessage::Assistant(m) => Some(m),
            _ => None,
        }
    }

    /// A user message with one text block, as `prompt(text)` builds it.
    pub fn user_text(text: impl Into<String>, timestamp: i64) -> Self {
        AgentMessage::User(UserMessage {
            role: Default::default(),
            content: UserContent::Blocks(vec![UserContentBlock::Text(TextContent {
                text: text.into(),
                ..Default::default()
            })]),
            timestamp,
        })
    }
}

/// An LLM context's message is an agent message of the same role.
impl From<LlmMessage> for AgentMessage {
    fn from(m: LlmMessage) -> Self {
        match m {
            LlmMessage::User(m) => AgentMessage::User(m),
            LlmMessage::Assistant(m) => AgentMessage::Assistant(m),
            LlmMessage::ToolResult(m) => AgentMessage::ToolResult(m),
        }
    }
}

impl AssistantMessage {
    /// An empty partial for `model`, as providers create it before the first stream event.
    pub fn empty(model: &Model, timestamp: i64) -> Self {
        AssistantMessage {
            role: Default::default(),
            content: Vec::new(),
            api: model.api.clone(),
            provider: model.provider.clone(),
            model: model.id.clone(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            timestamp,
            response_id: None,
            error_message: None,
            duration_ms: None,
        }
    }

    /// A copy with no content blocks: what a projection that never shows the reply needs to keep of it.
    pub fn clone_without_content(&self) -> Self {
        AssistantMessage {
            role: Default::default(),
            content: Vec::new(),
            api: self.api.clone(),
            provider: self.provider.clone(),
            model: self.model.clone(),
            usage: self.usage,
            stop_reason: self.stop_reason,
            timestamp: self.timestamp,
            response_id: self.response_id.clone(),
            error_message: self.error_message.clone(),
            duration_ms: self.duration_ms,
        }
    }

    /// The concatenated text blocks.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                AssistantContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|b| match b {
            AssistantContentBlock::ToolCall(c) => Some(c),
            _ => None,
        })
    }
}

impl Model {
    /// The model id to send to the provider: `wireModelId` when set (context tiers), else `id`.
    pub fn wire_id(&self) -> &str {
        self.wire_model_id.as_deref().unwrap_or(&self.id)
    }

    /// `contextWindow` as a token count for arithmetic (a negative value, which no catalog or `models.json` entry
    /// can produce, counts as 0: no window).
    pub fn context_window_tokens(&self) -> u64 {
        u64::try_from(self.context_window).unwrap_or(0)
    }

    /// `maxTokens` as a token count for arithmetic (negative counts as 0).
    pub fn max_output_tokens(&self) -> u64 {
        u64::try_from(self.max_tokens).unwrap_or(0)
    }
}

/// An API compares with its wire value (`model.api == api::FAUX`); a listed value never hides in `Other`, since
/// [`ModelApi::from_wire`] maps every listed string to its variant.
impl PartialEq<str> for ModelApi {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ModelApi {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The API a wire value names (`models.json`'s free string; an unlisted one is kept in `Other`).
impl From<&str> for ModelApi {
    fn from(s: &str) -> Self {
        Self::from_wire(s).unwrap_or_else(|| Self::Other(s.to_string()))
    }
}

impl From<String> for ModelApi {
    fn from(s: String) -> Self {
        match Self::from_wire(&s) {
            Some(Self::Other(_)) | None => Self::Other(s),
            Some(listed) => listed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_and_list_in_spec_order() {
        assert_eq!(ThinkingLevel::parse("xhigh"), Some(ThinkingLevel::Xhigh));
        assert_eq!(ThinkingLevel::parse("XHIGH"), None);
        let wire: Vec<&str> = ThinkingLevel::ALL.iter().map(|l| l.as_str()).collect();
        assert_eq!(wire, ThinkingLevel::VALUES);
        assert_eq!(wire.first(), Some(&"off"));
        assert_eq!(ThinkingLevel::default(), ThinkingLevel::Off);
        assert_eq!(StopReason::default().as_str(), "stop");
        assert_eq!(QueueMode::default().as_str(), "one-at-a-time");
        assert_eq!(QueueMode::parse("all"), Some(QueueMode::All));
    }

    #[test]
    fn unions_parse_the_same_tag_first_tag_later_and_from_a_value() {
        use crate::{AgentMessage, AssistantContentBlock, UserContentBlock};
        let first = r#"{"role":"assistant","content":[{"type":"thinking","thinking":"t"},{"type":"toolCall","id":"c","name":"bash","arguments":{"a":[1,{"b":null}]},"partialJson":"{","index":0,"thoughtSignature":"s"}],"api":"faux","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1}"#;
        let later = r#"{"content":[{"thinking":"t","type":"thinking"},{"id":"c","type":"toolCall","name":"bash","arguments":{"a":[1,{"b":null}]},"partialJson":"{","index":0,"thoughtSignature":"s"}],"api":"faux","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1,"role":"assistant"}"#;
        let a: AgentMessage = serde_json::from_str(first).unwrap();
        let b: AgentMessage = serde_json::from_str(later).unwrap();
        let c: AgentMessage =
            serde_json::from_value(serde_json::from_str::<serde_json::Value>(first).unwrap())
                .unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert!(
            matches!(&a, AgentMessage::Assistant(m) if matches!(m.content[1], AssistantContentBlock::ToolCall(_)))
        );
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            first,
            "written back byte for byte"
        );
        // An escaped tag key or value still parses.
        let escaped = r#"{"t\u0079pe":"im\u0061ge","data":"AA==","mimeType":"image/png"}"#;
        assert!(matches!(
            serde_json::from_str::<UserContentBlock>(escaped).unwrap(),
            UserContentBlock::Image(_)
        ));
        // An open union keeps an unknown tag, wherever it is, and a value without one.
        for unknown in [
            r#"{"role":"note","text":"x"}"#,
            r#"{"text":"x","role":"note"}"#,
            r#"{"role":5}"#,
            r#""plain""#,
        ] {
            let parsed: AgentMessage = serde_json::from_str(unknown).unwrap();
            assert_eq!(
                parsed,
                AgentMessage::Unknown(serde_json::from_str(unknown).unwrap()),
                "{unknown}"
            );
        }
        // A closed one rejects them with the spec's texts.
        let e = serde_json::from_str::<UserContentBlock>(r#"{"type":"video"}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown variant `video`, expected `text` or `image`"),
            "{e}"
        );
        let e = serde_json::from_str::<UserContentBlock>("3").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("missing string tag `type` of UserContentBlock"),
            "{e}"
        );
        let e = serde_json::from_str::<UserContentBlock>(r#"{"type":"text"}"#).unwrap_err();
        assert!(e.to_string().starts_with("missing field `text`"), "{e}");
    }

    #[test]
    fn model_api_compares_and_converts_by_wire_value() {
        let listed = ModelApi::from("anthropic-messages");
        assert_eq!(listed, ModelApi::AnthropicMessages);
        assert_eq!(listed, "anthropic-messages");
        assert_eq!(
            ModelApi::from("faux".to_string()),
            ModelApi::Other("faux".into())
        );
        let faux = ModelApi::from("faux");
        assert!(faux == "faux" && faux != "anthropic-messages");
        assert_eq!(
            ModelApi::from("openai-responses".to_string()).as_str(),
            "openai-responses"
        );
    }
}
