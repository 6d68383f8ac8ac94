//! Start-up: settings, models, the session file, tools, the system prompt and the agent, wired together into a
//! [`Runtime`]; and the hooks the agent loop consults.

use std::path::PathBuf;
use std::sync::{Arc, Weak};

use async_trait::async_trait;
use dreb_agent::{
    AfterToolCallContext, AfterToolCallResult, Agent, AgentConfig, AgentHooks, AgentMessage,
    AgentOptions, BeforeToolCallContext, BeforeToolCallResult, QueueMode, clamp_thinking_level,
};
use dreb_ai::{LlmClient, Model, ModelRegistry, ThinkingLevel};
use dreb_protocol::Outbox;
use dreb_session::SessionManager;
use dreb_settings::SettingsManager;
use dreb_tools::ToolContext;
use tokio_util::sync::CancellationToken;

use dreb_hooks::{HookBus, ToolCallDecision, ToolCallEvent, ToolResultEvent};

use crate::commands::prompting::no_api_key_text;
use crate::event_bridge::EventBridge;
use crate::lazy_tool::LazyTool;
use crate::options::{RuntimeOptions, StartupError, active_tool_names};
use crate::persist;
use crate::services::dialogs::Dialogs;
use crate::services::extensions::Extensions;
use crate::services::mcp::Mcp;
use crate::services::models::{Models, ScopedModel, find_model, resolve_scope, scope_patterns};
use crate::services::resources::ResourceStore;
use crate::services::session_store::SessionStore;
use crate::services::settings::Settings;
use crate::services::tool_set::ToolSet;
use crate::services::{Runtime, Services};
use crate::sink::FrameSink;

pub(crate) fn parse_queue_mode(s: &str) -> QueueMode {
    if s == "all" {
        QueueMode::All
    } else {
        QueueMode::OneAtATime
    }
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

/// The model scope (`--models` / `enabledModels`) resolved against the available models; empty without one.
fn resolve_startup_scope(
    options: &RuntimeOptions,
    settings: &SettingsManager,
    registry: &ModelRegistry,
) -> Vec<ScopedModel> {
    match scope_patterns(options, settings) {
        Some(p) if !p.is_empty() => resolve_scope(&p, registry),
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

/// A `--session` / `--fork` argument: a path, or an id prefix searched in this cwd's sessions, then every cwd's.
fn resolve_session(
    arg: &std::path::Path,
    session_dir: &std::path::Path,
    agent_dir: &std::path::Path,
) -> Result<dreb_session::ResolvedSession, StartupError> {
    let sessions_root = dreb_session::paths::sessions_root(agent_dir);
    dreb_session::resolve_session_arg(&arg.to_string_lossy(), session_dir, &sessions_root)
        .map_err(|e| StartupError(format!("Error: cannot search sessions: {e}")))
}

/// Start a session: settings, models, the session file, tools, the system prompt and the agent (`Runtime::start`).
pub(crate) fn start(
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

    // Model: explicit flags, then the saved default, then the registry's default.
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
                find_model(pattern, provider, registry.all())
            }
            None => provider.and_then(|p| registry.default_for_provider(p).cloned()),
        };
        let Some(model) = found else {
            return Err(StartupError(model_not_found_message(
                options.provider.as_deref(),
                options.model.as_deref(),
                registry.all(),
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
        let saved = match (settings.default_provider(), settings.default_model()) {
            (Some(p), Some(id)) => {
                let m = registry.find_available(&p, &id).cloned();
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
        match resolve_session(arg, &session_dir, &agent_dir)? {
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
    } else if let Some(arg) = &options.fork {
        // `--fork <path|id prefix>`: every entry copied into a new session file of this cwd.
        let source = match resolve_session(arg, &session_dir, &agent_dir)? {
            dreb_session::ResolvedSession::Path(path)
            | dreb_session::ResolvedSession::Local(path)
            | dreb_session::ResolvedSession::Global { path, .. } => path,
            dreb_session::ResolvedSession::NotFound => {
                return Err(StartupError(format!(
                    "No session found matching '{}'",
                    arg.to_string_lossy()
                )));
            }
        };
        SessionManager::fork_from(&source, cwd_str.clone(), session_dir.clone())
            .map_err(|e| StartupError(e.to_string()))?
    } else if options.continue_recent {
        // `-c/--continue`: the most recently modified session of this cwd, else a new one.
        SessionManager::continue_recent(cwd_str.clone(), session_dir.clone())
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
    // A resumed session's messages stay in its file until something needs them (see `session_conversation`).
    let restored = crate::session_conversation::session_conversation(&session).conversation;
    if restored.is_empty() {
        let _ = session.append_model_change(&model.provider, &model.id);
        let _ = session.append_thinking_level_change(thinking.as_str());
    }

    // Tools. The default set gets the subagent tool before `wait` unless subagents are off; `skill` and
    // `tasks_update` are always on (the reference's third, `search`, does not exist here), also with `--tools`.
    let max_subagents = settings.max_concurrent_subagents() as usize;
    let tool_names = active_tool_names(options.tools.as_deref(), max_subagents);

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

    let dialog_tracker = Arc::new(crate::dialog_tracker::DialogTracker::new(sink));
    let outbox = Outbox::new(dialog_tracker.clone());
    let dialog_outbox = outbox.clone();
    let dialog =
        dreb_dialog::DialogEngine::new(Arc::new(move |bytes| dialog_outbox.send_frame(bytes)));
    session.set_write_observer(persist::write_health_reporter(outbox.clone()));
    let hooks = hook_bus(&options, &settings, &cwd, &dialog, &outbox);
    let extension_options = options.extensions.clone();
    // Without a directory from the command line or the settings, an extension's `session_directory` may still
    // place the session once the extensions are loaded (before anything is written).
    let placement = crate::extensions::SessionPlacement::of(&options, &settings);
    let services = Arc::new_cyclic(|weak| Services {
        extensions: Extensions::new(
            crate::extension_api::new_host(
                weak,
                &extension_options,
                placement,
                &cwd,
                &agent_dir,
                &outbox,
            ),
            extension_options,
        ),
        mcp: Mcp::new(
            crate::mcp::new_manager(weak, &dialog, &outbox),
            options.mcp_servers.clone(),
        ),
        tools: ToolSet::new(tool_names, options.tools.as_deref()),
        queue: Default::default(),
        nested_context: Default::default(),
        hooks,
        // Found after the first response: see `services::resources`.
        resources: ResourceStore::deferred(
            &options,
            // A child's tools are its parent's choice; the note is for a session whose settings turned them off.
            max_subagents == 0 && options.ui.as_deref() != Some("agent"),
            crate::commands::discovery::startup_discovery(weak.clone()),
        ),
        cwd,
        agent_dir,
        outbox,
        settings: Settings::new(settings),
        models: Models::new(registry, providers, scoped_models, model_fallback_message),
        agent: agent.clone(),
        sessions: SessionStore::new(session, options.no_session),
        tasks: Default::default(),
        bash: Default::default(),
        phase: Default::default(),
        stop: options.stop.clone(),
        dashboard_projection: crate::projection::is_dashboard(options.ui.as_deref()),
        dialogs: Dialogs::new(dialog.clone(), dialog_tracker),
        background: crate::background::BackgroundAgents::new(
            max_subagents,
            options
                .subagent_binary
                .clone()
                .or_else(|| std::env::current_exe().ok())
                .unwrap_or_else(|| PathBuf::from("dreb")),
        ),
        model_json: Default::default(),
        daily_cost: Default::default(),
        naming: Default::default(),
        buddy: tokio::sync::Mutex::new(()),
    });
    let runtime = Runtime::from(services);
    install_tools(
        &runtime,
        max_subagents,
        options.text_files.clone(),
        options.commands.clone(),
    );
    rehydrate_background_agents(&runtime);
    agent.set_hooks(Arc::new(Hooks {
        services: crate::services::downgrade(&runtime),
    }));
    agent.subscribe(Arc::new(EventBridge {
        services: crate::services::downgrade(&runtime),
    }));
    // A cancelled, timed-out or shut-down ask stops the agent run (the reference aborts the session).
    let ask_agent = agent.clone();
    dialog.set_ask_stop_hook(Arc::new(move || ask_agent.abort()));

    // Shutdown stops running work.
    let stop_rt = runtime.clone();
    tokio::spawn(async move {
        stop_rt.stop.cancelled().await;
        stop_rt.shutdown();
    });
    // Discovery (skills, prompt templates, memory, the repository's state, the system prompt) runs now, unless
    // something needs it sooner and runs it itself. It reads files and waits for `git`, so not on a runtime thread:
    // the host's commands are answered meanwhile (ADR 0021). Its thread is started from a task, so after the host's
    // first command is answered.
    let discovery = runtime.clone();
    tokio::spawn(async move {
        let _ = tokio::task::spawn_blocking(move || discovery.resources.ensure()).await;
    });
    // Start-up does not wait for the handlers (the first response is never delayed); they hear of it first.
    // Extensions load in the background and hear of it once loaded.
    crate::extensions::load_extensions(&runtime, dreb_hooks::SessionStartReason::Startup);
    crate::mcp::load_mcp_servers(&runtime);
    if runtime.hooks.has_listeners() {
        let hooks = runtime.hooks.clone();
        tokio::spawn(async move {
            crate::announce::session_start(&hooks, dreb_hooks::SessionStartReason::Startup).await;
        });
    }
    Ok(runtime)
}

/// Build the session's own tools, in the requested order, and give the agent the composed set.
fn install_tools(
    rt: &Runtime,
    max_subagents: usize,
    text_files: Option<Arc<dyn dreb_tools::TextFiles>>,
    commands: Option<Arc<dyn dreb_tools::CommandRunner>>,
) {
    let weak = crate::services::downgrade(rt);
    let mut ctx = ToolContext::new(rt.cwd.clone());
    ctx.files = text_files;
    ctx.commands = commands;
    ctx.auto_resize_images = rt.settings.image_auto_resize();
    ctx.command_prefix = rt.settings.shell_command_prefix();
    ctx.env = Some(dreb_tools::bash::shell_env(Some(&rt.agent_dir.join("bin"))));
    ctx.dialog = Some(Arc::new(rt.dialogs.engine().clone()));
    let tasks_weak = weak.clone();
    ctx.on_tasks_update = Arc::new(move |tasks| {
        if let Some(services) = tasks_weak.upgrade() {
            let tasks = tasks.to_vec();
            services.outbox.send(&dreb_protocol::Event::TasksUpdate(
                dreb_protocol::TasksUpdateEvent {
                    tasks: tasks.clone(),
                },
            ));
            services.tasks.set(tasks);
        }
    });
    let suggest_weak = weak;
    ctx.on_suggest_next = Arc::new(move |suggestion| {
        if let Some(services) = suggest_weak.upgrade() {
            services.outbox.send(&dreb_protocol::Event::SuggestNext(
                dreb_protocol::SuggestNextEvent {
                    command: suggestion.to_string(),
                },
            ));
        }
    });
    // Requested order is kept: the subagent tool (which needs the session) takes its place among the others. The
    // subagent and built-in tools are built on first use (`LazyTool`), from what start-up gives them here.
    let ctx = Arc::new(ctx);
    let mut tools: Vec<Arc<dyn dreb_agent::Tool>> = Vec::new();
    for name in rt.tools.names() {
        if name == "skill" {
            tools.push(crate::commands::discovery::skill_tool(rt));
        } else if name == "subagent" {
            if max_subagents > 0 {
                let (services, cwd) = (crate::services::downgrade(rt), rt.cwd.clone());
                tools.push(Arc::new(LazyTool::new(name.as_str(), move || {
                    Arc::new(crate::background::tool::SubagentTool::new(
                        services.clone(),
                        &cwd,
                        max_subagents,
                    ))
                })));
            }
        } else if dreb_tools::is_builtin_tool(name) {
            let (ctx, tool) = (ctx.clone(), name.clone());
            tools.push(Arc::new(LazyTool::new(name.as_str(), move || {
                dreb_tools::create_tool(&tool, &ctx).expect("a built-in tool")
            })));
        }
    }
    rt.tools.set_builtin(tools);
    crate::extensions::apply_tools(rt);
}

/// Finished children of this (resumed) session, found again from their session files.
fn rehydrate_background_agents(rt: &Runtime) {
    let parent = {
        let session = rt.sessions.lock();
        match session.session_file() {
            Some(f) if rt.agent.message_count() > 0 => f.to_path_buf(),
            _ => return,
        }
    };
    let base = rt.agent_dir.join("subagent-sessions");
    let n = rt.background.rehydrate(&base, &parent);
    if n > 0 {
        tracing::info!(
            "[rpc] Rehydrated {n} background subagent{} from disk",
            if n == 1 { "" } else { "s" }
        );
    }
}

/// The session's hook bus: the built-in guards first, then the handlers the options bring (in their order); a
/// handler's failure becomes an `extension_error` event.
fn hook_bus(
    options: &RuntimeOptions,
    settings: &Arc<SettingsManager>,
    cwd: &std::path::Path,
    dialog: &dreb_dialog::DialogEngine,
    outbox: &Outbox,
) -> Arc<HookBus> {
    let bus = Arc::new(HookBus::new());
    bus.register(
        crate::guards::SOURCE,
        Arc::new(crate::guards::BuiltinGuards {
            settings: settings.clone(),
            cwd: cwd.to_path_buf(),
            dialog: dialog.clone(),
        }),
    );
    for (source, handler) in &options.hooks {
        bus.register(source.clone(), handler.clone());
    }
    let outbox = outbox.clone();
    bus.set_failure_sink(Arc::new(move |failure| {
        outbox.send(&dreb_protocol::Event::ExtensionError(
            dreb_protocol::ExtensionErrorEvent {
                extension_path: failure.source,
                event: failure.event,
                error: failure.error,
            },
        ))
    }));
    bus
}

/// Hooks the loop consults: credentials per call, the hook bus before and after each call and before each LLM
/// call, and the background guardrail.
struct Hooks {
    services: Weak<Services>,
}

#[async_trait]
impl AgentHooks for Hooks {
    async fn get_api_key(&self, provider: &str) -> Result<Option<String>, String> {
        let Some(services) = self.services.upgrade() else {
            return Ok(None);
        };
        let model = services.agent.model();
        let registry = services.models.registry();
        match model.filter(|m| m.provider == provider) {
            Some(m) => registry
                .api_key_for(&m)
                .map_err(|_| no_api_key_text(provider)),
            None => Ok(registry.api_key(provider)),
        }
    }

    /// The messages sent to the model, as the `context` handlers rewrite them.
    async fn transform_context(
        &self,
        messages: Vec<AgentMessage>,
        _cancel: &CancellationToken,
    ) -> Result<Vec<AgentMessage>, String> {
        match self.services.upgrade() {
            Some(services) => Ok(services.hooks.context(messages).await),
            None => Ok(messages),
        }
    }

    /// The `tool_call` handlers (the built-in guards first): block the call or change its arguments.
    async fn before_tool_call(
        &self,
        ctx: BeforeToolCallContext<'_>,
        cancel: &CancellationToken,
    ) -> Result<Option<BeforeToolCallResult>, String> {
        let Some(services) = self.services.upgrade() else {
            return Ok(None);
        };
        let mut event = ToolCallEvent {
            tool_name: ctx.tool_call.name.clone(),
            tool_call_id: ctx.tool_call.id.clone(),
            input: ctx.args.clone(),
        };
        Ok(match services.hooks.tool_call(&mut event, cancel).await {
            ToolCallDecision::Block { reason } => Some(BeforeToolCallResult {
                block: true,
                reason,
                args: None,
            }),
            ToolCallDecision::Continue if event.input != *ctx.args => Some(BeforeToolCallResult {
                args: Some(event.input),
                ..Default::default()
            }),
            ToolCallDecision::Continue => None,
        })
    }

    /// The `tool_result` handlers (secret scrubbing first), then the nested context block: the fields they changed.
    async fn after_tool_call(
        &self,
        ctx: AfterToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<AfterToolCallResult>, String> {
        let Some(services) = self.services.upgrade() else {
            return Ok(None);
        };
        let out = services
            .hooks
            .tool_result(ToolResultEvent {
                tool_name: ctx.tool_call.name.clone(),
                tool_call_id: ctx.tool_call.id.clone(),
                input: ctx.args.clone(),
                content: ctx.result.content.clone(),
                details: ctx.result.details.clone(),
                is_error: ctx.is_error,
            })
            .await;
        // A trusted subfolder's context files ride on the result, after every handler (as in the reference).
        let mut content = out.content;
        if let Some(block) = services.nested_context.block_for(
            &services.settings,
            &services.cwd,
            &services.agent_dir,
            &ctx.tool_call.name,
            ctx.args,
        ) {
            content.push(dreb_ai::UserBlock::Text(dreb_ai::TextContent {
                text: block,
                text_signature: None,
                ..Default::default()
            }));
        }
        let patch = AfterToolCallResult {
            content: (content != ctx.result.content).then_some(content),
            details: (out.details != ctx.result.details)
                .then_some(out.details)
                .flatten(),
            is_error: (out.is_error != ctx.is_error).then_some(out.is_error),
        };
        Ok((patch != AfterToolCallResult::default()).then_some(patch))
    }

    /// `before_provider_request`: the handlers may rewrite each request body.
    fn payload_hook(&self) -> Option<dreb_ai::PayloadHook> {
        let services = self.services.upgrade()?;
        let hooks = services.hooks.clone();
        Some(dreb_ai::PayloadHook(Arc::new(move |body| {
            let hooks = hooks.clone();
            Box::pin(async move { hooks.before_provider_request(body).await })
        })))
    }

    fn should_continue(&self) -> bool {
        match self.services.upgrade() {
            Some(services) => crate::background::session::should_continue(&services),
            None => true,
        }
    }

    /// A run needs the system prompt: start-up's discovery runs now if it has not yet.
    fn prepare_run(&self) {
        if let Some(services) = self.services.upgrade() {
            services.resources.ensure();
        }
    }
}
