//! The session's extensions: which ones load (discovery with the context-trust rule for project extensions),
//! loading them in the background at start-up and on `reload`, extension commands in `prompt`, and what
//! `get_commands` / `get_resources` show of them.

use std::path::PathBuf;
use std::sync::Arc;

use dreb_extensions::{DiscoveryInput, ExtensionApi, ExtensionHost, HostEnv};
use serde_json::{Value, json};

use crate::runtime::{Inner, Runtime};

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

/// The agent API the extensions are served ([`crate::extension_api::ApiServer`]), plus the start-up placement of the
/// session that the `session_directory` answer completes.
struct PlacingApi {
    api: crate::extension_api::ApiServer,
    inner: std::sync::Weak<Inner>,
    /// How the session was placed at start-up while the hook may still move it (taken by the answer).
    placement: std::sync::Mutex<Option<SessionPlacement>>,
}

#[async_trait::async_trait]
impl ExtensionApi for PlacingApi {
    async fn serve(
        &self,
        extension: &str,
        command: dreb_extension_protocol::Command,
    ) -> Result<dreb_extension_protocol::ResponseData, String> {
        self.api.serve(extension, command).await
    }

    fn registrations_changed(&self) {
        self.api.registrations_changed();
    }

    async fn resources_discovered(
        &self,
        found: Vec<(String, dreb_extension_protocol::ResourcesDiscoverResult)>,
    ) {
        self.api.resources_discovered(found).await;
    }

    fn session_directory_open(&self) -> bool {
        crate::sync::lock(&self.placement).is_some()
    }

    async fn session_directory_chosen(&self, dir: PathBuf) {
        let placement = crate::sync::lock(&self.placement).take();
        if let (Some(inner), Some(placement)) = (self.inner.upgrade(), placement) {
            Runtime { inner }.place_session(dir, placement).await;
        }
    }
}

/// The extension host of a new session (nothing is started yet).
pub(crate) fn new_host(
    inner: &std::sync::Weak<Inner>,
    options: &crate::options::ExtensionOptions,
    placement: Option<SessionPlacement>,
    cwd: &std::path::Path,
    agent_dir: &std::path::Path,
    outbox: &dreb_protocol::Outbox,
) -> Arc<ExtensionHost> {
    let outbox = outbox.clone();
    ExtensionHost::new(HostEnv {
        cwd: cwd.to_path_buf(),
        agent_dir: agent_dir.to_path_buf(),
        has_ui: options.has_ui,
        flag_values: options.flags.iter().cloned().collect(),
        api: Arc::new(PlacingApi {
            api: crate::extension_api::ApiServer {
                inner: inner.clone(),
            },
            inner: inner.clone(),
            placement: std::sync::Mutex::new(placement),
        }),
        // The host of this checkout, for development builds; installed builds find it on PATH.
        javascript_checkout: Some(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/extension-host"),
        ),
        failures: Arc::new(move |f: dreb_hooks::HookFailure| {
            outbox.send(&dreb_protocol::Event::ExtensionError(
                dreb_protocol::ExtensionErrorEvent {
                    extension_path: f.source,
                    event: f.event,
                    error: f.error,
                },
            ))
        }),
    })
}

/// `/name args` → `(name, args)`.
pub(crate) fn slash_command(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix('/')?;
    let (name, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    (!name.is_empty()).then_some((name, args))
}

impl Runtime {
    /// Discover the extensions and start loading them in the background (the first response never waits);
    /// `session_start` (with `reason`) goes to them once they are on the bus.
    pub(crate) fn load_extensions(&self, reason: dreb_hooks::SessionStartReason) {
        // Marked at once, so that what waits for extensions waits for this load; discovery (directory scans, the
        // trust policy from the global settings file) happens off the start-up path, with the load.
        self.inner.extensions.begin_load();
        let rt = self.clone();
        tokio::spawn(async move {
            let inner = rt.inner.clone();
            let found = tokio::task::spawn_blocking(move || {
                dreb_extensions::discover(&discovery_input(&inner))
            })
            .await;
            let (sources, skipped) = found.unwrap_or_default();
            rt.inner
                .extensions
                .load(sources, skipped, &rt.inner.hooks, start_reason(reason))
                .await;
        });
    }

    /// The `session_directory` answer at start-up: the session's directory becomes `dir`, and the session file
    /// follows as `placement` says. Runs before the load is marked ready, so nothing that writes the session (a
    /// prompt, a host's `bash`) has run yet: a new session's file is not written, and it simply moves.
    pub(crate) async fn place_session(&self, dir: PathBuf, placement: SessionPlacement) {
        let rt = self.clone();
        let model = self.inner.agent.model();
        let thinking = self.inner.agent.thinking_level();
        let placed = tokio::task::spawn_blocking(move || {
            let mut session = crate::sync::lock(&rt.inner.session);
            let continued = match placement {
                SessionPlacement::Continue => {
                    Some(dreb_session::listing::find_most_recent_session(&dir))
                }
                _ => None,
            };
            session.set_session_dir(dir, placement != SessionPlacement::Opened)?;
            match continued {
                // The directory's most recent session, as `--continue` would have opened it there.
                Some(Some(path)) if Some(path.as_path()) != session.session_file() => {
                    session.set_session_file(&path)?;
                    Ok(true)
                }
                // None there, but one of the default directory was continued: a new session there instead.
                Some(None) if session.is_flushed() => {
                    session.new_session(dreb_session::NewSessionOptions::default());
                    if let Some(m) = &model {
                        session.append_model_change(&m.provider, &m.id)?;
                    }
                    session.append_thinking_level_change(thinking.as_str())?;
                    Ok(true)
                }
                _ => Ok::<bool, dreb_session::SessionError>(false),
            }
        })
        .await;
        match placed {
            Ok(Ok(true)) => self.sync_agent_from_session(),
            Ok(Ok(false)) => {}
            Ok(Err(e)) => tracing::warn!(
                "session_directory: the session stays where it was ({}): {e}",
                self.inner.cwd.display()
            ),
            Err(e) => tracing::warn!("session_directory: {e}"),
        }
    }

    /// Stop every extension (`session_shutdown` first) and take them off the hook bus.
    pub async fn stop_extensions(&self) {
        self.inner.extensions.ready().await;
        self.inner.extensions.shutdown(&self.inner.hooks).await;
    }

    /// Wait for extensions still loading (a prompt needs their hooks, tools and commands).
    pub(crate) async fn extensions_ready(&self) {
        self.inner.extensions.ready().await;
    }

    /// The `session_before_*` handlers, once the extensions have loaded (a session change sent right after
    /// start-up must not slip past an extension that would cancel it).
    pub(crate) async fn ask_session_before(
        &self,
        event: &dreb_hooks::SessionBeforeEvent,
    ) -> dreb_hooks::SessionBeforeOutcome {
        self.extensions_ready().await;
        self.inner.hooks.session_before(event).await
    }

    /// What a `navigate_tree` will do, as the `session_before_tree` handlers get it: the old leaf, the common
    /// ancestor with the target and the abandoned branch's entries after it.
    pub(crate) fn tree_preparation(
        &self,
        p: &dreb_protocol::NavigateTreeParams,
    ) -> dreb_hooks::TreePreparation {
        let session = crate::sync::lock(&self.inner.session);
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
        &self,
        event: &dreb_hooks::UserBashEvent,
    ) -> Option<dreb_hooks::UserBashResult> {
        self.extensions_ready().await;
        self.inner.hooks.user_bash(event).await
    }

    /// The extension that registered the command `message` names, with the command's name and arguments.
    pub(crate) fn extension_command<'m>(
        &self,
        message: &'m str,
    ) -> Option<(Arc<dreb_extensions::Extension>, &'m str, &'m str)> {
        let (name, args) = slash_command(message)?;
        let ext = self.inner.extensions.find_command(name)?;
        Some((ext, name, args))
    }

    /// Run an extension command named by a `prompt` (at once, even while streaming).
    pub(crate) async fn run_extension_command(
        &self,
        ext: &dreb_extensions::Extension,
        name: &str,
        args: &str,
    ) {
        self.inner.extensions.execute_command(ext, name, args).await;
    }

    /// `get_commands` entries of the extensions' commands (they come first, as in the reference).
    pub(crate) fn extension_command_values(&self) -> Vec<Value> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for e in self.inner.extensions.extensions() {
            for c in e.registration().commands.iter().flatten() {
                if !seen.insert(c.name.clone()) {
                    continue;
                }
                let mut v = json!({"name": c.name});
                if let Some(d) = &c.description {
                    v["description"] = json!(d);
                }
                v["source"] = json!("extension");
                v["sourceInfo"] = source_info(&e);
                out.push(v);
            }
        }
        out
    }

    /// `get_resources.extensions`: `{name, path}` of each loaded extension.
    pub(crate) fn extension_resource_values(&self) -> Vec<Value> {
        self.inner
            .extensions
            .extensions()
            .iter()
            .map(|e| json!({"name": e.name(), "path": e.path()}))
            .collect()
    }

    /// The skill and prompt paths extensions answered to `resources_discover` (relative ones against the cwd),
    /// added to the session's resources (theme paths have no use without a terminal UI).
    pub(crate) async fn add_extension_resources(
        &self,
        found: Vec<(String, dreb_extension_protocol::ResourcesDiscoverResult)>,
    ) {
        let cwd = self.inner.cwd.clone();
        let paths = |list: &Option<Vec<String>>| -> Vec<PathBuf> {
            list.iter().flatten().map(|p| cwd.join(p)).collect()
        };
        let skills: Vec<PathBuf> = found
            .iter()
            .flat_map(|(_, r)| paths(&r.skill_paths))
            .collect();
        let prompts: Vec<PathBuf> = found
            .iter()
            .flat_map(|(_, r)| paths(&r.prompt_paths))
            .collect();
        if skills.is_empty() && prompts.is_empty() {
            return;
        }
        let rt = self.clone();
        let _ = tokio::task::spawn_blocking(move || rt.extend_resources(skills, prompts)).await;
    }

    /// The providers the extensions registered, applied to the model registry when they changed (all replaced:
    /// a provider no extension registers any more is gone); a config the registry refuses is an
    /// `extension_error` (`event: "register_provider"`, the reference's text).
    pub(crate) fn apply_extension_providers(&self) {
        let Some(providers) = self.inner.extensions.provider_changes() else {
            return;
        };
        let mut failures = Vec::new();
        {
            let mut registry = self
                .inner
                .registry
                .write()
                .unwrap_or_else(|e| e.into_inner());
            registry.clear_registered_providers();
            for (path, p) in providers {
                if let Err(e) = registry.register_provider(&p.name, &Value::Object(p.config)) {
                    failures.push((path, e));
                }
            }
        }
        for (path, e) in failures {
            self.inner.extensions.report(&path, "register_provider", &e);
        }
    }

    /// The built-in tools plus the extensions' and the MCP servers' (a name taken stays the first one's), filtered by
    /// the active set an extension chose; takes effect from the next run.
    pub(crate) fn apply_tools(&self) {
        let inner = &self.inner;
        let mut tools = self.builtin_tools();
        let mut names: std::collections::HashSet<String> =
            tools.iter().map(|t| t.definition().name.clone()).collect();
        for t in inner.extensions.tools() {
            let name = dreb_agent::Tool::definition(t.as_ref()).name.clone();
            if names.insert(name.clone()) {
                tools.push(t);
            } else {
                tracing::warn!(
                    "extension {} registers tool {name}, which already exists; the first one is kept",
                    t.extension().path()
                );
            }
        }
        for t in self.mcp_tools() {
            if names.insert(t.definition().name.clone()) {
                tools.push(t);
            }
        }
        if let Some(active) = crate::sync::lock(&inner.active_tools).as_ref() {
            tools.retain(|t| active.contains(&t.definition().name));
        }
        inner.agent.set_tools(tools);
    }
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
fn discovery_input(inner: &Inner) -> DiscoveryInput {
    let settings = &inner.settings;
    let policy = settings.global_context_trust_policy();
    DiscoveryInput {
        cwd: inner.cwd.clone(),
        agent_dir: inner.agent_dir.clone(),
        user_settings: settings.global_extension_paths(),
        project_settings: settings.project_extension_paths(),
        cli: inner.extension_options.paths.clone(),
        no_extensions: inner.extension_options.no_extensions,
        project_trusted: dreb_settings::context_trust::match_context_trust(&policy, &inner.cwd)
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

/// The reference's `sourceInfo` of an extension's resources.
fn source_info(e: &dreb_extensions::Extension) -> Value {
    let source = e.source();
    let mut info = json!({
        "path": e.path(),
        "source": source.source,
        "scope": source.scope.as_str(),
        "origin": "top-level",
    });
    if let Some(dir) = &source.base_dir {
        info["baseDir"] = json!(dir.to_string_lossy());
    }
    info
}

#[cfg(test)]
mod tests {
    use super::slash_command;

    #[test]
    fn slash_commands_split_name_and_trimmed_args() {
        assert_eq!(slash_command("/stats"), Some(("stats", "")));
        assert_eq!(slash_command("/stats  a b "), Some(("stats", "a b")));
        assert_eq!(slash_command("stats"), None);
        assert_eq!(slash_command("/"), None);
    }
}
