//! Fork (new session file from a path), tree navigation (leaf moves, labels, branch summaries), fork targets,
//! JSONL export and import.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::entry::{self, EntryKind, SessionEntry};
use crate::error::{Result, SessionError};
use crate::jsonl;
use crate::manager::{NewSessionOptions, SessionManager};
use crate::message;
use crate::paths;
use crate::store::EntryRef;
use crate::time::now_iso;
pub use dreb_types::{ForkMessage, ForkRole};

/// What `fork` did.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkResult {
    /// The forked user message's text (for the editor); empty for an assistant fork.
    pub text: String,
    /// The new session's file (`None` in memory).
    pub session_file: Option<PathBuf>,
}

/// A branch summary to attach while navigating (the runtime produced the text).
#[derive(Debug, Clone, PartialEq)]
pub struct BranchSummaryInput {
    pub summary: String,
    pub details: Option<Value>,
    /// `Some(true)` when an extension supplied it; dreb's own summariser passes `Some(false)`.
    pub from_hook: Option<bool>,
}

/// Options of [`SessionManager::navigate`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NavigateOptions {
    pub summary: Option<BranchSummaryInput>,
    pub label: Option<String>,
}

/// What `navigate` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NavigateResult {
    /// Text for the editor when the target was a user or custom message.
    pub editor_text: Option<String>,
    /// The `branch_summary` entry written, if any.
    pub summary_entry_id: Option<String>,
    /// True when the target already was the leaf (nothing changed).
    pub no_op: bool,
}

/// The entries a branch summary covers: from the old leaf back to (excluding) the deepest common ancestor.
#[derive(Debug)]
pub struct BranchSummarySource<'a> {
    pub entries: Vec<EntryRef<'a>>,
    pub common_ancestor_id: Option<String>,
}

impl SessionManager {
    /// Copies the root→`leaf_id` path into a new session (same dir, header `parentSession` = the current file),
    /// re-creating labels that target kept entries and carrying the latest name over. The file is written now only
    /// if the path has an assistant message. Returns the new file (`None` in memory).
    pub fn create_branched_session(&mut self, leaf_id: &str) -> Result<Option<PathBuf>> {
        // Held lines belong to the session being left.
        let _ = self.flush();
        let previous_file = self.session_file.clone();
        let path: Vec<SessionEntry> = self
            .branch(Some(leaf_id))
            .into_iter()
            .map(EntryRef::into_owned)
            .collect();
        if path.is_empty() {
            return Err(SessionError::EntryNotFound(leaf_id.to_string()));
        }
        let kept: Vec<SessionEntry> = path
            .into_iter()
            .filter(|e| e.kind() != EntryKind::Label)
            .collect();
        let latest_info = self
            .last_session_info
            .map(|i| self.lines.get(i).into_owned());
        let carry_info = latest_info.filter(|info| !kept.iter().any(|e| e.id() == info.id()));

        let mut ids: HashSet<String> = kept
            .iter()
            .filter_map(|e| e.id().map(str::to_string))
            .collect();
        let labels: Vec<(String, String)> = self
            .labels
            .ordered()
            .into_iter()
            .filter(|(t, _)| ids.contains(*t))
            .map(|(t, l)| (t.to_string(), l.to_string()))
            .collect();

        let new_id = uuid::Uuid::new_v4().to_string();
        let ts = now_iso();
        let parent_session = if self.persist {
            previous_file
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
        } else {
            None
        };
        let header = entry::new_header(&new_id, &ts, &self.cwd, parent_session.as_deref());

        let mut parent = kept.last().and_then(|e| e.id().map(str::to_string));
        let mut extra = Vec::new();
        for (target, label) in labels {
            let id = entry::generate_id(|c| ids.contains(c));
            ids.insert(id.clone());
            extra.push(entry::new_label(
                &id,
                parent.as_deref(),
                &now_iso(),
                &target,
                Some(&label),
            ));
            parent = Some(id);
        }
        if let Some(info) = carry_info {
            let id = entry::generate_id(|c| ids.contains(c));
            let name = info.str_field("name").unwrap_or_default();
            extra.push(entry::new_session_info(
                &id,
                parent.as_deref(),
                &now_iso(),
                name,
            ));
        }

        let mut lines = Vec::with_capacity(kept.len() + extra.len() + 1);
        lines.push(header);
        lines.extend(kept);
        lines.extend(extra);
        self.lines = crate::store::LineStore::from_entries(lines);
        self.session_id = new_id.clone();
        self.rebuild_index();
        self.written = 0;
        self.fresh_line_needed = false;
        if !self.persist {
            return Ok(None);
        }
        let file = self
            .session_dir
            .join(paths::session_file_name(&ts, &new_id));
        self.session_file = Some(file.clone());
        if self.has_assistant {
            self.rewrite_file()?;
        }
        Ok(Some(file))
    }

    /// `fork {entryId}`: at an assistant entry, the new session keeps that entry and everything before it (text
    /// `""`); at a user entry, it keeps everything before it and returns its text (a root user entry gives a brand-new
    /// session whose `parentSession` is the current file).
    /// The text [`SessionManager::fork`] at `entry_id` would return (a user message's text, `""` for an assistant
    /// turn), with the same checks, without forking: what a cancelled fork answers.
    pub fn fork_text(&self, entry_id: &str) -> Result<String> {
        let entry = self.entry(entry_id).ok_or(SessionError::InvalidForkEntry)?;
        let msg = entry.message().ok_or(SessionError::InvalidForkEntry)?;
        match message::role(msg) {
            Some("assistant") if message::is_forkable_assistant(msg) => Ok(String::new()),
            Some("assistant") => Err(SessionError::UnforkableAssistant),
            Some("user") => Ok(message::message_text(msg)),
            _ => Err(SessionError::InvalidForkEntry),
        }
    }

    pub fn fork(&mut self, entry_id: &str) -> Result<ForkResult> {
        let text = self.fork_text(entry_id)?;
        let entry = self.entry(entry_id).ok_or(SessionError::InvalidForkEntry)?;
        let at_user = entry.message().and_then(message::role) == Some("user");
        let parent = entry.parent_id().map(str::to_string);
        // An assistant turn is kept on the new branch; a user message is left out (its text goes to the editor), so
        // the branch ends at its parent, or is a brand-new session when it was the root.
        let session_file = match (at_user, parent) {
            (false, _) => self.create_branched_session(entry_id)?,
            (true, Some(p)) => self.create_branched_session(&p)?,
            (true, None) => {
                let previous = self
                    .session_file
                    .as_ref()
                    .map(|p| p.to_string_lossy().into_owned());
                self.new_session(NewSessionOptions {
                    id: None,
                    parent_session: previous,
                })
            }
        };
        Ok(ForkResult { text, session_file })
    }

    /// `get_fork_messages`: every user (non-empty) and forkable assistant message in the file, in file order.
    pub fn fork_messages(&self) -> Vec<ForkMessage> {
        let mut out = Vec::new();
        let messages = self
            .entry_lines()
            .filter(|&i| self.lines.meta(i).kind == EntryKind::Message);
        for e in messages.map(|i| self.lines.get(i)) {
            let (Some(msg), Some(id)) = (e.message(), e.id()) else {
                continue;
            };
            match message::role(msg) {
                Some("user") => {
                    let text = message::message_text(msg);
                    if !text.is_empty() {
                        out.push(ForkMessage {
                            entry_id: id.to_string(),
                            text,
                            role: ForkRole::User,
                        });
                    }
                }
                Some("assistant") if message::is_forkable_assistant(msg) => {
                    let mut text = message::message_text(msg);
                    if text.is_empty() {
                        text = "(assistant response)".into();
                    }
                    out.push(ForkMessage {
                        entry_id: id.to_string(),
                        text,
                        role: ForkRole::Assistant,
                    });
                }
                _ => {}
            }
        }
        out
    }

    /// The entries a summary of the branch being left would cover when moving from `old_leaf` to `target_id`.
    pub fn entries_for_branch_summary(
        &self,
        old_leaf: Option<&str>,
        target_id: &str,
    ) -> BranchSummarySource<'_> {
        let Some(old_leaf) = old_leaf else {
            return BranchSummarySource {
                entries: Vec::new(),
                common_ancestor_id: None,
            };
        };
        let id_of = |i: usize| self.lines.meta(i).id();
        let old_path: HashSet<&str> = self
            .branch_lines(Some(old_leaf))
            .into_iter()
            .filter_map(id_of)
            .collect();
        let common = self
            .branch_lines(Some(target_id))
            .into_iter()
            .rev()
            .find_map(|i| id_of(i).filter(|id| old_path.contains(id)))
            .map(str::to_string);
        let mut lines = Vec::new();
        let mut current = Some(old_leaf);
        while let Some(id) = current.take() {
            if common.as_deref() == Some(id) || lines.len() > self.by_id.len() {
                break;
            }
            let Some(&i) = self.by_id.get(id) else { break };
            lines.push(i);
            current = self.lines.meta(i).parent_id();
        }
        let entries = lines.into_iter().rev().map(|i| self.lines.get(i)).collect();
        BranchSummarySource {
            entries,
            common_ancestor_id: common,
        }
    }

    /// `navigate_tree` (after the runtime's checks and summariser): a user or custom-message target moves the leaf to
    /// its parent and returns its text; any other target becomes the leaf. With a summary, a `branch_summary` entry is
    /// appended at the new position and the label goes on it; without, the label goes on the target.
    pub fn navigate(
        &mut self,
        target_id: &str,
        options: NavigateOptions,
    ) -> Result<NavigateResult> {
        if self.leaf_id.as_deref() == Some(target_id) {
            return Ok(NavigateResult {
                no_op: true,
                ..Default::default()
            });
        }
        let target = self
            .entry(target_id)
            .ok_or_else(|| SessionError::EntryNotFound(target_id.to_string()))?;
        let (new_leaf, editor_text) = match target.kind() {
            EntryKind::Message if target.message_role() == Some("user") => (
                target.parent_id().map(str::to_string),
                Some(message::message_text(
                    target.message().expect("message entry"),
                )),
            ),
            EntryKind::CustomMessage => (
                target.parent_id().map(str::to_string),
                Some(message::content_text(target.get("content"), "")),
            ),
            _ => (Some(target_id.to_string()), None),
        };
        let label = options.label.filter(|l| !l.is_empty());
        let summary = options.summary.filter(|s| !s.summary.is_empty());
        let mut summary_entry_id = None;
        match summary {
            Some(s) => {
                let id = self.branch_with_summary(
                    new_leaf.as_deref(),
                    &s.summary,
                    s.details,
                    s.from_hook,
                )?;
                if let Some(l) = &label {
                    self.append_label_change(&id, Some(l))?;
                }
                summary_entry_id = Some(id);
            }
            None => {
                match &new_leaf {
                    None => self.reset_leaf(),
                    Some(l) => self.move_leaf(l)?,
                }
                if let Some(l) = &label {
                    self.append_label_change(target_id, Some(l))?;
                }
            }
        }
        Ok(NavigateResult {
            editor_text,
            summary_entry_id,
            no_op: false,
        })
    }

    /// Writes the current branch as a standalone JSONL file: a fresh header, then the path with `parentId`s
    /// re-chained linearly.
    pub fn export_branch_jsonl(&self, output: &Path) -> Result<PathBuf> {
        let output = paths::resolve(output);
        if let Some(dir) = output.parent() {
            std::fs::create_dir_all(dir).map_err(|e| SessionError::io(dir, e))?;
        }
        let header = entry::new_header(&self.session_id, &now_iso(), &self.cwd, None);
        let mut lines = vec![header];
        let mut prev: Option<String> = None;
        for e in self.branch(None) {
            let mut m = e.as_map().clone();
            m.insert("parentId".into(), prev.map_or(Value::Null, Value::from));
            prev = e.id().map(str::to_string);
            lines.push(SessionEntry::from_map(m));
        }
        std::fs::write(&output, jsonl::to_file_content(&lines))
            .map_err(|e| SessionError::io(&output, e))?;
        Ok(output)
    }

    /// `import_jsonl`, file part: copies `input` into the session dir under the same name (overwriting, unless it is
    /// the same file) and returns the copy's path; the caller then switches to it.
    pub fn import_jsonl(&self, input: &Path) -> Result<PathBuf> {
        let resolved = paths::resolve(input);
        if !resolved.exists() {
            return Err(SessionError::FileNotFound(
                resolved.to_string_lossy().into_owned(),
            ));
        }
        std::fs::create_dir_all(&self.session_dir)
            .map_err(|e| SessionError::io(&self.session_dir, e))?;
        let name = resolved
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        let dest = paths::resolve(&self.session_dir.join(name));
        if dest != resolved {
            std::fs::copy(&resolved, &dest).map_err(|e| SessionError::io(&dest, e))?;
        }
        Ok(dest)
    }
}
