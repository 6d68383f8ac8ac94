//! State behind the peripheral commands that lives as long as the session: the model scope (`--models` or settings
//! `enabledModels`, resolved once at startup as the reference does), the resource metadata (`get_resources`,
//! `get_commands`; refreshed by `reload`), and the daily-cost cache.

use std::sync::Mutex;
use std::time::Instant;

use dreb_ai::{Model, ModelRegistry, ThinkingLevel};
use dreb_settings::SettingsManager;

use super::discovery::resources::{Resources, load_resources};
use crate::catalog::model_info;
use crate::options::RuntimeOptions;

/// One model of the scope, with the thinking level its pattern pinned (if any).
#[derive(Debug, Clone)]
pub(crate) struct ScopedModel {
    pub model: Model,
    pub thinking_level: Option<ThinkingLevel>,
}

pub(crate) struct Extras {
    pub scoped_models: Vec<ScopedModel>,
    /// `--system-prompt` / `--append-system-prompt` as given, so `reload` can rebuild the prompt.
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    pub resources: Mutex<Resources>,
    /// The command line's resource flags, kept for `reload`.
    pub resource_flags: crate::options::ResourceFlags,
    /// Today's cost and when it was computed (None until the first `get_daily_cost`).
    pub daily_cost: Mutex<Option<(f64, Instant)>>,
    /// Serialises `buddy_hatch` / `buddy_reroll` (each reads, then rewrites, the buddy file).
    pub buddy: tokio::sync::Mutex<()>,
}

impl Extras {
    pub(crate) fn new(
        options: &RuntimeOptions,
        settings: &SettingsManager,
        scoped_models: Vec<ScopedModel>,
    ) -> Extras {
        Extras {
            scoped_models,
            system_prompt: options.system_prompt.clone(),
            append_system_prompt: options.append_system_prompt.clone(),
            resources: Mutex::new(load_resources(
                &options.cwd,
                &options.agent_dir,
                settings,
                &options.resource_flags,
            )),
            resource_flags: options.resource_flags.clone(),
            daily_cost: Mutex::new(None),
            buddy: tokio::sync::Mutex::new(()),
        }
    }
}

/// The model scope patterns: `--models`, else settings `enabledModels`.
pub(crate) fn scope_patterns(
    options: &RuntimeOptions,
    settings: &SettingsManager,
) -> Option<Vec<String>> {
    match &options.models {
        Some(list) => Some(list.split(',').map(|s| s.trim().to_string()).collect()),
        None => settings.enabled_models(),
    }
}

/// Resolve scope patterns against the available models (warnings go to the log, as the reference prints them).
pub(crate) fn resolve_scope(patterns: &[String], registry: &ModelRegistry) -> Vec<ScopedModel> {
    let available = registry.available();
    let infos: Vec<_> = available.iter().map(model_info).collect();
    let resolution = dreb_settings::model_scope::resolve_model_scope_patterns(patterns, &infos);
    for w in &resolution.warnings {
        tracing::warn!("Warning: {}", w.message);
    }
    resolution
        .models
        .into_iter()
        .filter_map(|s| {
            let model = available
                .iter()
                .find(|m| m.provider == s.model.provider && m.id == s.model.id)?
                .clone();
            Some(ScopedModel {
                model,
                thinking_level: s.thinking_level.as_deref().and_then(ThinkingLevel::parse),
            })
        })
        .collect()
}
