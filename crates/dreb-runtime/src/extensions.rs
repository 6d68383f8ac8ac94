//! The session's extensions: which ones load (discovery with the context-trust rule for project extensions),
//! loading them in the background at start-up and on `reload`, extension commands in `prompt`, and what
//! `get_commands` / `get_resources` show of them.

use std::path::PathBuf;
use std::sync::Arc;

use dreb_extensions::{DiscoveryInput, ExtensionHost, HostEnv};
use serde_json::{Value, json};

use crate::runtime::{Inner, Runtime};

/// The extension host of a new session (nothing is started yet).
pub(crate) fn new_host(
    inner: &std::sync::Weak<Inner>,
    options: &crate::options::ExtensionOptions,
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
        api: Arc::new(crate::extension_api::ApiServer {
            inner: inner.clone(),
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
