//! The host's `bash` commands: the running one's cancel (`abort_bash`; only the latest is tracked) and the results
//! recorded while a run streamed, held for the next prompt.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use dreb_agent::AgentMessage;
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

#[derive(Default)]
pub(crate) struct BashRuns {
    next_id: AtomicU64,
    running: Mutex<Option<(u64, CancellationToken)>>,
    deferred: Mutex<Vec<AgentMessage>>,
}

/// A command started with [`BashRuns::start`]; give it back to [`BashRuns::finish`].
pub(crate) struct BashRun {
    id: u64,
    pub cancel: CancellationToken,
}

impl BashRuns {
    /// Track a new command as the one `abort_bash` cancels.
    pub(crate) fn start(&self) -> BashRun {
        let cancel = CancellationToken::new();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        *lock(&self.running) = Some((id, cancel.clone()));
        BashRun { id, cancel }
    }

    /// `run` is done: no longer tracked (a newer command's token is kept).
    pub(crate) fn finish(&self, run: &BashRun) {
        let mut slot = lock(&self.running);
        if slot.as_ref().is_some_and(|(current, _)| *current == run.id) {
            *slot = None;
        }
    }

    /// `abort_bash`: cancel the latest command, if it still runs.
    pub(crate) fn cancel_running(&self) {
        if let Some((_, token)) = lock(&self.running).as_ref() {
            token.cancel();
        }
    }

    /// A result recorded while a run streams (appending it mid-run would separate a tool call from its result).
    pub(crate) fn defer(&self, message: AgentMessage) {
        lock(&self.deferred).push(message);
    }

    /// The deferred results, in order, for the next prompt.
    pub(crate) fn take_deferred(&self) -> Vec<AgentMessage> {
        std::mem::take(&mut *lock(&self.deferred))
    }
}
