//! Steering and follow-up queues with their delivery modes.

use std::collections::VecDeque;

use crate::message::AgentMessage;

/// How many queued messages one poll delivers (`steeringMode` / `followUpMode`): the spec's `QueueMode`
/// (`all`, or `one-at-a-time`, the default).
pub use dreb_types::QueueMode;

/// A FIFO of queued messages delivered according to a [`QueueMode`].
#[derive(Debug, Clone, Default)]
pub struct MessageQueue {
    items: VecDeque<AgentMessage>,
    pub mode: QueueMode,
}

impl MessageQueue {
    pub fn new(mode: QueueMode) -> Self {
        MessageQueue {
            items: VecDeque::new(),
            mode,
        }
    }

    pub fn push(&mut self, message: AgentMessage) {
        self.items.push_back(message);
    }

    /// One poll: the first message in one-at-a-time mode, everything in all mode.
    pub fn dequeue(&mut self) -> Vec<AgentMessage> {
        match self.mode {
            QueueMode::OneAtATime => self.items.pop_front().into_iter().collect(),
            QueueMode::All => self.items.drain(..).collect(),
        }
    }

    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Take `message` out of the queue (its first equal); false when it is not queued.
    pub fn remove(&mut self, message: &AgentMessage) -> bool {
        match self.items.iter().position(|m| m == message) {
            Some(i) => self.items.remove(i).is_some(),
            None => false,
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &AgentMessage> {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(text: &str) -> AgentMessage {
        AgentMessage::user_text(text, 0)
    }

    fn texts(v: Vec<AgentMessage>) -> Vec<String> {
        v.into_iter()
            .map(|m| match m {
                AgentMessage::User(u) => u.content.text(),
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn one_at_a_time_delivers_fifo_one_per_poll() {
        let mut q = MessageQueue::new(QueueMode::OneAtATime);
        q.push(msg("a"));
        q.push(msg("b"));
        assert_eq!(texts(q.dequeue()), ["a"]);
        assert_eq!(texts(q.dequeue()), ["b"]);
        assert!(q.dequeue().is_empty());
    }

    #[test]
    fn a_queued_message_can_be_taken_back_once() {
        let mut q = MessageQueue::new(QueueMode::OneAtATime);
        q.push(msg("a"));
        q.push(msg("b"));
        assert!(q.remove(&msg("b")));
        assert!(!q.remove(&msg("b")));
        assert_eq!(texts(q.dequeue()), ["a"]);
        assert!(q.is_empty());
    }

    #[test]
    fn all_mode_drains_everything() {
        let mut q = MessageQueue::new(QueueMode::All);
        q.push(msg("a"));
        q.push(msg("b"));
        assert_eq!(texts(q.dequeue()), ["a", "b"]);
        assert!(q.is_empty());
        q.mode = QueueMode::OneAtATime;
        q.push(msg("c"));
        q.push(msg("d"));
        q.clear();
        assert!(q.dequeue().is_empty());
    }

    #[test]
    fn modes_use_wire_names() {
        assert_eq!(
            serde_json::to_string(&QueueMode::OneAtATime).unwrap(),
            r#""one-at-a-time""#
        );
        assert_eq!(QueueMode::parse("all"), Some(QueueMode::All));
        assert_eq!(QueueMode::parse("both"), None);
    }
}
