//! Crash safety: a writer killed mid-append loses nothing before the torn line, and the next writer starts on a
//! fresh line.
//!
//! The writer is this test binary re-executed with `DREB_SESSION_CRASH_WRITER_DIR` set (see `crash_writer_child`),
//! so the child runs the real `SessionManager` append path.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dreb_session::SessionManager;
use serde_json::{Value, json};

const CHILD_ENV: &str = "DREB_SESSION_CRASH_WRITER_DIR";

fn user(i: u64, pad: &str) -> Value {
    json!({"role":"user","content":[{"type":"text","text":format!("msg {i} {pad}")}],"timestamp":i})
}

fn assistant(i: u64) -> Value {
    json!({"role":"assistant","content":[{"type":"text","text":format!("reply {i}")}],"provider":"p","model":"m","stopReason":"stop","timestamp":i})
}

/// The child: appends ever-growing messages until killed. Does nothing in a normal test run.
#[test]
fn crash_writer_child() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let mut sm = SessionManager::create("/crash", PathBuf::from(dir)).unwrap();
    sm.append_message(user(0, "")).unwrap();
    sm.append_message(assistant(0)).unwrap();
    // Large lines make a kill inside a write likely (Linux lets a fatal signal cut a big write short).
    let pad = "x".repeat(256 * 1024);
    let mut i = 1;
    loop {
        sm.append_message(user(i, &pad)).unwrap();
        i += 1;
    }
}

fn session_file(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
}

/// Checks a killed writer's file: every complete line parses, the messages are 0, 0, 1, 2, ... without gaps, and
/// loading keeps all of them.
fn check_file(path: &Path) -> usize {
    let bytes = std::fs::read(path).unwrap();
    let complete = bytes.iter().filter(|b| **b == b'\n').count();
    let sm = SessionManager::open(path, None).unwrap();
    let entries: Vec<_> = sm.entries().collect();
    assert_eq!(
        entries.len() + 1,
        complete,
        "every complete line is kept, only a torn tail is dropped"
    );
    for (n, e) in entries.iter().enumerate() {
        let expected = if n < 2 { 0 } else { n as u64 - 1 };
        assert_eq!(e.message().unwrap()["timestamp"], expected);
    }
    for w in entries.windows(2) {
        assert_eq!(w[1].parent_id(), w[0].id());
    }
    entries.len()
}

#[test]
fn killed_writer_loses_nothing_before_the_torn_line() {
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "crash_writer_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Wait until a few big entries are on disk (polling, no timing assertion), then SIGKILL.
        let target = 1_000_000 + round * 700_000;
        loop {
            if let Some(f) = session_file(dir.path())
                && std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0) > target
            {
                break;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!("writer exited early: {status}");
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        child.kill().unwrap();
        child.wait().unwrap();

        let path = session_file(dir.path()).unwrap();
        let kept = check_file(&path);
        assert!(kept >= 4);

        // A new writer continues the session; its first line never glues onto a torn one.
        let mut sm = SessionManager::open(&path, None).unwrap();
        let leaf = sm.leaf_id().unwrap().to_string();
        sm.append_message(assistant(999)).unwrap();
        let again = SessionManager::open(&path, None).unwrap();
        assert_eq!(again.entries().count(), kept + 1);
        assert_eq!(again.leaf_entry().unwrap().parent_id(), Some(leaf.as_str()));
    }
}

#[test]
fn torn_last_line_is_skipped_and_next_append_starts_fresh() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionManager::create("/t", dir.path()).unwrap();
    sm.append_message(user(0, "")).unwrap();
    sm.append_message(assistant(0)).unwrap();
    sm.append_message(user(1, "")).unwrap();
    let path = sm.session_file().unwrap().to_path_buf();
    drop(sm);
    // Tear the last line in the middle.
    let bytes = std::fs::read(&path).unwrap();
    let cut = bytes.len() - 20;
    std::fs::write(&path, &bytes[..cut]).unwrap();

    let mut sm = SessionManager::open(&path, None).unwrap();
    assert_eq!(sm.entries().count(), 2);
    sm.append_message(user(2, "")).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'));
    let again = SessionManager::open(&path, None).unwrap();
    let stamps: Vec<_> = again
        .entries()
        .map(|e| e.message().unwrap()["timestamp"].clone())
        .collect();
    assert_eq!(stamps, [json!(0), json!(0), json!(2)]);
    // The torn bytes are still there, on their own line (nothing is silently erased).
    assert_eq!(text.lines().count(), 5);
}
