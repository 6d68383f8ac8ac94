//! The agent's conversation as an open session gives it: the branch's messages stay lines of the session file
//! until something needs them as values (a run, compaction, a fork), so switching to or resuming a long session
//! reads none of them. `get_messages` copies them as the file holds them meanwhile, and `get_state` decodes only
//! the tail its context estimate reads (ADR 0018).

use dreb_agent::{AgentMessage, Conversation, MessageSource, SourceMessage};
use dreb_protocol::support::TaggedUnion;
use dreb_session::{ContextMessage, MessageLine, SessionManager};

/// The current branch's context with its messages deferred (see the module docs), as
/// [`crate::persist::session_context`] gives it decoded.
pub(crate) struct DeferredContext {
    pub conversation: Conversation,
    pub thinking_level: String,
}

pub(crate) fn session_conversation(session: &SessionManager) -> DeferredContext {
    let context = session.build_session_context_deferred();
    let items = context
        .messages
        .into_iter()
        .filter_map(|m| match m {
            ContextMessage::Made(value) => {
                let role = value.get("role").and_then(|r| r.as_str()).map(Box::from);
                match serde_json::from_value::<AgentMessage>(value) {
                    // A role this version does not know is left out, as when the context is decoded.
                    Ok(AgentMessage::Unknown(_)) | Err(_) => None,
                    Ok(message) => Some(Item::Made {
                        message: Box::new(message),
                        role,
                    }),
                }
            }
            ContextMessage::Line(line) => line
                .role()
                .is_some_and(|r| <AgentMessage as TaggedUnion>::KNOWN.contains(&r))
                .then_some(Item::Line(line)),
        })
        .collect();
    DeferredContext {
        conversation: Conversation::deferred(SessionMessages { items }),
        thinking_level: context.thinking_level,
    }
}

enum Item {
    Made {
        message: Box<AgentMessage>,
        role: Option<Box<str>>,
    },
    Line(MessageLine),
}

struct SessionMessages {
    items: Vec<Item>,
}

impl SessionMessages {
    fn decode_with(&self, i: usize, buf: &mut Vec<u8>) -> Option<AgentMessage> {
        match &self.items[i] {
            Item::Made { message, .. } => Some(AgentMessage::clone(message)),
            Item::Line(line) => line
                .decode_with::<AgentMessage>(buf)
                .filter(|m| !matches!(m, AgentMessage::Unknown(_))),
        }
    }
}

impl MessageSource for SessionMessages {
    fn len(&self) -> usize {
        self.items.len()
    }

    fn role(&self, i: usize) -> Option<&str> {
        match &self.items[i] {
            Item::Made { role, .. } => role.as_deref(),
            Item::Line(line) => line.role(),
        }
    }

    fn decode(&self, i: usize) -> Option<AgentMessage> {
        self.decode_with(i, &mut Vec::new())
    }

    fn decode_all(&self) -> Vec<AgentMessage> {
        let mut buf = Vec::new();
        (0..self.items.len())
            .filter_map(|i| self.decode_with(i, &mut buf))
            .collect()
    }

    fn write_each(
        &self,
        write: &mut dyn FnMut(SourceMessage<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut buf = Vec::new();
        for item in &self.items {
            match item {
                Item::Made { message, .. } => write(SourceMessage::Message(message))?,
                Item::Line(line) => {
                    if !line.read_into(&mut buf) {
                        continue;
                    }
                    if let Some(json) = line.message_json(&buf) {
                        write(SourceMessage::Json(json))?;
                    } else if let Some(message) = line
                        .decode_from::<AgentMessage>(&buf)
                        .filter(|m| !matches!(m, AgentMessage::Unknown(_)))
                    {
                        write(SourceMessage::Message(&message))?;
                    }
                }
            }
        }
        Ok(())
    }
}
