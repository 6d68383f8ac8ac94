//! Resources and discovery: the skills, prompt templates and context files the session found (refreshed by
//! `reload` and by the paths extensions answer to `resources_discover`), the command line's resource flags and
//! prompt options they are found again with, and the system prompt built from them.
//!
//! Start-up's discovery is not needed for the first response, so it runs after it: start-up leaves it here as a
//! deferred load and spawns a task to run it; whatever needs the resources or the system prompt first (a command,
//! a run starting, `reload`) runs it itself if that task has not yet, and waits for it if it is running.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::commands::discovery::resources::Resources;
use crate::options::{ResourceFlags, RuntimeOptions};
use crate::sync::lock;

/// Start-up's discovery: the resources and the system prompt built from them (which it gives the agent too).
pub(crate) type DeferredLoad = Box<dyn FnOnce() -> (Resources, String) + Send>;

pub(crate) struct ResourceStore {
    resources: Mutex<Resources>,
    /// Start-up's discovery until it has run; held while it runs, so a second caller waits for it.
    deferred: Mutex<Option<DeferredLoad>>,
    /// Set once the deferred load has run (or there was none): the fast path of [`ResourceStore::ensure`].
    loaded: AtomicBool,
    /// The command line's resource flags, kept for `reload`.
    flags: ResourceFlags,
    /// `--system-prompt` / `--append-system-prompt` as given, so `reload` can rebuild the prompt.
    system_prompt: Option<String>,
    append_system_prompt: Option<String>,
    /// The UI the prompt tells the model its replies go to (`--ui`, else the mode's).
    ui: Option<String>,
    /// Settings turned subagents off for this (parent) session; the prompt says so.
    subagents_disabled: bool,
    /// The system prompt as built from the resources; a `before_agent_start` handler may replace it for one run.
    base_system_prompt: Mutex<String>,
}

impl ResourceStore {
    /// A store whose resources and system prompt `load` finds, on first use (see the module docs).
    pub(crate) fn deferred(
        options: &RuntimeOptions,
        subagents_disabled: bool,
        load: DeferredLoad,
    ) -> Self {
        ResourceStore {
            resources: Mutex::new(Resources::default()),
            deferred: Mutex::new(Some(load)),
            loaded: AtomicBool::new(false),
            flags: options.resource_flags.clone(),
            system_prompt: options.system_prompt.clone(),
            append_system_prompt: options.append_system_prompt.clone(),
            ui: options.ui.clone(),
            subagents_disabled,
            base_system_prompt: Mutex::new(String::new()),
        }
    }

    /// Runs start-up's discovery unless it has run, or waits for it while another thread runs it. Must not be
    /// called with the resources or the agent locked (the load sets both); every accessor here calls it first.
    pub(crate) fn ensure(&self) {
        if self.loaded.load(Ordering::Acquire) {
            return;
        }
        let mut deferred = lock(&self.deferred);
        if let Some(load) = deferred.take() {
            let (resources, prompt) = load();
            *lock(&self.resources) = resources;
            *lock(&self.base_system_prompt) = prompt;
        }
        self.loaded.store(true, Ordering::Release);
    }

    /// The resources found, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Resources> {
        self.ensure();
        lock(&self.resources)
    }

    /// Replaces the resources (`reload`, extension paths); start-up's discovery, should it not have run yet, runs
    /// first, so it never overwrites these.
    pub(crate) fn replace(&self, resources: Resources) {
        self.ensure();
        *lock(&self.resources) = resources;
    }

    /// The command line's resource flags.
    pub(crate) fn flags(&self) -> &ResourceFlags {
        &self.flags
    }

    /// `--system-prompt` as given (text or a file).
    pub(crate) fn custom_prompt(&self) -> Option<&str> {
        self.system_prompt.as_deref()
    }

    /// `--append-system-prompt` as given (text or a file).
    pub(crate) fn append_prompt(&self) -> Option<&str> {
        self.append_system_prompt.as_deref()
    }

    /// The UI the replies go to, for the prompt.
    pub(crate) fn ui(&self) -> Option<&str> {
        self.ui.as_deref()
    }

    /// Whether settings turned subagents off for this session.
    pub(crate) fn subagents_disabled(&self) -> bool {
        self.subagents_disabled
    }

    /// `get_resources.systemPromptPresent`.
    pub(crate) fn system_prompt_present(&self) -> bool {
        self.system_prompt.is_some()
            || self
                .append_system_prompt
                .as_deref()
                .is_some_and(|a| !a.is_empty())
    }

    pub(crate) fn base_system_prompt(&self) -> String {
        self.ensure();
        lock(&self.base_system_prompt).clone()
    }

    pub(crate) fn set_base_system_prompt(&self, prompt: String) {
        self.ensure();
        *lock(&self.base_system_prompt) = prompt;
    }

    /// Replaces the base system prompt with `f` of it, and returns the new one.
    pub(crate) fn update_base_system_prompt(&self, f: impl FnOnce(&str) -> String) -> String {
        self.ensure();
        let mut prompt = lock(&self.base_system_prompt);
        *prompt = f(&prompt);
        prompt.clone()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A store whose deferred load finds one context file, `found`, and counts its runs.
    fn store(runs: &Arc<AtomicUsize>) -> ResourceStore {
        let runs = runs.clone();
        ResourceStore::deferred(
            &RuntimeOptions::default(),
            false,
            Box::new(move || {
                runs.fetch_add(1, Ordering::SeqCst);
                let resources = Resources {
                    context_files: vec![PathBuf::from("found")],
                    ..Resources::default()
                };
                (resources, "prompt".to_string())
            }),
        )
    }

    #[test]
    fn the_deferred_load_runs_once_on_first_use() {
        let runs = Arc::new(AtomicUsize::new(0));
        let store = store(&runs);
        assert_eq!(runs.load(Ordering::SeqCst), 0, "not at construction");
        assert_eq!(store.lock().context_files, [PathBuf::from("found")]);
        assert_eq!(store.base_system_prompt(), "prompt");
        store.ensure();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_replacement_is_never_overwritten_by_the_deferred_load() {
        let runs = Arc::new(AtomicUsize::new(0));
        let store = store(&runs);
        store.replace(Resources::default());
        store.set_base_system_prompt("rebuilt".into());
        store.ensure();
        assert!(store.lock().context_files.is_empty());
        assert_eq!(store.base_system_prompt(), "rebuilt");
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn concurrent_first_uses_wait_for_the_one_load() {
        let runs = Arc::new(AtomicUsize::new(0));
        let store = Arc::new(store(&runs));
        let readers: Vec<_> = (0..4)
            .map(|_| {
                let store = store.clone();
                std::thread::spawn(move || store.lock().context_files.clone())
            })
            .collect();
        for reader in readers {
            assert_eq!(reader.join().unwrap(), [PathBuf::from("found")]);
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
