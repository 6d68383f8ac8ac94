//! `bash` and `abort_bash`: the shared executor in the process cwd, the result recorded as a `bashExecution`
//! message (at once when idle, deferred to the next prompt while a run streams). No event is emitted for it.

use dreb_agent::{AgentMessage, BashExecutionMessage};
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_tools::bash::{resolve_shell_with_settings, shell_env};
use tokio_util::sync::CancellationToken;

use std::sync::atomic::{AtomicU64, Ordering};

static NEXT_BASH: AtomicU64 = AtomicU64::new(1);

use crate::convert::wire;
use crate::runtime::Runtime;
use crate::sync::lock;

impl Runtime {
    fn bash_options(&self) -> Result<dreb_tools::BashExecOptions, String> {
        let settings_file = self.inner.agent_dir.join("settings.json");
        let shell = resolve_shell_with_settings(
            self.inner.settings.shell_path().as_deref(),
            &settings_file.to_string_lossy(),
        )?;
        // The reference runs RPC bash in the process cwd, not the session cwd.
        let cwd = std::env::current_dir().unwrap_or_else(|_| self.inner.cwd.clone());
        Ok(dreb_tools::BashExecOptions {
            cwd,
            shell,
            env: Some(shell_env(Some(&self.inner.agent_dir.join("bin")))),
            command_prefix: self.inner.settings.shell_command_prefix(),
        })
    }

    /// Add the `bashExecution` message: to the context and the file when idle, else after the current run.
    fn record_bash(&self, command: &str, result: &dreb_tools::BashResult) {
        let message = AgentMessage::BashExecution(BashExecutionMessage {
            command: command.to_string(),
            output: result.output.clone(),
            exit_code: result.exit_code.map(i64::from),
            cancelled: result.cancelled,
            truncated: result.truncated,
            full_output_path: result.full_output_path.clone(),
            timestamp: dreb_agent::now_ms(),
            exclude_from_context: None,
        });
        if self.is_busy() {
            // Appending mid-run would separate a tool call from its result.
            lock(&self.inner.deferred_bash).push(message);
            return;
        }
        self.inner.agent.append_message(message.clone());
        let mut session = lock(&self.inner.session);
        if let Err(e) = crate::persist::append_agent_message(&mut session, &message) {
            tracing::error!("could not persist a bash execution: {e}");
        }
    }
}

/// The `Bash` commands.
impl BashHandler for Runtime {
    async fn bash(
        &self,
        ctx: &RequestContext,
        p: BashParams,
    ) -> Result<BashResult, errors::BashError> {
        use errors::BashError as E;
        let opts = self.bash_options().map_err(E::unexpected)?;
        // `user_bash`: a handler may run the command itself; its result is recorded like our own.
        let event = dreb_hooks::UserBashEvent {
            command: p.command.clone(),
            cwd: opts.cwd.to_string_lossy().into_owned(),
        };
        if let Some(r) = self.ask_user_bash(&event).await {
            let result = dreb_tools::BashResult {
                output: r.output,
                exit_code: r.exit_code,
                cancelled: r.cancelled,
                truncated: r.truncated,
                full_output_path: None,
            };
            self.record_bash(&p.command, &result);
            return wire(&result).map_err(E::unexpected);
        }
        let cancel = CancellationToken::new();
        let id = NEXT_BASH.fetch_add(1, Ordering::Relaxed);
        // Only the latest command is tracked for `abort_bash`.
        *lock(&self.inner.bash_cancel) = Some((id, cancel.clone()));
        // The process runs beside later commands (as in the reference); only its start is in arrival order.
        ctx.release_order();
        let stop = self.inner.stop.clone();
        let linked = cancel.clone();
        let shutdown = tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => linked.cancel(),
                _ = linked.cancelled() => {}
            }
        });
        let outcome = dreb_tools::execute_bash(&p.command, &opts, &cancel, None).await;
        shutdown.abort();
        {
            let mut slot = lock(&self.inner.bash_cancel);
            // Keep a newer command's token; this one is done.
            if slot.as_ref().is_some_and(|(current, _)| *current == id) {
                *slot = None;
            }
        }
        let result = outcome.map_err(E::unexpected)?;
        self.record_bash(&p.command, &result);
        wire(&result).map_err(E::unexpected)
    }

    async fn abort_bash(
        &self,
        _ctx: &RequestContext,
        _p: AbortBashParams,
    ) -> Result<(), errors::AbortBashError> {
        if let Some((_, token)) = lock(&self.inner.bash_cancel).as_ref() {
            token.cancel();
        }
        Ok(())
    }
}
