//! What a `write` call's file held before it runs, for the whole-file diff the editor shows (`oldText`; none for a
//! new file). A hook on the session's bus, asked after the built-in guards (a blocked call reads nothing) and
//! before the tool runs: the editor's buffer when the client offers `fs/read_text_file`, else the disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use dreb_hooks::{HookHandler, HookResult, ToolCallDecision, ToolCallEvent};
use dreb_tools::TextFiles;
use tokio_util::sync::CancellationToken;

use crate::session::Notes;

/// Files larger than this get no diff (an editor shows no useful diff of them, and it would cross the wire whole).
const MAX_DIFF_BYTES: u64 = 4 << 20;

pub struct PriorText {
    cwd: PathBuf,
    files: Option<Arc<dyn TextFiles>>,
    notes: Notes,
}

impl PriorText {
    pub fn new(cwd: PathBuf, files: Option<Arc<dyn TextFiles>>, notes: Notes) -> Self {
        PriorText { cwd, files, notes }
    }

    /// `Some(None)`: no such file; `None`: not known (unreadable, not text, too large).
    async fn read(&self, path: &Path) -> Option<Option<String>> {
        // Declined, or the editor has no such file (an error): the disk decides.
        if let Some(files) = &self.files
            && let Ok(Some(text)) = files.read_text(path).await
        {
            return Some(Some(text));
        }
        match tokio::fs::metadata(path).await {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(None),
            Ok(m) if m.is_file() && m.len() <= MAX_DIFF_BYTES => {}
            _ => return None,
        }
        tokio::fs::read_to_string(path).await.ok().map(Some)
    }
}

#[async_trait]
impl HookHandler for PriorText {
    async fn tool_call(
        &self,
        event: &mut ToolCallEvent,
        _cancel: &CancellationToken,
    ) -> HookResult<ToolCallDecision> {
        if event.tool_name == "write"
            && let Some(path) = event.input.get("path").and_then(|p| p.as_str())
        {
            let path = dreb_tools::paths::resolve_to_cwd(path, &self.cwd);
            if let Some(prior) = self.read(&path).await {
                self.notes.prior_text(&event.tool_call_id, prior);
            }
        }
        Ok(ToolCallDecision::Continue)
    }

    fn wants_notices(&self) -> bool {
        false
    }
}
