//! One subagent child: `dreb --mode rpc --ui agent …` driven over its own stdin/stdout. The task is sent as a
//! `prompt`; every event the child prints is relayed; the first `agent_end` ends the child (SIGTERM). While it
//! runs, a [`ControlClient`] forwards `steer` / `get_state` / `get_pending_messages` to it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// How long a child gets after SIGTERM before SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(5);
/// Stderr kept for the error message (the rest is drained and dropped).
const MAX_STDERR_BYTES: usize = 8192;

/// Why a request to a child got no answer (the texts are the reference's; the commands add their prefix).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("Subagent control channel is unavailable.")]
    ChannelUnavailable,
    #[error("Subagent process exited.")]
    ProcessExited,
    /// The child answered with an error, or its initial prompt failed: that text.
    #[error("{0}")]
    Failed(String),
}

/// What to run.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    pub binary: PathBuf,
    pub cwd: PathBuf,
    pub agent: String,
    pub task: String,
    /// `--tools` (already filtered).
    pub tools: String,
    pub system_prompt: String,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub thinking: Option<String>,
    pub session_dir: PathBuf,
    pub parent_session: Option<String>,
}

impl ChildSpec {
    pub fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = ["--mode", "rpc", "--ui", "agent", "--session-dir"]
            .map(String::from)
            .into();
        args.push(self.session_dir.display().to_string());
        if let Some(model) = &self.model {
            args.extend(["--model".into(), model.clone()]);
            // Raw model ids may contain slashes: always name the provider the id was resolved against.
            if let Some(provider) = &self.provider {
                args.extend(["--provider".into(), provider.clone()]);
            }
        }
        if let Some(thinking) = &self.thinking {
            args.extend(["--thinking".into(), thinking.clone()]);
        }
        args.extend(["--tools".into(), self.tools.clone()]);
        if !self.system_prompt.is_empty() {
            args.extend(["--append-system-prompt".into(), self.system_prompt.clone()]);
        }
        args.extend(["--agent-type".into(), self.agent.clone()]);
        if let Some(parent) = &self.parent_session {
            args.extend(["--parent-session".into(), parent.clone()]);
        }
        args
    }
}

/// Per-step metadata of a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepMetadata {
    pub step: usize,
    pub agent: String,
    pub success: bool,
    pub model: Option<String>,
    pub thinking: Option<String>,
}

/// How a subagent ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubagentResult {
    pub agent: String,
    pub task: String,
    /// Canonical `provider/id` the child reported.
    pub model: Option<String>,
    pub thinking: Option<String>,
    pub steps: Option<Vec<StepMetadata>>,
    pub exit_code: i32,
    pub output: String,
    pub stderr: String,
    pub error_message: Option<String>,
    pub session_file: Option<PathBuf>,
}

impl SubagentResult {
    /// A result for a launch that failed before (or instead of) spawning.
    pub fn failed(agent: &str, task: &str, error: impl Into<String>) -> Self {
        SubagentResult {
            agent: agent.to_string(),
            task: task.to_string(),
            exit_code: 1,
            error_message: Some(error.into()),
            ..Default::default()
        }
    }

    pub fn success(&self) -> bool {
        self.exit_code == 0
    }
}

type PendingReplies = Mutex<HashMap<String, oneshot::Sender<Result<Value, RequestError>>>>;

/// Commands to a running child; each waits for the child's response.
pub struct ControlClient {
    /// The child's process id (it leads its own process group).
    pub pid: Option<u32>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    pending: PendingReplies,
    next_id: AtomicU64,
}

impl ControlClient {
    fn new(pid: Option<u32>, stdin: Option<ChildStdin>) -> Self {
        ControlClient {
            pid,
            stdin: tokio::sync::Mutex::new(stdin),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        }
    }

    /// Send `command` (an id is added) and wait for its response's `data` (Null when it has none).
    pub async fn request(&self, mut command: Value) -> Result<Value, RequestError> {
        let id = format!(
            "subagent-{}",
            self.next_id.fetch_add(1, Ordering::Relaxed) + 1
        );
        if let Some(obj) = command.as_object_mut() {
            obj.insert("id".into(), Value::String(id.clone()));
        }
        let mut line =
            serde_json::to_vec(&command).map_err(|e| RequestError::Failed(e.to_string()))?;
        line.push(b'\n');
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        {
            let mut stdin = self.stdin.lock().await;
            let Some(pipe) = stdin.as_mut() else {
                lock(&self.pending).remove(&id);
                return Err(RequestError::ChannelUnavailable);
            };
            if pipe.write_all(&line).await.is_err() || pipe.flush().await.is_err() {
                *stdin = None;
                lock(&self.pending).remove(&id);
                return Err(RequestError::ChannelUnavailable);
            }
        }
        rx.await.unwrap_or(Err(RequestError::ProcessExited))
    }

    /// Route a response frame to its waiting request; false when no request waits for it.
    fn resolve(&self, frame: &Value) -> bool {
        let Some(id) = frame.get("id").and_then(Value::as_str) else {
            return false;
        };
        let Some(tx) = lock(&self.pending).remove(id) else {
            return false;
        };
        let reply = if frame.get("success") == Some(&Value::Bool(true)) {
            Ok(frame.get("data").cloned().unwrap_or(Value::Null))
        } else {
            Err(RequestError::Failed(
                frame
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("Subagent RPC command failed.")
                    .to_string(),
            ))
        };
        let _ = tx.send(reply);
        true
    }

    /// Fail every waiting request (the child is gone or being stopped).
    fn reject_all(&self, error: &RequestError) {
        for (_, tx) in lock(&self.pending).drain() {
            let _ = tx.send(Err(error.clone()));
        }
    }
}

/// What the stdout reader learned.
#[derive(Default)]
struct Observed {
    assistant_messages: Vec<Value>,
    plain_lines: Vec<String>,
    model: Option<String>,
    thinking: Option<String>,
    completed: bool,
    /// The parent cancelled the child before its run ended: the `agent_end` of the run it aborts while it shuts
    /// down is not a completion (the reference's child, killed, writes none).
    cancelled: bool,
    control_error: Option<RequestError>,
}

fn canonical_model(provider: Option<&str>, id: &str) -> String {
    match provider {
        Some(p) if !id.starts_with(&format!("{p}/")) => format!("{p}/{id}"),
        _ => id.to_string(),
    }
}

fn signal(child: &Child, sig: nix::sys::signal::Signal) {
    if let Some(pid) = child.id() {
        signal_group(pid, sig);
    }
}

/// The child leads its own process group: signal the group so nothing it started in it outlives it.
pub fn signal_group(pid: u32, sig: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid as i32), sig);
}

/// Run one child to completion. `on_event` gets every event frame the child prints (responses excluded);
/// `on_control` gets the control client once the child is up, and `None` when it is gone.
pub async fn run_child(
    spec: &ChildSpec,
    cancel: &CancellationToken,
    on_event: &(dyn Fn(Value) + Send + Sync),
    on_control: &(dyn Fn(Option<Arc<ControlClient>>) + Send + Sync),
) -> SubagentResult {
    if !spec.cwd.is_dir() {
        return SubagentResult::failed(
            &spec.agent,
            &spec.task,
            format!("Working directory does not exist: {}", spec.cwd.display()),
        );
    }
    if cancel.is_cancelled() {
        return SubagentResult::failed(&spec.agent, &spec.task, "Aborted before spawn");
    }
    let mut command = Command::new(&spec.binary);
    command
        .args(spec.args())
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match command.spawn() {
        Ok(c) => c,
        Err(e) => {
            return SubagentResult::failed(
                &spec.agent,
                &spec.task,
                format!("Failed to spawn subagent: {e}"),
            );
        }
    };
    let control = Arc::new(ControlClient::new(child.id(), child.stdin.take()));
    let stdout = child.stdout.take();
    let stderr_task = child.stderr.take().map(|mut pipe| {
        tokio::spawn(async move {
            let mut kept = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if kept.len() < MAX_STDERR_BYTES {
                    kept.extend_from_slice(&buf[..n]);
                }
            }
            String::from_utf8_lossy(&kept).into_owned()
        })
    });

    on_control(Some(control.clone()));
    let observed = Arc::new(Mutex::new(Observed::default()));
    // The initial prompt: a failure means the loop never starts, so the child is stopped.
    let stop_child = CancellationToken::new();
    {
        let control = control.clone();
        let observed = observed.clone();
        let stop_child = stop_child.clone();
        let task = spec.task.clone();
        tokio::spawn(async move {
            if let Err(e) = control
                .request(json!({"type": "prompt", "message": task}))
                .await
            {
                let mut o = lock(&observed);
                if !o.completed && o.control_error.is_none() {
                    o.control_error = Some(e);
                }
                drop(o);
                stop_child.cancel();
            }
        });
    }

    let mut lines = stdout.map(|s| BufReader::new(s).lines());
    let mut term_sent = false;
    let mut kill_at: Option<tokio::time::Instant> = None;
    loop {
        let next_line = async {
            match lines.as_mut() {
                Some(l) => l.next_line().await.ok().flatten(),
                None => None,
            }
        };
        let deadline = async {
            match kill_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            line = next_line => {
                let Some(line) = line else { break };
                if handle_line(&line, &control, &observed, on_event) && !term_sent {
                    signal(&child, nix::sys::signal::Signal::SIGTERM);
                    term_sent = true;
                    kill_at = Some(tokio::time::Instant::now() + KILL_GRACE);
                }
            }
            _ = cancel.cancelled(), if !term_sent => {
                lock(&observed).cancelled = true;
                signal(&child, nix::sys::signal::Signal::SIGTERM);
                term_sent = true;
                kill_at = Some(tokio::time::Instant::now() + KILL_GRACE);
            }
            _ = stop_child.cancelled(), if !term_sent => {
                let error = lock(&observed).control_error.clone();
                control.reject_all(error.as_ref().unwrap_or(&RequestError::ProcessExited));
                signal(&child, nix::sys::signal::Signal::SIGTERM);
                term_sent = true;
                kill_at = Some(tokio::time::Instant::now() + KILL_GRACE);
            }
            _ = deadline => {
                signal(&child, nix::sys::signal::Signal::SIGKILL);
                kill_at = None;
            }
        }
    }
    // Stdout closed: the child is exiting. Keep the SIGKILL backstop while waiting for it.
    let status = match kill_at {
        Some(at) => match tokio::time::timeout_at(at, child.wait()).await {
            Ok(s) => s.ok(),
            Err(_) => {
                signal(&child, nix::sys::signal::Signal::SIGKILL);
                child.wait().await.ok()
            }
        },
        None => child.wait().await.ok(),
    };
    on_control(None);
    control.reject_all(&RequestError::ProcessExited);
    let stderr = match stderr_task {
        Some(t) => t.await.unwrap_or_default(),
        None => String::new(),
    };
    let observed = std::mem::take(&mut *lock(&observed));
    let exit_code = if observed.completed {
        0
    } else {
        status
            .and_then(|s| s.code())
            .filter(|c| *c != 0)
            .unwrap_or(1)
    };
    finish(spec, observed, exit_code, stderr)
}

/// Handle one stdout line; true when it was the child's first `agent_end` (time to stop it).
fn handle_line(
    line: &str,
    control: &ControlClient,
    observed: &Mutex<Observed>,
    on_event: &(dyn Fn(Value) + Send + Sync),
) -> bool {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return false;
    }
    let frame: Value = match serde_json::from_str(trimmed) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            lock(observed).plain_lines.push(trimmed.to_string());
            return false;
        }
    };
    let ty = frame.get("type").and_then(Value::as_str).unwrap_or("");
    if ty == "response" {
        if !control.resolve(&frame)
            && frame.get("command").and_then(Value::as_str) == Some("prompt")
            && frame.get("success") == Some(&Value::Bool(false))
        {
            // A late failure of the initial prompt: no agent_end will follow.
            let mut o = lock(observed);
            if !o.completed && o.control_error.is_none() {
                o.control_error = Some(RequestError::Failed(
                    frame
                        .get("error")
                        .and_then(Value::as_str)
                        .unwrap_or("Subagent prompt failed.")
                        .to_string(),
                ));
            }
        }
        return false;
    }
    let mut first_end = false;
    {
        let mut o = lock(observed);
        match ty {
            "agent_start" => {
                if let Some(id) = frame.pointer("/model/id").and_then(Value::as_str) {
                    let provider = frame.pointer("/model/provider").and_then(Value::as_str);
                    o.model = Some(canonical_model(provider, id));
                }
                if let Some(level) = frame.get("thinkingLevel").and_then(Value::as_str)
                    && dreb_protocol::ThinkingLevel::VALUES.contains(&level)
                {
                    o.thinking = Some(level.to_string());
                }
            }
            "message_end" if frame.pointer("/message/role") == Some(&json!("assistant")) => {
                o.assistant_messages.push(frame["message"].clone());
            }
            "agent_end" if !o.completed && !o.cancelled => {
                o.completed = true;
                first_end = true;
            }
            _ => {}
        }
    }
    if !ty.is_empty() {
        on_event(frame);
    }
    first_end
}

fn truncate_chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn finish(spec: &ChildSpec, o: Observed, exit_code: i32, stderr: String) -> SubagentResult {
    let output = o
        .assistant_messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|part| part["type"] == "text")
        .filter_map(|part| part["text"].as_str().map(str::to_string))
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    let last = o.assistant_messages.last();
    let stop_reason = last.and_then(|m| m["stopReason"].as_str()).unwrap_or("");
    let last_error = last
        .and_then(|m| m["errorMessage"].as_str())
        .map(|e| truncate_chars(e, 500));
    let error_message = if exit_code != 0 {
        let plain = o.plain_lines.join("\n");
        let control_error = o
            .control_error
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        Some(
            [control_error.as_str(), stderr.trim(), plain.trim()]
                .iter()
                .find(|s| !s.is_empty())
                .map(|s| truncate_chars(s, 500))
                .unwrap_or_else(|| format!("Subagent exited with code {exit_code}")),
        )
    } else if output.trim().is_empty() {
        Some(match (stop_reason, last_error) {
            ("length", _) => "Subagent response was truncated at the model's token limit before producing any output.".into(),
            ("error", Some(e)) => e,
            _ => "Subagent completed with no output.".into(),
        })
    } else {
        match (stop_reason, last_error) {
            ("length", _) => Some(
                "Subagent response was truncated at the model's token limit; output may be incomplete."
                    .into(),
            ),
            ("error", Some(e)) => Some(e),
            _ => None,
        }
    };
    let configured = spec
        .model
        .as_deref()
        .map(|m| canonical_model(spec.provider.as_deref(), m));
    SubagentResult {
        agent: spec.agent.clone(),
        task: spec.task.clone(),
        model: o.model.or(if exit_code == 0 { configured } else { None }),
        thinking: o.thinking.or(if exit_code == 0 {
            spec.thinking.clone()
        } else {
            None
        }),
        steps: None,
        exit_code,
        output,
        stderr: truncate_chars(&stderr, 2000),
        error_message,
        session_file: newest_session_file(&spec.session_dir),
    }
}

/// The most recently modified `*.jsonl` directly in `dir`.
pub fn newest_jsonl(dir: &Path) -> Option<(PathBuf, std::time::SystemTime)> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .filter_map(|e| {
            let meta = e.metadata().ok()?;
            let modified = meta.modified().ok()?;
            meta.is_file().then(|| (e.path(), modified))
        })
        .max_by_key(|(_, t)| *t)
}

/// The session files of a subagent directory: its newest flat file, else one per `step-N` directory in step order
/// (chains).
pub fn session_files(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    if let Some(flat) = newest_jsonl(dir) {
        return vec![flat];
    }
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut steps: Vec<(u64, PathBuf)> = read
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name.strip_prefix("step-")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    steps.sort();
    steps.iter().filter_map(|(_, p)| newest_jsonl(p)).collect()
}

/// The session file a finished subagent wrote (the newest one for chains).
pub fn newest_session_file(dir: &Path) -> Option<PathBuf> {
    session_files(dir)
        .into_iter()
        .max_by_key(|(_, t)| *t)
        .map(|(p, _)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ChildSpec {
        ChildSpec {
            binary: "dreb".into(),
            cwd: "/tmp".into(),
            agent: "Explore".into(),
            task: "t".into(),
            tools: "read,bash".into(),
            system_prompt: "body".into(),
            model: Some("m".into()),
            provider: Some("p".into()),
            thinking: Some("low".into()),
            session_dir: "/s".into(),
            parent_session: Some("/parent.jsonl".into()),
        }
    }

    #[test]
    fn child_arguments_name_everything_the_child_needs() {
        assert_eq!(
            spec().args().join(" "),
            "--mode rpc --ui agent --session-dir /s --model m --provider p --thinking low --tools read,bash \
             --append-system-prompt body --agent-type Explore --parent-session /parent.jsonl"
        );
    }

    fn observed(messages: Vec<Value>) -> Observed {
        Observed {
            assistant_messages: messages,
            completed: true,
            ..Default::default()
        }
    }

    #[test]
    fn output_is_every_assistant_text_and_truncation_is_loud() {
        let text = |t: &str, stop: &str| json!({"role": "assistant", "content": [{"type": "text", "text": t}], "stopReason": stop});
        let r = finish(
            &spec(),
            observed(vec![text("one", "toolUse"), text("two", "stop")]),
            0,
            String::new(),
        );
        assert_eq!(r.output, "one\n\ntwo");
        assert_eq!(r.error_message, None);
        assert_eq!(r.model.as_deref(), Some("p/m"));
        let r = finish(
            &spec(),
            observed(vec![text("", "length")]),
            0,
            String::new(),
        );
        assert!(
            r.error_message
                .unwrap()
                .contains("before producing any output")
        );
        let r = finish(&spec(), observed(vec![]), 0, String::new());
        assert_eq!(
            r.error_message.as_deref(),
            Some("Subagent completed with no output.")
        );
    }

    #[test]
    fn a_failed_child_reports_its_stderr_or_exit_code() {
        let r = finish(&spec(), Observed::default(), 2, "boom\n".into());
        assert_eq!(r.error_message.as_deref(), Some("boom"));
        assert_eq!(r.model, None);
        let r = finish(&spec(), Observed::default(), 3, String::new());
        assert_eq!(
            r.error_message.as_deref(),
            Some("Subagent exited with code 3")
        );
    }

    /// A cancelled child that still writes the `agent_end` of the run it aborts did not complete.
    #[test]
    fn an_agent_end_after_the_cancellation_is_not_a_completion() {
        let control = ControlClient::new(None, None);
        let observed = Mutex::new(Observed::default());
        lock(&observed).cancelled = true;
        let end = r#"{"type":"agent_end","messages":[]}"#;
        assert!(!handle_line(end, &control, &observed, &|_| {}));
        assert!(!lock(&observed).completed);
    }

    #[test]
    fn responses_resolve_requests_and_are_not_relayed() {
        let control = ControlClient::new(None, None);
        let (tx, mut rx) = oneshot::channel();
        lock(&control.pending).insert("subagent-1".into(), tx);
        let observed = Mutex::new(Observed::default());
        let relayed = Mutex::new(Vec::new());
        let relay = |v: Value| lock(&relayed).push(v);
        let line = r#"{"id":"subagent-1","type":"response","command":"steer","success":false,"error":"nope"}"#;
        assert!(!handle_line(line, &control, &observed, &relay));
        assert_eq!(
            rx.try_recv().unwrap(),
            Err(RequestError::Failed("nope".to_string()))
        );
        assert!(!handle_line(
            r#"{"type":"agent_start","model":{"provider":"p","id":"m"},"thinkingLevel":"high"}"#,
            &control,
            &observed,
            &relay
        ));
        assert!(handle_line(
            r#"{"type":"agent_end","messages":[]}"#,
            &control,
            &observed,
            &relay
        ));
        assert!(!handle_line("not json", &control, &observed, &relay));
        let o = lock(&observed);
        assert_eq!(o.model.as_deref(), Some("p/m"));
        assert_eq!(o.thinking.as_deref(), Some("high"));
        assert_eq!(o.plain_lines, ["not json"]);
        assert_eq!(lock(&relayed).len(), 2);
    }
}
