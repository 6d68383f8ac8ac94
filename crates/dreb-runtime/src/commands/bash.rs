//! `bash` and `abort_bash`: the shared executor in the process cwd, the result recorded as a `bashExecution`
//! message (at once when idle, deferred to the next prompt while a run streams). No event is emitted for it.

use crate::services::Runtime;
use dreb_agent::{AgentMessage, BashExecutionMessage};
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_tools::bash::{resolve_shell_with_settings, shell_env};

fn bash_options(rt: &Runtime) -> Result<dreb_tools::BashExecOptions, String> {
    let settings_file = rt.agent_dir.join("settings.json");
    let shell = resolve_shell_with_settings(
        rt.settings.shell_path().as_deref(),
        &settings_file.to_string_lossy(),
    )?;
    // The reference runs RPC bash in the process cwd, not the session cwd.
    let cwd = std::env::current_dir().unwrap_or_else(|_| rt.cwd.clone());
    Ok(dreb_tools::BashExecOptions {
        cwd,
        shell,
        env: Some(shell_env(Some(&rt.agent_dir.join("bin")))),
        command_prefix: rt.settings.shell_command_prefix(),
    })
}

/// Add the `bashExecution` message: to the context and the file when idle, else after the current run.
fn record_bash(rt: &Runtime, command: &str, result: &dreb_tools::BashResult) {
    let message = AgentMessage::BashExecution(BashExecutionMessage {
        role: Default::default(),
        command: command.to_string(),
        output: result.output.clone(),
        exit_code: result.exit_code,
        cancelled: result.cancelled,
        truncated: result.truncated,
        full_output_path: result.full_output_path.clone(),
        timestamp: dreb_agent::now_ms(),
        exclude_from_context: None,
    });
    if rt.phase.is_busy(&rt.agent) {
        // Appending mid-run would separate a tool call from its result.
        rt.bash.defer(message);
        return;
    }
    rt.agent.append_message(message.clone());
    rt.sessions.append(&message, "a bash execution");
}

/// The `Bash` commands.
impl BashHandler for Runtime {
    async fn bash(
        &self,
        ctx: &RequestContext,
        p: BashParams,
    ) -> Result<BashResult, errors::BashError> {
        use errors::BashError as E;
        let opts = bash_options(self).map_err(E::unexpected)?;
        // `user_bash`: a handler may run the command itself; its result is recorded like our own.
        let event = dreb_hooks::UserBashEvent {
            command: p.command.clone(),
            cwd: opts.cwd.to_string_lossy().into_owned(),
        };
        if let Some(r) = crate::extensions::ask_user_bash(self, &event).await {
            let result = dreb_tools::BashResult {
                output: r.output,
                exit_code: r.exit_code.map(i64::from),
                cancelled: r.cancelled,
                truncated: r.truncated,
                full_output_path: None,
            };
            record_bash(self, &p.command, &result);
            return Ok(result);
        }
        // Only the latest command is tracked for `abort_bash`.
        let run = self.bash.start();
        let cancel = run.cancel.clone();
        // The process runs beside later commands (as in the reference); only its start is in arrival order.
        ctx.release_order();
        let stop = self.stop.clone();
        let linked = cancel.clone();
        let shutdown = tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => linked.cancel(),
                _ = linked.cancelled() => {}
            }
        });
        let outcome = dreb_tools::execute_bash(&p.command, &opts, &cancel, None).await;
        shutdown.abort();
        // A newer command's token is kept.
        self.bash.finish(&run);
        let result = outcome.map_err(E::unexpected)?;
        record_bash(self, &p.command, &result);
        Ok(result)
    }

    async fn abort_bash(
        &self,
        _ctx: &RequestContext,
        _p: AbortBashParams,
    ) -> Result<(), errors::AbortBashError> {
        self.bash.cancel_running();
        Ok(())
    }
}
