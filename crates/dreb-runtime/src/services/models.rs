//! Models and scope: the model registry (`models.json`, `auth.json`, the providers extensions register) behind its
//! own lock, the providers that stream, the model scope (`--models` / `enabledModels`, resolved once at start-up as
//! the reference does) and why the saved default model was not used.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use dreb_ai::{Model, ModelRegistry, Providers, ThinkingLevel};
use dreb_settings::SettingsManager;

use crate::catalog::model_info;
use crate::options::RuntimeOptions;

/// One model of the scope, with the thinking level its pattern pinned (if any).
#[derive(Debug, Clone)]
pub(crate) struct ScopedModel {
    pub model: Model,
    pub thinking_level: Option<ThinkingLevel>,
}

pub(crate) struct Models {
    registry: RwLock<ModelRegistry>,
    providers: Providers,
    scoped: Vec<ScopedModel>,
    fallback_message: Option<String>,
}

impl Models {
    pub(crate) fn new(
        registry: ModelRegistry,
        providers: Providers,
        scoped: Vec<ScopedModel>,
        fallback_message: Option<String>,
    ) -> Self {
        Models {
            registry: RwLock::new(registry),
            providers,
            scoped,
            fallback_message,
        }
    }

    /// The model registry (read access).
    pub(crate) fn registry(&self) -> RwLockReadGuard<'_, ModelRegistry> {
        self.registry.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The model registry (write access: `reload`, the providers extensions register).
    pub(crate) fn registry_mut(&self) -> RwLockWriteGuard<'_, ModelRegistry> {
        self.registry.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Re-read `models.json` and `auth.json`, then list the models that have credentials.
    pub(crate) fn refreshed_available(&self) -> Vec<Model> {
        let mut registry = self.registry_mut();
        registry.refresh();
        registry.available()
    }

    /// The providers every LLM call of the session streams through.
    pub(crate) fn providers(&self) -> &Providers {
        &self.providers
    }

    /// The model scope (empty without one).
    pub(crate) fn scoped(&self) -> &[ScopedModel] {
        &self.scoped
    }

    /// Why the saved default model was not used at start-up (`get_state.modelFallbackMessage`).
    pub(crate) fn fallback_message(&self) -> Option<String> {
        self.fallback_message.clone()
    }
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
