//! Resources and discovery: the skills, prompt templates and context files the session found (refreshed by
//! `reload` and by the paths extensions answer to `resources_discover`), the command line's resource flags and
//! prompt options they are found again with, and the system prompt built from them.

use std::sync::{Mutex, MutexGuard};

use crate::commands::discovery::resources::Resources;
use crate::options::{ResourceFlags, RuntimeOptions};
use crate::sync::lock;

pub(crate) struct ResourceStore {
    resources: Mutex<Resources>,
    /// The command line's resource flags, kept for `reload`.
    flags: ResourceFlags,
    /// `--system-prompt` / `--append-system-prompt` as given, so `reload` can rebuild the prompt.
    system_prompt: Option<String>,
    append_system_prompt: Option<String>,
    /// The system prompt as built from the resources; a `before_agent_start` handler may replace it for one run.
    base_system_prompt: Mutex<String>,
}

impl ResourceStore {
    pub(crate) fn new(options: &RuntimeOptions, resources: Resources) -> Self {
        ResourceStore {
            resources: Mutex::new(resources),
            flags: options.resource_flags.clone(),
            system_prompt: options.system_prompt.clone(),
            append_system_prompt: options.append_system_prompt.clone(),
            base_system_prompt: Mutex::new(String::new()),
        }
    }

    /// The resources found, locked.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Resources> {
        lock(&self.resources)
    }

    pub(crate) fn replace(&self, resources: Resources) {
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

    /// `get_resources.systemPromptPresent`.
    pub(crate) fn system_prompt_present(&self) -> bool {
        self.system_prompt.is_some()
            || self
                .append_system_prompt
                .as_deref()
                .is_some_and(|a| !a.is_empty())
    }

    pub(crate) fn base_system_prompt(&self) -> String {
        lock(&self.base_system_prompt).clone()
    }

    pub(crate) fn set_base_system_prompt(&self, prompt: String) {
        *lock(&self.base_system_prompt) = prompt;
    }
}
