//! Every extension of a session: loading them (all started in parallel, in the background), their place on the
//! hook bus (in load order), their commands and tools, and stopping them.

use std::sync::{Arc, RwLock};

use dreb_extension_protocol as ext;
use dreb_hooks::HookBus;

pub use crate::env::{ExtensionApi, HostEnv};

use crate::discovery::{ExtensionSource, Skipped};
use crate::extension::Extension;
use crate::hooks::{ExtensionHooks, hook_timeout};
use crate::tool::ExtensionTool;

/// The session's extensions.
pub struct ExtensionHost {
    env: Arc<HostEnv>,
    extensions: RwLock<Vec<Arc<Extension>>>,
    /// False while a load is in progress.
    ready: tokio::sync::watch::Sender<bool>,
}

impl ExtensionHost {
    pub fn new(env: HostEnv) -> Arc<ExtensionHost> {
        Arc::new(ExtensionHost {
            env: Arc::new(env),
            extensions: RwLock::new(Vec::new()),
            ready: tokio::sync::watch::channel(true).0,
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
            .map(|s| Extension::new(s, self.env.clone()))
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
        for e in &loaded {
            if e.subscribes("session_start") {
                e.notify(&ext::Event::SessionStart(ext::SessionStartEvent {
                    reason: reason.clone(),
                }))
                .await;
            }
        }
        *self.extensions.write().unwrap_or_else(|e| e.into_inner()) = loaded;
        self.ready.send_replace(true);
        self.env.api.registrations_changed();
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

    /// `session_shutdown` to each extension (in parallel), then stop its process and take it off `bus`.
    pub async fn shutdown(&self, bus: &HookBus) {
        let all = std::mem::take(&mut *self.extensions.write().unwrap_or_else(|e| e.into_inner()));
        for e in &all {
            bus.unregister(e.path());
        }
        futures::future::join_all(all.iter().map(|e| e.stop())).await;
    }
}
