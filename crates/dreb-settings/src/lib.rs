//! Settings files, context files and context-folder trust for dreb-rs.
//!
//! * [`SettingsManager`]: global `<agentDir>/settings.json` + project `<cwd>/.dreb/settings.json`,
//!   merged view, typed getters, persisting setters (locked, key-level, atomic writes).
//! * RPC API on the manager: [`SettingsManager::get_settings`], [`SettingsManager::snapshot`],
//!   [`SettingsManager::apply_update`] (`set_settings`) and the four trust commands, returning
//!   wire DTOs ([`RpcSettingsSnapshot`], ...) and exact reference error texts.
//! * [`ModelCatalog`]: what validation needs from the model registry.
//! * [`context_files`]: session-start AGENTS.md/CLAUDE.md scan and the prompt section.
//! * [`context_trust`] and [`nested_context`]: trust decisions and lazy nested loading.

pub mod context_files;
pub mod context_trust;
mod file_lock;
mod js;
pub mod manager;
pub mod model_catalog;
pub mod nested_context;
pub mod paths;
pub mod rpc;
pub mod settings_file;

pub use context_files::{
    ContextDiagnostic, ContextFile, format_project_context_section, load_project_context_files,
};
pub use context_trust::{
    ContextTrustMatch, ContextTrustPolicy, ContextTrustState, RpcContextTrustEvaluation,
    match_context_trust,
};
pub use manager::{ScopedSettingsError, SettingsError, SettingsManager, SettingsScope};
pub use model_catalog::{ModelCatalog, ModelInfo, ScopeResolution, ScopeWarning, ScopedModel};
pub use nested_context::{NestedContextState, compute_nested_context_block};
pub use rpc::{
    EnabledModelsSource, RpcContextTrustMutationResult, RpcScopedModel, RpcSetSettingsResult,
    RpcSettingsError, RpcSettingsSnapshot, RpcTrustedFolderRemovalResult,
};
pub use settings_file::{SettingsEdit, SettingsFileError};
