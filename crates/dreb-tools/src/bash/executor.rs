//! The executor behind the RPC `bash` command: runs a command to completion (no timeout), cleans its output
//! (ANSI stripped, control characters and `\r` removed), tail-truncates it, and answers a [`BashResult`].

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::capture::OutputCapture;
use super::process::{ExecEnd, SpawnSpec, run_command};
use super::sanitize::{Utf8Stream, clean_chunk};
use super::shell::ShellConfig;
use crate::truncate::{Limits, truncate_tail};

/// The RPC `bash` response data.
pub use dreb_types::BashResult;

/// Where and how to run.
#[derive(Debug, Clone)]
pub struct BashExecOptions {
    pub cwd: PathBuf,
    pub shell: ShellConfig,
    /// Full environment (see [`super::shell::shell_env`]); `None` inherits.
    pub env: Option<Vec<(std::ffi::OsString, std::ffi::OsString)>>,
    /// The `shellCommandPrefix` setting, put on its own line before the command.
    pub command_prefix: Option<String>,
}

/// `prefix + "\n" + command` when a prefix is set.
pub fn apply_prefix(prefix: Option<&str>, command: &str) -> String {
    match prefix.filter(|p| !p.is_empty()) {
        Some(p) => format!("{p}\n{command}"),
        None => command.to_string(),
    }
}

/// Run `command`; `on_chunk` receives each cleaned chunk as it arrives. Abort (`cancel`) kills the process
/// group and still answers a result with `cancelled: true`.
pub async fn execute_bash(
    command: &str,
    opts: &BashExecOptions,
    cancel: &CancellationToken,
    mut on_chunk: Option<&mut (dyn FnMut(&str) + Send)>,
) -> Result<BashResult, String> {
    let spec = SpawnSpec {
        command: apply_prefix(opts.command_prefix.as_deref(), command),
        cwd: opts.cwd.clone(),
        shell: opts.shell.clone(),
        env: opts.env.clone(),
    };
    let mut capture = OutputCapture::default();
    let mut decoder = Utf8Stream::default();
    let end = {
        let mut on_data = |data: &[u8]| {
            let text = clean_chunk(&decoder.decode(data));
            capture.push(data.len(), text.as_bytes());
            if let Some(cb) = on_chunk.as_mut() {
                cb(&text);
            }
        };
        run_command(&spec, None, cancel, &mut on_data).await?
    };
    let tail = clean_chunk(&decoder.finish());
    if !tail.is_empty() {
        capture.push(0, tail.as_bytes());
    }
    let full = capture.text();
    let trunc = truncate_tail(&full, Limits::default());
    let path = capture.finish(trunc.truncated, &full);
    let cancelled = matches!(end, ExecEnd::Aborted) || cancel.is_cancelled();
    let exit_code = match end {
        ExecEnd::Exited(code) if !cancelled => code.map(i64::from),
        _ => None,
    };
    Ok(BashResult {
        output: if trunc.truncated { trunc.content } else { full },
        exit_code,
        cancelled,
        truncated: trunc.truncated,
        full_output_path: path.map(|p| p.to_string_lossy().into_owned()),
    })
}

/// The RPC session's "current bash command": `bash` starts one, `abort_bash` aborts the one running (SIGKILL to
/// its process group; its response still arrives, with `cancelled: true`).
#[derive(Default)]
pub struct BashSlot {
    current: std::sync::Mutex<Option<(u64, CancellationToken)>>,
    next_id: std::sync::atomic::AtomicU64,
}

impl BashSlot {
    /// Run `command` as the current one (a newer run replaces an older one as the abort target).
    pub async fn run(
        &self,
        command: &str,
        opts: &BashExecOptions,
        on_chunk: Option<&mut (dyn FnMut(&str) + Send)>,
    ) -> Result<BashResult, String> {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let token = CancellationToken::new();
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some((id, token.clone()));
        let result = execute_bash(command, opts, &token, on_chunk).await;
        let mut cur = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if cur.as_ref().is_some_and(|(cid, _)| *cid == id) {
            *cur = None;
        }
        result
    }

    /// Abort the running command, if any.
    pub fn abort(&self) {
        if let Some((_, token)) = self
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            token.cancel();
        }
    }

    pub fn is_running(&self) -> bool {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }
}
