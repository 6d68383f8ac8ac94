//! The pending-dialog table: emitting requests, routing host answers, local settlement (timeout, abort,
//! shutdown, caller gone) and the `extension_ui_response_handled` event, exactly once per dialog.
//!
//! Whoever removes a dialog from the table owns its settlement: it emits the handled event (while still
//! holding the table lock, so a request frame always precedes its handled frame) and, for a host answer or
//! shutdown, hands the outcome to the waiting caller through a oneshot channel.

use std::future::pending;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dreb_protocol::framing::encode_frame;
use dreb_protocol::{BlockingExtensionUiRequest, Event, ExtensionUiResponseHandledEvent, Input};
use indexmap::IndexMap;
use serde_json::{Map, Value};
use tokio::sync::{Semaphore, oneshot};
use tokio_util::sync::CancellationToken;

/// Receives every encoded frame (one JSON line, `\n`-terminated) the engine writes. The runtime connects it to
/// the ordered stdout writer. It is called while the engine's table lock is held (that is what keeps a request
/// before its handled event), so it must not block for long and must never call back into the engine.
pub type FrameSink = Arc<dyn Fn(Vec<u8>) + Send + Sync>;

/// Called when an `ask` ends in a way that must stop the agent turn (host cancel, timeout, shutdown).
pub type AskStopHook = Arc<dyn Fn() + Send + Sync>;

/// Timeout and abort for one dialog call.
#[derive(Debug, Clone, Default)]
pub struct DialogOptions {
    /// Resolve the dialog to its default after this long. Sent on the wire as whole milliseconds; a
    /// duration under 1 ms means no timeout (the reference treats `timeout: 0` as none).
    pub timeout: Option<Duration>,
    /// Resolves the dialog to its default when cancelled (typically the agent run's token). Already
    /// cancelled: the dialog resolves at once and nothing is emitted.
    pub cancel: Option<CancellationToken>,
}

impl DialogOptions {
    /// Options with only a timeout.
    pub fn timeout(timeout: Duration) -> Self {
        DialogOptions {
            timeout: Some(timeout),
            cancel: None,
        }
    }

    /// Options with only an abort token.
    pub fn cancel(cancel: CancellationToken) -> Self {
        DialogOptions {
            timeout: None,
            cancel: Some(cancel),
        }
    }

    /// Adds an abort token.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// The timeout as the wire carries it (whole ms), `None` when unset or under 1 ms.
    pub(crate) fn wire_timeout_ms(&self) -> Option<i64> {
        let ms = self.timeout?.as_millis();
        (ms > 0).then(|| i64::try_from(ms).unwrap_or(i64::MAX))
    }
}

/// What [`DialogEngine::handle_response`] did with an `extension_ui_response`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseDisposition {
    /// Delivered to the dialog waiting for it (which is now settled).
    Delivered,
    /// No dialog with this id is waiting (unknown, or already settled): ignored, like the reference.
    UnknownId,
    /// The frame has no string `id`: ignored.
    MissingId,
}

/// How a blocking dialog ended, before method-specific interpretation.
#[derive(Debug)]
pub(crate) enum DialogEnd {
    /// The host answered; the raw response frame.
    Host(Map<String, Value>),
    TimedOut,
    /// The call's cancellation token fired (or was already cancelled: nothing was emitted).
    Aborted,
    /// Settled by [`DialogEngine::cancel_all`] while pending.
    Shutdown,
    /// The engine was already shut down: nothing was emitted.
    Refused,
}

enum Reply {
    Host(Map<String, Value>),
    Shutdown,
}

struct Pending {
    request: BlockingExtensionUiRequest,
    reply: oneshot::Sender<Reply>,
}

#[derive(Default)]
struct Table {
    /// Insertion order = emission order (the snapshot lists them in that order).
    pending: IndexMap<String, Pending>,
    shut_down: bool,
}

pub(crate) struct Inner {
    output: FrameSink,
    table: Mutex<Table>,
    /// One permit: at most one `ask` is emitted at a time. Tokio's semaphore is fair, so queued asks run
    /// in FIFO order; closing it (shutdown) releases every queued ask.
    pub(crate) ask_slot: Semaphore,
    ask_stop: Mutex<Option<AskStopHook>>,
}

/// The extension-UI dialog engine. Cheap to clone (an `Arc`), `Send + Sync`; every clone shares one pending
/// table. See the crate docs for the protocol it speaks.
#[derive(Clone)]
pub struct DialogEngine {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for DialogEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let table = self.table();
        f.debug_struct("DialogEngine")
            .field("pending", &table.pending.keys().collect::<Vec<_>>())
            .field("shut_down", &table.shut_down)
            .finish()
    }
}

impl DialogEngine {
    /// An engine writing its frames to `output`.
    pub fn new(output: FrameSink) -> Self {
        DialogEngine {
            inner: Arc::new(Inner {
                output,
                table: Mutex::new(Table::default()),
                ask_slot: Semaphore::new(1),
                ask_stop: Mutex::new(None),
            }),
        }
    }

    /// Sets the hook called when an `ask` must stop the agent turn (the reference calls `session.abort()`):
    /// the host cancelled it, it timed out, or shutdown settled it. Not called for an abort (the turn is
    /// already stopping) nor for an answer whose questions were all skipped.
    pub fn set_ask_stop_hook(&self, hook: AskStopHook) {
        *lock(&self.inner.ask_stop) = Some(hook);
    }

    /// Every blocking request still waiting for a host answer, exactly as emitted, in emission order: the
    /// `pendingExtensionUiRequests` of the dashboard snapshot.
    pub fn pending_requests(&self) -> Vec<BlockingExtensionUiRequest> {
        self.table()
            .pending
            .values()
            .map(|p| p.request.clone())
            .collect()
    }

    /// True once [`cancel_all`](Self::cancel_all) ran.
    pub fn is_shut_down(&self) -> bool {
        self.table().shut_down
    }

    /// Routes an `extension_ui_response` from stdin (the runtime passes the raw input; it never gets a
    /// response). An unknown or already-settled id is ignored (logged at debug), like the reference; so is a
    /// frame without a string `id`. A delivered answer settles its dialog, which emits
    /// `extension_ui_response_handled`; the dialog's method then interprets the frame (see the crate docs).
    pub fn handle_response(&self, input: &Input) -> ResponseDisposition {
        let Input::ExtensionUiResponse(frame) = input;
        let Some(id) = frame.get("id").and_then(Value::as_str) else {
            tracing::debug!("extension_ui_response without a string id ignored");
            return ResponseDisposition::MissingId;
        };
        let mut table = self.table();
        let Some(entry) = table.pending.shift_remove(id) else {
            tracing::debug!(
                id,
                "extension_ui_response for an unknown or settled dialog ignored"
            );
            return ResponseDisposition::UnknownId;
        };
        self.emit_handled(id);
        drop(table);
        // The caller may have gone away in between; its drop guard found the entry gone, nothing to do.
        let _ = entry.reply.send(Reply::Host(frame.clone()));
        ResponseDisposition::Delivered
    }

    /// Shutdown: settles every pending dialog as cancelled (one handled event each, in emission order; an
    /// `ask` among them also calls the stop hook), releases queued asks without emitting them, and makes
    /// every later dialog resolve to its default at once without emitting anything. Idempotent.
    pub fn cancel_all(&self) {
        let mut table = self.table();
        table.shut_down = true;
        let drained: Vec<(String, Pending)> = table.pending.drain(..).collect();
        for (id, _) in &drained {
            self.emit_handled(id);
        }
        drop(table);
        for (_, entry) in drained {
            let _ = entry.reply.send(Reply::Shutdown);
        }
        self.inner.ask_slot.close();
    }

    /// Emits `request`, waits for its settlement and returns how it ended. The request's id must be `id`.
    pub(crate) async fn run_dialog(
        &self,
        id: String,
        request: BlockingExtensionUiRequest,
        timeout: Option<Duration>,
        cancel: Option<CancellationToken>,
    ) -> DialogEnd {
        if cancel.as_ref().is_some_and(CancellationToken::is_cancelled) {
            return DialogEnd::Aborted;
        }
        let (tx, mut rx) = oneshot::channel();
        {
            let mut table = self.table();
            if table.shut_down {
                return DialogEnd::Refused;
            }
            // Emitted under the lock: a concurrent `cancel_all` cannot write the handled event first.
            self.emit(&request);
            table
                .pending
                .insert(id.clone(), Pending { request, reply: tx });
        }
        let mut guard = Registration {
            engine: self,
            id: &id,
            armed: true,
        };
        let timer = async {
            match timeout {
                Some(d) => tokio::time::sleep(d).await,
                None => pending().await,
            }
        };
        let aborted = async {
            match &cancel {
                Some(c) => c.cancelled().await,
                None => pending().await,
            }
        };
        let local = tokio::select! {
            biased;
            reply = &mut rx => {
                guard.armed = false;
                return reply_end(reply);
            }
            _ = timer => DialogEnd::TimedOut,
            _ = aborted => DialogEnd::Aborted,
        };
        guard.armed = false;
        if self.settle_locally(&id) {
            local
        } else {
            // A host answer or shutdown removed it first and has sent (or is sending) its reply.
            reply_end(rx.await)
        }
    }

    pub(crate) fn call_ask_stop(&self) {
        let hook = lock(&self.inner.ask_stop).clone();
        if let Some(hook) = hook {
            hook();
        }
    }

    /// Removes a pending dialog that ended locally; emits its handled event. False if it was already gone.
    fn settle_locally(&self, id: &str) -> bool {
        let mut table = self.table();
        if table.pending.shift_remove(id).is_some() {
            self.emit_handled(id);
            true
        } else {
            false
        }
    }

    pub(crate) fn emit<T: serde::Serialize + ?Sized>(&self, value: &T) {
        match encode_frame(value) {
            Ok(bytes) => (self.inner.output)(bytes),
            Err(e) => tracing::error!(error = %e, "extension UI frame could not be encoded"),
        }
    }

    fn emit_handled(&self, id: &str) {
        self.emit(&Event::ExtensionUiResponseHandled(
            ExtensionUiResponseHandledEvent { id: id.to_string() },
        ));
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        lock(&self.inner.table)
    }
}

/// Settles the dialog if its caller stops waiting (future dropped) before it ended, so the table and the
/// dashboard snapshot never keep an orphan and the host still gets its handled event.
struct Registration<'a> {
    engine: &'a DialogEngine,
    id: &'a str,
    armed: bool,
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.engine.settle_locally(self.id);
        }
    }
}

fn reply_end(reply: Result<Reply, oneshot::error::RecvError>) -> DialogEnd {
    match reply {
        Ok(Reply::Host(frame)) => DialogEnd::Host(frame),
        // The sender is only dropped unsent by shutdown paths.
        Ok(Reply::Shutdown) | Err(_) => DialogEnd::Shutdown,
    }
}

/// A poisoned lock only means another thread panicked mid-update of plain data; keep serving.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Milliseconds since the Unix epoch (for `expiresAt`).
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A fresh request id (the reference uses `crypto.randomUUID()`).
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
