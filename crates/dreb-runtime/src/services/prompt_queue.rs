//! What waits for the agent: the steering and follow-up messages as hosts see them (`get_pending_messages`; the
//! agent keeps the messages themselves) and the custom messages an extension held for the next prompt.

use std::sync::Mutex;

use dreb_agent::AgentMessage;
use dreb_ai::ImageContent;

use crate::sync::lock;

/// A queued steering/follow-up message as the host sees it (`get_pending_messages`).
#[derive(Debug, Clone)]
pub(crate) struct QueuedDisplay {
    pub steering: bool,
    pub text: String,
    pub images: Vec<ImageContent>,
}

#[derive(Default)]
pub(crate) struct PromptQueue {
    queued: Mutex<Vec<QueuedDisplay>>,
    next_turn: Mutex<Vec<AgentMessage>>,
}

impl PromptQueue {
    pub(crate) fn push(&self, queued: QueuedDisplay) {
        lock(&self.queued).push(queued);
    }

    /// The queued messages, in order.
    pub(crate) fn queued(&self) -> Vec<QueuedDisplay> {
        lock(&self.queued).clone()
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.queued).len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.queued).is_empty()
    }

    pub(crate) fn clear(&self) {
        lock(&self.queued).clear();
    }

    /// A user message with `text` reached the conversation: the first queued one with that text is no longer
    /// pending.
    pub(crate) fn delivered(&self, text: &str) {
        let mut queued = lock(&self.queued);
        if let Some(i) = queued.iter().position(|q| q.text == text) {
            queued.remove(i);
        }
    }

    /// Hold a custom message for the next prompt (`send_message` with `deliverAs: "nextTurn"`).
    pub(crate) fn hold_for_next_turn(&self, message: AgentMessage) {
        lock(&self.next_turn).push(message);
    }

    /// The messages held for this prompt, in order.
    pub(crate) fn take_next_turn(&self) -> Vec<AgentMessage> {
        std::mem::take(&mut *lock(&self.next_turn))
    }
}
