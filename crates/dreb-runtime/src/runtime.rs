//! The live session's shared state ([`Inner`]) and the [`Runtime`] handle to it. Start-up is in `startup`, the
//! event path from the agent to the host in `event_bridge`, the run's lifecycle in `run_phase`, and each command
//! family in `commands/`.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};

use dreb_agent::{Agent, AgentMessage, QueueMode};
use dreb_ai::{ImageContent, Model, ModelRegistry, Providers};
use dreb_protocol::Outbox;
use dreb_session::SessionManager;
use dreb_settings::SettingsManager;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A queued steering/follow-up message as the host sees it (`get_pending_messages`).
#[derive(Debug, Clone)]
pub(crate) struct QueuedDisplay {
    pub steering: bool,
    pub text: String,
    pub images: Vec<ImageContent>,
}

pub(crate) struct Inner {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    /// Every frame of this session (events here, responses by the serving layer) goes through it.
    pub outbox: Outbox,
    pub settings: Arc<SettingsManager>,
    pub registry: RwLock<ModelRegistry>,
    pub providers: Providers,
    pub agent: Agent,
    pub session: Mutex<SessionManager>,
    pub no_session: bool,
    pub tasks: Mutex<Value>,
    pub queued: Mutex<Vec<QueuedDisplay>>,
    /// `bash` command results recorded while a run streamed; flushed at the next prompt.
    pub deferred_bash: Mutex<Vec<AgentMessage>>,
    pub auto_compaction: AtomicBool,
    pub auto_retry: AtomicBool,
    /// The system prompt as built from the resources; a `before_agent_start` handler may replace it for one run.
    pub base_system_prompt: Mutex<String>,
    /// Where extensions, MCP and the built-in guards plug in (see `dreb-hooks`).
    pub hooks: Arc<dreb_hooks::HookBus>,
    /// The run's lifecycle: ending, retry chain, compaction, branch summaries, overflow recovery.
    pub phase: crate::run_phase::RunPhase,
    /// The last assistant message of the current run (from `message_end`), checked at `agent_end`.
    pub last_assistant: Mutex<Option<dreb_ai::AssistantMessage>>,
    /// Cancels the running `bash` command (`abort_bash`); only the latest one is tracked.
    pub bash_cancel: Mutex<Option<(u64, CancellationToken)>>,
    pub model_fallback_message: Option<String>,
    pub stop: CancellationToken,
    /// `--ui dashboard`: events leave out `message_update`'s cumulative copies of the reply.
    pub dashboard_projection: bool,
    pub tool_names: Vec<String>,
    /// Model scope, resource metadata and caches of the peripheral commands.
    pub extras: crate::commands::extras::Extras,
    /// The extension-UI dialogs (`ask_user`, the permission gate); its frames go through `outbox`.
    pub dialog: dreb_dialog::DialogEngine,
    /// Mirrors the open dialogs for the dashboard snapshot (see `commands::dialogs`).
    pub dialog_tracker: Arc<crate::dialog_tracker::DialogTracker>,
    /// Children launched by the subagent tool.
    pub background: crate::background::BackgroundAgents,
    /// The extension processes (see `dreb-extensions`).
    pub extensions: Arc<dreb_extensions::ExtensionHost>,
    pub extension_options: crate::options::ExtensionOptions,
    /// The tools the session builds itself (the extensions' are added to these).
    pub builtin_tools: Mutex<Vec<Arc<dyn dreb_agent::Tool>>>,
    /// The active tool names an extension chose (`set_active_tools`); none = all.
    pub active_tools: Mutex<Option<Vec<String>>>,
    /// The MCP servers (see `dreb-mcp` and `crate::mcp`).
    pub mcp: Arc<dreb_mcp::McpManager>,
    /// The MCP servers the front end's client gave (`RuntimeOptions::mcp_servers`).
    pub mcp_client_servers: Option<Value>,
    /// `--tools`' MCP entries (`mcp__<server>__<tool>`, `mcp__<server>__*`); `None` without `--tools`: all.
    pub mcp_tool_filter: Option<Vec<String>>,
    /// Custom messages an extension held for the next prompt (`deliverAs: "nextTurn"`).
    pub next_turn: Mutex<Vec<AgentMessage>>,
    /// Trusted subfolders' AGENTS.md / CLAUDE.md already added to tool results (see `nested_context`).
    pub nested_context: crate::nested_context::NestedContext,
}

/// The live session. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

use crate::sync::lock;

/// Find a model by `provider/id` or fuzzy pattern among `models`.
pub(crate) fn find_model(pattern: &str, provider: Option<&str>, models: &[Model]) -> Option<Model> {
    let scoped: Vec<Model> = match provider {
        Some(p) => models.iter().filter(|m| m.provider == p).cloned().collect(),
        None => models.to_vec(),
    };
    if let Some((p, id)) = pattern.split_once('/') {
        let of_provider: Vec<Model> = scoped.iter().filter(|m| m.provider == p).cloned().collect();
        if let Some(m) = of_provider.iter().find(|m| m.id == id) {
            return Some(m.clone());
        }
        if let Some(m) = ModelRegistry::find_in(id, &of_provider) {
            return Some(m.clone());
        }
    }
    ModelRegistry::find_in(pattern, &scoped).cloned()
}

impl Runtime {
    /// Shutdown (also run when the stop token is cancelled; idempotent): every open dialog settles, each with its
    /// `extension_ui_response_handled` event (an open `ask` also stops the run), then the running work stops.
    pub fn shutdown(&self) {
        self.inner.dialog.cancel_all();
        self.inner.background.abort_all();
        self.inner.agent.abort();
    }

    /// A run is in progress, as hosts see it: from `agent_start` until its `agent_end` was sent. (The loop still
    /// holds its slot for a moment after `agent_end`; commands sent in that moment treat the session as idle.)
    pub(crate) fn is_busy(&self) -> bool {
        self.inner
            .phase
            .view(self.inner.agent.is_streaming())
            .is_streaming
    }

    /// Wait out the moment between a run's `agent_end` and the loop releasing its slot.
    pub(crate) async fn settle_after_agent_end(&self) {
        if self.inner.agent.is_streaming() && self.inner.phase.is_ending() {
            self.inner.agent.wait_for_idle().await;
        }
    }

    /// After [`Runtime::shutdown`]: wait (at most `timeout`) for the aborted run to end (its `agent_end` sent, its
    /// messages persisted). Returns whether it ended in time.
    pub async fn wait_for_run_end(&self, timeout: std::time::Duration) -> bool {
        tokio::time::timeout(timeout, self.inner.agent.wait_for_idle())
            .await
            .is_ok()
    }

    /// After [`Runtime::shutdown`]: wait (at most `timeout`) for background children to exit and be reaped.
    pub async fn wait_for_children(&self, timeout: std::time::Duration) {
        self.inner.background.wait_for_children(timeout).await;
    }

    /// The outbox every frame of this session goes through: the serving layer writes its responses to it.
    pub fn outbox(&self) -> Outbox {
        self.inner.outbox.clone()
    }

    /// The agent loop (for embedding and tests).
    pub fn agent(&self) -> &Agent {
        &self.inner.agent
    }

    /// Path of the session file, if the session is persisted (it may not be written yet).
    pub fn session_file(&self) -> Option<PathBuf> {
        lock(&self.inner.session)
            .session_file()
            .map(Path::to_path_buf)
    }

    /// Wait until no agent run is active.
    pub async fn wait_for_idle(&self) {
        self.inner.agent.wait_for_idle().await;
    }

    /// Wait until the session is settled: no run, no retry back-off, no compaction (print mode waits for this, as
    /// the reference waits for a retry chain to finish).
    pub async fn wait_until_settled(&self) {
        loop {
            self.inner.agent.wait_for_idle().await;
            let phase = self.inner.phase.view(self.inner.agent.is_streaming());
            if !phase.is_streaming && !phase.is_retrying && !phase.is_compacting {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// The session file's header line (`{"type":"session",...}`), as print mode's JSON output starts with it.
    pub fn session_header(&self) -> serde_json::Value {
        lock(&self.inner.session).header().to_value()
    }
}

pub(crate) fn parse_queue_mode(s: &str) -> QueueMode {
    if s == "all" {
        QueueMode::All
    } else {
        QueueMode::OneAtATime
    }
}

/// The folder the "see the docs" texts point at (rpc.yaml's `{docsPath}`; the reference names its install's docs).
pub(crate) const DOCS_PATH: &str = "docs";

/// `prompt`'s refusal when the model's provider has no API key.
pub(crate) fn no_api_key(provider: &str) -> dreb_protocol::errors::PromptError {
    dreb_protocol::errors::PromptError::NoApiKeyFound {
        provider: provider.into(),
        docs_path: DOCS_PATH.into(),
    }
}

/// [`no_api_key`]'s text (the agent's key lookup reports it too).
pub(crate) fn no_api_key_text(provider: &str) -> String {
    no_api_key(provider).to_string()
}

impl Runtime {
    /// Run a settings write off the async threads. A failed write does not undo the live change (the reference
    /// behaves the same); it is logged.
    pub(crate) async fn persist(
        &self,
        f: impl FnOnce(&SettingsManager) -> Result<(), dreb_settings::SettingsError> + Send + 'static,
    ) -> Result<(), String> {
        let settings = self.inner.settings.clone();
        match tokio::task::spawn_blocking(move || f(&settings)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!("could not persist a setting: {e}"),
            Err(e) => tracing::warn!("settings write task failed: {e}"),
        }
        Ok(())
    }

    /// Tell the hook handlers the session (re)started.
    pub(crate) async fn announce_session_start(&self, reason: dreb_hooks::SessionStartReason) {
        self.inner
            .hooks
            .notify(dreb_hooks::Notice::SessionStart(reason))
            .await;
    }

    /// Tell the hook handlers the session ends (shutdown, reload); awaited, as the reference awaits its
    /// `session_shutdown` handlers before exiting.
    pub async fn announce_session_shutdown(&self) {
        self.inner
            .hooks
            .notify(dreb_hooks::Notice::SessionShutdown)
            .await;
    }

    /// Tell the hook handlers the model changed from `previous`.
    pub(crate) async fn announce_model_select(&self, previous: Option<&Model>) {
        if !self.inner.hooks.has_listeners() {
            return;
        }
        let Some(model) = self.inner.agent.model() else {
            return;
        };
        let name = |m: &Model| format!("{}/{}", m.provider, m.id);
        let previous = previous.map(name);
        self.inner
            .hooks
            .notify(dreb_hooks::Notice::ModelSelect {
                model: &name(&model),
                previous: previous.as_deref(),
            })
            .await;
    }

    /// The model registry (read access).
    pub(crate) fn registry(&self) -> std::sync::RwLockReadGuard<'_, ModelRegistry> {
        self.inner
            .registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Re-read `models.json` and `auth.json`, then list the models that have credentials.
    pub(crate) fn refreshed_available_models(&self) -> Vec<Model> {
        let mut registry = self
            .inner
            .registry
            .write()
            .unwrap_or_else(|e| e.into_inner());
        registry.refresh();
        registry.available()
    }

    /// The agent's messages as wire JSON values.
    pub(crate) fn message_values(&self) -> Vec<Value> {
        self.inner
            .agent
            .messages()
            .iter()
            .filter_map(|m| serde_json::to_value(m).ok())
            .collect()
    }
}
