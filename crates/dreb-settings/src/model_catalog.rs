//! The slice of the model registry that settings validation needs, as a trait so the runtime
//! can plug in the real registry (and tests a fake).

/// Every thinking level, lowest first (also the order used in error texts): the spec's `ThinkingLevel` values.
pub const VALID_THINKING_LEVELS: &[&str] = dreb_types::ThinkingLevel::VALUES;

/// Whether `level` names a thinking level.
pub fn is_valid_thinking_level(level: &str) -> bool {
    VALID_THINKING_LEVELS.contains(&level)
}

/// What settings validation needs to know about one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelInfo {
    pub provider: String,
    pub id: String,
    pub name: String,
    /// The model can think at all (`Model.reasoning`).
    pub reasoning: bool,
    /// `supportsXhigh(model)`.
    pub supports_xhigh: bool,
    /// `supportsMax(model)`.
    pub supports_max: bool,
}

impl ModelInfo {
    /// Canonical `provider/id` reference.
    pub fn reference(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }
}

/// One model selected by an `enabledModels` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedModel {
    pub model: ModelInfo,
    /// Level given in the pattern (`model:high`), if any.
    pub thinking_level: Option<String>,
}

/// A resolver diagnostic tied to the raw pattern that produced it (the spec's `RpcModelScopeWarning`).
pub type ScopeWarning = dreb_protocol::RpcModelScopeWarning;

/// Ordered result of resolving `enabledModels` patterns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScopeResolution {
    pub models: Vec<ScopedModel>,
    pub warnings: Vec<ScopeWarning>,
}

/// The model registry as seen by settings.
pub trait ModelCatalog {
    /// Models that have credentials configured, in registry order (`getAvailable()`).
    fn available_models(&self) -> Result<Vec<ModelInfo>, String>;

    /// Resolve scope patterns against `available` with the registry's model-matching rules
    /// (exact refs, fuzzy ids, globs, `:level` suffixes), as `resolveModelScopePatterns`.
    fn resolve_scope(&self, patterns: &[String], available: &[ModelInfo]) -> ScopeResolution;
}

/// Why a model cannot run at an explicit thinking level (the texts are rpc.yaml's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnsupportedThinkingLevel {
    /// `model` has no reasoning at all.
    NotAReasoningModel { level: String, model: String },
    /// `model` does not offer `max`.
    Max { model: String },
    /// `model` does not offer `xhigh`.
    Xhigh { model: String },
}

/// Check an explicit thinking level against a model's capabilities (arbiter, subagents).
pub fn validate_thinking_level_for_model(
    model: &ModelInfo,
    level: &str,
) -> Result<(), UnsupportedThinkingLevel> {
    if level == "off" {
        return Ok(());
    }
    let model_ref = model.reference();
    if !model.reasoning {
        return Err(UnsupportedThinkingLevel::NotAReasoningModel {
            level: level.to_string(),
            model: model_ref,
        });
    }
    if level == "max" && !model.supports_max {
        return Err(UnsupportedThinkingLevel::Max { model: model_ref });
    }
    if level == "xhigh" && !model.supports_xhigh {
        return Err(UnsupportedThinkingLevel::Xhigh { model: model_ref });
    }
    Ok(())
}
