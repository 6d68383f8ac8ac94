//! The LLM context of the current branch: walk leaf → root, apply the latest compaction on the path, turn
//! `custom_message` and `branch_summary` entries into messages.

use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry};
use crate::jsjson::js_truthy;
use crate::manager::SessionManager;
use crate::message;

/// The model recorded on a branch (`model_change` or an assistant message's provider/model).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: String,
    pub model_id: String,
}

/// What `buildSessionContext` returns: messages for the agent, thinking level (default `"off"`) and model.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionContext {
    pub messages: Vec<Value>,
    pub thinking_level: String,
    pub model: Option<ModelRef>,
}

impl SessionContext {
    fn empty() -> Self {
        Self {
            messages: Vec::new(),
            thinking_level: "off".to_string(),
            model: None,
        }
    }
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

/// Builds the context for a root-first `path`.
pub fn build_context_from_path(path: &[&SessionEntry]) -> SessionContext {
    let mut ctx = SessionContext::empty();
    let mut compaction: Option<usize> = None;
    for (i, e) in path.iter().enumerate() {
        match e.kind() {
            EntryKind::ThinkingLevelChange => {
                if let Some(l) = e.str_field("thinkingLevel") {
                    ctx.thinking_level = l.to_string();
                }
            }
            EntryKind::ModelChange => {
                ctx.model = Some(ModelRef {
                    provider: e.str_field("provider").unwrap_or_default().to_string(),
                    model_id: e.str_field("modelId").unwrap_or_default().to_string(),
                });
            }
            EntryKind::Message if e.message_role() == Some("assistant") => {
                let m = e.message().expect("message entry");
                ctx.model = Some(ModelRef {
                    provider: message::str_field(m, "provider")
                        .unwrap_or_default()
                        .to_string(),
                    model_id: message::str_field(m, "model")
                        .unwrap_or_default()
                        .to_string(),
                });
            }
            EntryKind::Compaction => compaction = Some(i),
            _ => {}
        }
    }

    match compaction {
        Some(ci) => {
            let c = path[ci];
            ctx.messages.push(message::compaction_summary_message(
                c.str_field("summary").unwrap_or_default(),
                c.get("tokensBefore").cloned().unwrap_or(Value::Null),
                c.timestamp(),
            ));
            let first_kept = c.str_field("firstKeptEntryId");
            let mut kept = false;
            for e in &path[..ci] {
                if first_kept.is_some() && e.id() == first_kept {
                    kept = true;
                }
                if kept {
                    ctx.messages.extend(entry_message(e));
                }
            }
            for e in &path[ci + 1..] {
                ctx.messages.extend(entry_message(e));
            }
        }
        None => {
            for e in path {
                ctx.messages.extend(entry_message(e));
            }
        }
    }
    ctx
}

impl SessionManager {
    /// The context of the current branch (empty when the leaf is before the first entry).
    pub fn build_session_context(&self) -> SessionContext {
        let Some(leaf) = self.leaf_id.as_deref() else {
            return SessionContext::empty();
        };
        // An unknown leaf id falls back to the last entry, like the reference.
        let leaf = if self.by_id.contains_key(leaf) {
            Some(leaf)
        } else {
            self.entries().next_back().and_then(SessionEntry::id)
        };
        match leaf {
            Some(l) => build_context_from_path(&self.branch(Some(l))),
            None => SessionContext::empty(),
        }
    }
}
