//! The model registry as settings validation sees it.

use dreb_ai::{Model, ModelRegistry};
use dreb_settings::{ModelCatalog, ModelInfo, ScopeResolution};

pub(crate) fn model_info(m: &Model) -> ModelInfo {
    ModelInfo {
        provider: m.provider.clone(),
        id: m.id.clone(),
        name: m.name.clone(),
        reasoning: m.reasoning,
        supports_xhigh: dreb_agent::supports_xhigh(m),
        supports_max: dreb_agent::supports_max(m),
    }
}

/// A snapshot of the available models (taken under the registry lock, used without it).
pub(crate) struct RegistryCatalog {
    available: Vec<ModelInfo>,
}

impl RegistryCatalog {
    pub(crate) fn new(registry: &ModelRegistry) -> Self {
        RegistryCatalog {
            available: registry.available().iter().map(model_info).collect(),
        }
    }
}

impl ModelCatalog for RegistryCatalog {
    fn available_models(&self) -> Result<Vec<ModelInfo>, String> {
        Ok(self.available.clone())
    }

    fn resolve_scope(&self, patterns: &[String], available: &[ModelInfo]) -> ScopeResolution {
        dreb_settings::model_scope::resolve_model_scope_patterns(patterns, available)
    }
}
