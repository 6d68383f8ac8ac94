//! Errors. `Display` texts are the reference's exact messages where hosts can see them.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("Entry {0} not found")]
    EntryNotFound(String),
    #[error("Invalid entry ID for forking")]
    InvalidForkEntry,
    #[error(
        "Cannot fork at this assistant turn: it was interrupted or is still waiting on tool results"
    )]
    UnforkableAssistant,
    /// `import_jsonl` of a path that does not exist (the resolved path).
    #[error("File not found: {0}")]
    FileNotFound(String),
    #[error("Cannot fork: source session file is empty or invalid: {0}")]
    InvalidForkSource(String),
    #[error("Not a session file (expected .jsonl): {0}")]
    NotASessionFile(String),
    #[error("Cannot delete the currently active session")]
    DeleteActiveSession,
    #[error("Session file does not exist: {0}")]
    SessionFileMissing(String),
    /// Unlink failed; the text is the OS error, optionally with ` (trash: <hint>)`.
    #[error("{0}")]
    DeleteFailed(String),
    #[error("Session name cannot be empty")]
    EmptySessionName,
    #[error("Cannot export in-memory session to HTML")]
    ExportInMemory,
    #[error("Nothing to export yet - start a conversation first")]
    NothingToExport,
}

impl SessionError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = SessionError> = std::result::Result<T, E>;
