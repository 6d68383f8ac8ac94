//! The one ordered outbox of a connection, and the turns that keep commands which change the same state in
//! arrival order.
//!
//! - Every frame a connection writes (events and responses alike) goes through one [`Outbox`]. A writer can
//!   [`hold`](Outbox::hold) it to capture state and write several frames with nothing in between (the dashboard
//!   snapshot's barrier and response).
//! - Commands that change state take a [`Ticket`] from the connection's [`Sequencer`] on arrival and run their
//!   turn in that order. A turn ends when the command's response is written ([`crate::request::Reply`]), or
//!   earlier where the handler says so ([`RequestContext::release_order`](crate::RequestContext::release_order))
//!   because what is left is a long wait that later commands need not sit behind (a `bash` process, a compaction).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;

use crate::framing::encode_frame_into;

/// Receives encoded frames (one JSON object plus `\n` each, possibly several per call) in emission order: the
/// serving layer's stdout writer, or a collector in tests.
///
/// Only `send_frame` is required. A sink with a bounded queue (the stdout writer) also implements the flow
/// control: [`ready`](FrameSink::ready) makes producers wait while it is behind, [`is_behind`](FrameSink::is_behind)
/// tells a producer that its streaming deltas may be merged, and [`send_delta`](FrameSink::send_delta) takes such a
/// mergeable delta.
pub trait FrameSink: Send + Sync {
    fn send_frame(&self, frame: Vec<u8>);

    /// A frame the caller keeps (the outbox encodes into a buffer it reuses). A sink that can write it at once
    /// need not copy it; the default copies it into [`FrameSink::send_frame`].
    fn send_frame_bytes(&self, frame: &[u8]) {
        self.send_frame(frame.to_vec());
    }

    /// [`FrameSink::send_frame_bytes`] for a frame its producer waits on no further (a command's response): a sink
    /// that can write it at once, without a hand-off to its writer, does. Frames that come in bursts (a stream's
    /// events) go through `send_frame_bytes`, so the writer can take several into one write.
    fn send_frame_now(&self, frame: &[u8]) {
        self.send_frame_bytes(frame);
    }

    /// A streaming delta that may merge with the delta queued right before it (see [`DeltaFrame`]). A sink that
    /// never merges writes it as it is.
    fn send_delta(&self, mut delta: DeltaFrame) {
        self.send_frame(delta.encode());
    }

    /// Whether the sink is behind its reader, so that producers should send mergeable deltas.
    fn is_behind(&self) -> bool {
        false
    }

    /// Completes when the sink can take more frames within its memory budget (or will never write again).
    fn ready(&self) -> ReadyFuture<'_> {
        Box::pin(std::future::ready(()))
    }

    /// Whether the sink writes bytes in the order given, so that a large frame may be handed over in parts
    /// ([`FrameSink::send_frame_part`]) while it is encoded. A sink that looks at whole frames says no (the
    /// default) and gets every frame whole.
    fn takes_parts(&self) -> bool {
        false
    }

    /// A part of a frame (the frame's last part ends in `\n`), sent with the outbox held, so nothing comes
    /// between the parts of one frame. Only called when [`FrameSink::takes_parts`].
    fn send_frame_part(&self, part: Vec<u8>) {
        self.send_frame(part);
    }

    /// Runs `encode`, which hands a frame over in parts, so that the sink can write the parts while it runs (the
    /// stdout writer lets its task run on another thread meanwhile). The default just runs it.
    fn while_streaming(&self, encode: &mut dyn FnMut()) {
        encode();
    }
}

/// The size of the parts a large frame is handed to a sink in ([`Held::send_streamed`]).
const FRAME_PART_BYTES: usize = 256 * 1024;

/// What [`FrameSink::ready`] returns.
pub type ReadyFuture<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;

/// Which deltas merge: those of the same kind (`text_delta`, `thinking_delta`, `toolcall_delta`) for the same
/// content block, queued one right after the other.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeltaKey {
    pub kind: &'static str,
    pub content_index: u64,
}

/// A `message_update` frame carrying one streaming delta, kept unencoded so that a sink which is behind can merge
/// it with the next one of the same [`DeltaKey`]: the deltas are joined and everything else (the cumulative
/// `partial` and `message`) is the newer frame's. Merging is lossless: the joined deltas are exactly the deltas
/// sent, and the merged frame carries the latest state.
pub struct DeltaFrame {
    key: DeltaKey,
    delta: String,
    render: Render,
}

/// Encodes a delta frame with the given (joined) delta.
type Render = Box<dyn FnMut(&str) -> Vec<u8> + Send>;

impl DeltaFrame {
    /// `render` encodes the frame with the given delta in place of its own (it owns the event).
    pub fn new(
        key: DeltaKey,
        delta: String,
        render: impl FnMut(&str) -> Vec<u8> + Send + 'static,
    ) -> DeltaFrame {
        DeltaFrame {
            key,
            delta,
            render: Box::new(render),
        }
    }

    pub fn key(&self) -> &DeltaKey {
        &self.key
    }

    /// The delta so far (joined over every merged frame).
    pub fn delta(&self) -> &str {
        &self.delta
    }

    /// Take in `newer` (same key, sent right after this one): its delta is appended, its state replaces ours.
    pub fn absorb(&mut self, newer: DeltaFrame) {
        debug_assert_eq!(self.key, newer.key);
        self.delta.push_str(&newer.delta);
        self.render = newer.render;
    }

    /// The frame's bytes, with the joined delta.
    pub fn encode(&mut self) -> Vec<u8> {
        (self.render)(&self.delta)
    }
}

impl std::fmt::Debug for DeltaFrame {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeltaFrame")
            .field("key", &self.key)
            .field("delta_len", &self.delta.len())
            .finish_non_exhaustive()
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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
        with_encoded(frame, |bytes| {
            let _gate = lock(&self.shared.gate);
            self.shared.sink.send_frame_bytes(bytes);
        });
    }

    /// [`Outbox::send`] for a frame nothing else follows at once (a command's response): the sink may write it
    /// from this thread right away (see [`FrameSink::send_frame_now`]).
    pub fn send_now<T: Serialize + ?Sized>(&self, frame: &T) {
        with_encoded(frame, |bytes| {
            let _gate = lock(&self.shared.gate);
            self.shared.sink.send_frame_now(bytes);
        });
    }

    /// [`Outbox::send_now`] for a frame the caller writes itself: `encode` appends one JSON object (without the
    /// line's `\n`) to an empty buffer and says whether to send it. The bytes are framed as
    /// [`crate::framing::encode_frame`] frames them (U+2028/U+2029 escaped, `\n` appended). Returns whether the
    /// frame was handed to the sink.
    pub fn send_now_with(&self, encode: impl FnOnce(&mut Vec<u8>) -> bool) -> bool {
        let mut sent = false;
        with_scratch(|buf| {
            if encode(buf) {
                crate::framing::finish_frame(buf, 0);
                let _gate = lock(&self.shared.gate);
                self.shared.sink.send_frame_now(buf);
                sent = true;
            }
        });
        sent
    }

    /// Write a mergeable streaming delta (see [`DeltaFrame`]).
    pub fn send_delta(&self, delta: DeltaFrame) {
        let _gate = lock(&self.shared.gate);
        self.shared.sink.send_delta(delta);
    }

    /// Whether the writer is behind its reader (streaming producers then send [`DeltaFrame`]s).
    pub fn is_behind(&self) -> bool {
        self.shared.sink.is_behind()
    }

    /// Wait until the writer can take more within its memory budget: producers that can wait (the agent loop, the
    /// stdin reader) call this after sending, which is what paces them to the host's reading speed.
    pub async fn ready(&self) {
        self.shared.sink.ready().await
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
        with_encoded(frame, |bytes| self.sink.send_frame_bytes(bytes));
    }

    /// [`Held::send`] for a frame that may be large (`get_messages`, `get_tree`): a sink that takes parts gets it
    /// as it is encoded, so the reader starts on it at once and it never sits whole in the queue. An encoding
    /// failure half way (never for our own types) ends the line there, so the next frame starts on its own line.
    pub fn send_streamed<T: Serialize + ?Sized>(&self, frame: &T) {
        if !self.sink.takes_parts() {
            return self.send(frame);
        }
        let mut sent_any = false;
        let mut result = Ok(());
        self.sink.while_streaming(&mut || {
            result = crate::framing::encode_frame_in_parts(frame, FRAME_PART_BYTES, &mut |part| {
                sent_any = true;
                self.sink.send_frame_part(part);
            });
        });
        if let Err(e) = result {
            tracing::error!("could not encode a frame: {e}");
            if sent_any {
                self.sink.send_frame_part(b"\n".to_vec());
            }
        }
    }
}

/// Scratch buffers kept at most this large between frames.
const SCRATCH_KEEP_BYTES: usize = 64 * 1024;

thread_local! {
    /// Where this thread encodes its frames: reused, so a frame costs no buffer growth (a sink that has to keep the
    /// frame copies it once, at its exact size).
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Encode `frame` (see [`crate::framing::encode_frame`]) into this thread's scratch buffer and hand the bytes to
/// `write`. Our own types always encode; a failure is logged rather than half written.
fn with_encoded<T: Serialize + ?Sized>(frame: &T, write: impl FnOnce(&[u8])) {
    with_scratch(|buf| match encode_frame_into(buf, frame) {
        Ok(()) => write(buf),
        Err(e) => tracing::error!("could not encode a frame: {e}"),
    });
}

/// Run `f` with this thread's scratch buffer, empty.
fn with_scratch(f: impl FnOnce(&mut Vec<u8>)) {
    // Taken out for the duration, so that a frame encoded while another is being written gets its own buffer.
    let mut buf = SCRATCH.take();
    buf.clear();
    f(&mut buf);
    if buf.capacity() <= SCRATCH_KEEP_BYTES {
        SCRATCH.set(buf);
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
    pub(crate) fn waiter(&self) -> TurnWaiter {
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
pub(crate) struct TurnWaiter {
    seq: u64,
    shared: Arc<SequencerShared>,
}

impl TurnWaiter {
    pub(crate) async fn turn(&self) {
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
}
