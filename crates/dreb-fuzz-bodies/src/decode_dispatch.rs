//! Fuzz body: arbitrary bytes as the stdin of the real serving loop ([`dreb_cli::serve`] over in-memory pipes)
//! with the real runtime and the offline `faux` provider, in a fresh temp agent dir and cwd per input.
//!
//! Checks: nothing panics (decode, dispatch, the runtime); serving ends within [`ITERATION_TIMEOUT`] after stdin
//! closes; stdout is whole lines, each valid JSON and a frame the spec defines
//! ([`dreb_spec_check::assert_frame`]); every input line gets exactly one response and no response is made up:
//! the multiset of response ids equals the ids the input lines predict (an undeliverable record or an
//! unparseable line: no id, unless the lenient parser recovers one; a request: its `id`), and an
//! `extension_ui_response` line gets none. Each error response [`decode`] builds is itself checked as a frame, and
//! each decoded request, serialised again, decodes to the same request.
//!
//! Lines whose command reaches outside the temp dirs are left out of stdin (and of the expectation): `bash` runs a
//! shell, `export_html` writes to any path, `import_jsonl` / `switch_session` / `delete_session` read, append to or
//! delete any file. Everything else runs, `prompt` included (the faux scenario calls the read-only `ls` tool on
//! the temp cwd; only `ls` is enabled).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;

use dreb_cli::{Output, OutputOptions, ServeOptions, serve};
use dreb_protocol::{Decoded, decode};
use dreb_runtime::{Runtime, RuntimeOptions};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::reference::segments;

/// Input line cap of the serving loop under fuzzing (small, so over-limit lines are reachable).
pub const MAX_RECORD_BYTES: usize = 1024;

/// Commands never run by the fuzzer: they reach files or processes outside the temp dirs.
pub const SKIPPED_COMMANDS: &[&str] = &[
    "bash",
    "export_html",
    "import_jsonl",
    "switch_session",
    "delete_session",
];

/// One input must be served, answered and drained within this (after its stdin closed); longer is a hang.
pub const ITERATION_TIMEOUT: Duration = Duration::from_secs(20);

/// How long in-flight commands may take to answer after stdin closed (the serving loop's grace period).
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

struct FuzzEnv {
    rt: tokio::runtime::Runtime,
    /// Temp HOME; each input gets its own agent dir and cwd below it.
    home: tempfile::TempDir,
}

fn env() -> &'static FuzzEnv {
    static ENV: OnceLock<FuzzEnv> = OnceLock::new();
    ENV.get_or_init(|| {
        let home = tempfile::Builder::new()
            .prefix("dreb-fuzz-")
            .tempdir()
            .expect("temp HOME");
        let packages = home.path().join("package");
        std::fs::create_dir_all(&packages).expect("temp package dir");
        // SAFETY: set once, before this module starts any thread of its own; nothing here reads the environment
        // through libc concurrently (std's accessors take the environment lock).
        unsafe {
            std::env::set_var("HOME", home.path());
            std::env::set_var("DREB_CODING_AGENT_DIR", home.path().join(".dreb/agent"));
            std::env::set_var("DREB_PACKAGE_DIR", &packages);
            std::env::set_var("DREB_RETRY_BASE_DELAY_MS", "1");
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        FuzzEnv { rt, home }
    })
}

/// What the input predicts: the stdin bytes to send (skipped commands left out) and the response ids, as JSON
/// text (`"-"` for no id), with their counts.
pub struct Expectation {
    pub stdin: Vec<u8>,
    pub responses: BTreeMap<String, usize>,
    pub lines: usize,
}

/// Decodes every line of `data` as the serving loop will, and says what it must answer.
pub fn expect(data: &[u8]) -> Expectation {
    let mut stdin = Vec::with_capacity(data.len());
    let mut responses = BTreeMap::new();
    let mut lines = 0;
    for seg in segments(data, MAX_RECORD_BYTES) {
        let id = match &seg.record {
            Err(_) => Some(None),
            Ok(line) => match decode(line) {
                Decoded::Input(_) => None,
                Decoded::Invalid(response) => {
                    let frame = serde_json::to_value(&response).expect("a response serialises");
                    dreb_spec_check::assert_frame(&frame);
                    Some(response.id)
                }
                Decoded::Request(request) => {
                    // What the server decoded, encoded again (as a client would send it), decodes the same.
                    let again = serde_json::to_string(&request).expect("a request serialises");
                    match decode(&again) {
                        Decoded::Request(back) if back == request => {}
                        other => panic!(
                            "{line:?} decodes to {request:?}, whose encoding {again:?} decodes to {other:?}"
                        ),
                    }
                    if SKIPPED_COMMANDS.contains(&request.command.name()) {
                        continue;
                    }
                    Some(request.id)
                }
            },
        };
        if let Some(id) = id {
            *responses.entry(id_key(id.as_ref())).or_insert(0) += 1;
        }
        lines += 1;
        stdin.extend_from_slice(seg.raw);
    }
    Expectation {
        stdin,
        responses,
        lines,
    }
}

fn id_key(id: Option<&Value>) -> String {
    match id {
        None => "-".into(),
        Some(v) => v.to_string(),
    }
}

/// The fuzz body (see the module doc).
pub fn decode_dispatch(data: &[u8]) {
    let want = expect(data);
    let env = env();
    let stdout = env.rt.block_on(async {
        match tokio::time::timeout(ITERATION_TIMEOUT, run(env.home.path(), want.stdin.clone()))
            .await
        {
            Ok(out) => out,
            Err(_) => panic!(
                "hang: not served and drained within {ITERATION_TIMEOUT:?} ({} input lines)",
                want.lines
            ),
        }
    });
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    let mut frames = stdout.split(|&b| b == b'\n').collect::<Vec<_>>();
    let tail = frames.pop().unwrap_or_default();
    assert!(
        tail.is_empty(),
        "stdout ends inside a line: {:?}",
        String::from_utf8_lossy(tail)
    );
    for line in frames {
        let frame: Value = serde_json::from_slice(line).unwrap_or_else(|e| {
            panic!(
                "stdout line is not JSON ({e}): {:?}",
                String::from_utf8_lossy(line)
            )
        });
        dreb_spec_check::assert_frame(&frame);
        if frame["type"] == "response" {
            *got.entry(id_key(frame.get("id"))).or_insert(0) += 1;
        }
    }
    assert_eq!(
        got, want.responses,
        "responses (by id: count) differ from one per input line ({} lines)",
        want.lines
    );
}

/// Serves `stdin` with a fresh runtime in a fresh temp agent dir and cwd; returns all of stdout.
async fn run(home: &Path, stdin: Vec<u8>) -> Vec<u8> {
    let dir = tempfile::tempdir_in(home).expect("temp dir");
    let (agent_dir, cwd) = (dir.path().join("agent"), dir.path().join("project"));
    for d in [&agent_dir, &cwd] {
        std::fs::create_dir_all(d).expect("temp dir");
    }
    let (mut host_in, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, mut host_out) = tokio::io::duplex(1 << 16);
    let (output, _writer) = Output::start(server_out, OutputOptions::default());
    let stop = CancellationToken::new();
    let runtime = Runtime::start(
        runtime_options(agent_dir, cwd, stop.clone()),
        Arc::new(output.clone()),
    )
    .expect("the faux runtime starts");
    let dialogs = runtime.clone();
    let router = Arc::new(move |input: dreb_protocol::Input| dialogs.handle_input(&input));
    let options = ServeOptions {
        max_record_bytes: MAX_RECORD_BYTES,
        shutdown_grace: SHUTDOWN_GRACE,
        children_timeout: Duration::from_secs(1),
        ..ServeOptions::default()
    };
    let feeder = tokio::spawn(async move {
        let _ = host_in.write_all(&stdin).await;
        let _ = host_in.shutdown().await;
    });
    // As `main` does after serving: settle dialogs and runs, then drain stdout.
    let served = async {
        serve(
            Arc::new(runtime.clone()),
            router,
            server_in,
            output.clone(),
            runtime.outbox(),
            options.clone(),
            std::future::pending::<()>(),
            stop,
        )
        .await;
        runtime.shutdown();
        runtime.wait_for_run_end(options.children_timeout).await;
        runtime.wait_for_children(options.children_timeout).await;
        output.flush().await;
    };
    tokio::pin!(served);
    let mut out = Vec::new();
    let mut done = false;
    while !done {
        tokio::select! {
            _ = &mut served => done = true,
            n = host_out.read_buf(&mut out) => if n.unwrap_or(0) == 0 { break },
        }
    }
    feeder.abort();
    // Everything queued before the flush is written; take what is in the pipe without waiting for more (a
    // runtime task may still hold the writer open). Unconstrained: this task may have spent its coop budget serving,
    // and a duplex read then returns `Pending` although bytes are there.
    tokio::task::unconstrained(drain_ready(&mut host_out, &mut out)).await;
    out
}

/// Reads what `r` has ready now, without waiting (run it unconstrained by the coop budget).
async fn drain_ready<R: AsyncRead + Unpin>(r: &mut R, out: &mut Vec<u8>) {
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = std::future::poll_fn(|cx| {
            let mut buf = ReadBuf::new(&mut chunk);
            match Pin::new(&mut *r).poll_read(cx, &mut buf) {
                Poll::Ready(Ok(())) => Poll::Ready(buf.filled().len()),
                Poll::Ready(Err(_)) | Poll::Pending => Poll::Ready(0),
            }
        })
        .await;
        if n == 0 {
            return;
        }
        out.extend_from_slice(&chunk[..n]);
    }
}

fn runtime_options(agent_dir: PathBuf, cwd: PathBuf, stop: CancellationToken) -> RuntimeOptions {
    RuntimeOptions {
        cwd,
        agent_dir,
        provider: Some("faux".into()),
        model: None,
        thinking: None,
        api_key: None,
        no_session: false,
        session: None,
        session_dir: None,
        parent_session: None,
        agent_type: None,
        subagent_binary: None,
        system_prompt: None,
        append_system_prompt: None,
        tools: Some(vec!["ls".into()]),
        models: None,
        providers: None,
        stop,
        ui: None,
        ..Default::default()
    }
}
