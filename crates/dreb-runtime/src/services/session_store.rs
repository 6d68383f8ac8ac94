//! The session store: the session file (`dreb-session`'s [`SessionManager`]) behind its own lock, whether the
//! session is persisted at all (`--no-session`), and its writer. What each message becomes in the file is
//! `crate::persist`'s.
//!
//! The messages the agent finishes during a run ([`SessionStore::append_from_run`]) join the session at once, in
//! memory and in order, and a writer thread writes them to the file (every line not written yet, in one write), so
//! the agent's event path does not wait for the disk. Before a `turn_end` or `agent_end` reaches the host the
//! event bridge writes what is still held ([`SessionStore::flush`]): a host that sees a turn end finds its messages
//! in the file, as before. Every other append (commands, background notices) writes at once, held lines first.
//! A write that fails is reported by the write observer (`session_write_error` / `session_write_recovered`) from
//! whichever thread wrote.

use std::path::PathBuf;
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use dreb_agent::AgentMessage;
use dreb_session::SessionManager;

use crate::sync::lock;

pub(crate) struct SessionStore {
    manager: Arc<Mutex<SessionManager>>,
    no_session: bool,
    /// Wakes the writer thread; dropping it ends the thread. None without a file to write.
    writer: Option<Sender<()>>,
}

impl SessionStore {
    pub(crate) fn new(manager: SessionManager, no_session: bool) -> Self {
        let manager = Arc::new(Mutex::new(manager));
        let writer = (!no_session)
            .then(|| writer_thread(Arc::downgrade(&manager)))
            .flatten();
        SessionStore {
            manager,
            no_session,
            writer,
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

    /// Persist a finished message (see `crate::persist::append_agent_message`) at once; a failure is logged as
    /// `could not persist <what>: <error>` (the host hears of it through the write observer).
    pub(crate) fn append(&self, message: &AgentMessage, what: &str) {
        if let Err(e) = crate::persist::append_agent_message(&mut self.lock(), message) {
            tracing::error!("could not persist {what}: {e}");
        }
    }

    /// A message the agent finished during a run: in the session at once, written by the writer thread (or by
    /// the next [`SessionStore::flush`] or write, whichever comes first).
    pub(crate) fn append_from_run(&self, message: &AgentMessage) {
        let Some(writer) = &self.writer else {
            return self.append(message, "a message");
        };
        let held = self
            .lock()
            .holding_writes(|session| crate::persist::append_agent_message(session, message));
        if let Err(e) = held {
            tracing::error!("could not persist a message: {e}");
        }
        let _ = writer.send(());
    }

    /// Write the held messages now (before a turn's end reaches the host, at shutdown).
    pub(crate) fn flush(&self) {
        flush(&self.manager);
    }
}

impl Drop for SessionStore {
    fn drop(&mut self) {
        self.flush();
    }
}

fn flush(manager: &Mutex<SessionManager>) {
    if let Err(e) = lock(manager).flush() {
        tracing::error!("could not persist a message: {e}");
    }
}

/// The writer thread of a session: one write for every wake-up, covering every line held so far. Without a thread
/// (the system refused one) the messages are written at once instead.
fn writer_thread(manager: Weak<Mutex<SessionManager>>) -> Option<Sender<()>> {
    let (tx, rx) = channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("dreb-session-writer".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                // Wake-ups that came while writing are covered by this write.
                while rx.try_recv().is_ok() {}
                let Some(manager) = manager.upgrade() else {
                    return;
                };
                flush(&manager);
            }
        });
    match spawned {
        Ok(_) => Some(tx),
        Err(e) => {
            tracing::warn!(
                "no session writer thread ({e}); messages are written on the event path"
            );
            None
        }
    }
}
