//! The serving loop: stdin read by the loop itself, each command on its own task (except a few that answer at once
//! from memory), responses and events through one [`Outbox`] in front of the [`Output`] writer. The lines one read
//! brought are answered in one go with stdout corked ([`Output::cork`]), so their responses leave in one write.
//! Once they are answered and written, the loop reads stdin without the runtime for a moment (at most
//! [`ServeOptions::input_poll_for`]) before it parks, so a host that sends its next command at once does not pay
//! for waking it up.
//!
//! Each command's [`Lane`] (from `dreb-protocol`) decides how it runs: state changes take their turn in arrival
//! order (so pipelined `set_*` calls and session switches apply in the order sent), while aborts, `get_state` and
//! other independent reads run at once beside them, so a slow command never blocks `abort`, `get_state` or an
//! `extension_ui_response`. Every command line gets exactly one response. At stdin EOF or a termination signal
//! the server cancels running work, gives in-flight commands a grace period to answer, flushes stdout and returns.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use dreb_protocol::framing::{DEFAULT_MAX_RECORD_BYTES, JsonlReader, RecordError};
use dreb_protocol::{
    CommandService, Decoded, Input, Lane, Outbox, Request, Response, Sequencer, Ticket, decode,
    envelope::fill, error_text, serve_request,
};
use tokio::io::AsyncRead;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::output::Output;
use crate::stdio::InputPoll;

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
    /// stdin read without the runtime for up to [`ServeOptions::input_poll_for`] after the lines of a read are
    /// answered, before the loop parks (see [`serve`]). `None`: never.
    pub input_poll: Option<InputPoll>,
    /// How long to poll stdin after answering; zero: never.
    pub input_poll_for: Duration,
}

/// How long the loop polls stdin after answering, by default.
pub const INPUT_POLL_FOR: Duration = Duration::from_micros(50);

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            shutdown_grace: Duration::from_secs(3),
            children_timeout: Duration::from_secs(5),
            input_poll: None,
            input_poll_for: INPUT_POLL_FOR,
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

type Record = std::io::Result<Option<Result<String, RecordError>>>;

/// The most lines answered in one go from what one read (and the polls after it) brought (see [`serve`]); then the
/// loop looks at its other events again.
const BURST: usize = 64;

/// The next input line. A host that writes commands without reading the answers is paced like the agent loop:
/// the next line is read once stdout is back within its budget.
async fn next_line<R: AsyncRead + Unpin>(reader: &mut JsonlReader<R>, output: &Output) -> Record {
    if !output.within_budget() {
        output.ready().await;
    }
    reader.next_record().await
}

/// The next line if the host sends one within `budget`: stdin read without the runtime, yielding the CPU between
/// reads (a host on the same CPU gets to run). `None` when nothing complete came in time, at the end of input or on
/// an error (the loop's reader then finds them as usual; bytes of a partial line stay with `reader`).
///
/// Why: parking in the event loop between a response and the next request costs a wake-up of a halted CPU per
/// request, which on a quiet virtual machine is most of a sequential round trip. The poll runs only right after
/// lines were answered, never while idle, so its cost is bounded by `budget` per burst of input.
fn poll_input<R: AsyncRead + Unpin>(
    input: &InputPoll,
    reader: &mut JsonlReader<R>,
    budget: Duration,
) -> Option<Option<Result<String, RecordError>>> {
    if budget.is_zero() {
        return None;
    }
    let start = std::time::Instant::now();
    let mut buf = [0u8; 8192];
    loop {
        match input.read_now(&mut buf) {
            Ok(0) => return None,
            Ok(n) => {
                reader.push_bytes(&buf[..n]);
                if let Some(record) = reader.next_buffered() {
                    return Some(record);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if start.elapsed() >= budget {
                    return None;
                }
                std::thread::yield_now();
            }
            Err(_) => return None,
        }
    }
}

/// Handle one request; its response goes through `outbox` (written by the handler or after it).
async fn answer<S: CommandService + 'static>(
    service: Arc<S>,
    outbox: Outbox,
    request: Request,
    ticket: Option<Ticket>,
) {
    serve_request(&*service, request, &outbox, ticket).await;
}

/// Poll `future` once with the current task's waker.
async fn poll_once<F: Future + ?Sized>(mut future: Pin<&mut F>) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
}

/// Serve `service` until stdin ends, `shutdown` completes, or the stdout reader stalls. Every frame goes through `outbox`
/// (the same one the service writes its events to); `output` is the writer behind it, drained before returning.
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
    // The loop reads stdin itself (no reader task between the pipe and the dispatch); `next_record` is cancel
    // safe, so the other branches may win the race at any time.
    let mut reader = JsonlReader::with_max_record_bytes(input, options.max_record_bytes);
    let stalled = output.stalled();
    let mut tasks: JoinSet<()> = JoinSet::new();
    let sequencer = Sequencer::new();
    tokio::pin!(shutdown);

    let outcome = 'serve: loop {
        tokio::select! {
            biased;
            _ = stalled.cancelled() => break ServeOutcome::OutputStalled,
            _ = &mut shutdown => break ServeOutcome::Shutdown,
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                if let Err(e) = done {
                    tracing::error!("command task failed: {e}");
                }
            }
            record = next_line(&mut reader, &output) => {
                let mut record = record;
                // Lines answered in this turn of the loop (then the other branches get their look).
                let mut answered = 0;
                loop {
                    // This line and the ones that came with it are answered with stdout corked: their responses
                    // leave together when the cork ends, in one write.
                    let cork = output.cork();
                    let mut spawned = false;
                    let drained = loop {
                        match record {
                            Ok(None) => break 'serve ServeOutcome::Eof,
                            Err(e) => break 'serve ServeOutcome::InputError(e),
                            Ok(Some(line)) => {
                                spawned |= take_line(line, &service, &*router, &outbox, &sequencer, &mut tasks).await
                            }
                        }
                        answered += 1;
                        if answered >= BURST || !output.within_budget() {
                            break false;
                        }
                        match reader.next_buffered() {
                            Some(next) => record = Ok(next),
                            None => break true,
                        }
                    };
                    drop(cork);
                    // Everything read is answered and written: a host that sends its next command as soon as it
                    // has the answers finds the loop still awake (see `poll_input`). Not when a command still runs
                    // on a task or a frame waits for the writer task: the host waits for those, and the task may be
                    // queued behind this loop on this thread.
                    if !drained || spawned || output.queued_bytes() > 0 {
                        break;
                    }
                    let polled = options
                        .input_poll
                        .as_ref()
                        .and_then(|input| poll_input(input, &mut reader, options.input_poll_for));
                    match polled {
                        Some(next) => record = Ok(next),
                        None => break,
                    }
                }
            }
        }
    };

    tracing::debug!(?outcome, in_flight = tasks.len(), "shutting down");
    stop.cancel();
    // While in-flight commands wind down, lines still arriving are answered, not run.
    let mut input_open = !matches!(outcome, ServeOutcome::Eof | ServeOutcome::InputError(_));
    if tokio::time::timeout(options.shutdown_grace, async {
        loop {
            tokio::select! {
                done = tasks.join_next() => if done.is_none() { break },
                record = next_line(&mut reader, &output), if input_open => match record {
                    Ok(Some(Ok(line))) => refuse_while_shutting_down(&line, &outbox, &*router),
                    Ok(Some(Err(record_error))) => send_parse_error(&outbox, &record_error),
                    Err(_) | Ok(None) => input_open = false,
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

/// One input line while serving: a command is answered (an immediate one right here, the others on a task of their
/// own), other input is routed, anything else gets its error response. Returns whether the line left a command
/// running on a task.
async fn take_line<S: CommandService + 'static>(
    line: Result<String, RecordError>,
    service: &Arc<S>,
    router: &dyn InputRouter,
    outbox: &Outbox,
    sequencer: &Sequencer,
    tasks: &mut JoinSet<()>,
) -> bool {
    let line = match line {
        Ok(line) => line,
        Err(record_error) => {
            send_parse_error(outbox, &record_error);
            return false;
        }
    };
    match decode(&line) {
        Decoded::Request(request) => {
            let lane = request.command.lane();
            // Taken here, on the reading task: tickets are handed out in arrival order.
            let ticket = (lane != Lane::Concurrent).then(|| sequencer.ticket());
            let job = answer(service.clone(), outbox.clone(), request, ticket);
            if lane == Lane::Immediate {
                // Polled once right here: a task hand-off would cost more than the command. Should it wait on
                // anything after all, it continues on its own task.
                let mut job = Box::pin(job);
                if poll_once(job.as_mut()).await.is_pending() {
                    tasks.spawn(job);
                    return true;
                }
                false
            } else {
                tasks.spawn(job);
                true
            }
        }
        Decoded::Input(input) => {
            router.route(input);
            false
        }
        Decoded::Invalid(response) => {
            outbox.send(&response);
            false
        }
    }
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

    /// Lines the loop takes by polling stdin after answering (whole, in parts, several at once) are answered like
    /// any other, and the end of input still ends serving.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lines_polled_after_answering_are_answered_and_eof_still_ends_serving() {
        use std::io::{BufRead, Write};
        use std::os::fd::OwnedFd;
        let (rx, mut tx) = std::io::pipe().unwrap();
        let (out_rx, out_tx) = std::io::pipe().unwrap();
        let reader = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(rx)).unwrap();
        let poll = InputPoll::of_non_blocking(
            std::os::fd::AsFd::as_fd(&reader)
                .try_clone_to_owned()
                .unwrap(),
        )
        .expect("the receiver is non-blocking");
        let probe = crate::pipe_space::PipeSpace::new(
            std::os::fd::AsFd::as_fd(&out_tx)
                .try_clone_to_owned()
                .unwrap(),
        );
        assert!(probe.is_some());
        let writer = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(out_tx)).unwrap();
        // With the pipe probe, as for a real stdout pipe: responses are written by the loop itself.
        let options = crate::output::OutputOptions {
            pipe: probe,
            ..crate::output::OutputOptions::default()
        };
        let (output, _writer) = Output::start(writer, options);
        let outbox = outbox_of(&output);
        let service = Arc::new(StateService);
        let router: Arc<dyn InputRouter> = Arc::new(|_i: dreb_protocol::Input| {});
        let options = ServeOptions {
            input_poll: Some(poll),
            // Long enough that the lines below arrive while the loop polls.
            input_poll_for: Duration::from_millis(300),
            ..ServeOptions::default()
        };
        let server = tokio::spawn(serve(
            service,
            router,
            reader,
            output,
            outbox,
            options,
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
            tx.write_all(b"{\"id\":2,\"type\":\"get_state\"}\n")
                .unwrap();
            assert_eq!(next_id(), 2);
            tx.write_all(b"{\"id\":3,\"type\":\"get_").unwrap();
            std::thread::sleep(Duration::from_millis(20));
            tx.write_all(b"state\"}\n{\"id\":4,\"type\":\"get_state\"}\n{\"id\":5,")
                .unwrap();
            tx.write_all(b"\"type\":\"nope\"}\n").unwrap();
            let ids: Vec<_> = (0..3).map(|_| next_id()).collect();
            assert_eq!(ids, [3, 4, 5]);
            // A command that runs on a task of its own is answered too (the loop does not poll after it).
            tx.write_all(b"{\"id\":6,\"type\":\"get_version\"}\n")
                .unwrap();
            assert_eq!(next_id(), 6);
            drop(tx);
        });
        host.await.unwrap();
        let outcome = tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("serving ended at the end of input")
            .unwrap();
        assert!(matches!(outcome, ServeOutcome::Eof), "{outcome:?}");
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
