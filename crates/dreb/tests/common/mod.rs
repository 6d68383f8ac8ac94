//! Test harness for the real `dreb` binary: a mock LLM on loopback, a temp HOME / agent dir / cwd, the binary
//! spawned with a clean environment, JSONL in, strictly LF-framed JSON out.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use dreb_mock_llm::{MockLlm, Scenario};
use serde_json::{Value, json};

/// Upper bound for any single wait; a hang fails the test instead of blocking the suite forever. Not an
/// assertion about speed: every wait normally ends on a frame, long before this.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// The reference fixtures copied into this crate.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reference")
        .join(name)
}

/// Fixtures written for these tests (not from the reference recording).
pub fn local_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// The reference's package directory as the recording's placeholders write it.
pub const REFERENCE_PACKAGE_DIR: &str = "/usr/lib/node_modules/@dreb/coding-agent";

/// `inputs/models.json` of the reference recording, with its base URLs pointed at `mock`.
pub fn models_json(mock: &MockLlm, template: &str) -> String {
    let text = std::fs::read_to_string(fixture(template)).expect("models template");
    text.replace("http://127.0.0.1:18431", &mock.base_url())
}

/// A temp HOME holding `.dreb/agent` (with models.json) and `project` (the cwd), like the recording.
pub struct Env {
    pub home: tempfile::TempDir,
    pub mock: MockLlm,
}

impl Env {
    pub fn new() -> Env {
        Self::with_models("models.json")
    }

    pub fn with_models(template: &str) -> Env {
        Self::build(template, Scenario::default())
    }

    /// A mock playing `scenario` (its fallback: the reference mock's trigger rules).
    pub fn with_scenario(scenario: Scenario) -> Env {
        Self::build("models.json", scenario)
    }

    fn build(template: &str, scenario: Scenario) -> Env {
        let mock = MockLlm::start(scenario).expect("mock LLM");
        let home = tempfile::tempdir().expect("temp home");
        let env = Env { home, mock };
        std::fs::create_dir_all(env.agent_dir()).unwrap();
        std::fs::create_dir_all(env.cwd()).unwrap();
        std::fs::write(
            env.agent_dir().join("models.json"),
            models_json(&env.mock, template),
        )
        .unwrap();
        env
    }

    /// A mock playing `scenario`, `models` (a file under `tests/fixtures/`, base URLs pointed at the mock) as
    /// models.json, and `settings` as the global settings.json.
    pub fn with_setup(models: &str, scenario: Scenario, settings: &Value) -> Env {
        let env = Self::build("models.json", scenario);
        let text = std::fs::read_to_string(local_fixture(models)).expect("models fixture");
        std::fs::write(
            env.agent_dir().join("models.json"),
            text.replace("http://127.0.0.1:18431", &env.mock.base_url()),
        )
        .unwrap();
        env.write_settings(settings);
        env
    }

    /// Writes the global settings.json of the agent dir.
    pub fn write_settings(&self, settings: &Value) {
        std::fs::write(
            self.agent_dir().join("settings.json"),
            serde_json::to_string_pretty(settings).unwrap(),
        )
        .unwrap();
    }

    pub fn agent_dir(&self) -> PathBuf {
        self.home.path().join(".dreb/agent")
    }

    pub fn cwd(&self) -> PathBuf {
        self.home.path().join("project")
    }

    /// The session dir of the cwd, in the reference's `--<path with / → ->--` encoding.
    pub fn session_dir(&self) -> PathBuf {
        let cwd = self.cwd().to_string_lossy().to_string();
        let encoded = format!("--{}--", cwd.trim_start_matches('/').replace('/', "-"));
        self.agent_dir().join("sessions").join(encoded)
    }

    /// `dreb --mode rpc --provider mock --model mock-model` plus `extra`.
    pub fn spawn(&self, extra: &[&str]) -> Dreb {
        self.spawn_with_env(extra, &[])
    }

    /// [`Env::spawn`] with `envs` added to the environment.
    pub fn spawn_with_env(&self, extra: &[&str], envs: &[(&str, &str)]) -> Dreb {
        let mut args = vec![
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
        ];
        args.extend_from_slice(extra);
        self.spawn_raw(&args, envs)
    }

    /// The binary with exactly `args`, a clean environment (PATH, HOME, DREB_CODING_AGENT_DIR, DREB_PACKAGE_DIR) plus
    /// `envs`. The package dir is the reference recording's placeholder, so the paths of the bundled skills do not
    /// depend on where the binary was built (and equal the recorded ones).
    pub fn spawn_raw(&self, args: &[&str], envs: &[(&str, &str)]) -> Dreb {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_dreb"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("DREB_CODING_AGENT_DIR", self.agent_dir())
            .env("DREB_PACKAGE_DIR", REFERENCE_PACKAGE_DIR)
            .current_dir(self.cwd())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        Dreb::start(cmd)
    }
}

/// One stdout record: a frame, or a line that is not a JSON object (a protocol violation the tests report).
pub type Frame = Value;

/// A running binary.
pub struct Dreb {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: Receiver<Result<Frame, String>>,
    /// Every frame received so far, in order.
    pub seen: Vec<Frame>,
    stderr: Option<std::thread::JoinHandle<String>>,
    eof: bool,
}

impl Dreb {
    fn start(mut cmd: Command) -> Dreb {
        let mut child = cmd.spawn().expect("spawn dreb");
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (tx, frames) = channel();
        // Strict LF framing: every record ends in LF, has no CR, and is one JSON object.
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) => {
                        let _ = tx.send(Err(format!("read error: {e}")));
                        break;
                    }
                }
                let parsed = if line.last() != Some(&b'\n') {
                    Err(format!(
                        "unterminated stdout record: {:?}",
                        String::from_utf8_lossy(&line)
                    ))
                } else {
                    line.pop();
                    if line.contains(&b'\r') {
                        Err(format!(
                            "CR in stdout record: {:?}",
                            String::from_utf8_lossy(&line)
                        ))
                    } else {
                        match serde_json::from_slice::<Value>(&line) {
                            // Every frame any test reads is checked against the spec.
                            Ok(v @ Value::Object(_)) => {
                                dreb_spec_check::check_frame(&v).map(|()| v)
                            }
                            Ok(other) => Err(format!("stdout record is not an object: {other}")),
                            Err(e) => Err(format!(
                                "stdout record is not JSON ({e}): {:?}",
                                String::from_utf8_lossy(&line)
                            )),
                        }
                    }
                };
                if tx.send(parsed).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            s
        });
        Dreb {
            stdin: child.stdin.take(),
            child,
            frames,
            seen: Vec::new(),
            stderr: Some(stderr),
            eof: false,
        }
    }

    /// Writes raw bytes to stdin.
    pub fn write_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write stdin");
        stdin.flush().unwrap();
    }

    /// Writes one JSONL line.
    pub fn send(&mut self, v: &Value) {
        let mut line = serde_json::to_vec(v).unwrap();
        line.push(b'\n');
        self.write_raw(&line);
    }

    /// The next frame, or `None` at EOF. Panics on a malformed stdout record or a hang.
    pub fn next_frame(&mut self) -> Option<Frame> {
        if self.eof {
            return None;
        }
        match self.frames.recv_timeout(HANG_GUARD) {
            Ok(Ok(f)) => {
                self.seen.push(f.clone());
                Some(f)
            }
            Ok(Err(e)) => panic!("{e}"),
            Err(RecvTimeoutError::Disconnected) => {
                self.eof = true;
                None
            }
            Err(RecvTimeoutError::Timeout) => {
                panic!("no frame from dreb; frames so far: {:#?}", self.seen)
            }
        }
    }

    /// The next frame if one arrives within `quiet`, else `None` (stdout stayed quiet).
    pub fn frame_within(&mut self, quiet: Duration) -> Option<Frame> {
        if self.eof {
            return None;
        }
        match self.frames.recv_timeout(quiet) {
            Ok(Ok(f)) => {
                self.seen.push(f.clone());
                Some(f)
            }
            Ok(Err(e)) => panic!("{e}"),
            Err(RecvTimeoutError::Disconnected) => {
                self.eof = true;
                None
            }
            Err(RecvTimeoutError::Timeout) => None,
        }
    }

    /// Reads frames until `pred` matches; returns the frames read (the match last).
    pub fn read_until(&mut self, mut pred: impl FnMut(&Frame) -> bool) -> Vec<Frame> {
        let mut out = Vec::new();
        loop {
            let f = self
                .next_frame()
                .unwrap_or_else(|| panic!("EOF while waiting; frames: {:#?}", out));
            let done = pred(&f);
            out.push(f);
            if done {
                return out;
            }
        }
    }

    /// The next response frame (events before it are kept in `seen`).
    pub fn next_response(&mut self) -> Frame {
        self.read_until(is_response).pop().unwrap()
    }

    /// Sends `cmd` and waits the way the reference recording did: its response, and for a successful `prompt`
    /// also `agent_end`. Returns every frame read.
    pub fn exchange(&mut self, cmd: &Value) -> Vec<Frame> {
        self.send(cmd);
        self.wait_reply(cmd.get("type").and_then(Value::as_str) == Some("prompt"))
    }

    /// Waits for the next response; when `prompt` and it succeeded, until `agent_end`.
    pub fn wait_reply(&mut self, prompt: bool) -> Vec<Frame> {
        let mut frames = self.read_until(is_response);
        let ok = frames
            .last()
            .and_then(|r| r.get("success"))
            .and_then(Value::as_bool)
            == Some(true);
        if prompt && ok && !frames.iter().any(|f| f["type"] == "agent_end") {
            frames.extend(self.read_until(|f| f["type"] == "agent_end"));
        }
        frames
    }

    /// Closes stdin, reads stdout to EOF, and returns the exit code and every frame after the ones already read.
    pub fn finish(mut self) -> (i32, Vec<Frame>, String) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Some(f) = self.next_frame() {
            rest.push(f);
        }
        let status = self.child.wait().expect("wait dreb");
        let stderr = self
            .stderr
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        (status.code().unwrap_or(-1), rest, stderr)
    }
}

impl Drop for Dreb {
    fn drop(&mut self) {
        // Only our own child, by handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn is_response(f: &Frame) -> bool {
    f.get("type").and_then(Value::as_str) == Some("response")
}

/// Replaces volatile values (ids, timestamps, paths, durations, versions, uuids, counters) with placeholders, so
/// snapshots and comparisons only see what is stable.
pub fn normalise(v: &Value, home: &Path) -> Value {
    let home = home.to_string_lossy().to_string();
    normalise_inner(None, v, &home)
}

const VOLATILE_KEYS: &[&str] = &[
    "timestamp",
    "durationMs",
    "version",
    "sessionId",
    "sessionFile",
    "responseId",
    "path",
    "parentSession",
    "cwd",
    "created",
    "modified",
    "lastModified",
    "tps",
    "firstMessageTimestamp",
    "parentId",
    "leafId",
    "fullOutputPath",
];

fn normalise_inner(key: Option<&str>, v: &Value, home: &str) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), normalise_inner(Some(k), v, home)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| normalise_inner(key, v, home)).collect()),
        Value::Null => Value::Null,
        _ if key.is_some_and(|k| VOLATILE_KEYS.contains(&k)) => {
            json!(format!("[{}]", key.unwrap()))
        }
        Value::String(s)
            if key.is_some_and(|k| k == "id" || k.ends_with("Id")) && is_generated_id(s) =>
        {
            json!("[id]")
        }
        Value::String(s) if is_iso_time(s) => json!("[iso-time]"),
        Value::String(s) => json!(redact_port(&s.replace(home, "[home]"))),
        other => other.clone(),
    }
}

/// `2026-12-01T08:36:58.993Z`-style wall-clock times.
fn is_iso_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 19
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
}

/// The mock LLM's random port.
fn redact_port(s: &str) -> String {
    match s.find("http://127.0.0.1:") {
        Some(i) => {
            let start = i + "http://127.0.0.1:".len();
            let digits = s[start..].chars().take_while(char::is_ascii_digit).count();
            format!("{}[port]{}", &s[..start], &s[start + digits..])
        }
        None => s.to_string(),
    }
}

/// Entry ids (8 hex digits), uuids, and the mock's call/response ids.
fn is_generated_id(s: &str) -> bool {
    let hex8 = s.len() == 8 && s.chars().all(|c| c.is_ascii_hexdigit());
    let uuid = s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4;
    hex8 || uuid
        || s.starts_with("call_mock_")
        || s.starts_with("toolu_mock_")
        || s.starts_with("msg_mock_")
}

/// The JSON shape of a value: key sets and JSON types, recursively (array element shapes de-duplicated).
pub fn shape(v: &Value) -> Value {
    match v {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        Value::Array(a) => {
            let mut shapes: Vec<Value> = Vec::new();
            for s in a.iter().map(shape) {
                if !shapes.contains(&s) {
                    shapes.push(s);
                }
            }
            Value::Array(shapes)
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), shape(&m[k])))
                    .collect(),
            )
        }
    }
}

/// Reads a JSONL file into values (lines that are not JSON become strings).
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::String(l.to_string())))
        .collect()
}

/// The first `tool_execution_end` among `frames`.
pub fn tool_end(frames: &[Frame]) -> Value {
    frames
        .iter()
        .find(|f| f["type"] == "tool_execution_end")
        .cloned()
        .unwrap_or_else(|| panic!("no tool_execution_end in {frames:#?}"))
}

/// The text blocks of a `tool_execution_end`'s result, joined by newlines.
pub fn result_text(end: &Value) -> String {
    end["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The tool names a recorded LLM request offered (Anthropic `name` or OpenAI `function.name`).
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| {
                    t["name"]
                        .as_str()
                        .or_else(|| t["function"]["name"].as_str())
                })
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
