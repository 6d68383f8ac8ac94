//! The conversation an agent holds: its messages as values, or a [`MessageSource`] that gives them when something
//! needs them. A session switched to or resumed keeps its messages in the session file until then, so opening a
//! long session decodes none of them, `get_state` decodes only its last few and `get_messages` copies them as the
//! file holds them (docs/adr/0018-conversation-kept-in-the-session-file.md).

use std::sync::{Arc, OnceLock};

use serde::ser::{Error as _, SerializeSeq};
use serde_json::value::RawValue;

use crate::message::AgentMessage;

/// One message of a [`MessageSource`] as it is written out.
pub enum SourceMessage<'a> {
    /// The message's JSON text as the source keeps it.
    Json(&'a RawValue),
    /// A message the source holds decoded (or had to decode to write).
    Message(&'a AgentMessage),
}

/// Messages kept somewhere else (a session file) until they are needed as values.
pub trait MessageSource: Send + Sync {
    /// How many messages the source holds. Messages that will turn out not to decode count until they are
    /// decoded (and are left out then).
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `role` of message `i`, without decoding it.
    fn role(&self, i: usize) -> Option<&str>;

    /// Message `i` decoded; `None` when it does not decode.
    fn decode(&self, i: usize) -> Option<AgentMessage>;

    /// Every message decoded, in order (those that do not decode are left out).
    fn decode_all(&self) -> Vec<AgentMessage> {
        (0..self.len()).filter_map(|i| self.decode(i)).collect()
    }

    /// Hands every message to `write` in order, as JSON text where the source has it; stops at the first
    /// error `write` returns (and returns it).
    fn write_each(
        &self,
        write: &mut dyn FnMut(SourceMessage<'_>) -> Result<(), String>,
    ) -> Result<(), String>;
}

/// The agent's messages.
#[derive(Clone)]
pub struct Conversation(Repr);

#[derive(Clone)]
enum Repr {
    Decoded(Vec<AgentMessage>),
    Deferred(Arc<Deferred>),
}

struct Deferred {
    source: Box<dyn MessageSource>,
    /// Filled the first time the messages are needed as values.
    decoded: OnceLock<Vec<AgentMessage>>,
}

impl Default for Conversation {
    fn default() -> Self {
        Conversation(Repr::Decoded(Vec::new()))
    }
}

impl From<Vec<AgentMessage>> for Conversation {
    fn from(messages: Vec<AgentMessage>) -> Self {
        Conversation(Repr::Decoded(messages))
    }
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Repr::Decoded(m) => f.debug_tuple("Decoded").field(&m.len()).finish(),
            Repr::Deferred(d) => f
                .debug_tuple("Deferred")
                .field(&d.source.len())
                .field(&d.decoded.get().is_some())
                .finish(),
        }
    }
}

impl Conversation {
    /// A conversation whose messages stay in `source` until they are needed as values.
    pub fn deferred(source: impl MessageSource + 'static) -> Self {
        Conversation(Repr::Deferred(Arc::new(Deferred {
            source: Box::new(source),
            decoded: OnceLock::new(),
        })))
    }

    /// The number of messages, without decoding any (see [`MessageSource::len`]).
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Decoded(m) => m.len(),
            Repr::Deferred(d) => d.decoded.get().map_or_else(|| d.source.len(), Vec::len),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The messages as values, decoding them from the source the first time.
    pub fn as_slice(&self) -> &[AgentMessage] {
        match &self.0 {
            Repr::Decoded(m) => m,
            Repr::Deferred(d) => d.decoded.get_or_init(|| d.source.decode_all()),
        }
    }

    /// The messages as values (decoded first if they are not), to change.
    pub fn to_mut(&mut self) -> &mut Vec<AgentMessage> {
        if let Repr::Deferred(_) = &self.0 {
            let Repr::Deferred(d) = std::mem::replace(&mut self.0, Repr::Decoded(Vec::new()))
            else {
                unreachable!("matched above")
            };
            // Moved out when no clone of the state shares it; copied otherwise.
            let messages = match Arc::try_unwrap(d) {
                Ok(d) => d
                    .decoded
                    .into_inner()
                    .unwrap_or_else(|| d.source.decode_all()),
                Err(shared) => shared
                    .decoded
                    .get_or_init(|| shared.source.decode_all())
                    .clone(),
            };
            self.0 = Repr::Decoded(messages);
        }
        match &mut self.0 {
            Repr::Decoded(m) => m,
            Repr::Deferred(_) => unreachable!("decoded above"),
        }
    }

    pub fn push(&mut self, message: AgentMessage) {
        self.to_mut().push(message);
    }

    pub fn clear(&mut self) {
        self.0 = Repr::Decoded(Vec::new());
    }

    /// The source, while the messages are still only there (not yet decoded).
    pub fn pending_source(&self) -> Option<&dyn MessageSource> {
        match &self.0 {
            Repr::Deferred(d) if d.decoded.get().is_none() => Some(&*d.source),
            _ => None,
        }
    }
}

impl std::ops::Deref for Conversation {
    type Target = [AgentMessage];

    fn deref(&self) -> &[AgentMessage] {
        self.as_slice()
    }
}

/// A JSON array of the messages: written from the source's JSON text while they are not decoded (nothing is
/// decoded for it), from the values otherwise.
impl serde::Serialize for Conversation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Some(source) = self.pending_source() else {
            return serializer.collect_seq(self.as_slice());
        };
        let mut seq = serializer.serialize_seq(Some(source.len()))?;
        let mut failed = None;
        let written = source.write_each(&mut |m| {
            let result = match m {
                SourceMessage::Json(raw) => seq.serialize_element(raw),
                SourceMessage::Message(m) => seq.serialize_element(m),
            };
            result.map_err(|e| {
                let text = e.to_string();
                failed = Some(e);
                text
            })
        });
        if let Err(text) = written {
            return Err(failed.unwrap_or_else(|| S::Error::custom(text)));
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Messages `0..n` (user texts), counting the decodes.
    struct Counted {
        n: usize,
        decodes: Arc<AtomicUsize>,
    }

    impl MessageSource for Counted {
        fn len(&self) -> usize {
            self.n
        }
        fn role(&self, _i: usize) -> Option<&str> {
            Some("user")
        }
        fn decode(&self, i: usize) -> Option<AgentMessage> {
            self.decodes.fetch_add(1, Ordering::Relaxed);
            Some(AgentMessage::user_text(i.to_string(), i as i64))
        }
        fn write_each(
            &self,
            write: &mut dyn FnMut(SourceMessage<'_>) -> Result<(), String>,
        ) -> Result<(), String> {
            for i in 0..self.n {
                let json = format!(r#"{{"role":"user","content":"{i}","timestamp":{i}}}"#);
                let raw = RawValue::from_string(json).map_err(|e| e.to_string())?;
                write(SourceMessage::Json(&raw))?;
            }
            Ok(())
        }
    }

    fn counted(n: usize) -> (Conversation, Arc<AtomicUsize>) {
        let decodes = Arc::new(AtomicUsize::new(0));
        let source = Counted {
            n,
            decodes: decodes.clone(),
        };
        (Conversation::deferred(source), decodes)
    }

    #[test]
    fn counts_and_writes_without_decoding_then_decodes_once() {
        let (mut c, decodes) = counted(3);
        assert_eq!((c.len(), c.is_empty()), (3, false));
        let json = serde_json::to_string(&c).unwrap();
        assert!(
            json.starts_with(r#"[{"role":"user","content":"0""#),
            "{json}"
        );
        assert_eq!(decodes.load(Ordering::Relaxed), 0);
        let shared = c.clone();
        assert_eq!(c.as_slice().len(), 3);
        assert_eq!(
            shared.as_slice().len(),
            3,
            "a clone shares the decoded list"
        );
        assert_eq!(decodes.load(Ordering::Relaxed), 3);
        c.push(AgentMessage::user_text("more", 9));
        assert_eq!((c.len(), shared.len()), (4, 3));
        assert!(c.pending_source().is_none());
        assert_eq!(decodes.load(Ordering::Relaxed), 3, "decoded once");
        // Decoded, it is written from the values: the same JSON here.
        assert_eq!(
            serde_json::to_string(&shared).unwrap(),
            serde_json::to_string(shared.as_slice()).unwrap()
        );
        let (mut alone, decodes) = counted(2);
        alone.to_mut().clear();
        assert_eq!(decodes.load(Ordering::Relaxed), 2);
        alone.clear();
        assert!(alone.is_empty());
    }
}
