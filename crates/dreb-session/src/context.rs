//! The LLM context of the current branch: walk leaf → root, apply the latest compaction on the path, turn
//! `custom_message` and `branch_summary` entries into messages.

use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry};
use crate::jsjson::js_truthy;
use crate::manager::SessionManager;
use crate::message;
use crate::store::{EntryRef, MessageLine};

/// The model recorded on a branch (`model_change` or an assistant message's provider/model).
pub use dreb_types::ModelRef;

/// What `buildSessionContext` returns: messages for the agent, thinking level (default `"off"`) and model.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionContext<M = Value> {
    pub messages: Vec<M>,
    pub thinking_level: String,
    pub model: Option<ModelRef>,
}

/// The message an entry contributes to the context, if any.
pub fn entry_message(entry: &SessionEntry) -> Option<Value> {
    match entry.kind() {
        EntryKind::Message => entry.get("message").cloned(),
        EntryKind::CustomMessage => Some(message::custom_message(
            entry.get("customType").cloned(),
            entry.get("content").cloned(),
            entry.get("display").cloned(),
            entry.get("details").cloned(),
            entry.timestamp(),
        )),
        EntryKind::BranchSummary if js_truthy(entry.get("summary")) => {
            Some(message::branch_summary_message(
                entry.str_field("summary").unwrap_or_default(),
                entry.str_field("fromId").unwrap_or_default(),
                entry.timestamp(),
            ))
        }
        _ => None,
    }
}

/// A message of the current branch's context as an open session holds it: made already (summaries, entries kept
/// parsed), or a `message` line still in the file, read when asked (see
/// [`SessionManager::build_session_context_deferred`]).
#[derive(Debug, Clone)]
pub enum ContextMessage {
    Made(Value),
    Line(MessageLine),
}

/// What a context walk reports besides the messages it hands over.
struct ContextSettings {
    thinking_level: String,
    model: Option<ModelRef>,
}

/// The model an entry records: a `model_change`, or an assistant message's provider/model.
fn model_of(e: &SessionEntry) -> Option<ModelRef> {
    match e.kind() {
        EntryKind::ModelChange => Some(ModelRef {
            provider: e.str_field("provider").unwrap_or_default().to_string(),
            id: e.str_field("modelId").unwrap_or_default().to_string(),
        }),
        EntryKind::Message if e.message_role() == Some("assistant") => {
            let m = e.message().expect("message entry");
            Some(ModelRef {
                provider: message::str_field(m, "provider")
                    .unwrap_or_default()
                    .to_string(),
                id: message::str_field(m, "model")
                    .unwrap_or_default()
                    .to_string(),
            })
        }
        _ => None,
    }
}

/// A root-first path the context is built from: entries by position, with their indexed fields readable
/// without parsing them.
trait PathView<'e> {
    fn len(&self) -> usize;
    fn read(&self, i: usize) -> EntryRef<'e>;
    fn kind(&self, i: usize) -> EntryKind;
    /// A `message` entry whose role is `assistant`.
    fn is_assistant(&self, i: usize) -> bool;
    fn id(&self, i: usize) -> Option<&'e str>;
}

impl<'e> PathView<'e> for &[&'e SessionEntry] {
    fn len(&self) -> usize {
        <[&SessionEntry]>::len(self)
    }
    fn read(&self, i: usize) -> EntryRef<'e> {
        std::borrow::Cow::Borrowed(self[i])
    }
    fn kind(&self, i: usize) -> EntryKind {
        self[i].kind()
    }
    fn is_assistant(&self, i: usize) -> bool {
        self[i].kind() == EntryKind::Message && self[i].message_role() == Some("assistant")
    }
    fn id(&self, i: usize) -> Option<&'e str> {
        self[i].id()
    }
}

/// A branch of an open session, as line numbers.
struct Lines<'e> {
    sm: &'e SessionManager,
    path: Vec<usize>,
}

impl<'e> PathView<'e> for Lines<'e> {
    fn len(&self) -> usize {
        self.path.len()
    }
    fn read(&self, i: usize) -> EntryRef<'e> {
        self.sm.lines.get(self.path[i])
    }
    fn kind(&self, i: usize) -> EntryKind {
        self.sm.lines.meta(self.path[i]).kind
    }
    fn is_assistant(&self, i: usize) -> bool {
        self.sm.lines.meta(self.path[i]).message_role() == Some("assistant")
    }
    fn id(&self, i: usize) -> Option<&'e str> {
        self.sm.lines.meta(self.path[i]).id()
    }
}

/// What the context walk hands over, in order.
enum Part {
    /// The summary of the latest compaction.
    Summary(Value),
    /// The path entry at this position contributes a message (see [`entry_message`]).
    Entry(usize),
}

/// Builds the context for a root-first `path`.
pub fn build_context_from_path(path: &[&SessionEntry]) -> SessionContext {
    let mut messages = Vec::new();
    let settings = walk_context(&path, &mut |part| match part {
        Part::Summary(m) => messages.push(m),
        Part::Entry(i) => messages.extend(entry_message(path[i])),
    });
    SessionContext {
        messages,
        thinking_level: settings.thinking_level,
        model: settings.model,
    }
}

/// The context walk: each entry is read at most about once, and each message goes to `sink` as soon as it is
/// due, so a long session is never held twice.
fn walk_context<'e>(path: &impl PathView<'e>, sink: &mut dyn FnMut(Part)) -> ContextSettings {
    let len = path.len();
    // The latest thinking level with a string value, the latest model (a model change or an assistant reply) and
    // the latest compaction on the path; earlier ones are overridden, so only these are read.
    let thinking_level = (0..len)
        .rev()
        .filter(|&i| path.kind(i) == EntryKind::ThinkingLevelChange)
        .find_map(|i| path.read(i).str_field("thinkingLevel").map(str::to_string))
        .unwrap_or_else(|| "off".to_string());
    let model = (0..len)
        .rev()
        .filter(|&i| path.kind(i) == EntryKind::ModelChange || path.is_assistant(i))
        .find_map(|i| model_of(&path.read(i)));
    let compaction = (0..len)
        .rev()
        .find(|&i| path.kind(i) == EntryKind::Compaction);
    let emit = |i: usize, sink: &mut dyn FnMut(Part)| {
        if matches!(
            path.kind(i),
            EntryKind::Message | EntryKind::CustomMessage | EntryKind::BranchSummary
        ) {
            sink(Part::Entry(i));
        }
    };
    match compaction {
        Some(ci) => {
            let c = path.read(ci);
            sink(Part::Summary(message::compaction_summary_message(
                c.str_field("summary").unwrap_or_default(),
                c.get("tokensBefore").cloned().unwrap_or(Value::Null),
                c.timestamp(),
            )));
            let first_kept = c.str_field("firstKeptEntryId");
            let from = first_kept.and_then(|f| (0..ci).find(|&i| path.id(i) == Some(f)));
            for i in from.into_iter().flat_map(|f| f..ci) {
                emit(i, sink);
            }
            for i in ci + 1..len {
                emit(i, sink);
            }
        }
        None => {
            for i in 0..len {
                emit(i, sink);
            }
        }
    }
    ContextSettings {
        thinking_level,
        model,
    }
}

impl SessionManager {
    /// The branch the context is built from: the leaf's (an unknown leaf id falls back to the last entry, like
    /// the reference); empty when the leaf is before the first entry.
    fn context_path(&self) -> Lines<'_> {
        let path = match self.leaf_id.as_deref() {
            None => Vec::new(),
            Some(leaf) if self.by_id.contains_key(leaf) => self.branch_lines(Some(leaf)),
            Some(_) => match self.entry_lines().next_back() {
                Some(last) => match self.lines.meta(last).id() {
                    Some(id) => self.branch_lines(Some(id)),
                    None => Vec::new(),
                },
                None => Vec::new(),
            },
        };
        Lines { sm: self, path }
    }

    /// The context of the current branch (empty when the leaf is before the first entry).
    pub fn build_session_context(&self) -> SessionContext {
        let mut messages = Vec::new();
        let (thinking_level, model) = self.visit_session_context(&mut |m| messages.push(m));
        SessionContext {
            messages,
            thinking_level,
            model,
        }
    }

    /// The context of the current branch with each message converted to `M` as it is made (messages that do
    /// not convert are left out), so the JSON form of the whole context never exists at once. A message kept in
    /// the file is read from its line's bytes straight into `M`.
    pub fn build_session_context_as<M: serde::de::DeserializeOwned>(&self) -> SessionContext<M> {
        let context = self.build_session_context_deferred();
        let mut buf = Vec::new();
        let messages = context
            .messages
            .into_iter()
            .filter_map(|m| match m {
                ContextMessage::Made(v) => serde_json::from_value(v).ok(),
                ContextMessage::Line(line) => line.decode_with(&mut buf),
            })
            .collect();
        SessionContext {
            messages,
            thinking_level: context.thinking_level,
            model: context.model,
        }
    }

    /// The context of the current branch without reading the messages the file holds: each `message` line kept
    /// in the file is handed over as a [`MessageLine`], to be decoded when needed (opening a long session then
    /// reads none of its messages). [`MessageLine::decode`] of each gives what
    /// [`SessionManager::build_session_context_as`] gives.
    pub fn build_session_context_deferred(&self) -> SessionContext<ContextMessage> {
        let path = self.context_path();
        let mut messages = Vec::new();
        let settings = walk_context(&path, &mut |part| match part {
            Part::Summary(m) => messages.push(ContextMessage::Made(m)),
            Part::Entry(i) => {
                if path.kind(i) == EntryKind::Message
                    && let Some(line) = self.lines.message_line(path.path[i])
                {
                    messages.push(ContextMessage::Line(line));
                } else if let Some(m) = entry_message(&path.read(i)) {
                    messages.push(ContextMessage::Made(m));
                }
            }
        });
        SessionContext {
            messages,
            thinking_level: settings.thinking_level,
            model: settings.model,
        }
    }

    /// Hands each message of the current branch's context to `sink` in order; returns the thinking level and
    /// model.
    pub fn visit_session_context(&self, sink: &mut dyn FnMut(Value)) -> (String, Option<ModelRef>) {
        let path = self.context_path();
        let settings = walk_context(&path, &mut |part| match part {
            Part::Summary(m) => sink(m),
            Part::Entry(i) => {
                if let Some(m) = entry_message(&path.read(i)) {
                    sink(m)
                }
            }
        });
        (settings.thinking_level, settings.model)
    }
}
