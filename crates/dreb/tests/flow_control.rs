//! Output flow control against the binary (docs/output-flow-control.md): unpaced streaming to readers that keep up,
//! write to a file, pause then drain, or never read; large echoes answered whole.
//!
//! The replies come from the offline `faux` provider playing a scenario of many one-character deltas with no delay,
//! so the agent produces frames as fast as it can.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Env, read_jsonl};
use serde_json::{Value, json};

/// A faux scenario whose one reply is `n` deltas of "x" (every test here sends one prompt).
fn scenario_file(env: &Env, n: usize) -> std::path::PathBuf {
    let path = env.agent_dir().join(format!("scenario-{n}.json"));
    let scenario = json!({"turns": [{"text": vec!["x"; n]}], "fallback": "error"});
    std::fs::write(&path, scenario.to_string()).unwrap();
    path
}

fn command(env: &Env, scenario: &Path, extra: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dreb"));
    cmd.args(["--mode", "rpc", "--provider", "faux"])
        .args(extra)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.agent_dir().parent().unwrap())
        .env("DREB_CODING_AGENT_DIR", env.agent_dir())
        .env("DREB_FAUX_SCENARIO", scenario)
        .current_dir(env.cwd())
        .stdin(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd
}

fn line(v: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(v).unwrap();
    bytes.push(b'\n');
    bytes
}

/// Spawn `cmd` with `stdout` and send it one `prompt`; returns the process and its open stdin.
fn start_prompt(mut cmd: Command, stdout: impl Into<Stdio>, message: &str) -> (Child, ChildStdin) {
    let mut child = cmd.stdout(stdout).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(&line(
            &json!({"id": "p", "type": "prompt", "message": message}),
        ))
        .unwrap();
    (child, stdin)
}

fn parse_lines(bytes: &[u8]) -> Vec<Value> {
    assert_eq!(bytes.last(), Some(&b'\n'), "stdout ends on a whole line");
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let v: Value = serde_json::from_slice(l).expect("every stdout line is JSON");
            dreb_spec_check::check_frame(&v).expect("a frame the spec knows");
            v
        })
        .collect()
}

/// The text of a reply rebuilt from its `text_delta`s, and the number of `message_update`s that carried them.
fn joined_deltas(frames: &[Value]) -> (String, usize) {
    let mut text = String::new();
    let mut count = 0;
    for f in frames {
        let ev = &f["assistantMessageEvent"];
        if f["type"] == "message_update" && ev["type"] == "text_delta" {
            text.push_str(ev["delta"].as_str().unwrap());
            count += 1;
        }
    }
    (text, count)
}

fn final_reply_text(frames: &[Value]) -> String {
    let end = frames
        .iter()
        .rev()
        .find(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant")
        .expect("the reply ended");
    end["message"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Peak resident memory of a process, from /proc (Linux).
fn peak_rss_kib(child: &Child) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Read stdout line by line until a line satisfies `done` (or EOF), returning the bytes read.
fn read_until(out: &mut impl BufRead, done: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut bytes = Vec::new();
    loop {
        let start = bytes.len();
        if out.read_until(b'\n', &mut bytes).unwrap() == 0 || done(&bytes[start..]) {
            return bytes;
        }
    }
}

fn ends_with_agent_end(line: &[u8]) -> bool {
    line.starts_with(br#"{"type":"agent_end""#)
}

const DELTAS: usize = 20_000;

/// How the host reads stdout in a streaming case.
#[derive(Clone, Copy)]
enum Reader {
    /// Reads as fast as it can.
    KeepsUp,
    /// stdout is a regular file (never blocks).
    File,
    /// Reads nothing for this long, then drains.
    PausesThenDrains(Duration),
}

/// Peak RSS the stream may add to the process's own idle footprint (debug build): the issue's 64 MB target for a
/// slow reader, counted over what the same binary holds answering one command (its mapped code, which grows with
/// every dependency, is not what a slow reader costs). The stdout queue itself is budgeted at 8 MiB
/// (docs/output-flow-control.md).
const RSS_GROWTH_LIMIT_KIB: u64 = 64 * 1024 - IDLE_ALLOWANCE_KIB;

/// The idle footprint the 64 MB target was set against (the debug binary of then, answering one command).
const IDLE_ALLOWANCE_KIB: u64 = 24 * 1024;

/// VmHWM of the same binary, same environment, after answering one `get_state` (no stream).
fn idle_rss_kib(env: &Env, scenario: &Path, extra: &[&str]) -> u64 {
    let mut cmd = command(env, scenario, extra, &[]);
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(&line(&json!({"id": "s", "type": "get_state"})))
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    let idle = peak_rss_kib(&child).expect("idle RSS readable");
    drop(stdin);
    let _ = child.wait();
    idle
}

/// One prompt whose reply is `deltas` unpaced deltas, read as `reader` says (with `--ui dashboard` when `dashboard`):
/// the process survives, its peak memory stays within [`RSS_GROWTH_LIMIT_KIB`] of its idle footprint, every delta arrives in order, and the run
/// ends with `agent_end`.
fn stream_unpaced(deltas: usize, reader: Reader, dashboard: bool) {
    let env = Env::new();
    // No auto-compaction after the long reply, so `agent_end` is the last frame.
    env.write_settings(&json!({"compaction": {"enabled": false}}));
    let scenario = scenario_file(&env, deltas);
    let out_path = env.agent_dir().join("stdout.jsonl");
    let stdout: Stdio = match reader {
        Reader::File => std::fs::File::create(&out_path).unwrap().into(),
        _ => Stdio::piped(),
    };
    let args: &[&str] = if dashboard {
        &["--no-session", "--ui", "dashboard"]
    } else {
        &["--no-session"]
    };
    let idle = idle_rss_kib(&env, &scenario, args);
    let (mut child, stdin) = start_prompt(command(&env, &scenario, args, &[]), stdout, "go");
    let deadline = Instant::now() + Duration::from_secs(300);
    let bytes = match reader {
        Reader::File => loop {
            let bytes = std::fs::read(&out_path).unwrap();
            let last = bytes[..bytes.len().saturating_sub(1)]
                .rsplit(|b| *b == b'\n')
                .next()
                .unwrap_or(&[]);
            if bytes.ends_with(b"\n") && ends_with_agent_end(last) {
                break bytes;
            }
            assert!(Instant::now() < deadline, "the run ended");
            std::thread::sleep(Duration::from_millis(50));
        },
        Reader::KeepsUp | Reader::PausesThenDrains(_) => {
            let mut stdout = BufReader::with_capacity(1 << 20, child.stdout.take().unwrap());
            if let Reader::PausesThenDrains(pause) = reader {
                // The agent fills the pipe and the queue, then waits for the reader.
                std::thread::sleep(pause);
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "still running while the reader pauses"
                );
            }
            let bytes = read_until(&mut stdout, ends_with_agent_end);
            child.stdout = Some(stdout.into_inner());
            bytes
        }
    };
    // VmHWM is the kernel's high-water mark over the whole run, read while the process still lives.
    let peak = peak_rss_kib(&child).expect("peak RSS readable");
    drop(stdin);
    if let Some(mut rest) = child.stdout.take() {
        std::io::copy(&mut rest, &mut std::io::sink()).unwrap();
    }
    assert!(child.wait().unwrap().success(), "exits 0 at end of input");
    let frames = parse_lines(&bytes);
    let (text, updates) = joined_deltas(&frames);
    assert_eq!(text.len(), deltas, "every delta arrived");
    assert!(text.bytes().all(|b| b == b'x'), "in order, nothing else");
    assert_eq!(final_reply_text(&frames), text);
    assert_eq!(frames.last().unwrap()["type"], "agent_end");
    if let Reader::PausesThenDrains(_) = reader {
        assert!(
            updates < deltas,
            "the paused reader got merged updates ({updates} frames)"
        );
    }
    eprintln!(
        "{deltas} deltas: {updates} delta frames, {} bytes, peak RSS {peak} KiB (idle {idle} KiB)",
        bytes.len()
    );
    assert!(
        peak.saturating_sub(idle) < RSS_GROWTH_LIMIT_KIB,
        "peak RSS {peak} KiB, {} KiB over the idle {idle} KiB",
        peak.saturating_sub(idle)
    );
}

const PAUSE: Duration = Duration::from_secs(30);

#[test]
fn unpaced_20k_deltas_to_a_reader_that_keeps_up() {
    stream_unpaced(DELTAS, Reader::KeepsUp, false);
}

#[test]
fn unpaced_20k_deltas_to_a_regular_file() {
    stream_unpaced(DELTAS, Reader::File, false);
}

#[test]
fn unpaced_20k_deltas_to_a_reader_paused_30s_then_draining() {
    stream_unpaced(DELTAS, Reader::PausesThenDrains(PAUSE), false);
}

// At 200,000 deltas a reader that keeps up with the full UI reads gigabytes (every frame carries the reply so far,
// twice), which a debug-build test cannot parse in reasonable time; those two readers get the dashboard projection
// (linear bytes). The paused reader, where merging does the work, gets the full UI. The release benchmark
// (crates/dreb/benches/flow_control.py, docs/benchmarks.md) runs every reader with the full UI.

#[test]
fn unpaced_200k_deltas_to_a_reader_that_keeps_up() {
    stream_unpaced(10 * DELTAS, Reader::KeepsUp, true);
}

#[test]
fn unpaced_200k_deltas_to_a_regular_file() {
    stream_unpaced(10 * DELTAS, Reader::File, true);
}

#[test]
fn unpaced_200k_deltas_to_a_reader_paused_30s_then_draining() {
    stream_unpaced(10 * DELTAS, Reader::PausesThenDrains(PAUSE), false);
}

#[test]
fn a_reader_that_never_reads_trips_the_stall_rule_and_stdout_ends_on_a_whole_line() {
    let env = Env::new();
    let scenario = scenario_file(&env, DELTAS);
    let (mut child, _stdin) = start_prompt(
        command(
            &env,
            &scenario,
            &[],
            &[("DREB_STDOUT_STALL_TIMEOUT_SECS", "1")],
        ),
        Stdio::piped(),
        "never read",
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the stall rule ended the process"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(3));
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        stderr.contains("the host stopped reading stdout"),
        "{stderr}"
    );
    assert!(
        stderr.contains("The run was aborted and the session saved."),
        "{stderr}"
    );
    // What the pipe held when the process gave up: whole lines only.
    let mut held = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut held).unwrap();
    let frames = parse_lines(&held);
    assert!(frames.iter().any(|f| f["type"] == "agent_start"));
    // The session file holds the prompt and the aborted reply.
    let sessions = env.session_dir();
    let file = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("a session file");
    let entries = read_jsonl(&file);
    let messages: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "message")
        .map(|e| &e["message"])
        .collect();
    assert_eq!(messages[0]["role"], "user");
    // The reply as far as it got: aborted by the stall rule, or complete when merged updates let it finish first.
    let reply = messages.last().unwrap();
    assert_eq!(reply["role"], "assistant");
    let stop = reply["stopReason"].as_str().unwrap();
    assert!(stop == "aborted" || stop == "stop", "{stop}");
    let text = reply["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.chars().all(|c| c == 'x') && (stop == "aborted" || text.len() == DELTAS));
}

/// A reader thread that hands over stdout line by line, so the test can write huge commands while frames arrive.
fn spawn_line_reader(stdout: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut stdout = BufReader::with_capacity(1 << 20, stdout);
        loop {
            let mut line = Vec::new();
            if stdout.read_until(b'\n', &mut line).unwrap_or(0) == 0 || tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Lines until one satisfies `done` (that one included).
fn lines_until(
    rx: &std::sync::mpsc::Receiver<Vec<u8>>,
    done: impl Fn(&[u8]) -> bool,
) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("the next frame within 120 s");
        assert_eq!(line.last(), Some(&b'\n'), "whole lines only");
        let stop = done(&line);
        lines.push(line);
        if stop {
            return lines;
        }
    }
}

fn is_response_to(id: &str) -> impl Fn(&[u8]) -> bool + '_ {
    move |l: &[u8]| l.starts_with(format!(r#"{{"id":"{id}","type":"response""#).as_bytes())
}

/// The JSON string value of a top-level `key` in a large frame, checked to be `len` copies of `fill` without parsing
/// the whole frame in the test (the frame is tens of MiB).
fn assert_large_string(line: &[u8], key: &str, fill: u8, len: usize) {
    let needle = format!(r#""{key}":""#);
    let at = line
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .unwrap_or_else(|| panic!("{key} in {}", String::from_utf8_lossy(&line[..200])))
        + needle.len();
    let value = &line[at..at + len];
    assert!(value.iter().all(|b| *b == fill), "{key} is the payload");
    assert_eq!(line[at + len], b'"', "{key} is exactly {len} bytes");
}

#[test]
fn large_echoes_are_answered_whole() {
    let env = Env::new();
    let scenario = scenario_file(&env, 3);
    let mut child = command(&env, &scenario, &[], &[])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let rx = spawn_line_reader(child.stdout.take().unwrap());

    // An 8 MiB prompt: accepted, and echoed whole in the user message's `message_start`/`message_end`.
    const PROMPT: usize = 8 * 1024 * 1024;
    let mut cmd = br#"{"id":"1","type":"prompt","message":""#.to_vec();
    cmd.extend(std::iter::repeat_n(b'p', PROMPT));
    cmd.extend_from_slice(b"\"}\n");
    stdin.write_all(&cmd).unwrap();
    let lines = lines_until(&rx, ends_with_agent_end);
    assert!(lines.iter().any(|l| is_response_to("1")(l)
        && l.ends_with(
            br#""success":true}
"#
        )));
    let user_echoes: Vec<&Vec<u8>> = lines
        .iter()
        .filter(|l| {
            l.starts_with(br#"{"type":"message_start","message":{"role":"user""#)
                || l.starts_with(br#"{"type":"message_end","message":{"role":"user""#)
        })
        .collect();
    assert_eq!(user_echoes.len(), 2, "message_start and message_end");
    for echo in user_echoes {
        assert_large_string(echo, "text", b'p', PROMPT);
    }

    // A 60 MiB session name: the change event and the state carry it whole.
    const NAME: usize = 60 * 1024 * 1024;
    let mut cmd = br#"{"id":"2","type":"set_session_name","name":""#.to_vec();
    cmd.extend(std::iter::repeat_n(b'n', NAME));
    cmd.extend_from_slice(b"\"}\n");
    stdin.write_all(&cmd).unwrap();
    stdin
        .write_all(&line(&json!({"id": "3", "type": "get_state"})))
        .unwrap();
    let lines = lines_until(&rx, is_response_to("2"));
    assert_eq!(
        lines.last().unwrap().as_slice(),
        br#"{"id":"2","type":"response","command":"set_session_name","success":true}
"#
    );
    let changed = lines
        .iter()
        .find(|l| l.starts_with(br#"{"type":"session_name_changed""#))
        .expect("session_name_changed");
    assert_large_string(changed, "name", b'n', NAME);
    let state = lines_until(&rx, is_response_to("3")).pop().unwrap();
    assert_large_string(&state, "sessionName", b'n', NAME);
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
