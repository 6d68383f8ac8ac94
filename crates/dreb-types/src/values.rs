//! Hand-written additions to generated types that the spec cannot say: defaults and helpers the lower crates
//! rely on. Nothing here changes a wire shape.

use crate::{Model, ModelApi, QueueMode, StopReason, ThinkingLevel};

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
    fn model_api_compares_and_converts_by_wire_value() {
        let listed = ModelApi::from("anthropic-messages");
        assert_eq!(listed, ModelApi::AnthropicMessages);
        assert_eq!(listed, "anthropic-messages");
        assert_eq!(
            ModelApi::from("faux".to_string()),
            ModelApi::Other("faux".into())
        );
        assert!(ModelApi::from("faux") == "faux" && ModelApi::from("faux") != "anthropic-messages");
        assert_eq!(
            ModelApi::from("openai-responses".to_string()).as_str(),
            "openai-responses"
        );
    }
}
