//! The one ordered outbox of a connection, each request's reply handle, and the turns that keep commands which
//! change the same state in arrival order.
//!
//! - Every frame a connection writes (events and responses alike) goes through one [`Outbox`]. A writer can
//!   [`hold`](Outbox::hold) it to capture state and write several frames with nothing in between (the dashboard
//!   snapshot's barrier and response).
//! - Each request carries a [`Reply`]: its response is written at most once. The dispatcher writes it when the
//!   handler returns, after every event the handler emitted, unless the handler wrote it earlier itself (the
//!   `prompt` acknowledgement goes out before the run's first event). No per-command configuration is involved.
//! - Commands that change state take a [`Ticket`] from the connection's [`Sequencer`] on arrival and run their
//!   turn in that order. A turn ends when the command's response is written, or earlier where the handler says
//!   so ([`RequestContext::release_order`](crate::RequestContext::release_order)) because what is left is a
//!   long wait that later commands need not sit behind (a `bash` process, a compaction).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use serde_json::Value;

use crate::envelope::Response;
use crate::framing::encode_frame;
use crate::generated::ResponseData;

/// Receives encoded frames (one JSON object plus `\n` each, possibly several per call) in emission order: the
/// serving layer's stdout writer, or a collector in tests.
pub trait FrameSink: Send + Sync {
    fn send_frame(&self, frame: Vec<u8>);
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The ordered outbox. Cheap to clone; every clone writes to the same sink under the same gate.
///
/// Lock order: the gate comes before any lock of the writer's own (a holder captures state while holding it), so
/// never send a frame while holding a lock that a [`Held`] section also takes.
#[derive(Clone)]
pub struct Outbox {
    shared: Arc<OutboxShared>,
}

struct OutboxShared {
    sink: Arc<dyn FrameSink>,
    gate: Mutex<()>,
}

impl Outbox {
    pub fn new(sink: Arc<dyn FrameSink>) -> Outbox {
        Outbox {
            shared: Arc::new(OutboxShared {
                sink,
                gate: Mutex::new(()),
            }),
        }
    }

    /// Write already encoded frame bytes.
    pub fn send_frame(&self, frame: Vec<u8>) {
        let _gate = lock(&self.shared.gate);
        self.shared.sink.send_frame(frame);
    }

    /// Encode and write one frame. Our own types always encode; a failure is logged rather than half written.
    pub fn send<T: Serialize + ?Sized>(&self, frame: &T) {
        match encode_frame(frame) {
            Ok(bytes) => self.send_frame(bytes),
            Err(e) => tracing::error!("could not encode a frame: {e}"),
        }
    }

    /// Hold the outbox: until the returned guard drops, only frames sent through it are written.
    pub fn hold(&self) -> Held<'_> {
        Held {
            _gate: lock(&self.shared.gate),
            sink: &*self.shared.sink,
        }
    }
}

/// The outbox while held (see [`Outbox::hold`]).
pub struct Held<'a> {
    _gate: MutexGuard<'a, ()>,
    sink: &'a dyn FrameSink,
}

impl Held<'_> {
    pub fn send_frame(&self, frame: Vec<u8>) {
        self.sink.send_frame(frame);
    }

    pub fn send<T: Serialize + ?Sized>(&self, frame: &T) {
        match encode_frame(frame) {
            Ok(bytes) => self.send_frame(bytes),
            Err(e) => tracing::error!("could not encode a frame: {e}"),
        }
    }
}

/// A request's response, written at most once.
pub struct Reply {
    id: Option<Value>,
    command: &'static str,
    /// `None` for a detached request (called in-process): nothing is written, the caller uses the returned value.
    outbox: Option<Outbox>,
    sent: AtomicBool,
    /// The request's ordered turn: it ends when the response is written (or on [`Reply::end_turn`]).
    turn: Mutex<Option<Ticket>>,
}

impl Reply {
    pub(crate) fn new(
        id: Option<Value>,
        command: &'static str,
        outbox: Option<Outbox>,
        turn: Option<Ticket>,
    ) -> Reply {
        Reply {
            id,
            command,
            outbox,
            sent: AtomicBool::new(false),
            turn: Mutex::new(turn),
        }
    }

    /// Wait for this request's turn (at once for a request without one).
    pub(crate) async fn wait_turn(&self) {
        let waiter = lock(&self.turn).as_ref().map(Ticket::waiter);
        if let Some(waiter) = waiter {
            waiter.turn().await;
        }
    }

    /// End the request's ordered turn now: the next ordered command may start.
    pub fn end_turn(&self) {
        drop(lock(&self.turn).take());
    }

    /// Whether the response has been written.
    pub fn is_sent(&self) -> bool {
        self.sent.load(Ordering::Acquire)
    }

    /// Whether responses are written to a connection (false for in-process calls).
    pub fn is_attached(&self) -> bool {
        self.outbox.is_some()
    }

    /// Take the right to write the response: false if it was written already or nothing is attached.
    fn claim(&self) -> bool {
        self.outbox.is_some() && !self.sent.swap(true, Ordering::AcqRel)
    }

    fn sent_now(&self) {
        self.end_turn();
    }

    /// Write the success response now, ahead of whatever the command causes next. Returns whether it was written.
    pub fn send_ok(&self, data: ResponseData) -> bool {
        if !self.claim() {
            return false;
        }
        if let Some(outbox) = &self.outbox {
            outbox.send(&Response::ok(self.id.clone(), self.command, data));
        }
        self.sent_now();
        true
    }

    /// [`Reply::send_ok`] while the caller holds the outbox (e.g. right after a barrier frame).
    pub fn send_ok_in(&self, held: &Held<'_>, data: ResponseData) -> bool {
        if !self.claim() {
            return false;
        }
        held.send(&Response::ok(self.id.clone(), self.command, data));
        self.sent_now();
        true
    }

    /// Write the response the dispatcher built, unless the handler already wrote one.
    pub(crate) fn finish(&self, response: &Response) -> bool {
        if !self.claim() {
            return false;
        }
        if let Some(outbox) = &self.outbox {
            outbox.send(response);
        }
        self.sent_now();
        true
    }
}

/// Hands out turns in arrival order (one per connection).
#[derive(Clone, Default)]
pub struct Sequencer {
    shared: Arc<SequencerShared>,
}

#[derive(Default)]
struct SequencerShared {
    state: Mutex<SequencerState>,
    turn_changed: tokio::sync::Notify,
}

#[derive(Default)]
struct SequencerState {
    issued: u64,
    /// The ticket whose turn it is.
    current: u64,
    /// Tickets that ended before their turn came (dropped unused); skipped when reached.
    ended_early: BTreeSet<u64>,
}

impl Sequencer {
    pub fn new() -> Sequencer {
        Sequencer::default()
    }

    /// The next ticket. Call in arrival order (on the reading task), before the command is handed to its own task.
    pub fn ticket(&self) -> Ticket {
        let mut state = lock(&self.shared.state);
        let seq = state.issued;
        state.issued += 1;
        Ticket {
            seq,
            shared: self.shared.clone(),
        }
    }
}

/// A place in the arrival order. Its turn ends when it is dropped.
pub struct Ticket {
    seq: u64,
    shared: Arc<SequencerShared>,
}

impl Ticket {
    fn waiter(&self) -> TurnWaiter {
        TurnWaiter {
            seq: self.seq,
            shared: self.shared.clone(),
        }
    }

    /// Wait until every earlier ticket's turn has ended.
    pub async fn turn(&self) {
        self.waiter().turn().await
    }
}

/// Waits for a ticket's turn without owning the ticket.
struct TurnWaiter {
    seq: u64,
    shared: Arc<SequencerShared>,
}

impl TurnWaiter {
    async fn turn(&self) {
        loop {
            let changed = self.shared.turn_changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if lock(&self.shared.state).current == self.seq {
                return;
            }
            changed.await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut state = lock(&self.shared.state);
        if state.current == self.seq {
            state.current += 1;
            loop {
                let next = state.current;
                if !state.ended_early.remove(&next) {
                    break;
                }
                state.current += 1;
            }
            drop(state);
            self.shared.turn_changed.notify_waiters();
        } else {
            state.ended_early.insert(self.seq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(Mutex<Vec<Vec<u8>>>);

    impl FrameSink for Collect {
        fn send_frame(&self, frame: Vec<u8>) {
            lock(&self.0).push(frame);
        }
    }

    #[tokio::test]
    async fn turns_follow_arrival_order_whatever_order_tasks_run_in() {
        let sequencer = Sequencer::new();
        let order = Arc::new(Mutex::new(Vec::new()));
        let tickets: Vec<Ticket> = (0..50).map(|_| sequencer.ticket()).collect();
        let mut handles = Vec::new();
        // Spawned in reverse: without the tickets the last would tend to run first.
        for (i, ticket) in tickets.into_iter().enumerate().rev() {
            let order = order.clone();
            handles.push(tokio::spawn(async move {
                ticket.turn().await;
                tokio::task::yield_now().await;
                lock(&order).push(i);
                drop(ticket);
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
        assert_eq!(*lock(&order), (0..50).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_ticket_dropped_before_its_turn_does_not_block_later_ones() {
        let sequencer = Sequencer::new();
        let first = sequencer.ticket();
        let second = sequencer.ticket();
        let third = sequencer.ticket();
        drop(second);
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(5), third.turn())
            .await
            .expect("the third ticket got its turn");
    }

    #[test]
    fn a_reply_is_written_once_and_a_detached_one_never() {
        let sink = Arc::new(Collect::default());
        let outbox = Outbox::new(sink.clone());
        let sequencer = Sequencer::new();
        let reply = Reply::new(
            Some("a".into()),
            "abort",
            Some(outbox.clone()),
            Some(sequencer.ticket()),
        );
        let next = sequencer.ticket();
        assert!(reply.send_ok(ResponseData::Abort));
        // Writing the response ended the request's turn.
        assert!(futures::FutureExt::now_or_never(next.turn()).is_some());
        assert!(!reply.send_ok(ResponseData::Abort));
        assert!(!reply.finish(&Response::error(None, None, "late")));
        assert_eq!(lock(&sink.0).len(), 1);

        let detached = Reply::new(None, "abort", None, None);
        assert!(!detached.send_ok(ResponseData::Abort));
        assert!(!detached.is_sent());
        assert_eq!(lock(&sink.0).len(), 1);
    }
}

/// Per-request information passed to every handler method.
pub struct RequestContext {
    /// The request's `id`, any JSON value, echoed in the response; `None` when the request had none.
    pub id: Option<Value>,
    /// Where the response goes (see [`Reply`]).
    pub reply: Reply,
}

impl RequestContext {
    /// A request called in-process: nothing is written for it, the handler's return value is the answer.
    pub fn detached(id: Option<Value>) -> RequestContext {
        RequestContext {
            reply: Reply::new(id.clone(), "", None, None),
            id,
        }
    }

    /// A request from a connection: its response goes through `outbox`, in the turn of `ticket` if it has one.
    pub fn attached(
        id: Option<Value>,
        command: &'static str,
        outbox: Outbox,
        ticket: Option<Ticket>,
    ) -> RequestContext {
        RequestContext {
            reply: Reply::new(id.clone(), command, Some(outbox), ticket),
            id,
        }
    }

    /// End this command's ordered turn before it answers: it has applied its state change, and what remains is a
    /// long wait (a process, a compaction) that later commands should not sit behind.
    pub fn release_order(&self) {
        self.reply.end_turn();
    }
}

impl Default for RequestContext {
    fn default() -> Self {
        RequestContext::detached(None)
    }
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.id)
            .field("attached", &self.reply.is_attached())
            .field("replied", &self.reply.is_sent())
            .finish()
    }
}
