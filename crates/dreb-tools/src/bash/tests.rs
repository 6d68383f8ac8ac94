//! Real-process tests of the bash tool and the RPC executor.

use std::path::Path;
use std::time::Duration;

use dreb_agent::Tool;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::executor::{BashExecOptions, execute_bash};
use super::shell::ShellConfig;
use crate::tools::bash::{BashTool, BashToolOptions};
use crate::tools::test_util::{noop_update, recording_update, text_of};

fn exec_opts(cwd: &Path) -> BashExecOptions {
    BashExecOptions {
        cwd: cwd.to_path_buf(),
        shell: ShellConfig::default(),
        env: None,
        command_prefix: None,
    }
}

fn tool(cwd: &Path) -> BashTool {
    BashTool::new(cwd, BashToolOptions::default())
}

/// Gone, or a zombie waiting for a reaper that is not us: either way it no longer runs.
fn process_gone(pid: i32) -> bool {
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_err() {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .map(|r| r.trim_start().starts_with('Z'))
                .unwrap_or(false)
        })
        .unwrap_or(true)
}

/// Poll until every pid is gone (SIGKILL delivery is asynchronous); bounded so a failure cannot hang.
async fn wait_all_gone(pids: &[i32]) -> bool {
    for _ in 0..500 {
        if pids.iter().all(|p| process_gone(*p)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

#[tokio::test]
async fn tool_plain_output_empty_output_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let t = tool(dir.path());
    let out = t
        .execute(
            "c",
            json!({"command": "echo hello; pwd"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&out), format!("hello\n{}", dir.path().display()));
    assert!(out.details.is_none());
    let out = t
        .execute(
            "c",
            json!({"command": "true"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&out), "(no output)");
    // Only whitespace (blank lines, spaces) is no output too, as in the reference.
    let blank = t
        .execute(
            "c",
            json!({"command": "printf '\\n  \\n\\n'"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&blank), "(no output)");
    let err = t
        .execute(
            "c",
            json!({"command": "echo oops >&2; exit 3"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.message, "oops\n\nCommand exited with code 3");
    let err = t
        .execute(
            "c",
            json!({"command": "exit 4"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.message, "(no output)\n\nCommand exited with code 4");
}

#[tokio::test]
async fn tool_renders_terminal_output_and_applies_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let t = BashTool::new(
        dir.path(),
        BashToolOptions {
            command_prefix: Some("X=from-prefix".into()),
            ..Default::default()
        },
    );
    let out = t
        .execute(
            "c",
            json!({"command": "printf 'a 0%%\\ra 100%%\\n'; echo $X"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap();
    assert_eq!(text_of(&out), "a 100%\nfrom-prefix");
}

#[tokio::test]
async fn tool_streams_partial_output() {
    let dir = tempfile::tempdir().unwrap();
    let (update, seen) = recording_update();
    tool(dir.path())
        .execute(
            "c",
            json!({"command": "echo one; echo two"}),
            CancellationToken::new(),
            update,
        )
        .await
        .unwrap();
    let seen = seen.lock().unwrap();
    assert!(
        seen[0].content.is_empty(),
        "first update is the empty start marker"
    );
    assert!(seen.len() >= 2);
    assert!(text_of(seen.last().unwrap()).contains("two"));
    assert_eq!(seen.last().unwrap().details, Some(json!({})));
}

#[tokio::test]
async fn tool_truncation_writes_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = tool(dir.path())
        .execute(
            "c",
            json!({"command": "seq 3000"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap();
    let text = text_of(&out);
    let notice = text.rsplit("\n\n").next().unwrap();
    let path = notice
        .strip_prefix("[Showing lines 1001-3000 of 3000. Full output: ")
        .unwrap()
        .strip_suffix(']')
        .unwrap();
    assert!(text.starts_with("1001\n"));
    let name = Path::new(path)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        name.starts_with("dreb-bash-") && name.ends_with(".log") && name.len() == 30,
        "{name}"
    );
    let full = std::fs::read_to_string(path).unwrap();
    assert_eq!(full.lines().count(), 3000);
    let d = out.details.unwrap();
    assert_eq!(d["fullOutputPath"], json!(path));
    assert_eq!(d["truncation"]["truncatedBy"], json!("lines"));
    std::fs::remove_file(path).unwrap();

    // Over 50 KB in one line: last-line-partial notice.
    let out = tool(dir.path())
        .execute(
            "c",
            json!({"command": "head -c 60000 /dev/zero | tr '\\0' A"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap();
    let text = text_of(&out);
    let notice = text.rsplit("\n\n").next().unwrap();
    assert!(
        notice.starts_with("[Showing last 50.0KB of line 1 (line is 58.6KB). Full output: "),
        "{notice}"
    );
    let path = out.details.unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 60000);
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn tool_byte_limit_notice() {
    let dir = tempfile::tempdir().unwrap();
    // 1000 lines of 100 bytes: under the line limit, over 50 KB.
    let cmd = "for i in $(seq 1000); do printf '%099d\\n' $i; done";
    let out = tool(dir.path())
        .execute(
            "c",
            json!({"command": cmd}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap();
    let text = text_of(&out);
    let notice = text.rsplit("\n\n").next().unwrap();
    assert!(
        notice.starts_with("[Showing lines 489-1000 of 1000 (50.0KB limit). Full output: "),
        "{notice}"
    );
    let path = out.details.unwrap()["fullOutputPath"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 100_000);
    std::fs::remove_file(path).unwrap();
}

#[tokio::test]
async fn tool_timeout_kills_command() {
    let dir = tempfile::tempdir().unwrap();
    let err = tool(dir.path())
        .execute(
            "c",
            json!({"command": "echo started; sleep 30", "timeout": 1}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.message, "started\n\nCommand timed out after 1 seconds");
}

#[tokio::test]
async fn abort_kills_the_whole_process_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (update, seen) = recording_update();
    let cancel = CancellationToken::new();
    let t = tool(dir.path());
    // A backgrounded grandchild plus a foreground child, both in the command's process group.
    let cmd =
        "sleep 300 & echo BG $!; (sleep 300; echo never) & echo SUB $!; echo SH $$; sleep 300";
    let run = t.execute("c", json!({"command": cmd}), cancel.clone(), update);
    let watcher = async {
        loop {
            let text = seen.lock().unwrap().last().map(text_of).unwrap_or_default();
            if text.contains("SH ") {
                cancel.cancel();
                return text;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let (result, text) = tokio::join!(run, watcher);
    let err = result.unwrap_err();
    assert!(
        err.message.ends_with("\n\nCommand aborted"),
        "{}",
        err.message
    );
    let pids: Vec<i32> = text
        .lines()
        .filter_map(|l| l.split_once(' ').and_then(|(_, p)| p.trim().parse().ok()))
        .collect();
    assert_eq!(pids.len(), 3, "{text}");
    assert!(
        wait_all_gone(&pids).await,
        "processes survived the abort: {pids:?}"
    );
}

#[tokio::test]
async fn dropping_the_tool_future_kills_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let t = tool(dir.path());
    let cmd = format!("sleep 300 & echo $! > {}; sleep 300", pid_file.display());
    let run = t.execute(
        "c",
        json!({"command": cmd}),
        CancellationToken::new(),
        noop_update(),
    );
    let waited = tokio::time::timeout(Duration::from_millis(300), run).await;
    assert!(waited.is_err(), "the command should still be running");
    // `run` was dropped by timeout(): the group must be killed.
    let pid: i32 = loop {
        if let Ok(s) = std::fs::read_to_string(&pid_file)
            && let Ok(p) = s.trim().parse()
        {
            break p;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(wait_all_gone(&[pid]).await);
}

#[tokio::test]
async fn backgrounded_process_does_not_hold_the_result() {
    let dir = tempfile::tempdir().unwrap();
    // The background sleep keeps the output pipe open; the result must still arrive once the shell exits.
    let out = tool(dir.path())
        .execute(
            "c",
            json!({"command": "sleep 300 & echo $!"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap();
    let pid: i32 = text_of(&out).trim().parse().unwrap();
    // Deliberately backgrounded work survives a normal finish, as in the reference.
    assert!(!process_gone(pid));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
}

#[tokio::test]
async fn missing_cwd_is_a_clear_error() {
    let err = tool(Path::new("/definitely/not/here"))
        .execute(
            "c",
            json!({"command": "ls"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.message,
        "Working directory does not exist: /definitely/not/here\nCannot execute bash commands."
    );
}

#[tokio::test]
async fn executor_result_shape() {
    let dir = tempfile::tempdir().unwrap();
    let r = execute_bash(
        "printf '\\033[31mred\\033[0m\\r\\n'; exit 3",
        &exec_opts(dir.path()),
        &CancellationToken::new(),
        None,
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"output": "red\n", "exitCode": 3, "cancelled": false, "truncated": false})
    );
    let mut chunks = Vec::new();
    let mut on_chunk = |c: &str| chunks.push(c.to_string());
    let mut opts = exec_opts(dir.path());
    opts.command_prefix = Some("echo prefix".into());
    let r = execute_bash(
        "echo body",
        &opts,
        &CancellationToken::new(),
        Some(&mut on_chunk),
    )
    .await
    .unwrap();
    assert_eq!(r.output, "prefix\nbody\n");
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(chunks.concat(), "prefix\nbody\n");
}

#[tokio::test]
async fn executor_truncation_and_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let r = execute_bash(
        "seq 3000",
        &exec_opts(dir.path()),
        &CancellationToken::new(),
        None,
    )
    .await
    .unwrap();
    assert!(r.truncated);
    assert!(r.output.starts_with("1002\n") && r.output.ends_with("3000\n"));
    let path = r.full_output_path.unwrap();
    assert_eq!(
        std::fs::read_to_string(&path).unwrap().lines().count(),
        3000
    );
    std::fs::remove_file(path).unwrap();

    let r = execute_bash(
        "head -c 60000 /dev/zero | tr '\\0' A",
        &exec_opts(dir.path()),
        &CancellationToken::new(),
        None,
    )
    .await
    .unwrap();
    assert!(r.truncated);
    let path = r.full_output_path.unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 60000);
    std::fs::remove_file(path).unwrap();

    let r = execute_bash(
        "echo small",
        &exec_opts(dir.path()),
        &CancellationToken::new(),
        None,
    )
    .await
    .unwrap();
    assert!(!r.truncated && r.full_output_path.is_none());
}

#[tokio::test]
async fn executor_abort_returns_cancelled_result() {
    let dir = tempfile::tempdir().unwrap();
    let cancel = CancellationToken::new();
    let mut started = false;
    let c2 = cancel.clone();
    let mut on_chunk = move |c: &str| {
        if c.contains("ready") && !started {
            started = true;
            c2.cancel();
        }
    };
    let r = execute_bash(
        "echo ready; sleep 300",
        &exec_opts(dir.path()),
        &cancel,
        Some(&mut on_chunk),
    )
    .await
    .unwrap();
    assert_eq!(
        serde_json::to_value(&r).unwrap(),
        json!({"output": "ready\n", "cancelled": true, "truncated": false})
    );
}

#[tokio::test]
async fn bash_slot_aborts_the_running_command() {
    let dir = tempfile::tempdir().unwrap();
    let slot = std::sync::Arc::new(super::BashSlot::default());
    assert!(!slot.is_running());
    let s2 = slot.clone();
    let mut on_chunk = move |c: &str| {
        if c.contains("ready") {
            s2.abort();
        }
    };
    let r = slot
        .run(
            "echo ready; sleep 300",
            &exec_opts(dir.path()),
            Some(&mut on_chunk),
        )
        .await
        .unwrap();
    assert!(r.cancelled);
    assert_eq!(r.exit_code, None);
    assert!(!slot.is_running());
    slot.abort(); // nothing running: a no-op
    let r = slot
        .run("exit 2", &exec_opts(dir.path()), None)
        .await
        .unwrap();
    assert_eq!((r.cancelled, r.exit_code), (false, Some(2)));
}
