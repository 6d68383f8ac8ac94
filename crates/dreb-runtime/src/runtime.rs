//! The live session: startup, shared state, and the event bridge from the agent to the host.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};

use async_trait::async_trait;
use dreb_agent::{
    AfterToolCallContext, AfterToolCallResult, Agent, AgentConfig, AgentEvent, AgentEventSink,
    AgentHooks, AgentMessage, AgentOptions, BeforeToolCallContext, BeforeToolCallResult, QueueMode,
    clamp_thinking_level,
};
use dreb_ai::{ImageContent, LlmClient, Model, ModelRegistry, Providers, ThinkingLevel};
use dreb_session::SessionManager;
use dreb_settings::SettingsManager;
use dreb_tools::ToolContext;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::persist;
use dreb_protocol::Outbox;

use crate::sink::FrameSink;

/// How the runtime starts (the CLI flags and environment that matter).
#[derive(Clone, Default)]
pub struct RuntimeOptions {
    pub cwd: PathBuf,
    /// `DREB_CODING_AGENT_DIR`, default `~/.dreb/agent`.
    pub agent_dir: PathBuf,
    pub provider: Option<String>,
    /// `provider/id` or a fuzzy pattern, with an optional `:<thinking>` suffix.
    pub model: Option<String>,
    pub thinking: Option<String>,
    pub api_key: Option<String>,
    pub no_session: bool,
    /// Open this session file instead of starting a new one.
    pub session: Option<PathBuf>,
    pub session_dir: Option<PathBuf>,
    pub parent_session: Option<String>,
    /// `--agent-type`: the subagent type written into a new session's header (children of the subagent tool).
    pub agent_type: Option<String>,
    /// The `dreb` executable the subagent tool runs children with (default: this process's executable).
    pub subagent_binary: Option<PathBuf>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    /// Enabled tools (None = all built-in tools).
    pub tools: Option<Vec<String>>,
    /// `--models`: comma-separated model scope patterns (overrides settings `enabledModels`).
    pub models: Option<String>,
    /// Providers to stream from (tests inject one with a scripted `faux` scenario).
    pub providers: Option<Providers>,
    /// Cancelled when the process shuts down: running work stops.
    pub stop: CancellationToken,
    /// `--ui`: `dashboard` turns on the dashboard projection of events (see `projection`); other values do not.
    pub ui: Option<String>,
}

/// Why the runtime could not start; the text goes to stderr and the process exits 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupError(pub String);

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartupError {}

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
    pub dialog_tracker: Arc<crate::commands::dialogs::DialogTracker>,
    /// Children launched by the subagent tool.
    pub background: crate::background::BackgroundAgents,
}

/// Tools active whatever `--tools` says, in the reference's order.
const ALWAYS_ACTIVE_TOOLS: [&str; 2] = ["skill", "tasks_update"];

/// Reference tool names this build does not provide. `--tools` accepts them (hosts, and agent definitions written
/// for the reference, name them; the subagent tool's default child list has `web_search,web_fetch`), and they
/// are not offered to the model.
pub const UNPROVIDED_TOOLS: [&str; 4] = ["web_search", "web_fetch", "watch_github_ci", "search"];

/// `--ui` values: `rpc` (the default), `agent` (a subagent child), `dashboard` (lean `message_update`s).
pub const UI_TYPES: [&str; 3] = ["rpc", "agent", "dashboard"];

/// Tool names this build provides, as `--tools` accepts them: the tool crate's tools, then `subagent` and `skill`
/// (which the runtime builds itself).
pub fn provided_tool_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = dreb_tools::IMPLEMENTED_TOOLS
        .iter()
        .chain(dreb_tools::EXTRA_TOOLS.iter())
        .copied()
        .collect();
    names.extend(["subagent", ALWAYS_ACTIVE_TOOLS[0]]);
    names
}

/// Whether `--tools` accepts `name`: a provided tool or one of [`UNPROVIDED_TOOLS`].
pub fn is_known_tool(name: &str) -> bool {
    UNPROVIDED_TOOLS.contains(&name) || provided_tool_names().contains(&name)
}

/// The session's tool names in request order: `requested` (`--tools`; empty for `--no-tools`) or the default set,
/// plus the always-active tools, without repeats.
fn active_tool_names(requested: Option<&[String]>, max_subagents: usize) -> Vec<String> {
    let mut names: Vec<String> = match requested {
        Some(list) => list
            .iter()
            .cloned()
            .chain(ALWAYS_ACTIVE_TOOLS.iter().map(|s| s.to_string()))
            .collect(),
        None => {
            let mut names: Vec<String> = dreb_tools::IMPLEMENTED_TOOLS
                .iter()
                .map(|s| s.to_string())
                .collect();
            if max_subagents > 0 {
                let at = names
                    .iter()
                    .position(|n| n == "ls")
                    .map_or(names.len(), |i| i + 1);
                names.insert(at, "subagent".into());
            }
            // `skill` goes where the reference puts it: first of the always-active tools.
            let at = names
                .iter()
                .position(|n| n == ALWAYS_ACTIVE_TOOLS[1])
                .unwrap_or(names.len());
            names.insert(at, ALWAYS_ACTIVE_TOOLS[0].into());
            names
        }
    };
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}

/// The live session. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Split `pattern:level` when the suffix is a thinking level.
fn split_thinking_suffix(pattern: &str) -> (&str, Option<ThinkingLevel>) {
    if let Some((head, tail)) = pattern.rsplit_once(':')
        && let Some(level) = ThinkingLevel::parse(tail)
    {
        return (head, Some(level));
    }
    (pattern, None)
}

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

/// The model scope (`--models` / `enabledModels`) resolved against the available models; empty without one.
fn resolve_startup_scope(
    options: &RuntimeOptions,
    settings: &SettingsManager,
    registry: &ModelRegistry,
) -> Vec<crate::commands::extras::ScopedModel> {
    match crate::commands::extras::scope_patterns(options, settings) {
        Some(p) if !p.is_empty() => crate::commands::extras::resolve_scope(&p, registry),
        _ => Vec::new(),
    }
}

/// The start-up error for `--provider` / `--model` matching no model: `Model not found: <provider>/<pattern>`
/// (the pattern's own `provider/` prefix is not repeated), naming the known providers (built-in and models.json)
/// when the provider is not one of them.
fn model_not_found_message(provider: Option<&str>, pattern: Option<&str>, all: &[Model]) -> String {
    let what = match (provider, pattern) {
        (Some(p), Some(m)) if m.starts_with(&format!("{p}/")) => m.to_string(),
        (Some(p), Some(m)) => format!("{p}/{m}"),
        (None, Some(m)) => m.to_string(),
        (Some(p), None) => format!("provider {p}"),
        (None, None) => String::new(),
    };
    let mut message = format!("Model not found: {what}");
    if let Some(p) = provider
        && !all.iter().any(|m| m.provider == p)
    {
        let mut providers: Vec<&str> = Vec::new();
        for m in all {
            if !providers.contains(&m.provider.as_str()) {
                providers.push(&m.provider);
            }
        }
        message.push_str(&format!(
            " (unknown provider \"{p}\"; known providers: {})",
            providers.join(", ")
        ));
    }
    message
}

fn no_models_message() -> String {
    "No models available. Set an API key environment variable:\n  ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY\n\
     or add a provider to models.json in the agent directory, or run offline with --provider faux."
        .to_string()
}

impl Runtime {
    /// Start a session: settings, models, the session file, tools, the system prompt and the agent.
    pub fn start(
        options: RuntimeOptions,
        sink: Arc<dyn FrameSink>,
    ) -> Result<Runtime, StartupError> {
        let cwd = options.cwd.clone();
        let agent_dir = options.agent_dir.clone();
        let settings = Arc::new(SettingsManager::load(&agent_dir, &cwd));
        for e in settings.load_errors() {
            tracing::warn!("{e}");
        }
        let mut registry = ModelRegistry::load(&agent_dir);
        if let Some(err) = registry.error() {
            tracing::warn!("{err}");
        }
        // The reference creates the user's memory directory at start-up, next to the agent dir (`~/.dreb/memory`
        // by default); hosts (a dashboard's memories screen) expect it to exist.
        if let Some(memory_dir) = agent_dir.parent().map(|p| p.join("memory"))
            && let Err(e) = std::fs::create_dir_all(&memory_dir)
        {
            tracing::warn!("could not create {}: {e}", memory_dir.display());
        }

        // Model: explicit flags, then the saved default, then the registry's default.
        let all: Vec<Model> = registry.all().to_vec();
        let mut thinking_from_pattern = None;
        let mut model_fallback_message = None;
        let explicit = options.model.is_some() || options.provider.is_some();
        // Resolved once (its warnings are logged once); reused by the model choice and by `cycle_model`.
        let mut startup_scope = None;
        let model = if explicit {
            let provider = options.provider.as_deref();
            let found = match options.model.as_deref() {
                Some(pattern) => {
                    let (pattern, level) = split_thinking_suffix(pattern);
                    thinking_from_pattern = level;
                    find_model(pattern, provider, &all)
                }
                None => provider.and_then(|p| registry.default_for_provider(p).cloned()),
            };
            let Some(model) = found else {
                return Err(StartupError(model_not_found_message(
                    options.provider.as_deref(),
                    options.model.as_deref(),
                    &all,
                )));
            };
            if let Some(key) = &options.api_key {
                registry.set_runtime_api_key(&model.provider, key);
            }
            model
        } else {
            if options.api_key.is_some() {
                return Err(StartupError(
                    "--api-key requires a model to be specified via --provider/--model".into(),
                ));
            }
            let available = registry.available();
            let saved = match (settings.default_provider(), settings.default_model()) {
                (Some(p), Some(id)) => {
                    let m = available
                        .iter()
                        .find(|m| m.provider == p && m.id == id)
                        .cloned();
                    if m.is_none() {
                        model_fallback_message =
                            Some(format!("Saved default model {p}/{id} is not available"));
                    }
                    m
                }
                _ => None,
            };
            // With a model scope (`--models` / `enabledModels`), start on the saved default when it is in the
            // scope, else on the first scoped model (with the thinking level its pattern pins).
            let scope = resolve_startup_scope(&options, &settings, &registry);
            let in_scope = |m: &Model| {
                scope.is_empty()
                    || scope
                        .iter()
                        .any(|s| s.model.provider == m.provider && s.model.id == m.id)
            };
            let chosen = match saved.filter(in_scope) {
                Some(m) => Some(m),
                None => match scope.first() {
                    Some(first) => {
                        thinking_from_pattern = first.thinking_level;
                        Some(first.model.clone())
                    }
                    None => registry.default_model(),
                },
            };
            startup_scope = Some(scope);
            match chosen {
                Some(m) => m,
                None => return Err(StartupError(no_models_message())),
            }
        };
        // With an explicit model, `--api-key` may have added credentials: resolve the scope against them.
        let scoped_models =
            startup_scope.unwrap_or_else(|| resolve_startup_scope(&options, &settings, &registry));
        if let Err(e) = registry.api_key_for(&model) {
            return Err(StartupError(format!(
                "{e}. Set an API key or pass --api-key."
            )));
        }

        // Thinking level: CLI > pattern suffix > settings > xhigh, clamped to the model.
        let requested = match options.thinking.as_deref() {
            Some(t) => Some(
                ThinkingLevel::parse(t)
                    .ok_or_else(|| StartupError(format!("Invalid thinking level: {t}")))?,
            ),
            None => thinking_from_pattern,
        };
        if requested == Some(ThinkingLevel::Max) && !dreb_agent::supports_max(&model) {
            return Err(StartupError(format!(
                "Thinking level \"max\" is not supported by model \"{}/{}\".",
                model.provider, model.id
            )));
        }
        let thinking = requested
            .or_else(|| {
                settings
                    .default_thinking_level()
                    .and_then(|t| ThinkingLevel::parse(&t))
            })
            .unwrap_or(ThinkingLevel::Xhigh);
        let thinking = clamp_thinking_level(&model, thinking);

        // Session.
        let session_dir = options
            .session_dir
            .clone()
            .or_else(|| settings.session_dir().map(PathBuf::from))
            .unwrap_or_else(|| {
                dreb_session::paths::default_session_dir(&cwd.to_string_lossy(), &agent_dir)
            });
        let cwd_str = cwd.to_string_lossy().into_owned();
        let mut session = if options.no_session {
            SessionManager::in_memory(cwd_str.clone())
        } else if let Some(arg) = &options.session {
            // `--session <path|id prefix>` as the reference reads it: a value with a slash or ending in `.jsonl` is
            // a path (opened, or a new session there); anything else is an id prefix, searched in this cwd's
            // session dir, then in every cwd's. A match in another cwd is forked into this one (the reference
            // asks first; RPC has no one to ask, and a fork leaves the other project's file alone).
            let sessions_root = dreb_session::paths::sessions_root(&agent_dir);
            let resolved = dreb_session::resolve_session_arg(
                &arg.to_string_lossy(),
                &session_dir,
                &sessions_root,
            )
            .map_err(|e| StartupError(format!("Error: cannot search sessions: {e}")))?;
            match resolved {
                dreb_session::ResolvedSession::Path(path)
                | dreb_session::ResolvedSession::Local(path) => {
                    SessionManager::open(path, Some(session_dir.clone()))
                }
                dreb_session::ResolvedSession::Global { path, .. } => {
                    SessionManager::fork_from(path, cwd_str.clone(), session_dir.clone())
                }
                dreb_session::ResolvedSession::NotFound => {
                    return Err(StartupError(format!(
                        "No session found matching '{}' (a session id prefix; pass a path containing '/' or \
                         ending in .jsonl to open or create a session file)",
                        arg.to_string_lossy()
                    )));
                }
            }
            .map_err(|e| StartupError(e.to_string()))?
        } else {
            SessionManager::create(cwd_str.clone(), session_dir.clone())
                .map_err(|e| StartupError(e.to_string()))?
        };
        if let Some(parent) = &options.parent_session {
            session
                .set_parent_session(parent)
                .map_err(|e| StartupError(e.to_string()))?;
        }
        if let Some(agent_type) = &options.agent_type {
            session
                .set_agent_type(agent_type)
                .map_err(|e| StartupError(e.to_string()))?;
        }
        let restored: Vec<AgentMessage> = session
            .build_session_context()
            .messages
            .into_iter()
            .filter_map(|m| serde_json::from_value(m).ok())
            .collect();
        if restored.is_empty() {
            let _ = session.append_model_change(&model.provider, &model.id);
            let _ = session.append_thinking_level_change(thinking.as_str());
        }

        // Tools. The default set gets the subagent tool after `ls` unless subagents are off; `skill` and
        // `tasks_update` are always on (the reference's third, `search`, does not exist here), also with `--tools`.
        let max_subagents = settings.max_concurrent_subagents() as usize;
        let tool_names = active_tool_names(options.tools.as_deref(), max_subagents);
        let (context_files, diagnostics) =
            dreb_settings::context_files::load_project_context_files(&cwd, &agent_dir);
        for d in diagnostics {
            tracing::warn!("{}", d.message);
        }

        let providers = options
            .providers
            .clone()
            .unwrap_or_default()
            .with_max_retry_delay_ms(settings.retry_settings().max_delay_ms);
        let llm: Arc<dyn LlmClient> = Arc::new(providers.clone());
        let mut agent_opts = AgentOptions::new(llm);
        agent_opts.model = Some(model);
        // The system prompt needs the discovered skills: it is set once the session state exists (below).
        agent_opts.thinking_level = thinking;
        agent_opts.messages = restored;
        agent_opts.steering_mode = parse_queue_mode(&settings.steering_mode());
        agent_opts.follow_up_mode = parse_queue_mode(&settings.follow_up_mode());
        agent_opts.config = AgentConfig {
            session_id: Some(session.session_id().to_string()),
            ..Default::default()
        };
        let agent = Agent::new(agent_opts);

        let dialog_tracker = Arc::new(crate::commands::dialogs::DialogTracker::new(sink));
        let outbox = Outbox::new(dialog_tracker.clone());
        let dialog_outbox = outbox.clone();
        let dialog =
            dreb_dialog::DialogEngine::new(Arc::new(move |bytes| dialog_outbox.send_frame(bytes)));
        session.set_write_observer(persist::write_health_reporter(outbox.clone()));
        let inner = Arc::new(Inner {
            extras: crate::commands::extras::Extras::new(&options, &settings, scoped_models),
            cwd,
            agent_dir,
            outbox,
            auto_compaction: AtomicBool::new(settings.compaction_enabled()),
            auto_retry: AtomicBool::new(settings.retry_enabled()),
            settings,
            registry: RwLock::new(registry),
            providers,
            agent: agent.clone(),
            session: Mutex::new(session),
            no_session: options.no_session,
            tasks: Mutex::new(Value::Array(Vec::new())),
            queued: Mutex::new(Vec::new()),
            deferred_bash: Mutex::new(Vec::new()),
            phase: Default::default(),
            last_assistant: Mutex::new(None),
            bash_cancel: Mutex::new(None),
            model_fallback_message,
            stop: options.stop.clone(),
            dashboard_projection: crate::projection::is_dashboard(options.ui.as_deref()),
            tool_names,
            dialog: dialog.clone(),
            dialog_tracker,
            background: crate::background::BackgroundAgents::new(
                max_subagents,
                options
                    .subagent_binary
                    .clone()
                    .or_else(|| std::env::current_exe().ok())
                    .unwrap_or_else(|| PathBuf::from("dreb")),
            ),
        });
        let runtime = Runtime { inner };
        runtime.rebuild_system_prompt(&context_files);
        runtime.install_tools(max_subagents);
        runtime.rehydrate_background_agents();
        agent.set_hooks(Arc::new(Hooks {
            inner: Arc::downgrade(&runtime.inner),
        }));
        agent.subscribe(Arc::new(EventBridge {
            inner: Arc::downgrade(&runtime.inner),
        }));
        // A cancelled, timed-out or shut-down ask stops the agent run (the reference aborts the session).
        let ask_agent = agent.clone();
        dialog.set_ask_stop_hook(Arc::new(move || ask_agent.abort()));

        // Shutdown stops running work.
        let stop_rt = runtime.clone();
        tokio::spawn(async move {
            stop_rt.inner.stop.cancelled().await;
            stop_rt.shutdown();
        });
        Ok(runtime)
    }

    fn install_tools(&self, max_subagents: usize) {
        let weak = Arc::downgrade(&self.inner);
        let mut ctx = ToolContext::new(self.inner.cwd.clone());
        ctx.auto_resize_images = self.inner.settings.image_auto_resize();
        ctx.command_prefix = self.inner.settings.shell_command_prefix();
        ctx.env = Some(dreb_tools::bash::shell_env(Some(
            &self.inner.agent_dir.join("bin"),
        )));
        ctx.dialog = Some(Arc::new(self.inner.dialog.clone()));
        let tasks_weak = weak.clone();
        ctx.on_tasks_update = Arc::new(move |tasks| {
            if let Some(inner) = tasks_weak.upgrade() {
                let value = serde_json::to_value(tasks).unwrap_or(Value::Array(Vec::new()));
                *lock(&inner.tasks) = value.clone();
                inner
                    .outbox
                    .send(&serde_json::json!({"type": "tasks_update", "tasks": value}));
            }
        });
        let suggest_weak = weak;
        ctx.on_suggest_next = Arc::new(move |suggestion| {
            if let Some(inner) = suggest_weak.upgrade() {
                let mut frame = serde_json::json!({"type": "suggest_next"});
                if let (Some(obj), Ok(Value::Object(fields))) =
                    (frame.as_object_mut(), serde_json::to_value(suggestion))
                {
                    obj.extend(fields);
                }
                inner.outbox.send(&frame);
            }
        });
        // Requested order is kept: the subagent tool (which needs the session) takes its place among the others.
        let mut tools = Vec::new();
        for name in &self.inner.tool_names {
            if name == "skill" {
                tools.push(self.skill_tool());
            } else if name == "subagent" {
                if max_subagents > 0 {
                    tools.push(Arc::new(crate::background::tool::SubagentTool::new(
                        Arc::downgrade(&self.inner),
                        &self.inner.cwd,
                        max_subagents,
                    )) as Arc<dyn dreb_agent::Tool>);
                }
            } else {
                tools.extend(dreb_tools::create_tool(name, &ctx));
            }
        }
        self.inner.agent.set_tools(tools);
    }

    /// Finished children of this (resumed) session, found again from their session files.
    fn rehydrate_background_agents(&self) {
        let parent = {
            let session = lock(&self.inner.session);
            match session.session_file() {
                Some(f) if !self.inner.agent.messages().is_empty() => f.to_path_buf(),
                _ => return,
            }
        };
        let base = self.inner.agent_dir.join("subagent-sessions");
        let n = self.inner.background.rehydrate(&base, &parent);
        if n > 0 {
            tracing::info!(
                "[rpc] Rehydrated {n} background subagent{} from disk",
                if n == 1 { "" } else { "s" }
            );
        }
    }

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
}

pub(crate) fn parse_queue_mode(s: &str) -> QueueMode {
    if s == "all" {
        QueueMode::All
    } else {
        QueueMode::OneAtATime
    }
}

/// Hooks the loop consults: credentials per call, the tool guards before and after each call.
struct Hooks {
    inner: Weak<Inner>,
}

#[async_trait]
impl AgentHooks for Hooks {
    async fn get_api_key(&self, provider: &str) -> Result<Option<String>, String> {
        let Some(inner) = self.inner.upgrade() else {
            return Ok(None);
        };
        let model = inner.agent.model();
        let registry = inner.registry.read().unwrap_or_else(|e| e.into_inner());
        match model.filter(|m| m.provider == provider) {
            Some(m) => registry
                .api_key_for(&m)
                .map_err(|_| no_api_key_text(provider)),
            None => Ok(registry.api_key(provider)),
        }
    }

    async fn before_tool_call(
        &self,
        ctx: BeforeToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> Result<Option<BeforeToolCallResult>, String> {
        let Some(inner) = self.inner.upgrade() else {
            return Ok(None);
        };
        Ok(crate::commands::dialogs::guard_before_tool_call(&inner, &ctx, cancel).await)
    }

    async fn after_tool_call(
        &self,
        ctx: AfterToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<AfterToolCallResult>, String> {
        let Some(inner) = self.inner.upgrade() else {
            return Ok(None);
        };
        Ok(crate::commands::dialogs::scrub_after_tool_call(
            &inner, &ctx,
        ))
    }

    fn should_continue(&self) -> bool {
        match self.inner.upgrade() {
            Some(inner) => crate::background::should_continue(&inner),
            None => true,
        }
    }
}

pub(crate) fn no_api_key_text(provider: &str) -> String {
    format!(
        "No API key found for {provider}.\n\nUse /login or set an API key environment variable. See docs/providers.md"
    )
}

/// Forwards every agent event to the host, then persists what it changed.
struct EventBridge {
    inner: Weak<Inner>,
}

#[async_trait]
impl AgentEventSink for EventBridge {
    async fn on_event(&self, event: &AgentEvent) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        match event {
            AgentEvent::AgentStart { .. } => inner.phase.agent_started(),
            AgentEvent::AgentEnd { .. } => inner.phase.agent_ended(),
            _ => {}
        }
        match mergeable_delta(event, inner.dashboard_projection, &inner.outbox) {
            Some(delta) => inner.outbox.send_delta(delta),
            None if inner.dashboard_projection => inner
                .outbox
                .send(&dreb_agent::event::DashboardEventJson(event)),
            None => inner.outbox.send(event),
        }
        let outbox = inner.outbox.clone();
        self.after_sent(inner, event);
        // Backpressure: the loop (and so the provider stream) goes no faster than the host reads.
        outbox.ready().await;
        // Fairness: a stream that is always ready (an unpaced provider) would otherwise keep this task running and
        // starve the stdout writer it just woke; yield once the task's coop budget is spent.
        tokio::task::consume_budget().await;
    }
}

/// A streaming delta as a [`DeltaFrame`] the writer may merge, when the writer is behind; `None` otherwise (a
/// reader that keeps up gets every delta in its own frame, and the clone below is not paid).
fn mergeable_delta(
    event: &AgentEvent,
    dashboard_projection: bool,
    outbox: &dreb_protocol::Outbox,
) -> Option<dreb_protocol::DeltaFrame> {
    use dreb_ai::AssistantMessageEvent as E;
    let AgentEvent::MessageUpdate {
        assistant_message_event: stream_event,
    } = event
    else {
        return None;
    };
    let (kind, content_index, delta) = match stream_event {
        E::TextDelta {
            content_index,
            delta,
            ..
        } => ("text_delta", content_index, delta),
        E::ThinkingDelta {
            content_index,
            delta,
            ..
        } => ("thinking_delta", content_index, delta),
        E::ToolcallDelta {
            content_index,
            delta,
            ..
        } => ("toolcall_delta", content_index, delta),
        _ => return None,
    };
    if !outbox.is_behind() {
        return None;
    }
    let key = dreb_protocol::DeltaKey {
        kind,
        content_index: *content_index as u64,
    };
    let mut owned = if dashboard_projection {
        // The projection writes neither `partial` nor `message`: the queued frame keeps none of the reply (it would
        // otherwise hold a copy of it per queued frame, far more than the frame's bytes it is counted by).
        AgentEvent::MessageUpdate {
            assistant_message_event: without_reply(stream_event),
        }
    } else {
        event.clone()
    };
    let render = move |joined: &str| {
        if let AgentEvent::MessageUpdate {
            assistant_message_event:
                E::TextDelta { delta, .. }
                | E::ThinkingDelta { delta, .. }
                | E::ToolcallDelta { delta, .. },
        } = &mut owned
        {
            joined.clone_into(delta);
        }
        let encoded = if dashboard_projection {
            dreb_protocol::framing::encode_frame(&dreb_agent::event::DashboardEventJson(&owned))
        } else {
            dreb_protocol::framing::encode_frame(&owned)
        };
        encoded.unwrap_or_else(|e| {
            tracing::error!("could not encode a frame: {e}");
            Vec::new()
        })
    };
    Some(dreb_protocol::DeltaFrame::new(key, delta.clone(), render))
}

/// A streaming delta with an empty `partial` (see [`mergeable_delta`]).
fn without_reply(event: &dreb_ai::AssistantMessageEvent) -> dreb_ai::AssistantMessageEvent {
    use dreb_ai::AssistantMessageEvent as E;
    match event {
        E::TextDelta {
            content_index,
            delta,
            partial,
        } => E::TextDelta {
            content_index: *content_index,
            delta: delta.clone(),
            partial: partial.clone_without_content(),
        },
        E::ThinkingDelta {
            content_index,
            delta,
            partial,
        } => E::ThinkingDelta {
            content_index: *content_index,
            delta: delta.clone(),
            partial: partial.clone_without_content(),
        },
        E::ToolcallDelta {
            content_index,
            delta,
            partial,
        } => E::ToolcallDelta {
            content_index: *content_index,
            delta: delta.clone(),
            partial: partial.clone_without_content(),
        },
        other => other.clone(),
    }
}

impl EventBridge {
    /// What an event changes once the host has it: background bookkeeping, the queue, persistence.
    fn after_sent(&self, inner: Arc<Inner>, event: &AgentEvent) {
        match event {
            AgentEvent::TurnStart => crate::background::on_turn_start(&inner),
            AgentEvent::TurnEnd { .. } => crate::background::on_turn_end(&inner),
            AgentEvent::MessageStart {
                message: AgentMessage::Assistant(_),
            } => crate::background::on_assistant_message_start(&inner),
            AgentEvent::MessageUpdate {
                assistant_message_event: dreb_ai::AssistantMessageEvent::TextDelta { partial, .. },
            } => crate::background::on_text_delta(&inner, crate::background::first_text(partial)),
            AgentEvent::ToolExecutionEnd {
                tool_name,
                result,
                is_error,
                ..
            } => crate::background::on_tool_end(&inner, tool_name, result, *is_error),
            AgentEvent::MessageStart {
                message: AgentMessage::User(user),
            } => {
                inner.phase.rearm_overflow_recovery();
                // A queued message reached the conversation: it is no longer pending.
                let text = user.content.text();
                let mut queued = lock(&inner.queued);
                if let Some(i) = queued.iter().position(|q| q.text == text) {
                    queued.remove(i);
                }
            }
            AgentEvent::MessageEnd { message } => {
                crate::commands::performance::on_message_end(&inner, message);
                let mut session = lock(&inner.session);
                if let Err(e) = persist::append_agent_message(&mut session, message) {
                    tracing::error!("could not persist a message: {e}");
                }
                drop(session);
                if let AgentMessage::Assistant(assistant) = message {
                    crate::background::on_assistant_end(&inner, assistant);
                    Runtime { inner }.on_assistant_end(assistant);
                }
            }
            AgentEvent::AgentEnd { .. } => Runtime { inner }.after_agent_end(),
            _ => {}
        }
    }
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
