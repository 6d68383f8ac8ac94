//! The session store: the session file (`dreb-session`'s [`SessionManager`]) behind its own lock, and whether the
//! session is persisted at all (`--no-session`). What each message becomes in the file is `crate::persist`'s.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use dreb_agent::AgentMessage;
use dreb_session::SessionManager;

use crate::sync::lock;

pub(crate) struct SessionStore {
    manager: Mutex<SessionManager>,
    no_session: bool,
}

impl SessionStore {
    pub(crate) fn new(manager: SessionManager, no_session: bool) -> Self {
        SessionStore {
            manager: Mutex::new(manager),
            no_session,
        }
    }

    /// The session file, locked. Lock order: the outbox's gate comes before it (nothing sends a frame while
    /// holding it; the write observer hands its frames to a task).
    pub(crate) fn lock(&self) -> MutexGuard<'_, SessionManager> {
        lock(&self.manager)
    }

    /// `--no-session`: the session lives in memory only, and hosts are told of no file.
    pub(crate) fn no_session(&self) -> bool {
        self.no_session
    }

    /// The path of the session file, if the session is persisted (it may not be written yet).
    pub(crate) fn file(&self) -> Option<PathBuf> {
        self.lock().session_file().map(|p| p.to_path_buf())
    }

    pub(crate) fn session_id(&self) -> String {
        self.lock().session_id().to_string()
    }

    /// Persist a finished message (see `crate::persist::append_agent_message`); a failure is logged as
    /// `could not persist <what>: <error>` (the host hears of it through the write observer).
    pub(crate) fn append(&self, message: &AgentMessage, what: &str) {
        if let Err(e) = crate::persist::append_agent_message(&mut self.lock(), message) {
            tracing::error!("could not persist {what}: {e}");
        }
    }
}
