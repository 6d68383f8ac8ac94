//! Runs one shell command in its own process group, streaming stdout+stderr as they arrive. Abort and timeout
//! kill the whole group (SIGKILL), so nothing the command started survives; dropping the future mid-run does
//! the same.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

use super::shell::ShellConfig;

/// After the shell exits, how long to keep draining pipes that a backgrounded child may still hold open.
const EXIT_STDIO_GRACE: Duration = Duration::from_millis(100);

/// What to run.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    pub command: String,
    pub cwd: PathBuf,
    pub shell: ShellConfig,
    /// The full environment; `None` inherits the process environment.
    pub env: Option<Vec<(OsString, OsString)>>,
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecEnd {
    /// The shell exited; `None` when it was killed by a signal.
    Exited(Option<i32>),
    Aborted,
    TimedOut,
}

/// Kills the process group when dropped unless the command finished on its own.
struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // The group may already be gone; nothing else to do then.
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The error text when the command's working directory is gone (checked before anything runs).
pub fn check_cwd(spec: &SpawnSpec) -> Result<(), String> {
    if spec.cwd.exists() {
        return Ok(());
    }
    Err(format!(
        "Working directory does not exist: {}\nCannot execute bash commands.",
        spec.cwd.display()
    ))
}

/// Run the command; `on_data` receives every chunk of merged stdout/stderr in arrival order.
pub async fn run_command(
    spec: &SpawnSpec,
    timeout: Option<Duration>,
    cancel: &CancellationToken,
    on_data: &mut (dyn FnMut(&[u8]) + Send),
) -> Result<ExecEnd, String> {
    check_cwd(spec)?;
    if cancel.is_cancelled() {
        return Ok(ExecEnd::Aborted);
    }
    let mut cmd = Command::new(&spec.shell.shell);
    cmd.args(&spec.shell.args)
        .arg(&spec.command)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(env) = &spec.env {
        cmd.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    }
    let mut child = cmd.spawn().map_err(|e| {
        let code = crate::paths::errno_code(&e).unwrap_or_else(|| e.kind().to_string());
        format!("spawn {} {code}", spec.shell.shell.display())
    })?;
    let mut guard = GroupGuard {
        pgid: child.id().map(|p| p as i32),
    };
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let mut out_buf = vec![0u8; 64 * 1024];
    let mut err_buf = vec![0u8; 64 * 1024];
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let sleep_until = |d: Option<tokio::time::Instant>| async move {
        match d {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending().await,
        }
    };

    let mut status: Option<Option<i32>> = None;
    let mut grace_deadline: Option<tokio::time::Instant> = None;
    loop {
        if status.is_some() && stdout.is_none() && stderr.is_none() {
            break;
        }
        tokio::select! {
            r = async { stdout.as_mut().unwrap().read(&mut out_buf).await }, if stdout.is_some() => match r {
                Ok(0) | Err(_) => stdout = None,
                Ok(n) => on_data(&out_buf[..n]),
            },
            r = async { stderr.as_mut().unwrap().read(&mut err_buf).await }, if stderr.is_some() => match r {
                Ok(0) | Err(_) => stderr = None,
                Ok(n) => on_data(&err_buf[..n]),
            },
            w = child.wait(), if status.is_none() => {
                let code = w.map_err(|e| e.to_string())?.code();
                status = Some(code);
                grace_deadline = Some(tokio::time::Instant::now() + EXIT_STDIO_GRACE);
            }
            _ = sleep_until(grace_deadline), if grace_deadline.is_some() => break,
            _ = cancel.cancelled() => {
                guard.kill();
                let _ = child.wait().await;
                return Ok(ExecEnd::Aborted);
            }
            _ = sleep_until(deadline), if deadline.is_some() && status.is_none() => {
                guard.kill();
                let _ = child.wait().await;
                return Ok(ExecEnd::TimedOut);
            }
        }
    }
    // Finished on its own: leave any deliberately backgrounded processes alone, as the reference does.
    guard.pgid = None;
    Ok(ExecEnd::Exited(status.flatten()))
}
