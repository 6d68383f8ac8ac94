//! The single ordered stdout writer, with flow control instead of a fatal cap.
//!
//! Every frame (responses and events alike) goes through one [`Output`] handle into one writer task, so frames are
//! written whole, in the order they were sent, and never interleave. When the host reads slower than frames are
//! made:
//!
//! - **Backpressure.** Producers that can wait (the agent loop, and through it the provider stream; the stdin
//!   reader) await [`Output::ready`], which holds them while more than the budget
//!   ([`OutputOptions::budget_bytes`]) is queued. Frames sent by code that cannot wait (a command's response, a
//!   state change's event) are always taken, so the queue can pass the budget by those frames, which the input
//!   line cap bounds. Nothing is ever dropped and output volume alone never ends the process.
//! - **Coalescing.** While more than [`OutputOptions::coalesce_over_bytes`] is queued, consecutive streaming
//!   deltas of the same content block merge into one `message_update` (deltas joined, the latest `partial` and
//!   `message`): a slow reader gets fewer, larger frames. A reader that keeps up gets every delta in its own frame,
//!   except on a long reply, whose frames pass [`LARGE_DELTA_FRAME`]: deltas then merge for up to
//!   [`LARGE_DELTA_WINDOW`] (see [`Output::is_behind`]).
//! - **A reader that stopped for good.** When no byte was accepted for [`OutputOptions::stall_timeout`] while
//!   frames were pending, [`Output::stalled`] fires: the server ends the run and the process exits with
//!   [`crate::ServeOutcome::OutputStalled`]'s code. The writer starts a frame into a pipe only when the pipe can take
//!   all of it ([`crate::pipe_space`]), so stdout then ends on a whole line.
//!
//! The rules are documented for hosts in `docs/output-flow-control.md`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dreb_protocol::DeltaFrame;
use dreb_protocol::framing::encode_frame;
use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::pipe_space::{PIPE_BUF, PipeSpace};
use std::io::IoSlice;

/// Default budget of queued bytes above which waiting producers are held.
pub const DEFAULT_BUDGET_BYTES: usize = 8 * 1024 * 1024;
/// Default queue size above which streaming deltas merge.
pub const DEFAULT_COALESCE_OVER_BYTES: usize = 1024 * 1024;
/// Default time without progress, while frames are pending, after which the reader is taken to have stopped.
pub const DEFAULT_STALL_TIMEOUT: Duration = Duration::from_secs(120);
/// The environment variable that sets the stall timeout in seconds (`0`: never give up).
pub const STALL_TIMEOUT_ENV: &str = "DREB_STDOUT_STALL_TIMEOUT_SECS";

/// How the writer paces its producers and when it gives up on its reader.
pub struct OutputOptions {
    pub budget_bytes: usize,
    pub coalesce_over_bytes: usize,
    /// `None`: wait for the reader forever.
    pub stall_timeout: Option<Duration>,
    /// The pipe behind the sink, if it is one: frames are then started only when they fit whole.
    pub pipe: Option<PipeSpace>,
}

impl Default for OutputOptions {
    fn default() -> Self {
        OutputOptions {
            budget_bytes: DEFAULT_BUDGET_BYTES,
            coalesce_over_bytes: DEFAULT_COALESCE_OVER_BYTES,
            stall_timeout: Some(DEFAULT_STALL_TIMEOUT),
            pipe: None,
        }
    }
}

impl OutputOptions {
    /// The defaults, with the stall timeout from [`STALL_TIMEOUT_ENV`] when it is set to a number of seconds.
    pub fn from_env() -> Result<OutputOptions, String> {
        let mut options = OutputOptions::default();
        if let Ok(value) = std::env::var(STALL_TIMEOUT_ENV) {
            let secs: f64 = value.trim().parse().ok().filter(|s: &f64| s.is_finite() && *s >= 0.0).ok_or_else(
                || format!("Error: {STALL_TIMEOUT_ENV} must be a number of seconds (0 for never), got {value:?}"),
            )?;
            options.stall_timeout = (secs > 0.0).then(|| Duration::from_secs_f64(secs));
        }
        Ok(options)
    }
}

/// The frame could not be queued: the writer has stopped (stdout closed or failed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputClosed;

impl std::fmt::Display for OutputClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout writer has stopped")
    }
}

impl std::error::Error for OutputClosed {}

/// A frame waiting for the writer.
enum Pending {
    Frame(Vec<u8>),
    /// A later part of a frame handed over in parts ([`dreb_protocol::FrameSink::send_frame_part`]): written as it
    /// comes, since the frame has already started (only a frame's start waits for the pipe to have room).
    Continuation(Vec<u8>),
    /// A mergeable delta; `encoded` is its bytes until a newer delta is merged in (then it is encoded when
    /// written). `len` is what it counts against the queue.
    Delta {
        frame: DeltaFrame,
        encoded: Option<Vec<u8>>,
        len: usize,
        /// When it was queued (a large one waits up to [`LARGE_DELTA_WINDOW`] for the deltas that follow it).
        since: Instant,
    },
}

/// The frames waiting for the writer, and what decides whether a producer may write its frame itself.
struct Queue {
    frames: VecDeque<Pending>,
    /// The stdout pipe while the writer task is idle, when it is a non-blocking pipe: a frame sent into an empty
    /// queue is then written by its producer at once ([`Shared::push`]), without waking the writer task. The writer
    /// takes it back before it writes anything, so only one of them writes at a time and the order holds.
    idle_pipe: Option<PipeSpace>,
    /// Open [`Cork`]s: frames wait in the queue until the last one ends, then leave together.
    corked: usize,
}

struct Shared {
    queue: Mutex<Queue>,
    /// Bytes in `queue` plus the frame being written.
    queued: AtomicUsize,
    /// Live [`Output`] handles; the writer ends when none is left and the queue is empty.
    handles: AtomicUsize,
    /// Wakes the writer.
    work: Notify,
    /// Wakes producers waiting in `ready` or `flush`: a frame was written, or the writer stopped or stalled.
    progress: Notify,
    /// The writer ended (every handle dropped and the queue written, or a write failed).
    finished: CancellationToken,
    stalled: CancellationToken,
    /// When a byte was last accepted (or frames became pending), in ms since `epoch`.
    last_progress_ms: AtomicU64,
    epoch: Instant,
    budget: usize,
    coalesce_over: usize,
    /// The last part handed over did not end its frame ([`dreb_protocol::FrameSink::send_frame_part`]).
    mid_frame: std::sync::atomic::AtomicBool,
    /// A frame is being encoded in parts on a current-thread runtime: its parts are written by their producer
    /// ([`Shared::write_through`]).
    through: std::sync::atomic::AtomicBool,
    /// See [`OutputOptions::stall_timeout`].
    stall_timeout: Option<Duration>,
    /// The size of the frame queued or written last (see [`Output::is_behind`]).
    last_frame_len: AtomicUsize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn mark_progress(&self) {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.last_progress_ms.store(now, Ordering::Release);
    }

    fn since_progress(&self) -> Duration {
        let last = self.last_progress_ms.load(Ordering::Acquire);
        self.epoch
            .elapsed()
            .saturating_sub(Duration::from_millis(last))
    }

    /// Write `bytes` (whole frames) from the calling thread when nothing is waiting, nothing is corked and the
    /// writer task is idle: one `write` and no task hand-off. Returns how many bytes the pipe took (0: none, or
    /// not possible now; only a frame larger than the largest pipe is taken in part).
    fn try_direct(&self, queue: &mut Queue, bytes: &[u8]) -> usize {
        if !queue.frames.is_empty() || queue.corked > 0 || bytes.last() != Some(&b'\n') {
            return 0;
        }
        let Some(pipe) = queue.idle_pipe.as_mut() else {
            return 0;
        };
        let written = write_direct(pipe, &[IoSlice::new(bytes)], bytes.len());
        if written > 0 {
            self.mark_progress();
        }
        written
    }

    fn push(&self, entry: Pending, len: usize) {
        if !matches!(entry, Pending::Continuation(_)) {
            self.last_frame_len.store(len, Ordering::Release);
        }
        let queue = self.lock();
        self.enqueue(queue, entry, len);
    }

    /// [`Shared::push`] for a frame the caller keeps: copied only if it has to wait. With `now`, written at once
    /// from this thread when possible ([`Shared::try_direct`]).
    fn push_bytes(&self, bytes: &[u8], now: bool) {
        self.last_frame_len.store(bytes.len(), Ordering::Release);
        let mut queue = self.lock();
        let written = if now {
            self.try_direct(&mut queue, bytes)
        } else {
            0
        };
        let (entry, len) = match written {
            0 => (Pending::Frame(bytes.to_vec()), bytes.len()),
            n if n == bytes.len() => return,
            // The writer writes the rest as it is.
            n => (Pending::Continuation(bytes[n..].to_vec()), bytes.len() - n),
        };
        self.enqueue(queue, entry, len);
    }

    fn enqueue(&self, mut queue: MutexGuard<'_, Queue>, entry: Pending, len: usize) {
        if queue.frames.is_empty() && self.queued.load(Ordering::Acquire) == 0 {
            // Frames become pending now: the stall clock starts here, not at the last write long ago.
            self.mark_progress();
        }
        queue.frames.push_back(entry);
        self.queued.fetch_add(len, Ordering::AcqRel);
        let corked = queue.corked > 0;
        drop(queue);
        if !corked {
            self.work.notify_one();
        }
    }

    /// A [`Cork`] ended: when it was the last, what waits is written at once (by this thread when the writer is
    /// idle, as much as the pipe takes in one `writev`), and the writer task is woken for any rest.
    fn uncork(&self) {
        let mut guard = self.lock();
        guard.corked -= 1;
        if guard.corked > 0 || guard.frames.is_empty() {
            return;
        }
        self.write_queued_direct(&mut guard);
        let more = !guard.frames.is_empty();
        drop(guard);
        if more {
            self.work.notify_one();
        }
    }

    /// Write the whole frames at the front of the queue from this thread, if the writer is idle, in one `writev` of
    /// at most what the pipe has room for now.
    fn write_queued_direct(&self, queue: &mut Queue) {
        const MOST: usize = 64;
        let Queue {
            frames, idle_pipe, ..
        } = queue;
        let Some(pipe) = idle_pipe.as_mut() else {
            return;
        };
        let mut parts = [IoSlice::new(&[]); MOST];
        let mut count = 0;
        let mut total = 0;
        for entry in frames.iter().take(MOST) {
            let Some(bytes) = entry.whole_bytes() else {
                break;
            };
            parts[count] = IoSlice::new(bytes);
            count += 1;
            total += bytes.len();
        }
        if count == 0 {
            return;
        }
        if total > PIPE_BUF {
            // Larger writes are not atomic: take only what fits now, so that no frame is started in part.
            let Some(room) = pipe.room(parts[0].len()) else {
                return;
            };
            while count > 0 && total > room {
                count -= 1;
                total -= parts[count].len();
            }
            if count == 0 {
                return;
            }
        }
        let written = write_direct(pipe, &parts[..count], total);
        if written == 0 {
            return;
        }
        self.mark_progress();
        let mut left = written;
        let mut freed = 0;
        while left > 0 {
            let front = frames.front_mut().expect("written frames are queued");
            let size = front.whole_bytes().map_or(0, <[u8]>::len);
            if left >= size {
                left -= size;
                freed += match frames.pop_front() {
                    Some(Pending::Delta { len, .. }) => len,
                    Some(Pending::Frame(bytes)) => bytes.len(),
                    _ => 0,
                };
            } else {
                // Started and not finished (a frame larger than the largest pipe): the rest follows as it is.
                let Some(
                    Pending::Frame(bytes)
                    | Pending::Delta {
                        encoded: Some(bytes),
                        ..
                    },
                ) = frames.pop_front()
                else {
                    unreachable!("only whole frames were written")
                };
                let rest = bytes[left..].to_vec();
                freed += bytes.len() - rest.len();
                frames.push_front(Pending::Continuation(rest));
                left = 0;
            }
        }
        if freed > 0 {
            self.queued.fetch_sub(freed, Ordering::AcqRel);
            self.progress.notify_waiters();
        }
    }

    fn closed(&self) -> bool {
        self.finished.is_cancelled()
    }

    /// Write what is queued from this thread, in order, as the writer task would: what the pipe takes now, and,
    /// while more than [`WRITE_THROUGH_AHEAD`] bytes are queued, waiting for the reader to take more. For a frame
    /// encoded in parts on a current-thread runtime, where the writer task cannot run until the encoding ends (see
    /// [`Output::while_streaming`]): the frame then never sits whole in the queue. Nothing is written while the
    /// writer task holds the pipe (it is in the middle of a write); it writes the rest when it runs.
    fn write_through(&self) {
        let Some(mut pipe) = self.lock().idle_pipe.take() else {
            return;
        };
        while !self.closed() && !self.stalled.is_cancelled() {
            let may_wait = self.queued.load(Ordering::Acquire) > WRITE_THROUGH_AHEAD;
            let Some(entry) = self.lock().frames.pop_front() else {
                break;
            };
            let (bytes, len, starts_frame) = entry.into_bytes();
            let written = self.write_here(&mut pipe, &bytes, starts_frame, may_wait);
            let rest = bytes.len() - written;
            let freed = len.saturating_sub(rest);
            if freed > 0 {
                self.queued.fetch_sub(freed, Ordering::AcqRel);
                self.progress.notify_waiters();
            }
            if rest > 0 {
                let entry = if written == 0 && starts_frame {
                    Pending::Frame(bytes)
                } else {
                    Pending::Continuation(bytes[written..].to_vec())
                };
                self.lock().frames.push_front(entry);
                break;
            }
        }
        let mut queue = self.lock();
        queue.idle_pipe = Some(pipe);
        if !queue.frames.is_empty() {
            drop(queue);
            self.work.notify_one();
        }
    }

    /// Write `bytes` into `pipe` from this thread: the start of a frame only when the pipe can take it whole (as the
    /// writer task does), the rest of one as the pipe takes it. With `may_wait`, waits for the reader (until the
    /// stall timeout); otherwise writes only what the pipe takes now. Returns the bytes written; an error is left
    /// to the writer task, which meets it on its next write.
    fn write_here(
        &self,
        pipe: &mut PipeSpace,
        bytes: &[u8],
        starts_frame: bool,
        may_wait: bool,
    ) -> usize {
        if starts_frame && bytes.len() > PIPE_BUF {
            let mut drain = DrainWatch::new(pipe);
            while pipe
                .room(bytes.len())
                .is_some_and(|room| room < bytes.len())
            {
                if !may_wait || self.stalled_here() {
                    return 0;
                }
                std::thread::sleep(drain.pause);
                drain.look(self, pipe);
            }
        }
        let mut done = 0;
        while done < bytes.len() {
            match pipe.write(&[IoSlice::new(&bytes[done..])]) {
                Ok(0) => break,
                Ok(n) => {
                    self.mark_progress();
                    done += n;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    // A frame of at most PIPE_BUF bytes is taken whole or not at all; a larger one's start was
                    // checked above. What is left of a started frame may go later.
                    if !may_wait || self.stalled_here() {
                        break;
                    }
                    pipe.wait_writable(STALL_CHECK_EVERY);
                }
                Err(_) => break,
            }
        }
        done
    }

    /// [`watch_for_stall`]'s rule, checked by a thread that writes while the watcher cannot run: true (and
    /// `stalled` fired) when frames have waited without progress for the stall timeout.
    fn stalled_here(&self) -> bool {
        if self
            .stall_timeout
            .is_some_and(|timeout| self.since_progress() >= timeout)
        {
            self.stalled.cancel();
            self.progress.notify_waiters();
        }
        self.stalled.is_cancelled()
    }
}

/// A delta frame at least this large (a long reply in the default UI) waits up to [`LARGE_DELTA_WINDOW`] for the
/// deltas that follow it, which merge into it, even while the reader keeps up: a flood of deltas then costs output
/// in proportion to the time it takes, not to the square of the reply.
const LARGE_DELTA_FRAME: usize = 64 * 1024;
/// See [`LARGE_DELTA_FRAME`].
const LARGE_DELTA_WINDOW: Duration = Duration::from_millis(2);

/// How many bytes may wait in the queue while a frame is written through by its producer
/// ([`Shared::write_through`]) before the producer waits for the reader.
const WRITE_THROUGH_AHEAD: usize = 1024 * 1024;

/// How long a producer writing through waits for the pipe between looks at the stall rule.
const STALL_CHECK_EVERY: Duration = Duration::from_millis(100);

/// A cloneable handle that queues frames for the writer task.
pub struct Output {
    shared: Arc<Shared>,
}

impl Clone for Output {
    fn clone(&self) -> Self {
        self.shared.handles.fetch_add(1, Ordering::AcqRel);
        Output {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if self.shared.handles.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shared.work.notify_one();
        }
    }
}

impl Output {
    /// Start the writer task on `sink`. Returns the handle and the task, which ends (after writing everything
    /// queued) once every handle is dropped, or at the first write error.
    pub fn start<W>(sink: W, options: OutputOptions) -> (Output, JoinHandle<std::io::Result<()>>)
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        // A non-blocking pipe is lent to the producers from the start (the writer task is idle), so the first
        // response is written at once even before the writer task first runs.
        let lend = options.pipe.as_ref().is_some_and(PipeSpace::is_nonblocking);
        let stall_probe = options
            .stall_timeout
            .and(options.pipe.as_ref())
            .and_then(PipeSpace::try_clone);
        let (idle_pipe, writer_pipe) = if lend {
            (options.pipe, None)
        } else {
            (None, options.pipe)
        };
        let shared = Arc::new(Shared {
            queue: Mutex::new(Queue {
                frames: VecDeque::new(),
                idle_pipe,
                corked: 0,
            }),
            queued: AtomicUsize::new(0),
            handles: AtomicUsize::new(1),
            work: Notify::new(),
            progress: Notify::new(),
            finished: CancellationToken::new(),
            stalled: CancellationToken::new(),
            last_progress_ms: AtomicU64::new(0),
            epoch: Instant::now(),
            budget: options.budget_bytes,
            coalesce_over: options.coalesce_over_bytes,
            mid_frame: std::sync::atomic::AtomicBool::new(false),
            through: std::sync::atomic::AtomicBool::new(false),
            stall_timeout: options.stall_timeout,
            last_frame_len: AtomicUsize::new(0),
        });
        if let Some(timeout) = options.stall_timeout {
            tokio::spawn(watch_for_stall(shared.clone(), timeout, stall_probe));
        }
        let task = tokio::spawn(write_frames(shared.clone(), sink, writer_pipe, lend));
        (Output { shared }, task)
    }

    /// Queue one frame.
    pub fn send<T: Serialize + ?Sized>(&self, frame: &T) -> Result<(), OutputClosed> {
        match encode_frame(frame) {
            Ok(bytes) => self.send_encoded(bytes),
            Err(e) => {
                // Our own types always serialise; report rather than write a half frame.
                tracing::error!("could not encode a frame: {e}");
                Ok(())
            }
        }
    }

    /// Queue already encoded frame bytes (each frame ending in `\n`). Never refused for size or backlog: producers
    /// that can wait pace themselves with [`Output::ready`].
    pub fn send_encoded(&self, bytes: Vec<u8>) -> Result<(), OutputClosed> {
        if self.shared.closed() {
            return Err(OutputClosed);
        }
        let len = bytes.len();
        self.shared.push(Pending::Frame(bytes), len);
        Ok(())
    }

    /// [`Output::send_encoded`] for frame bytes the caller keeps (copied).
    pub fn send_bytes(&self, bytes: &[u8]) -> Result<(), OutputClosed> {
        if self.shared.closed() {
            return Err(OutputClosed);
        }
        self.shared.push_bytes(bytes, false);
        Ok(())
    }

    /// [`Output::send_bytes`] for a frame its producer waits on no further (a command's response): when nothing is
    /// queued, nothing is corked and the writer task is idle, it is written from this thread at once (one `write`,
    /// no hand-off to the writer task), and copied only when it has to wait.
    pub fn send_now(&self, bytes: &[u8]) -> Result<(), OutputClosed> {
        if self.shared.closed() {
            return Err(OutputClosed);
        }
        self.shared.push_bytes(bytes, true);
        Ok(())
    }

    /// Queue a mergeable streaming delta: while the writer is behind, merged into the delta queued last when that
    /// one has the same key and is still waiting; queued on its own otherwise.
    pub fn send_delta(&self, mut delta: DeltaFrame) -> Result<(), OutputClosed> {
        if self.shared.closed() {
            return Err(OutputClosed);
        }
        let mut queue = self.shared.lock();
        if self.is_behind()
            && let Some(Pending::Delta {
                frame,
                encoded,
                len,
                ..
            }) = queue.frames.back_mut()
            && frame.key() == delta.key()
        {
            // The merged frame grows by the delta in `delta`, `partial` and `message` (an estimate: it is encoded
            // when written).
            let growth = 3 * delta.delta().len();
            frame.absorb(delta);
            *encoded = None;
            *len += growth;
            self.shared.last_frame_len.store(*len, Ordering::Release);
            self.shared.queued.fetch_add(growth, Ordering::AcqRel);
            return Ok(());
        }
        drop(queue);
        let bytes = delta.encode();
        let len = bytes.len();
        self.shared.push(
            Pending::Delta {
                frame: delta,
                encoded: Some(bytes),
                len,
                since: Instant::now(),
            },
            len,
        );
        Ok(())
    }

    /// Completes when no more than the budget is queued, or the writer will never write again (stopped, stalled).
    pub async fn ready(&self) {
        let shared = &self.shared;
        loop {
            let progressed = shared.progress.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            if shared.queued.load(Ordering::Acquire) <= shared.budget
                || shared.closed()
                || shared.stalled.is_cancelled()
            {
                return;
            }
            progressed.await;
        }
    }

    /// Whether streaming deltas should merge: the writer is behind, or the last frame was large (a long reply in
    /// the default UI, whose every update carries the whole reply so far twice: one frame per delta would make
    /// the output grow with the square of the reply; see [`LARGE_DELTA_FRAME`]).
    pub fn is_behind(&self) -> bool {
        self.shared.queued.load(Ordering::Acquire) > self.shared.coalesce_over
            || self.shared.last_frame_len.load(Ordering::Acquire) >= LARGE_DELTA_FRAME
    }

    /// Wait until every queued frame has been written, or the writer stopped or stalled (so a slow reader still gets
    /// everything, and one that stopped for good is bounded by the stall timeout). Returns whether the queue
    /// drained.
    pub async fn flush(&self) -> bool {
        let shared = &self.shared;
        loop {
            let progressed = shared.progress.notified();
            tokio::pin!(progressed);
            progressed.as_mut().enable();
            if shared.queued.load(Ordering::Acquire) == 0 {
                return true;
            }
            if shared.closed() || shared.stalled.is_cancelled() {
                return false;
            }
            progressed.await;
        }
    }

    /// Hold frames back until the returned guard drops, then write them together: the serving loop corks stdout
    /// while it answers the lines a host sent together, so their responses leave in one `write` (written by the
    /// loop itself when the writer task is idle) instead of one each. Hold it only while doing work that does not
    /// wait.
    pub fn cork(&self) -> Cork<'_> {
        self.shared.lock().corked += 1;
        Cork { output: self }
    }

    /// Whether no more than the budget is queued (what [`Output::ready`] waits for).
    pub fn within_budget(&self) -> bool {
        self.shared.queued.load(Ordering::Acquire) <= self.shared.budget
    }

    /// Bytes queued and not yet written.
    pub fn queued_bytes(&self) -> usize {
        self.shared.queued.load(Ordering::Acquire)
    }

    /// Cancelled when the reader stopped for good (see [`OutputOptions::stall_timeout`]).
    pub fn stalled(&self) -> CancellationToken {
        self.shared.stalled.clone()
    }

    /// How long the writer has gone without progress (meaningful once [`Output::stalled`] fired).
    pub fn since_progress(&self) -> Duration {
        self.shared.since_progress()
    }
}

/// Write `parts` (`total` bytes of whole frames) into the pipe from the calling thread, without waiting: all of it,
/// or nothing when the pipe has no room for it (a write of up to [`PIPE_BUF`] bytes is atomic; a larger one is
/// made only when the pipe has room for it, so only a frame larger than the largest pipe can be taken in part).
/// Returns the bytes taken; 0 leaves everything to the writer task (which also meets any error).
fn write_direct(pipe: &mut PipeSpace, parts: &[IoSlice<'_>], total: usize) -> usize {
    if total > PIPE_BUF {
        match pipe.room(parts.first().map_or(0, |p| p.len())) {
            Some(room) if total <= room => {}
            _ => return 0,
        }
    }
    pipe.write(parts).unwrap_or(0)
}

/// See [`Output::cork`].
pub struct Cork<'a> {
    output: &'a Output,
}

impl Drop for Cork<'_> {
    fn drop(&mut self) {
        self.output.shared.uncork();
    }
}

/// Most bytes taken into one write where no pipe says how much room there is (files, sockets, terminals).
const BATCH_WITHOUT_PROBE: usize = 64 * 1024;

impl Pending {
    /// The bytes of an entry that is whole frames and already encoded (a merged delta is not, yet).
    fn whole_bytes(&self) -> Option<&[u8]> {
        match self {
            Pending::Frame(bytes) if bytes.last() == Some(&b'\n') => Some(bytes),
            Pending::Delta {
                encoded: Some(bytes),
                ..
            } => Some(bytes),
            _ => None,
        }
    }

    /// Whether this entry is whole frames from its first byte to its last (so it may join a batch).
    fn is_whole(&self) -> bool {
        match self {
            Pending::Frame(bytes) => bytes.last() == Some(&b'\n'),
            Pending::Continuation(_) => false,
            Pending::Delta { .. } => true,
        }
    }

    /// The entry's bytes (a merged delta is encoded now) and what it counts against the queue.
    fn into_bytes(self) -> (Vec<u8>, usize, bool) {
        match self {
            Pending::Frame(bytes) => {
                let len = bytes.len();
                (bytes, len, true)
            }
            Pending::Continuation(bytes) => {
                let len = bytes.len();
                (bytes, len, false)
            }
            Pending::Delta {
                mut frame,
                encoded,
                len,
                ..
            } => (encoded.unwrap_or_else(|| frame.encode()), len, true),
        }
    }
}

/// The writer task: frames in queue order, each whole. Whole frames queued behind the one about to be written
/// join its write as long as the pipe has room for all of them now (or up to [`BATCH_WITHOUT_PROBE`] where
/// there is no probe): a burst costs one `write` instead of one per frame, and a batch never waits for room longer
/// than its first frame would.
async fn write_frames<W>(
    shared: Arc<Shared>,
    mut sink: W,
    mut pipe: Option<PipeSpace>,
    lend: bool,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut batch: Vec<u8> = Vec::new();
    // Where each frame of the write in progress ends in it, and what it counts against the queue.
    let mut ends: Vec<(usize, usize)> = Vec::new();
    // `lend`: a non-blocking pipe, lent to the producers while this task is idle (see `Queue::idle_pipe`); it starts
    // lent.
    let result = async {
        loop {
            let next = loop {
                let woken = shared.work.notified();
                tokio::pin!(woken);
                woken.as_mut().enable();
                let mut hold = None;
                {
                    let mut queue = shared.lock();
                    if let Some(wait) = large_delta_hold(&queue.frames)
                        && shared.handles.load(Ordering::Acquire) > 0
                    {
                        hold = Some(wait);
                    } else if let Some(entry) = queue.frames.pop_front() {
                        if lend && pipe.is_none() {
                            pipe = queue.idle_pipe.take();
                        }
                        break Some(entry);
                    } else {
                        if shared.handles.load(Ordering::Acquire) == 0 {
                            break None;
                        }
                        if lend && let Some(idle) = pipe.take() {
                            queue.idle_pipe = Some(idle);
                        }
                    }
                }
                match hold {
                    // Deltas sent meanwhile merge into it (a merge does not wake this task); any other frame ends
                    // the wait.
                    Some(wait) => {
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = &mut woken => {}
                        }
                    }
                    None => woken.await,
                }
            };
            let Some(entry) = next else {
                return sink.flush().await;
            };
            let written = if entry.is_whole() {
                let (bytes, len, _) = entry.into_bytes();
                // The whole frames queued behind this one join its write while the pipe has room for them now.
                let room = match pipe.as_mut() {
                    // A frame of at most PIPE_BUF bytes is written whole or not at all: with no room for it, it is
                    // written alone, and the sink's write waits until the reader frees part of the pipe (the pipe's
                    // own wake-up, at once, where polling the pipe would sleep a timer tick or more).
                    Some(probe) if bytes.len() <= PIPE_BUF => {
                        probe.room(bytes.len()).map(|room| room.max(bytes.len()))
                    }
                    Some(probe) => wait_for_room(&shared, probe, bytes.len()).await,
                    None => Some(BATCH_WITHOUT_PROBE),
                };
                ends.push((bytes.len(), len));
                take_batch(
                    &shared,
                    &mut batch,
                    &mut ends,
                    &bytes,
                    room.unwrap_or(BATCH_WITHOUT_PROBE),
                );
                let out = if batch.is_empty() {
                    &bytes[..]
                } else {
                    &batch[..]
                };
                write_frames_of(&shared, &mut sink, out, &mut ends).await
            } else {
                // A frame handed over in parts: its start waits for room, a later part is written as it comes.
                let (bytes, len, starts_frame) = entry.into_bytes();
                let probe = if starts_frame { pipe.as_mut() } else { None };
                let written = write_whole(&shared, &mut sink, probe, &bytes).await;
                shared.queued.fetch_sub(len, Ordering::AcqRel);
                shared.progress.notify_waiters();
                written
            };
            batch.clear();
            if batch.capacity() > 1 << 20 {
                batch.shrink_to(BATCH_WITHOUT_PROBE);
            }
            written?;
            // Flush when the queue is drained, so a burst is written in few syscalls but nothing lingers.
            if shared.lock().frames.is_empty() {
                sink.flush().await?;
            }
        }
    }
    .await;
    shared.finished.cancel();
    shared.progress.notify_waiters();
    result
}

/// How long the writer waits before writing the queue's only entry, when that is a large delta frame still within
/// its [`LARGE_DELTA_WINDOW`] (see [`LARGE_DELTA_FRAME`]).
fn large_delta_hold(frames: &VecDeque<Pending>) -> Option<Duration> {
    match frames.front() {
        Some(Pending::Delta { len, since, .. })
            if frames.len() == 1 && *len >= LARGE_DELTA_FRAME =>
        {
            LARGE_DELTA_WINDOW
                .checked_sub(since.elapsed())
                .filter(|wait| !wait.is_zero())
        }
        _ => None,
    }
}

/// Fill `batch` with `first` and the whole frames queued behind it while they fit in `room` bytes, noting in `ends`
/// where each taken frame ends in `batch` and what it counted against the queue. `batch` stays empty when nothing
/// joined `first`. A merged delta not encoded yet ends the batch (it may still grow, and encoding it here would
/// hold up the producers).
fn take_batch(
    shared: &Shared,
    batch: &mut Vec<u8>,
    ends: &mut Vec<(usize, usize)>,
    first: &[u8],
    room: usize,
) {
    let mut guard = shared.lock();
    let queue = &mut guard.frames;
    while let Some(size) = queue
        .front()
        .and_then(Pending::whole_bytes)
        .map(<[u8]>::len)
    {
        let used = if batch.is_empty() {
            first.len()
        } else {
            batch.len()
        };
        if used + size > room {
            break;
        }
        let (bytes, len, _) = queue.pop_front().expect("front exists").into_bytes();
        if batch.is_empty() {
            batch.reserve(room.min(BATCH_WITHOUT_PROBE));
            batch.extend_from_slice(first);
        }
        batch.extend_from_slice(&bytes);
        ends.push((batch.len(), len));
    }
}

/// Write `bytes`, whole frames whose ends are in `ends`: each frame leaves the queue's count once its last byte is
/// accepted (so producers waiting for the budget move on while a long batch is written). Empties `ends`.
async fn write_frames_of<W: AsyncWrite + Unpin>(
    shared: &Shared,
    sink: &mut W,
    bytes: &[u8],
    ends: &mut Vec<(usize, usize)>,
) -> std::io::Result<()> {
    let mut done = 0;
    let mut released = 0;
    let result = loop {
        if done == bytes.len() {
            break Ok(());
        }
        match sink.write(&bytes[done..]).await {
            Ok(0) => break Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                shared.mark_progress();
                done += n;
                let mut freed = 0;
                while let Some(&(end, len)) = ends.get(released)
                    && end <= done
                {
                    freed += len;
                    released += 1;
                }
                if freed > 0 {
                    shared.queued.fetch_sub(freed, Ordering::AcqRel);
                    shared.progress.notify_waiters();
                }
            }
            Err(e) => break Err(e),
        }
    };
    // After a failure nothing more is written: what is left no longer counts either.
    let rest: usize = ends[released..].iter().map(|&(_, len)| len).sum();
    if rest > 0 {
        shared.queued.fetch_sub(rest, Ordering::AcqRel);
        shared.progress.notify_waiters();
    }
    ends.clear();
    result
}

/// Watching a full pipe drain while a frame waits for room: how long to pause before the next look (from 200 µs,
/// doubling up to 10 ms, back to 200 µs whenever the reader took bytes), and every byte taken counts as progress.
struct DrainWatch {
    last_pending: Option<usize>,
    pause: Duration,
}

impl DrainWatch {
    const FIRST_PAUSE: Duration = Duration::from_micros(200);

    fn new(pipe: &PipeSpace) -> DrainWatch {
        DrainWatch {
            last_pending: pipe.pending(),
            pause: DrainWatch::FIRST_PAUSE,
        }
    }

    /// After a pause: what the reader took out meanwhile, and the next pause.
    fn look(&mut self, shared: &Shared, pipe: &PipeSpace) {
        self.pause = (self.pause * 2).min(Duration::from_millis(10));
        let pending = pipe.pending();
        if pending < self.last_pending {
            shared.mark_progress();
            self.pause = DrainWatch::FIRST_PAUSE;
        }
        self.last_pending = pending;
    }
}

/// Wait until a measurable pipe can take a frame of `len` bytes whole, and return how much it can take then
/// ([`PipeSpace::room`]; `None` if it cannot be measured). Progress is every byte the reader takes out of the pipe
/// meanwhile.
async fn wait_for_room(shared: &Shared, pipe: &mut PipeSpace, len: usize) -> Option<usize> {
    let room = pipe.room(len);
    if room.is_none_or(|room| len <= room) {
        return room;
    }
    // Only a frame that has to wait pays for watching the pipe drain.
    let mut drain = DrainWatch::new(pipe);
    loop {
        tokio::time::sleep(drain.pause).await;
        drain.look(shared, pipe);
        let room = pipe.room(len);
        if room.is_none_or(|room| len <= room) {
            return room;
        }
    }
}

/// Write one frame (or part of one): started only when a measurable pipe can take it whole; progress is every byte
/// accepted (and, while waiting for room, every byte the reader takes out of the pipe).
async fn write_whole<W: AsyncWrite + Unpin>(
    shared: &Shared,
    sink: &mut W,
    pipe: Option<&mut PipeSpace>,
    bytes: &[u8],
) -> std::io::Result<()> {
    if let Some(pipe) = pipe {
        wait_for_room(shared, pipe, bytes.len()).await;
    }
    write_all(shared, sink, bytes).await
}

/// Write all of `bytes`; progress is every byte accepted.
async fn write_all<W: AsyncWrite + Unpin>(
    shared: &Shared,
    sink: &mut W,
    bytes: &[u8],
) -> std::io::Result<()> {
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = sink.write(rest).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        shared.mark_progress();
        rest = &rest[n..];
    }
    Ok(())
}

/// Fires `stalled` when frames have been pending with no progress for `timeout`.
/// Progress is also every byte the reader takes out of the pipe (`probe`), such as while a frame waits in the sink's
/// write for room.
async fn watch_for_stall(shared: Arc<Shared>, timeout: Duration, probe: Option<PipeSpace>) {
    let tick = (timeout / 10).clamp(Duration::from_millis(20), Duration::from_secs(1));
    let mut last_pending = None;
    loop {
        tokio::select! {
            _ = shared.finished.cancelled() => return,
            _ = tokio::time::sleep(tick) => {}
        }
        if let Some(probe) = &probe {
            let pending = probe.pending();
            if pending < last_pending {
                shared.mark_progress();
            }
            last_pending = pending;
        }
        if shared.queued.load(Ordering::Acquire) > 0 && shared.since_progress() >= timeout {
            shared.stalled.cancel();
            shared.progress.notify_waiters();
            return;
        }
    }
}

/// The writer as the outbox's sink. A frame the writer no longer takes (stdout closed) is dropped: the server is
/// already stopping.
impl dreb_protocol::FrameSink for Output {
    fn send_frame(&self, frame: Vec<u8>) {
        let _ = self.send_encoded(frame);
    }

    fn send_frame_bytes(&self, frame: &[u8]) {
        let _ = self.send_bytes(frame);
    }

    fn send_frame_now(&self, frame: &[u8]) {
        let _ = Output::send_now(self, frame);
    }

    fn send_delta(&self, delta: DeltaFrame) {
        let _ = Output::send_delta(self, delta);
    }

    fn is_behind(&self) -> bool {
        Output::is_behind(self)
    }

    fn ready(&self) -> dreb_protocol::ReadyFuture<'_> {
        Box::pin(Output::ready(self))
    }

    // The writer writes its queue as a byte stream in order; the outbox is held between the parts of a frame.
    fn takes_parts(&self) -> bool {
        true
    }

    // Encoding a large answer takes a while, and its parts must be written meanwhile. On a multi-thread runtime the
    // writer task writes them: woken from this worker it would wait in the worker's own slot until the encoding
    // ends, so the worker hands its tasks over. On a current-thread runtime (the binary's) nothing else runs until
    // the encoding ends, so each part is written here as it comes ([`Shared::write_through`]).
    fn while_streaming(&self, encode: &mut dyn FnMut()) {
        let multi_thread = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if multi_thread {
            tokio::task::block_in_place(encode);
        } else {
            struct Through<'a>(&'a Shared);
            impl Drop for Through<'_> {
                fn drop(&mut self) {
                    self.0.through.store(false, Ordering::Release);
                }
            }
            self.shared.through.store(true, Ordering::Release);
            let _through = Through(&self.shared);
            encode();
        }
    }

    fn send_frame_part(&self, part: Vec<u8>) {
        let ends_frame = part.last() == Some(&b'\n');
        let continuation = self.shared.mid_frame.swap(!ends_frame, Ordering::AcqRel);
        if self.shared.closed() {
            return;
        }
        let len = part.len();
        let entry = if continuation {
            Pending::Continuation(part)
        } else {
            Pending::Frame(part)
        };
        self.shared.push(entry, len);
        if self.shared.through.load(Ordering::Acquire) {
            self.shared.write_through();
        }
    }
}

#[cfg(test)]
mod tests;
