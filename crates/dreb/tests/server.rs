//! The serving loop against a test service, over in-memory pipes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use dreb_cli::{InputRouter, Output, ServeOptions, ServeOutcome, serve};
use dreb_protocol::support::RequestContext;
use dreb_protocol::{BashResult, Command, CommandService, Input, ResponseData, VersionResult};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// `bash` blocks until `abort` is called or serving stops; everything else answers at once.
struct TestService {
    release: Notify,
    stop: CancellationToken,
}

impl CommandService for TestService {
    async fn call(&self, _ctx: &RequestContext, command: Command) -> Result<ResponseData, String> {
        match command {
            Command::GetVersion(_) => Ok(ResponseData::GetVersion(VersionResult {
                version: "9.9.9".into(),
            })),
            Command::Abort(_) => {
                self.release.notify_waiters();
                Ok(ResponseData::Abort)
            }
            Command::Bash(p) => {
                let cancelled = tokio::select! {
                    _ = self.release.notified() => true,
                    _ = self.stop.cancelled() => true,
                };
                Ok(ResponseData::Bash(BashResult {
                    output: format!("ran {}", p.command),
                    exit_code: None,
                    cancelled,
                    truncated: false,
                    full_output_path: None,
                }))
            }
            other => Err(format!("not served by the test service: {}", other.name())),
        }
    }
}

struct Harness {
    stdin: DuplexStream,
    stdout: DuplexStream,
    inputs: Arc<Mutex<Vec<Input>>>,
    server: tokio::task::JoinHandle<ServeOutcome>,
    stop: CancellationToken,
    /// Bytes read from stdout and not yet returned as frames.
    pending: Vec<u8>,
}

fn start(options: ServeOptions) -> Harness {
    let (stdin, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, stdout) = tokio::io::duplex(1 << 16);
    let stop = CancellationToken::new();
    let service = Arc::new(TestService {
        release: Notify::new(),
        stop: stop.clone(),
    });
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let seen = inputs.clone();
    let router: Arc<dyn InputRouter> = Arc::new(move |i: Input| seen.lock().unwrap().push(i));
    let (output, _writer) = Output::start(server_out, dreb_cli::OutputOptions::default());
    let shutdown = std::future::pending::<()>();
    let server = tokio::spawn(serve(
        service,
        router,
        server_in,
        output.clone(),
        dreb_protocol::Outbox::new(Arc::new(output)),
        options,
        shutdown,
        stop.clone(),
    ));
    Harness {
        stdin,
        stdout,
        inputs,
        server,
        stop,
        pending: Vec::new(),
    }
}

impl Harness {
    async fn send(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).await.unwrap();
    }

    /// The next `n` frames from stdout.
    async fn frames(&mut self, n: usize) -> Vec<Value> {
        let mut chunk = [0u8; 4096];
        let mut out = Vec::new();
        while out.len() < n {
            if let Some(pos) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=pos).collect();
                let frame = serde_json::from_slice(&line[..line.len() - 1]).unwrap();
                dreb_spec_check::assert_frame(&frame);
                out.push(frame);
                continue;
            }
            let k = tokio::time::timeout(Duration::from_secs(10), self.stdout.read(&mut chunk))
                .await
                .unwrap()
                .unwrap();
            assert!(k > 0, "stdout closed after {} frames", out.len());
            self.pending.extend_from_slice(&chunk[..k]);
        }
        out
    }
}

#[tokio::test]
async fn every_command_line_gets_exactly_one_response_and_eof_processes_the_last_unterminated_line()
{
    let mut h = start(ServeOptions::default());
    h.send(b"not json\n\n[1]\n{\"id\":7,\"type\":\"nope\"}\n{\"id\":\"b\",\"type\":\"bash\"}\n")
        .await;
    h.send(b"{\"type\":\"extension_ui_response\",\"id\":\"u1\",\"value\":\"x\"}\r\n")
        .await;
    h.send(b"{\"id\":\"v\",\"type\":\"get_version\"}").await;
    h.stdin.shutdown().await.unwrap();
    let frames = h.frames(6).await;
    assert_eq!(frames.len(), 6, "{frames:#?}");
    assert_eq!(frames[0]["command"], "parse");
    assert!(
        frames[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("Failed to parse JSON: ")
    );
    assert!(frames[0].get("id").is_none());
    assert_eq!(frames[1]["command"], "parse");
    assert_eq!(
        frames[2],
        json!({"type":"response","success":false,"error":"Unknown command: undefined"})
    );
    assert_eq!(
        frames[3],
        json!({"id":7,"type":"response","command":"nope","success":false,"error":"Unknown command: nope"})
    );
    assert_eq!(frames[4]["id"], "b");
    assert!(
        frames[4]["error"].as_str().unwrap().contains("command"),
        "names the missing field: {}",
        frames[4]
    );
    assert_eq!(
        frames[5],
        json!({"id":"v","type":"response","command":"get_version","success":true,"data":{"version":"9.9.9"}})
    );
    assert_eq!(h.inputs.lock().unwrap().len(), 1);
    assert!(matches!(h.server.await.unwrap(), ServeOutcome::Eof));
}

#[tokio::test]
async fn a_slow_command_blocks_nothing_and_abort_releases_it() {
    let mut h = start(ServeOptions::default());
    h.send(b"{\"id\":1,\"type\":\"bash\",\"command\":\"sleep 100\"}\n{\"id\":2,\"type\":\"get_version\"}\n").await;
    let first = h.frames(1).await;
    assert_eq!(first[0]["id"], 2, "get_version answered while bash runs");
    h.send(b"{\"id\":3,\"type\":\"abort\"}\n").await;
    let frames = h.frames(2).await;
    let ids: Vec<_> = frames.iter().map(|f| f["id"].clone()).collect();
    assert!(
        ids.contains(&json!(1)) && ids.contains(&json!(3)),
        "{frames:#?}"
    );
    let bash = frames.iter().find(|f| f["id"] == 1).unwrap();
    assert_eq!(bash["data"]["cancelled"], true);
    h.stdin.shutdown().await.unwrap();
    assert_eq!(h.server.await.unwrap().exit_code(), 0);
}

#[tokio::test]
async fn eof_cancels_running_work_which_still_answers_before_exit() {
    let mut h = start(ServeOptions::default());
    h.send(b"{\"id\":\"slow\",\"type\":\"bash\",\"command\":\"sleep 100\"}\n")
        .await;
    tokio::task::yield_now().await;
    h.stdin.shutdown().await.unwrap();
    let frames = h.frames(1).await;
    assert_eq!(frames[0]["id"], "slow");
    assert_eq!(frames[0]["data"]["cancelled"], true);
    assert!(h.stop.is_cancelled());
    assert!(matches!(h.server.await.unwrap(), ServeOutcome::Eof));
}

#[tokio::test]
async fn invalid_utf8_and_oversized_lines_get_one_error_each_and_serving_continues() {
    let mut h = start(ServeOptions {
        max_record_bytes: 1024,
        ..Default::default()
    });
    h.send(b"{\"type\":\"get_version\",\"x\":\"\xff\xfe\"}\n")
        .await;
    let mut big = vec![b'a'; 5000];
    big.push(b'\n');
    h.send(&big).await;
    h.send(b"{\"id\":\"after\",\"type\":\"get_version\"}\n")
        .await;
    h.stdin.shutdown().await.unwrap();
    let frames = h.frames(3).await;
    assert_eq!(frames.len(), 3);
    assert!(
        frames[0]["error"]
            .as_str()
            .unwrap()
            .contains("not valid UTF-8"),
        "{}",
        frames[0]
    );
    assert!(
        frames[1]["error"]
            .as_str()
            .unwrap()
            .contains("maximum record size of 1024 bytes"),
        "{}",
        frames[1]
    );
    assert_eq!(frames[2]["id"], "after");
    assert_eq!(frames[2]["success"], true);
}

/// `compact` runs until the test releases it (it ignores the stop token, like work that takes a moment to wind down).
struct WindDownService {
    started: Arc<Notify>,
    release: Arc<Notify>,
}

impl CommandService for WindDownService {
    async fn call(&self, _ctx: &RequestContext, command: Command) -> Result<ResponseData, String> {
        match command {
            Command::Compact(_) => {
                self.started.notify_one();
                self.release.notified().await;
                Err("compaction stopped".into())
            }
            other => Err(format!("not served by the test service: {}", other.name())),
        }
    }
}

#[tokio::test]
async fn commands_read_after_shutdown_began_are_refused_not_run() {
    let (mut stdin, server_in) = tokio::io::duplex(1 << 16);
    let (server_out, stdout) = tokio::io::duplex(1 << 16);
    let release = Arc::new(Notify::new());
    let started = Arc::new(Notify::new());
    let service = Arc::new(WindDownService {
        started: started.clone(),
        release: release.clone(),
    });
    let inputs = Arc::new(Mutex::new(Vec::new()));
    let seen = inputs.clone();
    let router: Arc<dyn InputRouter> = Arc::new(move |i: Input| seen.lock().unwrap().push(i));
    let (output, _writer) = Output::start(server_out, dreb_cli::OutputOptions::default());
    let begin_shutdown = Arc::new(Notify::new());
    let shutdown = {
        let begin = begin_shutdown.clone();
        async move { begin.notified().await }
    };
    let stop = CancellationToken::new();
    let server = tokio::spawn(serve(
        service,
        router,
        server_in,
        output.clone(),
        dreb_protocol::Outbox::new(Arc::new(output)),
        ServeOptions::default(),
        shutdown,
        stop.clone(),
    ));
    let mut h = Harness {
        stdin: tokio::io::duplex(1).0,
        stdout,
        inputs: inputs.clone(),
        server: tokio::spawn(async { ServeOutcome::Eof }),
        stop: stop.clone(),
        pending: Vec::new(),
    };
    stdin
        .write_all(b"{\"id\":\"c\",\"type\":\"compact\"}\n")
        .await
        .unwrap();
    // Shutdown begins while `compact` is still running.
    started.notified().await;
    while !stop.is_cancelled() {
        begin_shutdown.notify_one();
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stdin
        .write_all(b"{\"id\":\"late\",\"type\":\"get_state\"}\n{\"type\":\"extension_ui_response\",\"id\":\"d1\",\"cancelled\":true}\nnot json\n")
        .await
        .unwrap();
    let frames = h.frames(2).await;
    assert_eq!(
        frames[0],
        json!({"id": "late", "type": "response", "command": "get_state", "success": false,
               "error": "Shutting down: get_state was not run"})
    );
    assert_eq!(frames[1]["command"], "parse");
    assert_eq!(
        inputs.lock().unwrap().len(),
        1,
        "dialog answers are still routed"
    );
    release.notify_one();
    let last = h.frames(1).await;
    assert_eq!(last[0]["id"], "c");
    assert_eq!(
        last[0]["error"], "compaction stopped",
        "in-flight work still answers"
    );
    assert!(matches!(server.await.unwrap(), ServeOutcome::Shutdown));
}
