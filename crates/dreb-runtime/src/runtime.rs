//! The public embedding API of [`Runtime`] (start, shutdown, the outbox, waiting for the run and the children):
//! the one inherent `impl Runtime` of the crate. The handle and the services it shares are in `services`; start-up
//! wiring them together is in `startup`, the event path from the agent to the host in `event_bridge`, and each
//! command family in `commands/`, where the commands call the services they need (see
//! `docs/adr/0015-services-own-their-state.md`).

use std::path::PathBuf;
use std::sync::Arc;

use dreb_agent::Agent;
use dreb_protocol::Outbox;

use crate::options::{RuntimeOptions, StartupError};
use crate::services::Runtime;
use crate::sink::FrameSink;

impl Runtime {
    /// Start a session: settings, models, the session file, tools, the system prompt and the agent (see
    /// `startup`).
    pub fn start(
        options: RuntimeOptions,
        sink: Arc<dyn FrameSink>,
    ) -> Result<Runtime, StartupError> {
        crate::startup::start(options, sink)
    }

    /// Shutdown (also run when the stop token is cancelled; idempotent): every open dialog settles, each with its
    /// `extension_ui_response_handled` event (an open `ask` also stops the run), then the running work stops.
    pub fn shutdown(&self) {
        self.dialogs.cancel_all();
        self.background.abort_all();
        self.agent.abort();
    }

    /// After [`Runtime::shutdown`]: wait (at most `timeout`) for the aborted run to end (its `agent_end` sent, its
    /// messages persisted). Returns whether it ended in time.
    pub async fn wait_for_run_end(&self, timeout: std::time::Duration) -> bool {
        tokio::time::timeout(timeout, self.agent.wait_for_idle())
            .await
            .is_ok()
    }

    /// After [`Runtime::shutdown`]: wait (at most `timeout`) for background children to exit and be reaped.
    pub async fn wait_for_children(&self, timeout: std::time::Duration) {
        self.background.wait_for_children(timeout).await;
    }

    /// The outbox every frame of this session goes through: the serving layer writes its responses to it.
    pub fn outbox(&self) -> Outbox {
        self.outbox.clone()
    }

    /// The agent loop (for embedding and tests).
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// Path of the session file, if the session is persisted (it may not be written yet).
    pub fn session_file(&self) -> Option<PathBuf> {
        self.sessions.file()
    }

    /// Wait until no agent run is active.
    pub async fn wait_for_idle(&self) {
        self.agent.wait_for_idle().await;
    }

    /// Wait until the session is settled: no run, no retry back-off, no compaction (print mode waits for this, as
    /// the reference waits for a retry chain to finish).
    pub async fn wait_until_settled(&self) {
        loop {
            self.agent.wait_for_idle().await;
            let phase = self.phase.view(self.agent.is_streaming());
            if !phase.is_streaming && !phase.is_retrying && !phase.is_compacting {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// The session file's header line (`{"type":"session",...}`), as print mode's JSON output starts with it.
    pub fn session_header(&self) -> serde_json::Value {
        self.sessions.lock().header().to_value()
    }

    /// Tell the hook handlers the session ends (shutdown, reload); awaited, as the reference awaits its
    /// `session_shutdown` handlers before exiting.
    pub async fn announce_session_shutdown(&self) {
        crate::announce::session_shutdown(&self.hooks).await;
    }

    /// Stop every extension (`session_shutdown` first) and take them off the hook bus.
    pub async fn stop_extensions(&self) {
        self.extensions.stop(&self.hooks).await;
    }

    /// Stop every MCP server (their processes included).
    pub async fn stop_mcp_servers(&self) {
        self.mcp.shutdown().await;
    }

    /// Wait until the performance entries of every reply so far are on disk (before the process exits).
    pub async fn flush_performance_log(&self) {
        crate::commands::performance::flush().await;
    }

    /// Routes a non-command input from the host (an `extension_ui_response`) to the dialog waiting for it. Unknown
    /// or settled ids are ignored, like the reference; nothing is ever answered.
    pub fn handle_input(&self, input: &dreb_protocol::Input) {
        crate::commands::dialogs::handle_input(&self.dialogs, input);
    }
}
