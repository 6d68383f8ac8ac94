//! Extension processes and the protocol over their stdin/stdout: a [`Process`] (its own extension's, or the Node
//! extension host's, multiplexing the JavaScript extensions of a session by `channel`), and a [`Connection`] per
//! extension: typed calls with their pending answers, events, and the commands the extension sends, each served on
//! its own task and answered.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dreb_extension_protocol::{CallSpec, Command, ResponseData};
use dreb_protocol::framing::{JsonlReader, encode_frame};
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::error::ExtensionError;

/// The longest line an extension may write (a tool result with images fits; anything longer is dropped).
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How long an event may wait for the extension's stdin.
const EVENT_WRITE_LIMIT: Duration = Duration::from_secs(1);

/// A frame being written; dropped before it is done, it closes stdin (see [`Connection::write`]).
struct Unfinished<'a, 'g> {
    slot: &'a mut tokio::sync::MutexGuard<'g, Option<ChildStdin>>,
    done: bool,
}

impl Drop for Unfinished<'_, '_> {
    fn drop(&mut self) {
        if !self.done {
            **self.slot = None;
        }
    }
}

/// Serves the commands an extension sends (the runtime's agent API). Each command runs on its own task.
#[async_trait::async_trait]
pub trait CommandServer: Send + Sync {
    async fn serve(&self, command: Command) -> Result<ResponseData, String>;
}

type Answer = Result<Option<Value>, ExtensionError>;

/// Told once, with the reason, when a connection closes.
pub type OnExit = Box<dyn FnOnce(String) + Send>;

/// One child process and its stdin/stdout. Its frames go to one [`Connection`] or, when it is multiplexed (the
/// Node extension host serving every JavaScript extension of a session), to the connection named by each frame's
/// `channel` (see `protocol/extension.yaml`, the envelope).
pub struct Process {
    label: String,
    multiplexed: bool,
    /// Written by whoever sends (no writer task to hand frames to); `None` once closed.
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    child: tokio::sync::Mutex<Option<Child>>,
    /// Cancelled when the process's stdout closed (it exited or crashed).
    closed: CancellationToken,
    /// Why it closed (`Extension process exited (...)`), once it has.
    exit: Mutex<Option<String>>,
    /// Its open connections, by channel (`""`: the one connection of a process that is not multiplexed).
    channels: Mutex<HashMap<String, Arc<Connection>>>,
    next_channel: AtomicU64,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("label", &self.label)
            .finish()
    }
}

impl Process {
    /// Start `program args` in `cwd`; `label` names it in the log. `multiplexed`: its frames carry a `channel`.
    pub fn spawn(
        label: &str,
        program: &std::path::Path,
        args: &[String],
        cwd: &std::path::Path,
        multiplexed: bool,
    ) -> Result<Arc<Process>, ExtensionError> {
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                ExtensionError::Spawn(format!("cannot start {}: {e}", program.display()))
            })?;
        let (stdin, stdout, stderr) = (
            child.stdin.take().expect("piped"),
            child.stdout.take().expect("piped"),
            child.stderr.take().expect("piped"),
        );
        let process = Arc::new(Process {
            label: label.to_string(),
            multiplexed,
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            child: tokio::sync::Mutex::new(Some(child)),
            closed: CancellationToken::new(),
            exit: Mutex::new(None),
            channels: Mutex::new(HashMap::new()),
            next_channel: AtomicU64::new(1),
        });
        let log_label = label.to_string();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(target: "extension", "[{log_label}] {line}");
            }
        });
        let reader = process.clone();
        tokio::spawn(async move {
            reader.read_loop(stdout).await;
            reader.reap().await;
        });
        Ok(process)
    }

    /// Whether the process is gone.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// A new connection over this process: the only one of a process that is not multiplexed, a new channel of
    /// one that is. `server` answers its commands; `on_exit` is told once, with the reason, when it closes.
    pub fn open(
        self: &Arc<Self>,
        path: &str,
        server: Arc<dyn CommandServer>,
        on_exit: OnExit,
    ) -> Result<Arc<Connection>, ExtensionError> {
        let channel = if self.multiplexed {
            self.next_channel
                .fetch_add(1, Ordering::Relaxed)
                .to_string()
        } else {
            String::new()
        };
        let conn = Arc::new(Connection {
            path: path.to_string(),
            process: self.clone(),
            channel: channel.clone(),
            server,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: CancellationToken::new(),
            exit: Mutex::new(None),
            on_exit: Mutex::new(Some(on_exit)),
        });
        let mut channels = lock(&self.channels);
        // The reaper sets `exit` before it takes the channels: a connection added after that would never close.
        if let Some(reason) = lock(&self.exit).clone() {
            return Err(ExtensionError::Exited(reason));
        }
        channels.insert(channel, conn.clone());
        Ok(conn)
    }

    /// Write one frame (frames never interleave: the lock is held for the whole frame). A failed write closes
    /// stdin; the reader then sees the process go.
    ///
    /// A write given up half way (its future dropped: a timeout, a cancelled call) may have left part of a frame
    /// in the pipe, so it closes stdin too: the stream is never corrupt, and the extension is started again on
    /// its next use.
    async fn write(&self, bytes: &[u8]) {
        let mut slot = self.stdin.lock().await;
        let mut write = Unfinished {
            slot: &mut slot,
            done: false,
        };
        if let Some(stdin) = write.slot.as_mut()
            && (stdin.write_all(bytes).await.is_err() || stdin.flush().await.is_err())
        {
            **write.slot = None;
        }
        write.done = true;
    }

    async fn read_loop(self: &Arc<Self>, stdout: tokio::process::ChildStdout) {
        let mut reader = JsonlReader::with_max_record_bytes(stdout, MAX_LINE_BYTES);
        loop {
            let record = match reader.next_record().await {
                Ok(Some(r)) => r,
                Ok(None) | Err(_) => return,
            };
            let line = match record {
                Ok(line) => line,
                Err(e) => {
                    tracing::warn!("[{}] dropped a line: {e}", self.label);
                    continue;
                }
            };
            let mut frame = match serde_json::from_str::<Value>(&line) {
                Ok(Value::Object(map)) => map,
                Ok(_) | Err(_) => {
                    tracing::warn!("[{}] dropped a line that is not a JSON object", self.label);
                    continue;
                }
            };
            let channel = if self.multiplexed {
                match frame.remove("channel") {
                    Some(Value::String(c)) => c,
                    _ => {
                        tracing::warn!("[{}] dropped a frame without a channel", self.label);
                        continue;
                    }
                }
            } else {
                String::new()
            };
            let conn = lock(&self.channels).get(&channel).cloned();
            match conn {
                Some(conn) => conn.route(frame).await,
                None => tracing::debug!(
                    "[{}] dropped a frame for no open channel ({channel})",
                    self.label
                ),
            }
        }
    }

    /// After stdout closed: wait for the process (killed if it does not exit), then close every connection.
    async fn reap(&self) {
        let status = {
            let mut child = self.child.lock().await;
            let status = match child.as_mut() {
                Some(c) => match tokio::time::timeout(Duration::from_secs(2), c.wait()).await {
                    Ok(Ok(status)) => status.to_string(),
                    Ok(Err(e)) => e.to_string(),
                    Err(_) => {
                        let _ = c.kill().await;
                        "killed: stdout closed but the process did not exit".to_string()
                    }
                },
                None => "stopped".to_string(),
            };
            *child = None;
            status
        };
        let reason = format!("Extension process exited ({status})");
        *lock(&self.exit) = Some(reason.clone());
        self.closed.cancel();
        let channels: Vec<_> = lock(&self.channels).drain().map(|(_, c)| c).collect();
        for conn in channels {
            conn.close(&reason);
        }
    }

    /// Close the process's stdin and wait (at most `grace`) for it to exit; kill it otherwise.
    pub async fn stop(&self, grace: Duration) {
        // Closing stdin is the process's signal to exit.
        if let Some(mut stdin) = self.stdin.lock().await.take() {
            let _ = stdin.shutdown().await;
        }
        if tokio::time::timeout(grace, self.closed.cancelled())
            .await
            .is_ok()
        {
            return;
        }
        // Still running with its stdin closed (the reaper has not started, so the lock is free).
        if let Ok(mut child) = self.child.try_lock()
            && let Some(c) = child.as_mut()
        {
            let _ = c.kill().await;
        }
        let _ = tokio::time::timeout(Duration::from_secs(3), self.closed.cancelled()).await;
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One extension's conversation: over its own process, or over a channel of a multiplexed one.
pub struct Connection {
    path: String,
    process: Arc<Process>,
    /// `""` over a process of its own; else the `channel` of every frame.
    channel: String,
    server: Arc<dyn CommandServer>,
    pending: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    next_id: AtomicU64,
    /// Cancelled when it closed (its process exited, or it was stopped).
    closed: CancellationToken,
    /// Why it closed, once it has.
    exit: Mutex<Option<String>>,
    on_exit: Mutex<Option<OnExit>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("path", &self.path)
            .field("channel", &self.channel)
            .finish()
    }
}

impl Connection {
    /// Start `program args` in `cwd` as a process of its own and speak the protocol to it. `server` answers its
    /// commands; `on_exit` is told once, with the reason, when its stdout closes.
    pub fn spawn(
        path: &str,
        program: &std::path::Path,
        args: &[String],
        cwd: &std::path::Path,
        server: Arc<dyn CommandServer>,
        on_exit: OnExit,
    ) -> Result<Arc<Connection>, ExtensionError> {
        Process::spawn(path, program, args, cwd, false)?.open(path, server, on_exit)
    }

    /// The extension's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether it is closed (its process is gone, or it was stopped).
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// A frame encoded by this side, with its `channel` when the process is multiplexed.
    fn framed(&self, mut bytes: Vec<u8>) -> Vec<u8> {
        if !self.channel.is_empty() && bytes.first() == Some(&b'{') {
            let tag = format!("\"channel\":\"{}\",", self.channel);
            bytes.splice(1..1, tag.into_bytes());
        }
        bytes
    }

    async fn write(&self, bytes: Vec<u8>) {
        self.process.write(&self.framed(bytes)).await;
    }

    /// Send a call and wait for its answer: at most `timeout`, and until `cancel` fires. When the runtime stops
    /// waiting (timeout, cancel) the extension is sent `cancel` for it.
    pub async fn call<C: CallSpec>(
        &self,
        params: C,
        timeout: Option<Duration>,
        cancel: Option<&CancellationToken>,
    ) -> Result<C::Output, ExtensionError> {
        if let Some(reason) = self.exit_reason() {
            return Err(ExtensionError::Exited(reason));
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed).to_string();
        let id_value = Value::String(id.clone());
        let call = params.into_call();
        let mut bytes = Vec::new();
        call.serialize_with_id(
            Some(&id_value),
            &mut serde_json::Serializer::new(&mut bytes),
        )
        .map_err(|e| ExtensionError::Protocol(format!("cannot encode {}: {e}", C::NAME)))?;
        bytes.push(b'\n');
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        let never = CancellationToken::new();
        let cancel = cancel.unwrap_or(&never);
        // The write is inside the wait: an extension that stops reading its stdin cannot hold a call past its
        // timeout or its cancel.
        let answer = tokio::select! {
            answer = async { self.write(bytes).await; rx.await } => answer.unwrap_or_else(|_| Err(ExtensionError::Exited(self.exit_reason().unwrap_or_default()))),
            _ = sleep_or_forever(timeout) => {
                self.forget(&id).await;
                Err(ExtensionError::Timeout(timeout.unwrap_or_default()))
            }
            _ = cancel.cancelled() => {
                self.forget(&id).await;
                Err(ExtensionError::Cancelled)
            }
        };
        let data = answer?;
        serde_json::from_value(data.unwrap_or(Value::Null))
            .map_err(|e| ExtensionError::Protocol(format!("invalid {} result: {e}", C::NAME)))
    }

    /// Send an event (no answer).
    pub async fn notify(&self, event: &dreb_extension_protocol::Event) {
        if self.is_closed() {
            return;
        }
        match encode_frame(event) {
            Ok(bytes) => {
                // The event path never waits long for an extension that does not read its stdin.
                if tokio::time::timeout(EVENT_WRITE_LIMIT, self.write(bytes))
                    .await
                    .is_err()
                {
                    tracing::warn!("[{}] not reading its stdin: closed", self.path);
                }
            }
            Err(e) => tracing::error!("[{}] cannot encode an event: {e}", self.path),
        }
    }

    /// Stop waiting for call `id` and tell the extension.
    async fn forget(&self, id: &str) {
        lock(&self.pending).remove(id);
        self.notify(&dreb_extension_protocol::Event::Cancel(
            dreb_extension_protocol::CancelEvent { id: id.to_string() },
        ))
        .await;
    }

    fn exit_reason(&self) -> Option<String> {
        lock(&self.exit).clone()
    }

    /// A response resolves its call; a command with an `id` runs on its own task; a fire-and-forget command (no
    /// `id`: `ui_notify`, `tool_update`, ...) runs here, before anything read after it, so that it keeps its
    /// place before the response that follows it (a command's notify before its acknowledgement).
    async fn route(self: &Arc<Self>, mut frame: serde_json::Map<String, Value>) {
        let kind = frame
            .get("type")
            .and_then(Value::as_str)
            .map(str::to_string);
        if kind.as_deref() == Some("response") {
            let Some(id) = frame.get("id").and_then(Value::as_str).map(str::to_string) else {
                tracing::warn!("[{}] dropped a response without a string id", self.path);
                return;
            };
            let waiter = lock(&self.pending).remove(&id);
            let Some(waiter) = waiter else {
                tracing::debug!(
                    "[{}] dropped a response to no pending call ({id})",
                    self.path
                );
                return;
            };
            let answer = if frame.get("success") == Some(&Value::Bool(true)) {
                Ok(frame.remove("data"))
            } else {
                let error = match frame.get("error") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => "the extension failed without an error text".to_string(),
                };
                Err(ExtensionError::Failed(error))
            };
            let _ = waiter.send(answer);
            return;
        }
        let id = frame.remove("id");
        let Some(kind) = kind else {
            self.respond(id.as_ref(), None, &Err("Unknown command: undefined".into()))
                .await;
            return;
        };
        let result = match Command::from_wire(&kind, frame) {
            Ok(Some(command)) => command,
            Ok(None) => {
                self.respond(
                    id.as_ref(),
                    Some(&kind),
                    &Err(format!("Unknown command: {kind}")),
                )
                .await;
                return;
            }
            Err(message) => {
                self.respond(
                    id.as_ref(),
                    Some(&kind),
                    &Err(format!("Invalid parameters for {kind}: {message}")),
                )
                .await;
                return;
            }
        };
        if id.is_none() {
            let answer = self.server.serve(result).await;
            self.respond(None, Some(&kind), &answer).await;
            return;
        }
        let conn = self.clone();
        tokio::spawn(async move {
            let answer = conn.server.serve(result).await;
            conn.respond(id.as_ref(), Some(&kind), &answer).await;
        });
    }

    async fn respond(
        &self,
        id: Option<&Value>,
        command: Option<&str>,
        result: &Result<ResponseData, String>,
    ) {
        match encode_frame(&ResponseFrame {
            id,
            command,
            result,
        }) {
            Ok(bytes) => self.write(bytes).await,
            Err(e) => tracing::error!("[{}] cannot encode a response: {e}", self.path),
        }
    }

    /// Closed (once): fail what is pending with `reason`, tell `on_exit`.
    fn close(&self, reason: &str) {
        {
            let mut exit = lock(&self.exit);
            if exit.is_some() {
                return;
            }
            *exit = Some(reason.to_string());
        }
        self.closed.cancel();
        let pending: Vec<_> = lock(&self.pending).drain().collect();
        for (_, waiter) in pending {
            let _ = waiter.send(Err(ExtensionError::Exited(reason.to_string())));
        }
        if let Some(on_exit) = lock(&self.on_exit).take() {
            on_exit(reason.to_string());
        }
    }

    /// Stop it: a process of its own is asked to exit (its stdin closed) and killed after `grace`; a channel of a
    /// multiplexed process is closed (the process stays for the others: its owner stops it).
    pub async fn stop(&self, grace: Duration) {
        if self.channel.is_empty() {
            self.process.stop(grace).await;
            return;
        }
        lock(&self.process.channels).remove(&self.channel);
        // A stop is not an exit: nothing to report.
        lock(&self.on_exit).take();
        self.close("Extension stopped");
    }
}

async fn sleep_or_forever(timeout: Option<Duration>) {
    match timeout {
        Some(t) => tokio::time::sleep(t).await,
        None => std::future::pending().await,
    }
}

/// A response frame: `id` (when the request had one), `type`, `command`, `success`, then `data` or `error`.
struct ResponseFrame<'a> {
    id: Option<&'a Value>,
    command: Option<&'a str>,
    result: &'a Result<ResponseData, String>,
}

impl Serialize for ResponseFrame<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(id) = self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("type", "response")?;
        if let Some(command) = self.command {
            map.serialize_entry("command", command)?;
        }
        match self.result {
            Ok(data) => {
                map.serialize_entry("success", &true)?;
                data.serialize_data(&mut map)?;
            }
            Err(error) => {
                map.serialize_entry("success", &false)?;
                map.serialize_entry("error", error)?;
            }
        }
        map.end()
    }
}
