//! Every extension of a session: loading them (all started in parallel, in the background), their place on the
//! hook bus (in load order), their commands and tools, and stopping them.

use std::sync::{Arc, RwLock};

use dreb_extension_protocol as ext;
use dreb_hooks::HookBus;

pub use crate::env::{ExtensionApi, HostEnv};

use crate::discovery::{ExtensionSource, Skipped};
use crate::extension::Extension;
use crate::hooks::{ExtensionHooks, hook_timeout};
use crate::node::NodeHost;
use crate::tool::ExtensionTool;

/// The session's extensions.
pub struct ExtensionHost {
    env: Arc<HostEnv>,
    /// The one Node process that runs every JavaScript extension of the session.
    node: Arc<NodeHost>,
    extensions: RwLock<Vec<Arc<Extension>>>,
    /// False while a load is in progress.
    ready: tokio::sync::watch::Sender<bool>,
    /// The providers as last handed to the runtime (see [`ExtensionHost::provider_changes`]).
    providers_applied: std::sync::Mutex<Vec<(String, ext::ProviderRegistration)>>,
}

impl ExtensionHost {
    pub fn new(env: HostEnv) -> Arc<ExtensionHost> {
        let node = Arc::new(NodeHost::new(
            env.cwd.clone(),
            env.javascript_checkout.clone(),
        ));
        Arc::new(ExtensionHost {
            env: Arc::new(env),
            node,
            extensions: RwLock::new(Vec::new()),
            ready: tokio::sync::watch::channel(true).0,
            providers_applied: std::sync::Mutex::new(Vec::new()),
        })
    }

    /// Mark a load as started (before spawning [`ExtensionHost::load`], so that [`ExtensionHost::ready`] waits).
    pub fn begin_load(&self) {
        self.ready.send_replace(false);
    }

    /// Start every extension in parallel; those that initialise are registered on `bus` in load order, kept,
    /// and sent `session_start` with `reason`; the others, and `skipped`, are reported. Ends the load begun by
    /// [`ExtensionHost::begin_load`].
    pub async fn load(
        &self,
        sources: Vec<ExtensionSource>,
        skipped: Vec<Skipped>,
        bus: &HookBus,
        reason: ext::SessionStartReason,
    ) {
        if sources.is_empty() && skipped.is_empty() {
            self.ready.send_replace(true);
            return;
        }
        for s in &skipped {
            self.env
                .report(&s.path.to_string_lossy(), "load", &s.reason);
        }
        let all: Vec<Arc<Extension>> = sources
            .into_iter()
            .map(|s| Extension::new(s, self.env.clone(), self.node.clone()))
            .collect();
        let started = futures::future::join_all(all.iter().map(|e| e.connection())).await;
        let timeout = hook_timeout();
        let mut loaded = Vec::new();
        for (e, result) in all.into_iter().zip(started) {
            match result {
                Ok(_) => {
                    bus.register(
                        e.path().to_string(),
                        Arc::new(ExtensionHooks {
                            ext: e.clone(),
                            timeout,
                        }),
                    );
                    loaded.push(e);
                }
                Err(err) => self.env.report(e.path(), "load", &err.to_string()),
            }
        }
        // The reference asks `session_directory` before its session manager exists; here the session waits
        // unwritten until the extensions are ready, and is placed before they hear `session_start`.
        if reason == ext::SessionStartReason::Startup
            && self.env.api.session_directory_open()
            && let Some(dir) = self.session_directory(&loaded, timeout).await
        {
            self.env.api.session_directory_chosen(dir).await;
        }
        for e in &loaded {
            if e.subscribes("session_start") {
                e.notify(&ext::Event::SessionStart(ext::SessionStartEvent { reason }))
                    .await;
            }
        }
        *self.extensions.write().unwrap_or_else(|e| e.into_inner()) = loaded;
        self.env.api.registrations_changed();
        let discover = match reason {
            ext::SessionStartReason::Startup => Some(ext::ResourcesDiscoverReason::Startup),
            ext::SessionStartReason::Reload => Some(ext::ResourcesDiscoverReason::Reload),
            _ => None,
        };
        if let Some(reason) = discover {
            let found = self.resources_discover(reason, timeout).await;
            if !found.is_empty() {
                self.env.api.resources_discovered(found).await;
            }
        }
        self.ready.send_replace(true);
    }

    /// `session_directory` to every extension of `loaded` that subscribed, one after the other in load order (as the
    /// reference asks them); the last answer with a directory wins, resolved against the cwd. A failure is reported
    /// (`event: "session_directory"`) and counts as no answer.
    async fn session_directory(
        &self,
        loaded: &[Arc<Extension>],
        timeout: std::time::Duration,
    ) -> Option<std::path::PathBuf> {
        let cwd = self.env.cwd.to_string_lossy().into_owned();
        let mut chosen = None;
        for e in loaded.iter().filter(|e| e.subscribes("session_directory")) {
            let answer = e
                .call(
                    ext::SessionDirectoryParams { cwd: cwd.clone() },
                    Some(timeout),
                    None,
                )
                .await;
            match answer {
                Ok(r) => {
                    if let Some(dir) = r.session_dir.filter(|d| !d.is_empty()) {
                        chosen = Some(self.env.cwd.join(dir));
                    }
                }
                Err(err) => self
                    .env
                    .report(e.path(), "session_directory", &err.to_string()),
            }
        }
        chosen
    }

    /// `resources_discover` to every extension that subscribed (in parallel, each within the hook timeout); the
    /// answers with any path, in load order. A failure is reported (`event: "resources_discover"`).
    async fn resources_discover(
        &self,
        reason: ext::ResourcesDiscoverReason,
        timeout: std::time::Duration,
    ) -> Vec<(String, ext::ResourcesDiscoverResult)> {
        let asked: Vec<Arc<Extension>> = self
            .extensions()
            .into_iter()
            .filter(|e| e.subscribes("resources_discover"))
            .collect();
        let cwd = self.env.cwd.to_string_lossy().into_owned();
        let answers = futures::future::join_all(asked.iter().map(|e| {
            e.call(
                ext::ResourcesDiscoverParams {
                    cwd: cwd.clone(),
                    reason,
                },
                Some(timeout),
                None,
            )
        }))
        .await;
        let mut found = Vec::new();
        for (e, answer) in asked.iter().zip(answers) {
            match answer {
                Ok(r) => {
                    let any = [&r.skill_paths, &r.prompt_paths, &r.theme_paths]
                        .iter()
                        .any(|l| l.as_ref().is_some_and(|l| !l.is_empty()));
                    if any {
                        found.push((e.path().to_string(), r));
                    }
                }
                Err(err) => self
                    .env
                    .report(e.path(), "resources_discover", &err.to_string()),
            }
        }
        found
    }

    /// Wait until no load is in progress.
    pub async fn ready(&self) {
        let mut rx = self.ready.subscribe();
        let _ = rx.wait_for(|ready| *ready).await;
    }

    /// The loaded extensions, in load order.
    pub fn extensions(&self) -> Vec<Arc<Extension>> {
        self.extensions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The extension that registered command `name` (the first one, in load order).
    pub fn find_command(&self, name: &str) -> Option<Arc<Extension>> {
        self.extensions().into_iter().find(|e| {
            e.registration()
                .commands
                .iter()
                .flatten()
                .any(|c| c.name == name)
        })
    }

    /// Run an extension command; its failure is reported as `extension_error` (event `command:<name>`).
    pub async fn execute_command(&self, ext: &Extension, name: &str, args: &str) {
        let result = ext
            .call(
                ext::ExecuteCommandParams {
                    name: name.to_string(),
                    args: args.to_string(),
                },
                None,
                None,
            )
            .await;
        if let Err(e) = result {
            self.env
                .report(ext.path(), &format!("command:{name}"), &e.to_string());
        }
    }

    /// The registered tools, in load order; a name registered twice is the first extension's.
    pub fn tools(&self) -> Vec<Arc<ExtensionTool>> {
        let mut seen = std::collections::HashSet::new();
        let mut tools = Vec::new();
        for e in self.extensions() {
            for t in e.registration().tools.iter().flatten() {
                if seen.insert(t.name.clone()) {
                    tools.push(Arc::new(ExtensionTool::new(e.clone(), t)));
                }
            }
        }
        tools
    }

    /// The providers the extensions registered, in load order, each with its extension's path.
    pub fn providers(&self) -> Vec<(String, ext::ProviderRegistration)> {
        self.extensions()
            .iter()
            .flat_map(|e| {
                let path = e.path().to_string();
                e.registration()
                    .providers
                    .into_iter()
                    .flatten()
                    .map(move |p| (path.clone(), p))
            })
            .collect()
    }

    /// [`ExtensionHost::providers`] when they changed since the last call (the runtime then applies them to its
    /// model registry), else `None`.
    pub fn provider_changes(&self) -> Option<Vec<(String, ext::ProviderRegistration)>> {
        let now = self.providers();
        let mut applied = self
            .providers_applied
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if *applied == now {
            return None;
        }
        *applied = now.clone();
        Some(now)
    }

    /// Report a failure of the extension at `path` as `extension_error`.
    pub fn report(&self, path: &str, event: &str, error: &str) {
        self.env.report(path, event, error);
    }

    /// `session_shutdown` to each extension (in parallel), then stop its process and take it off `bus`.
    pub async fn shutdown(&self, bus: &HookBus) {
        let all = std::mem::take(&mut *self.extensions.write().unwrap_or_else(|e| e.into_inner()));
        for e in &all {
            bus.unregister(e.path());
        }
        futures::future::join_all(all.iter().map(|e| e.stop())).await;
        self.node.stop(crate::extension::EXIT_GRACE).await;
        if !all.is_empty() {
            // Their tools and providers are gone.
            self.env.api.registrations_changed();
        }
    }
}
