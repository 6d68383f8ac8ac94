//! The session's extensions: which ones load (discovery with the context-trust rule for project extensions),
//! loading them in the background at start-up and on `reload`, asking the hook handlers once they are loaded, and
//! the tool set and providers with theirs. Uses only the services (`services::extensions` is what the session
//! reads of them); their calls into the session are served by `crate::extension_api`.

use std::path::PathBuf;

use dreb_extensions::DiscoveryInput;
use serde_json::Value;

use crate::services::session_store::SessionStore;
use crate::services::{Runtime, Services};

/// How the session file was chosen at start-up, when the `session_directory` hook may still choose its directory
/// (neither `--session-dir` nor the `sessionDir` setting did, and the session is persisted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionPlacement {
    /// A new session (its file is not written before the extensions are ready): it moves to the directory.
    New,
    /// `-c/--continue`: the most recent session of the directory is continued instead (a new one there if none).
    Continue,
    /// `--session` / `--fork`: the file stays; sessions started later go to the directory.
    Opened,
}

impl SessionPlacement {
    /// The placement the hook may change, from the start-up options (`None`: the directory is decided).
    pub(crate) fn of(
        options: &crate::options::RuntimeOptions,
        settings: &dreb_settings::SettingsManager,
    ) -> Option<SessionPlacement> {
        if options.no_session || options.session_dir.is_some() || settings.session_dir().is_some() {
            return None;
        }
        Some(if options.session.is_some() || options.fork.is_some() {
            SessionPlacement::Opened
        } else if options.continue_recent {
            SessionPlacement::Continue
        } else {
            SessionPlacement::New
        })
    }
}

/// Discover the extensions and start loading them in the background (the first response never waits);
/// `session_start` (with `reason`) goes to them once they are on the bus.
pub(crate) fn load_extensions(rt: &Runtime, reason: dreb_hooks::SessionStartReason) {
    // Marked at once, so that what waits for extensions waits for this load; discovery (directory scans, the
    // trust policy from the global settings file) happens off the start-up path, with the load. On the task
    // itself, not a blocking-pool thread: it is a few directory reads, and a thread started for them cost more
    // than they do, at the moment the first request is being answered.
    rt.extensions.begin_load();
    let rt = rt.clone();
    tokio::spawn(async move {
        // A panic in discovery still ends the load (with nothing found), so nothing waits for it forever.
        let (sources, skipped) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            dreb_extensions::discover(&discovery_input(&rt))
        }))
        .unwrap_or_default();
        rt.extensions
            .load(sources, skipped, &rt.hooks, start_reason(reason))
            .await;
    });
}

/// The `session_before_*` handlers, once the extensions have loaded (a session change sent right after start-up
/// must not slip past an extension that would cancel it).
pub(crate) async fn ask_session_before(
    s: &Services,
    event: &dreb_hooks::SessionBeforeEvent,
) -> dreb_hooks::SessionBeforeOutcome {
    s.extensions.ready().await;
    s.hooks.session_before(event).await
}

/// What a `navigate_tree` will do, as the `session_before_tree` handlers get it: the old leaf, the common ancestor
/// with the target and the abandoned branch's entries after it.
pub(crate) fn tree_preparation(
    sessions: &SessionStore,
    p: &dreb_protocol::NavigateTreeParams,
) -> dreb_hooks::TreePreparation {
    let session = sessions.lock();
    let old_leaf_id = session.leaf_id().map(str::to_string);
    let source = session.entries_for_branch_summary(old_leaf_id.as_deref(), &p.target_id);
    dreb_hooks::TreePreparation {
        target_id: p.target_id.clone(),
        entries_to_summarize: source.entries.iter().map(|e| e.to_value()).collect(),
        common_ancestor_id: source.common_ancestor_id,
        old_leaf_id,
        user_wants_summary: p.summarize == Some(true),
        custom_instructions: p.custom_instructions.clone(),
        replace_instructions: p.replace_instructions,
        label: p.label.clone(),
    }
}

/// The `user_bash` handlers, once the extensions have loaded.
pub(crate) async fn ask_user_bash(
    s: &Services,
    event: &dreb_hooks::UserBashEvent,
) -> Option<dreb_hooks::UserBashResult> {
    s.extensions.ready().await;
    s.hooks.user_bash(event).await
}

/// The providers the extensions registered, applied to the model registry when they changed (all replaced: a
/// provider no extension registers any more is gone); a config the registry refuses is an `extension_error`
/// (`event: "register_provider"`, the reference's text).
pub(crate) fn apply_extension_providers(s: &Services) {
    let Some(providers) = s.extensions.provider_changes() else {
        return;
    };
    let mut failures = Vec::new();
    {
        let mut registry = s.models.registry_mut();
        registry.clear_registered_providers();
        for (path, p) in providers {
            if let Err(e) = registry.register_provider(&p.name, &Value::Object(p.config)) {
                failures.push((path, e));
            }
        }
    }
    for (path, e) in failures {
        s.extensions.report(&path, "register_provider", &e);
    }
}

/// The built-in tools plus the extensions' and the MCP servers' (a name taken stays the first one's), filtered by the
/// active set an extension chose; takes effect from the next run.
pub(crate) fn apply_tools(s: &Services) {
    let mut tools = s.tools.builtin();
    let mut names: std::collections::HashSet<String> =
        tools.iter().map(|t| t.name().to_string()).collect();
    for t in s.extensions.tools() {
        let name = dreb_agent::Tool::name(t.as_ref()).to_string();
        if names.insert(name.clone()) {
            tools.push(t);
        } else {
            tracing::warn!(
                "extension {} registers tool {name}, which already exists; the first one is kept",
                t.extension().path()
            );
        }
    }
    for t in s.mcp.tools_offered(&s.tools) {
        if names.insert(t.name().to_string()) {
            tools.push(t);
        }
    }
    s.tools.retain_active(&mut tools);
    s.agent.set_tools(tools);
}

/// A compaction's preparation as the `session_before_compact` handlers get it.
pub(crate) fn compact_preparation(
    prep: &dreb_compaction::CompactionPreparation,
    settings: &dreb_compaction::CompactionSettings,
) -> dreb_hooks::CompactPreparation {
    let sorted = |set: &std::collections::BTreeSet<String>| set.iter().cloned().collect();
    dreb_hooks::CompactPreparation {
        first_kept_entry_id: prep.first_kept_entry_id.clone(),
        messages_to_summarize: prep.messages_to_summarize.clone(),
        turn_prefix_messages: prep.turn_prefix_messages.clone(),
        is_split_turn: prep.is_split_turn,
        tokens_before: prep.tokens_before,
        previous_summary: prep.previous_summary.clone(),
        file_ops: dreb_hooks::FileOps {
            read: sorted(&prep.file_ops.read),
            written: sorted(&prep.file_ops.written),
            edited: sorted(&prep.file_ops.edited),
        },
        settings: dreb_hooks::CompactSettings {
            enabled: settings.enabled,
            reserve_tokens: settings.reserve_tokens,
            keep_recent_tokens: settings.keep_recent_tokens,
        },
    }
}

/// What discovery reads for this session: its directories, both settings files' `extensions`, the command line,
/// and whether the context-trust policy grants the cwd.
fn discovery_input(services: &Services) -> DiscoveryInput {
    let settings = &services.settings;
    let options = services.extensions.options();
    let policy = settings.global_context_trust_policy();
    DiscoveryInput {
        cwd: services.cwd.clone(),
        agent_dir: services.agent_dir.clone(),
        user_settings: settings.global_extension_paths(),
        project_settings: settings.project_extension_paths(),
        cli: options.paths.clone(),
        no_extensions: options.no_extensions,
        project_trusted: dreb_settings::context_trust::match_context_trust(&policy, &services.cwd)
            .is_some(),
        python: std::env::var_os("DREB_PYTHON")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("python3")),
    }
}

fn start_reason(r: dreb_hooks::SessionStartReason) -> dreb_extension_protocol::SessionStartReason {
    use dreb_extension_protocol::SessionStartReason as W;
    use dreb_hooks::SessionStartReason as R;
    match r {
        R::Startup => W::Startup,
        R::Reload => W::Reload,
        R::New => W::New,
        R::Resume => W::Resume,
        R::Fork => W::Fork,
    }
}
