//! Hand-written additions to generated types that the spec cannot say: defaults and helpers the lower crates
//! rely on. Nothing here changes a wire shape.

use crate::{QueueMode, StopReason, ThinkingLevel};

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
}
