//! The serving loop: each input line is decoded, given its place in the arrival order and answered; responses and
//! events go through one [`Outbox`] in front of the [`Output`] writer.
//!
//! Input is taken by an *intake* beside the loop: for the process's stdin ([`serve_blocking`]) a thread of its own
//! that blocks in `read`, for an in-memory stream ([`serve`]) a task. The intake answers an immediate command
//! (`get_state`) on the spot, on the thread that read it, with stdout corked so the answers to the lines one read
//! brought leave in one write ([`Output::cork`]), written by that thread when the writer task is idle. Every other
//! command becomes a job the loop runs on a task of its own.
//!
//! Why a thread that blocks in `read`: a sequential host (send, wait for the answer, send the next) then wakes one
//! thread per request, the one that answers it, and the kernel wakes it on the CPU the host just left; parking in
//! the runtime's event loop instead cost a wake-up of another thread (and often of an idle CPU) per request.
//!
//! Each command's [`Lane`] (from `dreb-protocol`) decides how it runs: state changes take their turn in arrival
//! order (so pipelined `set_*` calls and session switches apply in the order sent), while aborts, `get_state` and
//! other independent reads run at once beside them, so a slow command never blocks `abort`, `get_state` or an
//! `extension_ui_response`. Every command line gets exactly one response. At stdin EOF or a termination signal
//! the server cancels running work, gives in-flight commands a grace period to answer (lines still arriving get
//! the shutting-down error), flushes stdout and returns.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Waker};
use std::time::Duration;

use dreb_protocol::framing::{DEFAULT_MAX_RECORD_BYTES, JsonlReader, RecordError};
use dreb_protocol::{
    CommandService, Decoded, Input, Lane, Outbox, Response, Sequencer, decode, envelope::fill,
    error_text, serve_request,
};
use tokio::io::AsyncRead;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::output::Output;

/// Receives stdin messages that are not commands (`extension_ui_response`). They never get a response.
pub trait InputRouter: Send + Sync + 'static {
    fn route(&self, input: Input);
}

impl<F: Fn(Input) + Send + Sync + 'static> InputRouter for F {
    fn route(&self, input: Input) {
        self(input)
    }
}

#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Longest accepted input line; longer lines get one parse-error response and are skipped.
    pub max_record_bytes: usize,
    /// How long in-flight commands may take to answer after shutdown began (they are cancelled first).
    pub shutdown_grace: Duration,
    /// How long to wait for background children to exit after serving ended. (stdout is drained without a time
    /// limit: a slow reader still gets everything; one that stopped for good is bounded by the writer's stall rule.)
    pub children_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            shutdown_grace: Duration::from_secs(3),
            children_timeout: Duration::from_secs(5),
        }
    }
}

/// Why serving ended.
#[derive(Debug)]
pub enum ServeOutcome {
    /// stdin reached end of input (exit 0).
    Eof,
    /// A termination signal or an external shutdown request (exit 0).
    Shutdown,
    /// stdin failed with an I/O error (exit 0, like the reference's stdin `error`).
    InputError(std::io::Error),
    /// The host stopped reading stdout for good: nothing was accepted for the stall timeout while frames were
    /// pending (exit 3).
    OutputStalled,
}

/// The exit code when the stdout reader stopped for good (distinct from 1, a start-up failure).
pub const STALLED_EXIT_CODE: i32 = 3;

impl ServeOutcome {
    pub fn exit_code(&self) -> i32 {
        match self {
            ServeOutcome::OutputStalled => STALLED_EXIT_CODE,
            _ => 0,
        }
    }
}

/// A command that runs on a task of its own, spawned by the loop.
type Job = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What the intake hands the loop.
enum Intake {
    Job(Job),
    /// The end of input (`Ok`) or a read error; nothing follows.
    End(std::io::Result<()>),
}

/// Takes input records: answers what can be answered on the spot and hands the rest to the loop as jobs. Shared
/// by the stdin thread and the stream task.
struct Taker<S> {
    service: Arc<S>,
    router: Arc<dyn InputRouter>,
    outbox: Outbox,
    output: Output,
    sequencer: Sequencer,
    to_loop: mpsc::UnboundedSender<Intake>,
    /// Set once serving ends: command lines then get the shutting-down error instead of running.
    refusing: Arc<AtomicBool>,
}

/// What [`Taker::take_buffered`] stopped at.
enum Drained {
    /// Every complete line buffered was taken: read more.
    NeedInput,
    /// More than the output budget is queued: wait for the writer, then take the rest.
    OverBudget,
    /// The end of input was reached (and told to the loop).
    End,
}

impl<S: CommandService + 'static> Taker<S> {
    /// Take the lines `reader` holds, with stdout corked so their answers leave together.
    fn take_buffered<R: AsyncRead + Unpin>(&self, reader: &mut JsonlReader<R>) -> Drained {
        let _cork = self.output.cork();
        loop {
            if !self.output.within_budget() {
                return Drained::OverBudget;
            }
            match reader.next_buffered() {
                None => return Drained::NeedInput,
                Some(None) => {
                    let _ = self.to_loop.send(Intake::End(Ok(())));
                    return Drained::End;
                }
                Some(Some(record)) => self.take(record),
            }
        }
    }

    /// One input line: a command is answered on the spot when it is immediate and its turn has come, and handed to
    /// the loop otherwise; other input is routed; anything else gets its error response.
    fn take(&self, record: Result<String, RecordError>) {
        let line = match record {
            Ok(line) => line,
            Err(record_error) => return send_parse_error(&self.outbox, &record_error),
        };
        if self.refusing.load(Ordering::Acquire) {
            return refuse_while_shutting_down(&line, &self.outbox, &*self.router);
        }
        match decode(&line) {
            Decoded::Request(request) => {
                let lane = request.command.lane();
                // Taken here, in arrival order: the intake is the only one that reads.
                let ticket = (lane != Lane::Concurrent).then(|| self.sequencer.ticket());
                let service = self.service.clone();
                let outbox = self.outbox.clone();
                let mut job: Job = Box::pin(async move {
                    serve_request(&*service, request, &outbox, ticket).await;
                });
                // Polled once right here: a hand-off would cost more than the command. Should it wait on anything
                // after all, the loop's task polls it again (and from then on it is woken as usual).
                if lane == Lane::Immediate
                    && job
                        .as_mut()
                        .poll(&mut Context::from_waker(Waker::noop()))
                        .is_ready()
                {
                    return;
                }
                // Refused only when the loop is gone, and then the process is ending.
                let _ = self.to_loop.send(Intake::Job(job));
            }
            Decoded::Input(input) => self.router.route(input),
            Decoded::Invalid(response) => self.outbox.send(&response),
        }
    }
}

/// The stdin thread: blocking reads of `input`, each read's lines taken at once (see the module's documentation).
fn read_blocking<S: CommandService + 'static>(
    taker: Taker<S>,
    input: std::fs::File,
    max_record_bytes: usize,
    runtime: tokio::runtime::Handle,
) {
    use std::io::Read;
    let mut reader = JsonlReader::with_max_record_bytes(tokio::io::empty(), max_record_bytes);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        // Commands polled here may spawn tasks or start timers.
        let drained = {
            let _runtime = runtime.enter();
            taker.take_buffered(&mut reader)
        };
        match drained {
            Drained::End => return,
            Drained::OverBudget => {
                // A host that sends commands without reading the answers is paced like the agent loop.
                runtime.block_on(taker.output.ready());
                continue;
            }
            Drained::NeedInput => {}
        }
        match (&input).read(&mut buf) {
            Ok(0) => reader.push_eof(),
            Ok(n) => reader.push_bytes(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Someone made the description non-blocking (it is shared with the process that gave it to us).
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => wait_readable(&input),
            Err(e) => {
                let _ = taker.to_loop.send(Intake::End(Err(e)));
                return;
            }
        }
    }
}

/// Block until `file` has input (or an error or hang-up to report).
fn wait_readable(file: &std::fs::File) {
    use std::os::fd::AsRawFd;
    let mut fds = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, for the length given. An error (EINTR) just leads to the next read.
    unsafe { libc::poll(&mut fds, 1, -1) };
}

/// The stream task: reads of `input`, each read's lines taken at once.
async fn read_stream<S, R>(taker: Taker<S>, input: R, max_record_bytes: usize)
where
    S: CommandService + 'static,
    R: AsyncRead + Unpin,
{
    let mut reader = JsonlReader::with_max_record_bytes(input, max_record_bytes);
    loop {
        match taker.take_buffered(&mut reader) {
            Drained::End => return,
            Drained::OverBudget => {
                taker.output.ready().await;
                continue;
            }
            Drained::NeedInput => {}
        }
        // The first line of the next read; the lines that came with it are taken above, on the next turn.
        match reader.next_record().await {
            Ok(Some(record)) => {
                let _cork = taker.output.cork();
                taker.take(record);
            }
            Ok(None) => {
                let _ = taker.to_loop.send(Intake::End(Ok(())));
                return;
            }
            Err(e) => {
                let _ = taker.to_loop.send(Intake::End(Err(e)));
                return;
            }
        }
    }
}

/// Serve `service` on the process's stdin (or any descriptor), read by a thread of its own with blocking reads
/// (see the module's documentation), until the input ends, `shutdown` completes, or the stdout reader stalls.
/// Must be called inside the runtime. See [`serve`] for the rest.
#[allow(clippy::too_many_arguments)] // each is a distinct part of the connection; a bundle would only rename them
pub async fn serve_blocking<S>(
    service: Arc<S>,
    router: Arc<dyn InputRouter>,
    input: std::fs::File,
    output: Output,
    outbox: Outbox,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
    stop: CancellationToken,
) -> ServeOutcome
where
    S: CommandService + 'static,
{
    let (taker, intake, refusing) = Taker::new(service, router, outbox, output.clone());
    let max = options.max_record_bytes;
    let runtime = tokio::runtime::Handle::current();
    // Never joined: at the end the thread may still be blocked in `read`; it ends with the process.
    let started = std::thread::Builder::new()
        .name("dreb-stdin".into())
        .spawn(move || read_blocking(taker, input, max, runtime));
    if let Err(e) = started {
        return ServeOutcome::InputError(e);
    }
    run_loop(intake, refusing, output, options, shutdown, stop).await
}

/// Serve `service` until `input` ends, `shutdown` completes, or the stdout reader stalls. Every frame goes through
/// `outbox` (the same one the service writes its events to); `output` is the writer behind it, drained before
/// returning.
///
/// `stop` is cancelled when serving ends, before the grace period: the service should tie its running work
/// (agent runs, bash, compaction, dialogs) to it so in-flight commands finish promptly and still answer.
#[allow(clippy::too_many_arguments)] // each is a distinct part of the connection; a bundle would only rename them
pub async fn serve<S, R>(
    service: Arc<S>,
    router: Arc<dyn InputRouter>,
    input: R,
    output: Output,
    outbox: Outbox,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
    stop: CancellationToken,
) -> ServeOutcome
where
    S: CommandService + 'static,
    R: AsyncRead + Unpin + Send + 'static,
{
    let (taker, intake, refusing) = Taker::new(service, router, outbox, output.clone());
    let max = options.max_record_bytes;
    let reading = tokio::spawn(read_stream(taker, input, max));
    let outcome = run_loop(intake, refusing, output, options, shutdown, stop).await;
    reading.abort();
    outcome
}

impl<S: CommandService + 'static> Taker<S> {
    fn new(
        service: Arc<S>,
        router: Arc<dyn InputRouter>,
        outbox: Outbox,
        output: Output,
    ) -> (Taker<S>, mpsc::UnboundedReceiver<Intake>, Arc<AtomicBool>) {
        let (to_loop, intake) = mpsc::unbounded_channel();
        let refusing = Arc::new(AtomicBool::new(false));
        let taker = Taker {
            service,
            router,
            outbox,
            output,
            sequencer: Sequencer::new(),
            to_loop,
            refusing: refusing.clone(),
        };
        (taker, intake, refusing)
    }
}

/// Run the intake's jobs until the input ends, `shutdown` completes or the stdout reader stalls; then wind down.
async fn run_loop(
    mut intake: mpsc::UnboundedReceiver<Intake>,
    refusing: Arc<AtomicBool>,
    output: Output,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
    stop: CancellationToken,
) -> ServeOutcome {
    let stalled = output.stalled();
    let mut tasks: JoinSet<()> = JoinSet::new();
    tokio::pin!(shutdown);

    let outcome = loop {
        tokio::select! {
            biased;
            _ = stalled.cancelled() => break ServeOutcome::OutputStalled,
            _ = &mut shutdown => break ServeOutcome::Shutdown,
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                if let Err(e) = done {
                    tracing::error!("command task failed: {e}");
                }
            }
            next = intake.recv() => match next {
                Some(Intake::Job(job)) => { tasks.spawn(job); }
                Some(Intake::End(Ok(()))) | None => break ServeOutcome::Eof,
                Some(Intake::End(Err(e))) => break ServeOutcome::InputError(e),
            },
        }
    };

    tracing::debug!(?outcome, in_flight = tasks.len(), "shutting down");
    // While in-flight commands wind down, lines still arriving are answered, not run.
    refusing.store(true, Ordering::Release);
    stop.cancel();
    let mut input_open = !matches!(outcome, ServeOutcome::Eof | ServeOutcome::InputError(_));
    if tokio::time::timeout(options.shutdown_grace, async {
        loop {
            tokio::select! {
                done = tasks.join_next() => if done.is_none() { break },
                next = intake.recv(), if input_open => match next {
                    // Taken just before the intake saw the refusal: it still gets its answer.
                    Some(Intake::Job(job)) => { tasks.spawn(job); }
                    Some(Intake::End(_)) | None => input_open = false,
                },
            }
        }
    })
    .await
    .is_err()
    {
        tracing::warn!(
            remaining = tasks.len(),
            "commands did not finish within the shutdown grace period"
        );
        tasks.abort_all();
    }
    if !matches!(outcome, ServeOutcome::OutputStalled) && !output.flush().await {
        tracing::warn!("stdout did not drain before exit");
    }
    outcome
}

/// The answer to an input line that could not be read as a record (too large, not UTF-8).
fn send_parse_error(outbox: &Outbox, record_error: &RecordError) {
    let text = fill(error_text::PARSE, &[("message", &record_error.to_string())]);
    outbox.send(&Response::error(None, Some("parse".into()), text));
}

/// A line read after shutdown began: a command is answered with the shutting-down error (not run); other input is
/// handled as usual.
fn refuse_while_shutting_down(line: &str, outbox: &Outbox, router: &dyn InputRouter) {
    match decode(line) {
        Decoded::Request(request) => {
            let name = request.command.name();
            let text = fill(error_text::SHUTTING_DOWN, &[("command", name)]);
            outbox.send(&Response::error(request.id, Some(name.to_string()), text));
        }
        Decoded::Input(input) => router.route(input),
        Decoded::Invalid(response) => outbox.send(&response),
    }
}

/// Completes on SIGTERM or SIGINT.
pub async fn termination_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::warn!("could not install signal handlers");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dreb_protocol::support::RequestContext;
    use dreb_protocol::{Command, ResponseData, RpcDashboardSnapshot};
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

    /// Answers `get_dashboard_snapshot` like the runtime: barrier and response written by the service while it
    /// holds the outbox.
    struct SnapshotService {
        outbox: Outbox,
        fail: bool,
    }

    impl CommandService for SnapshotService {
        async fn call(
            &self,
            ctx: &RequestContext,
            command: Command,
        ) -> Result<ResponseData, String> {
            let Command::GetDashboardSnapshot(_) = command else {
                return Err("unexpected".into());
            };
            if self.fail {
                return Err("snapshot failed".into());
            }
            let data: RpcDashboardSnapshot = serde_json::from_value(serde_json::json!({
                "snapshotId": "s1", "messages": [], "backgroundAgents": [], "pendingExtensionUiRequests": [],
                "state": {"scopedModels": [], "tasks": [], "usingSubscription": false, "thinkingLevel": "off",
                    "availableThinkingLevels": ["off"], "isStreaming": false, "isRetrying": false, "retryAttempt": 0,
                    "isCompacting": false, "steeringMode": "all", "followUpMode": "all", "sessionId": "x",
                    "autoCompactionEnabled": true, "messageCount": 0, "pendingMessageCount": 0}
            }))
            .unwrap();
            let held = self.outbox.hold();
            held.send(
                &serde_json::json!({"type": "dashboard_snapshot_barrier", "snapshotId": "s1"}),
            );
            ctx.reply
                .send_ok_in(&held, ResponseData::GetDashboardSnapshot(data.clone()));
            Ok(ResponseData::GetDashboardSnapshot(data))
        }
    }

    fn outbox_of(output: &Output) -> Outbox {
        Outbox::new(Arc::new(output.clone()))
    }

    async fn serve_one(fail: bool) -> Vec<serde_json::Value> {
        let (mut stdin, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, mut stdout) = tokio::io::duplex(1 << 20);
        // The writer task lives on while the service holds an `Output` clone; read what was written instead of EOF.
        let (output, _writer) = Output::start(server_out, crate::output::OutputOptions::default());
        let outbox = outbox_of(&output);
        let service = Arc::new(SnapshotService {
            outbox: outbox.clone(),
            fail,
        });
        let router: Arc<dyn InputRouter> = Arc::new(|_i: dreb_protocol::Input| {});
        let server = tokio::spawn(serve(
            service,
            router,
            server_in,
            output,
            outbox,
            ServeOptions::default(),
            std::future::pending::<()>(),
            CancellationToken::new(),
        ));
        stdin
            .write_all(b"{\"id\":\"s1\",\"type\":\"get_dashboard_snapshot\"}\n")
            .await
            .unwrap();
        stdin.shutdown().await.unwrap();
        server.await.unwrap();
        drop(stdin);
        let mut buf = vec![0u8; 1 << 16];
        let n = stdout.read(&mut buf).await.unwrap();
        String::from_utf8_lossy(&buf[..n])
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// `get_state` waits until `abort` releases it; `get_version` answers at once.
    struct WaitingStateService {
        release: tokio::sync::Notify,
    }

    impl CommandService for WaitingStateService {
        async fn call(
            &self,
            _ctx: &RequestContext,
            command: Command,
        ) -> Result<ResponseData, String> {
            match command {
                Command::GetState(_) => {
                    self.release.notified().await;
                    Err("released".into())
                }
                Command::Abort(_) => {
                    self.release.notify_waiters();
                    Ok(ResponseData::Abort)
                }
                Command::GetVersion(_) => {
                    Ok(ResponseData::GetVersion(dreb_protocol::VersionResult {
                        version: "1".into(),
                    }))
                }
                _ => Err("unexpected".into()),
            }
        }
    }

    /// Answers `get_state` at once (an error will do) and `get_version`.
    struct StateService;

    impl CommandService for StateService {
        async fn call(
            &self,
            _ctx: &RequestContext,
            command: Command,
        ) -> Result<ResponseData, String> {
            match command {
                Command::GetVersion(_) => {
                    Ok(ResponseData::GetVersion(dreb_protocol::VersionResult {
                        version: "1".into(),
                    }))
                }
                _ => Err("state".into()),
            }
        }
    }

    #[tokio::test]
    async fn an_immediate_command_that_waits_after_all_moves_to_its_own_task() {
        let (mut stdin, server_in) = tokio::io::duplex(1 << 16);
        let (server_out, stdout) = tokio::io::duplex(1 << 16);
        let (output, _writer) = Output::start(server_out, crate::output::OutputOptions::default());
        let outbox = outbox_of(&output);
        let service = Arc::new(WaitingStateService {
            release: tokio::sync::Notify::new(),
        });
        let router: Arc<dyn InputRouter> = Arc::new(|_i: dreb_protocol::Input| {});
        let server = tokio::spawn(serve(
            service,
            router,
            server_in,
            output,
            outbox,
            ServeOptions::default(),
            std::future::pending::<()>(),
            CancellationToken::new(),
        ));
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let mut next_id = async || -> serde_json::Value {
            let line = lines.next_line().await.unwrap().unwrap();
            serde_json::from_str::<serde_json::Value>(&line).unwrap()["id"].clone()
        };
        stdin
            .write_all(
                b"{\"id\":\"s\",\"type\":\"get_state\"}\n{\"id\":\"v\",\"type\":\"get_version\"}\n",
            )
            .await
            .unwrap();
        assert_eq!(
            next_id().await,
            "v",
            "the waiting get_state held up the next line"
        );
        stdin
            .write_all(b"{\"id\":\"a\",\"type\":\"abort\"}\n")
            .await
            .unwrap();
        let mut rest = vec![next_id().await, next_id().await];
        rest.sort_by_key(|v| v.to_string());
        assert_eq!(rest, ["a", "s"]);
        stdin.shutdown().await.unwrap();
        server.await.unwrap();
    }

    /// A stdout pipe with its probe, as for the real stdout: responses can be written by the thread that made them.
    fn piped_output() -> (Output, std::io::PipeReader) {
        use std::os::fd::OwnedFd;
        let (out_rx, out_tx) = std::io::pipe().unwrap();
        let probe = crate::pipe_space::PipeSpace::new(
            std::os::fd::AsFd::as_fd(&out_tx)
                .try_clone_to_owned()
                .unwrap(),
        );
        assert!(probe.is_some());
        let writer = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(out_tx)).unwrap();
        let options = crate::output::OutputOptions {
            pipe: probe,
            ..crate::output::OutputOptions::default()
        };
        (Output::start(writer, options).0, out_rx)
    }

    /// On the stdin thread, lines (whole, in parts, several in one write, one without its LF at the end) are
    /// answered like any other, immediate ones and the ones that run on tasks, and the end of input ends serving.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_stdin_thread_answers_every_line_and_eof_ends_serving() {
        use std::io::{BufRead, Write};
        let (rx, mut tx) = std::io::pipe().unwrap();
        let (output, out_rx) = piped_output();
        let outbox = outbox_of(&output);
        let router: Arc<dyn InputRouter> = Arc::new(|_i: dreb_protocol::Input| {});
        let server = tokio::spawn(serve_blocking(
            Arc::new(StateService),
            router,
            std::fs::File::from(std::os::fd::OwnedFd::from(rx)),
            output,
            outbox,
            ServeOptions::default(),
            std::future::pending::<()>(),
            CancellationToken::new(),
        ));
        let host = tokio::task::spawn_blocking(move || {
            let mut lines = std::io::BufReader::new(out_rx).lines();
            let mut next_id = || -> serde_json::Value {
                let line = lines.next().unwrap().unwrap();
                serde_json::from_str::<serde_json::Value>(&line).unwrap()["id"].clone()
            };
            tx.write_all(b"{\"id\":1,\"type\":\"get_state\"}\n")
                .unwrap();
            assert_eq!(next_id(), 1);
            tx.write_all(b"{\"id\":2,\"type\":\"get_").unwrap();
            std::thread::sleep(Duration::from_millis(20));
            tx.write_all(b"state\"}\n{\"id\":3,\"type\":\"get_state\"}\n{\"id\":4,")
                .unwrap();
            tx.write_all(b"\"type\":\"nope\"}\n").unwrap();
            let ids: Vec<_> = (0..3).map(|_| next_id()).collect();
            assert_eq!(ids, [2, 3, 4]);
            // A command that runs on a task of its own is answered too, and so is a last line without its LF.
            tx.write_all(b"{\"id\":5,\"type\":\"get_version\"}\n{\"id\":6,\"type\":\"get_state\"}")
                .unwrap();
            drop(tx);
            let mut ids: Vec<_> = (0..2).map(|_| next_id().to_string()).collect();
            ids.sort();
            assert_eq!(ids, ["5", "6"]);
        });
        host.await.unwrap();
        let outcome = tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("serving ended at the end of input")
            .unwrap();
        assert!(matches!(outcome, ServeOutcome::Eof), "{outcome:?}");
    }

    /// Applies `set_steering_mode` only when released (by `abort`); `get_state` answers with the mode applied.
    struct OrderedStateService {
        release: tokio::sync::Notify,
        mode: std::sync::Mutex<&'static str>,
    }

    impl CommandService for OrderedStateService {
        async fn call(
            &self,
            _ctx: &RequestContext,
            command: Command,
        ) -> Result<ResponseData, String> {
            match command {
                Command::SetSteeringMode(_) => {
                    self.release.notified().await;
                    *self.mode.lock().unwrap() = "one-at-a-time";
                    Ok(ResponseData::SetSteeringMode)
                }
                Command::Abort(_) => {
                    self.release.notify_waiters();
                    Ok(ResponseData::Abort)
                }
                Command::GetState(_) => Err(format!("mode {}", self.mode.lock().unwrap())),
                _ => Err("unexpected".into()),
            }
        }
    }

    /// The stdin thread answers `get_state` itself only when its turn has come: after a state change sent before
    /// it that is still being applied, it waits for it (on a task), while a concurrent `abort` is answered at once.
    /// Lines after shutdown began get the shutting-down error.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_stdin_thread_keeps_the_arrival_order_and_refuses_lines_after_shutdown() {
        use std::io::{BufRead, Write};
        let (rx, mut tx) = std::io::pipe().unwrap();
        let (output, out_rx) = piped_output();
        let outbox = outbox_of(&output);
        let router: Arc<dyn InputRouter> = Arc::new(|_i: dreb_protocol::Input| {});
        let service = Arc::new(OrderedStateService {
            release: tokio::sync::Notify::new(),
            mode: std::sync::Mutex::new("all"),
        });
        let shutdown = Arc::new(tokio::sync::Notify::new());
        let shutdown_signal = shutdown.clone();
        let server = tokio::spawn(serve_blocking(
            service,
            router,
            std::fs::File::from(std::os::fd::OwnedFd::from(rx)),
            output,
            outbox,
            ServeOptions::default(),
            async move { shutdown_signal.notified().await },
            CancellationToken::new(),
        ));
        let (frames_tx, mut frames) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out_rx).lines() {
                let frame: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
                if frames_tx.send(frame).is_err() {
                    break;
                }
            }
        });
        tx.write_all(
            b"{\"id\":\"m\",\"type\":\"set_steering_mode\",\"mode\":\"one-at-a-time\"}\n{\"id\":\"s\",\"type\":\"get_state\"}\n",
        )
        .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            frames.try_recv().is_err(),
            "get_state answered before the state change sent ahead of it"
        );
        tx.write_all(b"{\"id\":\"a\",\"type\":\"abort\"}\n").unwrap();
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(frames.recv().await.unwrap());
        }
        let ids: Vec<_> = got.iter().map(|f| f["id"].as_str().unwrap()).collect();
        assert_eq!(ids.first(), Some(&"a"), "{got:#?}");
        let state = got.iter().find(|f| f["id"] == "s").unwrap();
        assert_eq!(state["error"], "mode one-at-a-time", "{got:#?}");
        let order: Vec<_> = ids.iter().filter(|id| **id != "a").collect();
        assert_eq!(order, [&"m", &"s"]);
        shutdown.notify_one();
        let outcome = tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("serving ended at shutdown")
            .unwrap();
        assert!(matches!(outcome, ServeOutcome::Shutdown), "{outcome:?}");
        tx.write_all(b"{\"id\":\"late\",\"type\":\"get_state\"}\n")
            .unwrap();
        let late = tokio::time::timeout(Duration::from_secs(10), frames.recv())
            .await
            .expect("a line after shutdown is answered")
            .unwrap();
        assert_eq!(late["id"], "late");
        assert_eq!(late["success"], false);
        assert!(
            late["error"].as_str().unwrap().starts_with("Shutting down"),
            "{late}"
        );
    }

    #[tokio::test]
    async fn a_snapshot_response_written_by_the_service_is_not_written_twice() {
        let frames = serve_one(false).await;
        assert_eq!(frames.len(), 2, "{frames:#?}");
        assert_eq!(frames[0]["type"], "dashboard_snapshot_barrier");
        assert_eq!(frames[1]["type"], "response");
        assert_eq!(frames[1]["id"], "s1");
        assert_eq!(frames[1]["success"], true);
    }

    #[tokio::test]
    async fn a_failed_snapshot_is_answered_by_the_server() {
        let frames = serve_one(true).await;
        assert_eq!(frames.len(), 1, "{frames:#?}");
        assert_eq!(frames[0]["success"], false);
        assert_eq!(frames[0]["error"], "snapshot failed");
    }
}
