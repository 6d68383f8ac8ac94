//! The RPC-facing settings API: `get_settings`, `set_settings` and the four context-trust
//! commands, as plain serde structs that serialise to the reference's wire JSON (key order,
//! absent vs null). Each command fails with its error type generated from rpc.yaml
//! (`dreb_protocol::errors`), whose text is the spec's: no error text is written here.

use std::path::Path;

use serde_json::{Map, Value};

use dreb_protocol::errors::{
    EvaluateContextTrustError, GetSettingsError, RemoveTrustedContextFolderError, SetSettingsError,
    TrustContextFolderError, UntrustContextFolderError,
};

use crate::context_trust::{
    ContextTrustState, FolderProblem, FoldersError, RpcContextTrustEvaluation,
    canonicalize_trusted_roots, evaluate_context_trust, validate_trusted_context_folders,
};
use crate::js::{
    is_js_whitespace, js_trim, non_negative_safe_integer, object_keys, stringify, stringify_str,
};
use crate::manager::{
    SettingsError, SettingsManager, agent_models_edit, context_trust_edits, enabled_models_edit,
};
use crate::model_catalog::{
    ModelCatalog, ModelInfo, UnsupportedThinkingLevel, is_valid_thinking_level,
    validate_thinking_level_for_model,
};
use crate::settings_file::SettingsEdit;

/// Keys `set_settings` accepts, in the order the error text lists them.
pub const SETTINGS_UPDATE_KEYS: [&str; 18] = [
    "defaultProvider",
    "defaultModel",
    "defaultThinkingLevel",
    "steeringMode",
    "followUpMode",
    "compactionEnabled",
    "retryEnabled",
    "maxConcurrentSubagents",
    "imageAutoResize",
    "blockImages",
    "enableSkillCommands",
    "autoLoadNestedContext",
    "trustedContextFolders",
    "transport",
    "hideThinkingBlock",
    "agentModels",
    "enabledModels",
    "subagentArbiter",
];

const BOOLEAN_KEYS: [&str; 7] = [
    "compactionEnabled",
    "retryEnabled",
    "imageAutoResize",
    "blockImages",
    "enableSkillCommands",
    "autoLoadNestedContext",
    "hideThinkingBlock",
];

const QUEUE_MODES: [&str; 2] = ["all", "one-at-a-time"];
const TRANSPORTS: [&str; 3] = ["sse", "websocket", "auto"];
const ARBITER_KEYS: [&str; 4] = ["enabled", "model", "thinking", "guidePath"];

const PROJECT_ENABLED_MODELS_WARNING: &str = "A project-level enabledModels value (.dreb/settings.json) takes precedence — this change to global settings will have no effect. Edit the project settings file to change it.";

/// Listing the available models failed (each command's `Failed to load available models`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelsUnavailable(pub String);

/// A settings write failed (each writing command's `GlobalSettingsCorrupt` / `FailedToPersistSettings`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum PersistFailure {
    /// The global settings file failed to load, so a write would silently do nothing.
    GlobalCorrupt,
    /// Writing the file failed (`{scope}: {message}` entries joined with `; `).
    Failed(String),
}

/// The failures every writing command shares, into each one's error type.
macro_rules! shared_write_failures {
    ($($error:ident),*) => {$(
        impl From<ModelsUnavailable> for $error {
            fn from(e: ModelsUnavailable) -> Self {
                Self::FailedToLoadAvailableModels { message: e.0 }
            }
        }
        impl From<PersistFailure> for $error {
            fn from(e: PersistFailure) -> Self {
                match e {
                    PersistFailure::GlobalCorrupt => Self::GlobalSettingsCorrupt,
                    PersistFailure::Failed(message) => Self::FailedToPersistSettings { message },
                }
            }
        }
    )*};
}

shared_write_failures!(
    SetSettingsError,
    TrustContextFolderError,
    UntrustContextFolderError,
    RemoveTrustedContextFolderError
);

impl From<ModelsUnavailable> for GetSettingsError {
    fn from(e: ModelsUnavailable) -> Self {
        Self::FailedToLoadAvailableModels { message: e.0 }
    }
}

/// A refused context-trust path, into the error type of each command that takes one.
macro_rules! path_problems {
    ($($error:ident),*) => {$(
        impl From<FolderProblem> for $error {
            fn from(p: FolderProblem) -> Self {
                match p {
                    FolderProblem::NotAString => Self::PathNotAString,
                    FolderProblem::NotAbsolute => Self::PathNotAbsolute,
                    FolderProblem::NotADirectory => Self::PathNotADirectory,
                }
            }
        }
    )*};
}

path_problems!(
    EvaluateContextTrustError,
    TrustContextFolderError,
    UntrustContextFolderError
);

/// A refused `trustedContextFolders` list, into the error type of each command that writes one (`trust_context_folder`
/// builds the list itself, so it is always a list there).
macro_rules! folder_list_problems {
    ($($error:ident => $not_a_list:expr),*) => {$(
        impl From<FoldersError> for $error {
            fn from(e: FoldersError) -> Self {
                match e {
                    FoldersError::NotAList => $not_a_list,
                    FoldersError::Entry { index, problem } => {
                        let index = index.to_string();
                        match problem {
                            FolderProblem::NotAString => Self::TrustedContextFolderNotAString { index },
                            FolderProblem::NotAbsolute => Self::TrustedContextFolderNotAbsolute { index },
                            FolderProblem::NotADirectory => {
                                Self::TrustedContextFolderNotADirectory { index }
                            }
                        }
                    }
                }
            }
        }
    )*};
}

folder_list_problems!(
    SetSettingsError => SetSettingsError::InvalidTrustedContextFolders,
    TrustContextFolderError => TrustContextFolderError::unexpected("trustedContextFolders is not a list")
);

impl From<UnsupportedThinkingLevel> for SetSettingsError {
    fn from(e: UnsupportedThinkingLevel) -> Self {
        match e {
            UnsupportedThinkingLevel::NotAReasoningModel { level, model } => {
                Self::NotAReasoningModel { level, model }
            }
            UnsupportedThinkingLevel::Max { model } => Self::MaxUnsupported { model },
            UnsupportedThinkingLevel::Xhigh { model } => Self::XhighUnsupported { model },
        }
    }
}

pub use dreb_protocol::{
    EnabledModelsSource, RpcContextTrustMutationResult, RpcModelScopeWarning, RpcScopedModel,
    RpcSettingsSetResult, RpcSettingsSnapshot, RpcTrustedFolderRemovalResult,
    SubagentArbiterSettings,
};

/// A value settings.json holds as the spec's type, or `None` with a warning when it is outside the protocol's
/// range (a misspelled thinking level, say, which the reference's own setters can write): the snapshot reports
/// what the runtime uses instead, and one bad value on disk never breaks reading or writing the rest (the file
/// keeps what it holds).
fn in_effect<T: serde::de::DeserializeOwned>(key: &str, value: &Value) -> Option<T> {
    match T::deserialize(value) {
        Ok(v) => Some(v),
        Err(_) => {
            tracing::warn!(%key, %value, "settings.json holds a value outside the protocol's range; reporting the one in effect");
            None
        }
    }
}

/// The stored Dispatch Arbiter policy as the spec types it: each field that does not fit is left out (a disabled
/// policy keeps its other fields unvalidated, so a stale `thinking` may be on disk).
fn arbiter_in_effect(stored: &Value) -> Option<SubagentArbiterSettings> {
    let Value::Object(policy) = stored else {
        tracing::warn!(value = %stored, "settings.json's subagentArbiter is not an object; reporting none");
        return None;
    };
    fn field<T: serde::de::DeserializeOwned>(policy: &Map<String, Value>, key: &str) -> Option<T> {
        policy
            .get(key)
            .and_then(|v| in_effect(&format!("subagentArbiter.{key}"), v))
    }
    Some(SubagentArbiterSettings {
        enabled: field(policy, "enabled"),
        model: field(policy, "model"),
        thinking: field(policy, "thinking"),
        guide_path: field(policy, "guidePath"),
    })
}

/// `set_settings` data: the snapshot plus `warnings` when a project value shadows the change.
fn set_result(s: RpcSettingsSnapshot, warnings: Option<Vec<String>>) -> RpcSettingsSetResult {
    RpcSettingsSetResult {
        default_provider: s.default_provider,
        default_model: s.default_model,
        default_thinking_level: s.default_thinking_level,
        steering_mode: s.steering_mode,
        follow_up_mode: s.follow_up_mode,
        compaction_enabled: s.compaction_enabled,
        retry_enabled: s.retry_enabled,
        max_concurrent_subagents: s.max_concurrent_subagents,
        image_auto_resize: s.image_auto_resize,
        block_images: s.block_images,
        enable_skill_commands: s.enable_skill_commands,
        auto_load_nested_context: s.auto_load_nested_context,
        trusted_context_folders: s.trusted_context_folders,
        effective_trusted_context_roots: s.effective_trusted_context_roots,
        transport: s.transport,
        hide_thinking_block: s.hide_thinking_block,
        agent_models: s.agent_models,
        subagent_arbiter: s.subagent_arbiter,
        enabled_models: s.enabled_models,
        resolved_scoped_models: s.resolved_scoped_models,
        scope_warnings: s.scope_warnings,
        has_project_enabled_models_override: s.has_project_enabled_models_override,
        enabled_models_source: s.enabled_models_source,
        warnings,
    }
}

fn available(catalog: &dyn ModelCatalog) -> Result<Vec<ModelInfo>, ModelsUnavailable> {
    catalog.available_models().map_err(ModelsUnavailable)
}

fn persist_error(err: SettingsError) -> PersistFailure {
    match err {
        SettingsError::GlobalLoadFailed { .. } | SettingsError::ProjectLoadFailed { .. } => {
            PersistFailure::GlobalCorrupt
        }
        other => PersistFailure::Failed(other.to_string()),
    }
}

/// A validated `set_settings` payload, ready to write.
struct ValidatedUpdate {
    edits: Vec<SettingsEdit>,
    warnings: Vec<String>,
}

impl SettingsManager {
    fn op_guard(&self) -> std::sync::MutexGuard<'_, ()> {
        self.op_lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The `get_settings` snapshot from the current in-memory view (global-only slices are
    /// re-read from disk).
    pub fn snapshot(
        &self,
        catalog: &dyn ModelCatalog,
    ) -> Result<RpcSettingsSnapshot, ModelsUnavailable> {
        let available = available(catalog)?;
        Ok(self.snapshot_with(catalog, &available))
    }

    fn snapshot_with(
        &self,
        catalog: &dyn ModelCatalog,
        available: &[ModelInfo],
    ) -> RpcSettingsSnapshot {
        let policy = self.global_context_trust_policy();
        let configured = self.configured_trusted_context_folders();
        let subagent_arbiter = self.global_subagent_arbiter().unwrap_or_else(|error| {
            tracing::warn!(%error, "could not reload global Dispatch Arbiter settings");
            None
        });
        let enabled_models = self.enabled_models();
        let has_project_override = self.has_project_enabled_models_override();
        let patterns = enabled_models.clone().unwrap_or_default();
        let scope = catalog.resolve_scope(&patterns, available);
        fn string<T: serde::de::DeserializeOwned>(key: &str, v: String) -> Option<T> {
            in_effect(key, &Value::String(v))
        }
        RpcSettingsSnapshot {
            default_provider: self.default_provider(),
            default_model: self.default_model(),
            default_thinking_level: self
                .default_thinking_level()
                .and_then(|v| string("defaultThinkingLevel", v)),
            steering_mode: string("steeringMode", self.steering_mode()).unwrap_or_default(),
            follow_up_mode: string("followUpMode", self.follow_up_mode()).unwrap_or_default(),
            compaction_enabled: self.compaction_enabled(),
            retry_enabled: self.retry_enabled(),
            max_concurrent_subagents: i64::try_from(self.max_concurrent_subagents())
                .unwrap_or(i64::MAX),
            image_auto_resize: Some(self.image_auto_resize()),
            block_images: Some(self.block_images()),
            enable_skill_commands: Some(self.enable_skill_commands()),
            auto_load_nested_context: policy.unrestricted,
            trusted_context_folders: configured,
            effective_trusted_context_roots: canonicalize_trusted_roots(&policy.trusted_folders),
            transport: string("transport", self.transport()),
            hide_thinking_block: Some(self.hide_thinking_block()),
            agent_models: Some(self.agent_models()),
            subagent_arbiter: subagent_arbiter.as_ref().and_then(arbiter_in_effect),
            enabled_models_source: if has_project_override {
                EnabledModelsSource::Project
            } else if enabled_models.is_none() {
                EnabledModelsSource::Default
            } else {
                EnabledModelsSource::Global
            },
            enabled_models,
            resolved_scoped_models: scope
                .models
                .into_iter()
                .map(|s| RpcScopedModel {
                    provider: s.model.provider,
                    id: s.model.id,
                    name: Some(s.model.name),
                    reasoning: Some(s.model.reasoning),
                    thinking_level: s
                        .thinking_level
                        .and_then(|v| string("enabledModels thinking level", v)),
                })
                .collect(),
            scope_warnings: scope.warnings,
            has_project_enabled_models_override: has_project_override,
        }
    }

    /// `get_settings`: reload both files (external edits become visible), fail loudly on any
    /// load error, then snapshot.
    pub fn get_settings(
        &self,
        catalog: &dyn ModelCatalog,
    ) -> Result<RpcSettingsSnapshot, GetSettingsError> {
        let _op = self.op_guard();
        let errors = self.reload();
        if !errors.is_empty() {
            let detail = errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ");
            return Err(GetSettingsError::FailedToReloadSettings { message: detail });
        }
        if self.has_global_settings_load_error() || self.has_project_settings_load_error() {
            return Err(GetSettingsError::ReloadFromStorageFailed);
        }
        Ok(self.snapshot(catalog)?)
    }

    /// `set_settings`: validate the whole payload (exact texts, reference order), then write
    /// every change in one atomic global-file update. Nothing changes on any error.
    pub fn apply_update(
        &self,
        update: Option<&Value>,
        catalog: &dyn ModelCatalog,
    ) -> Result<RpcSettingsSetResult, SetSettingsError> {
        let _op = self.op_guard();
        let validated = self.validate_update(update, catalog)?;
        if self.has_global_settings_load_error() {
            return Err(SetSettingsError::GlobalSettingsCorrupt);
        }
        self.update_global(&validated.edits)
            .map_err(persist_error)?;
        let settings = self.snapshot(catalog)?;
        let warnings = (!validated.warnings.is_empty()).then_some(validated.warnings);
        Ok(set_result(settings, warnings))
    }

    fn validate_update(
        &self,
        update: Option<&Value>,
        catalog: &dyn ModelCatalog,
    ) -> Result<ValidatedUpdate, SetSettingsError> {
        let Some(Value::Object(update)) = update else {
            return Err(SetSettingsError::SettingsNotAnObject);
        };
        let unknown: Vec<&str> = object_keys(update)
            .into_iter()
            .map(String::as_str)
            .filter(|k| !SETTINGS_UPDATE_KEYS.contains(k))
            .collect();
        if !unknown.is_empty() {
            return Err(SetSettingsError::UnknownSettingsKey {
                keys: unknown.join(", "),
            });
        }
        // JSON has no `undefined`: a present key (even `null`) counts as set.
        if update.is_empty() {
            return Err(SetSettingsError::NothingToChange);
        }
        let get = |key: &str| update.get(key);

        if let Some(level) = get("defaultThinkingLevel")
            && !level.as_str().is_some_and(is_valid_thinking_level)
        {
            return Err(SetSettingsError::InvalidDefaultThinkingLevel {
                value: stringify(level),
            });
        }
        if let Some(mode) = get("steeringMode")
            && !mode.as_str().is_some_and(|m| QUEUE_MODES.contains(&m))
        {
            return Err(SetSettingsError::InvalidSteeringMode {
                value: stringify(mode),
            });
        }
        if let Some(mode) = get("followUpMode")
            && !mode.as_str().is_some_and(|m| QUEUE_MODES.contains(&m))
        {
            return Err(SetSettingsError::InvalidFollowUpMode {
                value: stringify(mode),
            });
        }
        for key in BOOLEAN_KEYS {
            if let Some(v) = get(key)
                && !v.is_boolean()
            {
                return Err(SetSettingsError::NotABoolean {
                    key: key.to_string(),
                    value: stringify(v),
                });
            }
        }
        let max_concurrent = match get("maxConcurrentSubagents") {
            None => None,
            Some(v) => Some(non_negative_safe_integer(v).ok_or_else(|| {
                SetSettingsError::InvalidMaxConcurrentSubagents {
                    value: stringify(v),
                }
            })?),
        };
        if let Some(t) = get("transport")
            && !t.as_str().is_some_and(|t| TRANSPORTS.contains(&t))
        {
            return Err(SetSettingsError::InvalidTransport {
                value: stringify(t),
            });
        }
        let agent_models = match get("agentModels") {
            None => None,
            Some(v) => Some(validate_agent_models(v)?),
        };

        let mut models_cache: Option<Vec<ModelInfo>> = None;
        let mut models = || -> Result<Vec<ModelInfo>, ModelsUnavailable> {
            if models_cache.is_none() {
                models_cache = Some(available(catalog)?);
            }
            Ok(models_cache.clone().unwrap_or_default())
        };

        // Some(None) = clear (null or "all available").
        let enabled_models: Option<Option<Vec<String>>> = match get("enabledModels") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(v) => Some(validate_enabled_models(v, &models()?)?),
        };

        let subagent_arbiter: Option<Option<Map<String, Value>>> = match get("subagentArbiter") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(v) => Some(Some(validate_arbiter(v, &mut models)?)),
        };

        let trusted_folders = match get("trustedContextFolders") {
            None => None,
            Some(v) => Some(validate_trusted_context_folders(v)?),
        };

        let provider = get("defaultProvider");
        let model = get("defaultModel");
        let provider_model = match (provider, model) {
            (None, None) => None,
            (Some(_), None) | (None, Some(_)) => {
                return Err(SetSettingsError::DefaultModelIncomplete);
            }
            (Some(p), Some(m)) => {
                let (Some(p), Some(m)) = (p.as_str(), m.as_str()) else {
                    return Err(SetSettingsError::DefaultModelNotStrings);
                };
                if !models()?.iter().any(|x| x.provider == p && x.id == m) {
                    return Err(SetSettingsError::ModelNotFound {
                        provider: p.to_string(),
                        model_id: m.to_string(),
                    });
                }
                Some((p.to_string(), m.to_string()))
            }
        };

        // Apply order = the reference's setter order, so new keys land in the same file order.
        let mut edits = Vec::new();
        let mut warnings = Vec::new();
        if let Some((p, m)) = provider_model {
            edits.push(SettingsEdit::set(["defaultProvider"], p));
            edits.push(SettingsEdit::set(["defaultModel"], m));
        }
        let mut copy = |key: &str, path: &[&str]| {
            if let Some(v) = get(key) {
                edits.push(SettingsEdit::Set(
                    path.iter().map(|s| s.to_string()).collect(),
                    v.clone(),
                ));
            }
        };
        copy("defaultThinkingLevel", &["defaultThinkingLevel"]);
        copy("steeringMode", &["steeringMode"]);
        copy("followUpMode", &["followUpMode"]);
        copy("compactionEnabled", &["compaction", "enabled"]);
        copy("retryEnabled", &["retry", "enabled"]);
        if let Some(n) = max_concurrent {
            edits.push(SettingsEdit::set(
                ["backgroundAgents", "maxConcurrentSubagents"],
                n,
            ));
        }
        let mut copy = |key: &str, path: &[&str]| {
            if let Some(v) = get(key) {
                edits.push(SettingsEdit::Set(
                    path.iter().map(|s| s.to_string()).collect(),
                    v.clone(),
                ));
            }
        };
        copy("imageAutoResize", &["images", "autoResize"]);
        copy("blockImages", &["images", "blockImages"]);
        copy("enableSkillCommands", &["enableSkillCommands"]);
        copy("transport", &["transport"]);
        copy("hideThinkingBlock", &["hideThinkingBlock"]);
        if let Some(enabled) = enabled_models {
            if self.has_project_enabled_models_override() {
                warnings.push(PROJECT_ENABLED_MODELS_WARNING.to_string());
            }
            edits.push(enabled_models_edit(enabled.as_deref()));
        }
        if let Some(arbiter) = subagent_arbiter {
            edits.push(match arbiter {
                Some(policy) => SettingsEdit::set(["subagentArbiter"], Value::Object(policy)),
                None => SettingsEdit::remove(["subagentArbiter"]),
            });
        }
        for (agent, list) in agent_models.unwrap_or_default() {
            if self.has_project_agent_model_override(&agent) {
                warnings.push(format!(
                    "A project-level agentModels override for {} (.dreb/settings.json) takes precedence — this change to global settings will have no effect. Edit the project settings file to change it.",
                    stringify_str(&agent)
                ));
            }
            edits.push(agent_models_edit(&agent, &list));
        }
        // Trust policy last, as the reference's second phase.
        let auto = get("autoLoadNestedContext").and_then(Value::as_bool);
        edits.extend(context_trust_edits(auto, trusted_folders.as_deref()));
        Ok(ValidatedUpdate { edits, warnings })
    }

    /// `evaluate_context_trust` against the current global policy.
    pub fn evaluate_context_trust(
        &self,
        path: &Value,
    ) -> Result<RpcContextTrustEvaluation, EvaluateContextTrustError> {
        Ok(self.evaluate(path)?)
    }

    fn evaluate(&self, path: &Value) -> Result<RpcContextTrustEvaluation, FolderProblem> {
        evaluate_context_trust(&self.global_context_trust_policy(), path)
    }

    /// `trust_context_folder`: add the canonical target as a global root (durably).
    pub fn trust_context_folder(
        &self,
        path: &Value,
        catalog: &dyn ModelCatalog,
    ) -> Result<RpcContextTrustMutationResult, TrustContextFolderError> {
        let _op = self.op_guard();
        let evaluation = self.evaluate(path)?;
        let target = evaluation.canonical_target.clone();
        // Malformed legacy roots are dropped: the list is rewritten canonical.
        let mut roots: Vec<Value> =
            canonicalize_trusted_roots(&self.configured_trusted_context_folders())
                .into_iter()
                .map(Value::String)
                .collect();
        roots.push(Value::String(target.clone()));
        let folders = validate_trusted_context_folders(&Value::Array(roots))?;
        let added_root = folders.contains(&target).then(|| target.clone());
        self.persist_trust_mutation(&folders, path, catalog, added_root, None)
    }

    /// `untrust_context_folder`: remove the root that grants the target access.
    pub fn untrust_context_folder(
        &self,
        path: &Value,
        catalog: &dyn ModelCatalog,
    ) -> Result<RpcContextTrustMutationResult, UntrustContextFolderError> {
        let _op = self.op_guard();
        let evaluation = self.evaluate(path)?;
        match evaluation.state {
            ContextTrustState::Unrestricted => {
                Err(UntrustContextFolderError::NestedContextUnrestricted)
            }
            ContextTrustState::Untrusted => Ok(RpcContextTrustMutationResult {
                evaluation,
                settings: self.snapshot(catalog)?,
                added_root: None,
                removed_root: None,
            }),
            ContextTrustState::TrustedRoot => {
                let removed = evaluation.granting_root.clone().unwrap_or_default();
                let folders: Vec<String> =
                    canonicalize_trusted_roots(&self.configured_trusted_context_folders())
                        .into_iter()
                        .filter(|r| *r != removed)
                        .collect();
                self.persist_trust_mutation(&folders, path, catalog, None, Some(removed))
            }
        }
    }

    fn persist_trust_mutation<E>(
        &self,
        folders: &[String],
        path: &Value,
        catalog: &dyn ModelCatalog,
        added_root: Option<String>,
        removed_root: Option<String>,
    ) -> Result<RpcContextTrustMutationResult, E>
    where
        E: From<PersistFailure> + From<ModelsUnavailable> + From<FolderProblem>,
    {
        if self.has_global_settings_load_error() {
            return Err(PersistFailure::GlobalCorrupt.into());
        }
        self.set_trusted_context_folders(folders)
            .map_err(persist_error)?;
        let evaluation = self.evaluate(path)?;
        Ok(RpcContextTrustMutationResult {
            evaluation,
            settings: self.snapshot(catalog)?,
            added_root,
            removed_root,
        })
    }

    /// `remove_trusted_context_folder`: delete an exact configured string (no resolution).
    pub fn remove_trusted_context_folder(
        &self,
        path: &Value,
        catalog: &dyn ModelCatalog,
    ) -> Result<RpcTrustedFolderRemovalResult, RemoveTrustedContextFolderError> {
        let _op = self.op_guard();
        let Some(folder) = path.as_str().filter(|s| !s.is_empty()) else {
            return Err(RemoveTrustedContextFolderError::PathNotAString);
        };
        if self.has_global_settings_load_error() {
            return Err(RemoveTrustedContextFolderError::GlobalSettingsCorrupt);
        }
        let remaining: Vec<String> = self
            .configured_trusted_context_folders()
            .into_iter()
            .filter(|f| f != folder)
            .collect();
        self.set_trusted_context_folders(&remaining)
            .map_err(persist_error)?;
        Ok(RpcTrustedFolderRemovalResult {
            settings: self.snapshot(catalog)?,
            removed_folder: folder.to_string(),
        })
    }
}

fn validate_agent_models(value: &Value) -> Result<Vec<(String, Vec<String>)>, SetSettingsError> {
    let Value::Object(map) = value else {
        return Err(SetSettingsError::InvalidAgentModels);
    };
    let mut out = Vec::with_capacity(map.len());
    for name in object_keys(map) {
        let bad = || SetSettingsError::InvalidAgentModelsEntry {
            name: stringify_str(name),
        };
        let Value::Array(items) = &map[name] else {
            return Err(bad());
        };
        let mut list = Vec::with_capacity(items.len());
        for item in items {
            match item.as_str() {
                Some(s) if !js_trim(s).is_empty() => list.push(s.to_string()),
                _ => return Err(bad()),
            }
        }
        out.push((name.clone(), list));
    }
    Ok(out)
}

/// Returns `None` when the list covers every available model (stored as unset).
fn validate_enabled_models(
    value: &Value,
    available: &[ModelInfo],
) -> Result<Option<Vec<String>>, SetSettingsError> {
    let Value::Array(items) = value else {
        return Err(SetSettingsError::InvalidEnabledModels);
    };
    if items.is_empty() {
        return Err(SetSettingsError::NoEnabledModel);
    }
    let mut canonical: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let reference = match item.as_str() {
            Some(s) if !js_trim(s).is_empty() && js_trim(s) == s => s,
            _ => return Err(SetSettingsError::InvalidEnabledModelsEntryType),
        };
        let wanted = reference.to_lowercase();
        let matches: Vec<&ModelInfo> = available
            .iter()
            .filter(|m| m.reference().to_lowercase() == wanted)
            .collect();
        let [model] = matches.as_slice() else {
            return Err(SetSettingsError::InvalidEnabledModelsEntry {
                value: stringify_str(reference),
            });
        };
        let reference = model.reference();
        if canonical.contains(&reference) {
            return Err(SetSettingsError::DuplicateEnabledModel {
                value: stringify_str(&reference),
            });
        }
        canonical.push(reference);
    }
    let covers_all = canonical.len() == available.len()
        && available.iter().all(|m| canonical.contains(&m.reference()));
    Ok((!covers_all).then_some(canonical))
}

fn validate_arbiter(
    value: &Value,
    models: &mut dyn FnMut() -> Result<Vec<ModelInfo>, ModelsUnavailable>,
) -> Result<Map<String, Value>, SetSettingsError> {
    let Value::Object(policy) = value else {
        return Err(SetSettingsError::InvalidSubagentArbiter);
    };
    let unknown: Vec<&str> = object_keys(policy)
        .into_iter()
        .map(String::as_str)
        .filter(|k| !ARBITER_KEYS.contains(k))
        .collect();
    if !unknown.is_empty() {
        return Err(SetSettingsError::UnknownSubagentArbiterKey {
            keys: unknown.join(", "),
        });
    }
    let enabled = policy.get("enabled");
    if enabled.is_some_and(|v| !v.is_boolean()) {
        return Err(SetSettingsError::InvalidSubagentArbiterEnabled);
    }
    // Disabling is the recovery path for a broken policy: keep the other fields unvalidated.
    if enabled == Some(&Value::Bool(false)) {
        return Ok(policy.clone());
    }
    let model = match policy.get("model") {
        None => None,
        Some(Value::String(s)) if !js_trim(s).is_empty() => Some(s.as_str()),
        Some(_) => return Err(SetSettingsError::InvalidSubagentArbiterModel),
    };
    let thinking = match policy.get("thinking") {
        None => None,
        Some(Value::String(s)) if is_valid_thinking_level(s) => Some(s.as_str()),
        Some(other) => {
            return Err(SetSettingsError::InvalidSubagentArbiterThinking {
                value: stringify(other),
            });
        }
    };
    if let Some(guide) = policy.get("guidePath")
        && guide.as_str().is_none_or(|g| js_trim(g).is_empty())
    {
        return Err(SetSettingsError::InvalidSubagentArbiterGuidePath);
    }
    if enabled == Some(&Value::Bool(true)) && model.is_none() {
        return Err(SetSettingsError::ArbiterModelRequired);
    }
    if let Some(model_ref) = model {
        let slash = model_ref.find('/');
        let well_formed = slash.is_some_and(|i| i > 0 && i < model_ref.len() - 1)
            && !model_ref.chars().any(is_js_whitespace);
        let Some(slash) = slash.filter(|_| well_formed) else {
            return Err(SetSettingsError::SubagentArbiterModelNotExact);
        };
        let (provider, id) = (&model_ref[..slash], &model_ref[slash + 1..]);
        let available = models()?;
        let Some(found) = available
            .iter()
            .find(|m| m.provider == provider && m.id == id)
        else {
            return Err(SetSettingsError::ArbiterModelNotFound {
                model: model_ref.to_string(),
            });
        };
        if let Some(level) = thinking {
            validate_thinking_level_for_model(found, level)?;
        }
    }
    Ok(policy.clone())
}

/// Convenience for callers holding a path string rather than a JSON value.
pub fn path_value(path: &Path) -> Value {
    Value::String(path.to_string_lossy().into_owned())
}
