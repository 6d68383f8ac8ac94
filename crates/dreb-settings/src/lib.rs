//! Settings files, context files and context-folder trust for dreb-rs.
//!
//! * [`SettingsManager`]: global `<agentDir>/settings.json` + project `<cwd>/.dreb/settings.json`,
//!   merged view, typed getters, persisting setters (locked, key-level, atomic writes).
//! * RPC API on the manager: [`SettingsManager::get_settings`], [`SettingsManager::snapshot`],
//!   [`SettingsManager::apply_update`] (`set_settings`) and the four trust commands, returning
//!   the spec's types ([`RpcSettingsSnapshot`], ... from `dreb-protocol`) and each command's generated error
//!   type (its texts are rpc.yaml's).
//! * [`ModelCatalog`]: what validation needs from the model registry.
//! * [`context_files`]: session-start AGENTS.md/CLAUDE.md scan and the prompt section.
//! * [`context_trust`] and [`nested_context`]: trust decisions and lazy nested loading.
//!
//! All operations are synchronous file I/O (a write may wait for another process's lock);
//! call them from `spawn_blocking` in async code. Pass the RPC payloads through as raw JSON
//! (`settings`, `path`) so that malformed values get the reference's exact error texts.
//!
//! ```
//! use dreb_settings::{ModelCatalog, ModelInfo, ScopeResolution, SettingsManager};
//! use serde_json::json;
//!
//! struct Registry(Vec<ModelInfo>);
//! impl ModelCatalog for Registry {
//!     fn available_models(&self) -> Result<Vec<ModelInfo>, String> {
//!         Ok(self.0.clone())
//!     }
//!     fn resolve_scope(&self, _patterns: &[String], _available: &[ModelInfo]) -> ScopeResolution {
//!         ScopeResolution::default()
//!     }
//! }
//!
//! let home = tempfile::tempdir().unwrap();
//! let agent_dir = home.path().join(".dreb/agent");
//! let settings = SettingsManager::load(&agent_dir, home.path());
//! let registry = Registry(vec![ModelInfo {
//!     provider: "mock".into(),
//!     id: "mock-model".into(),
//!     name: "Mock".into(),
//!     reasoning: false,
//!     supports_xhigh: false,
//!     supports_max: false,
//! }]);
//!
//! // set_settings: validated as a whole, then written in one locked, atomic update.
//! let update = json!({"defaultProvider": "mock", "defaultModel": "mock-model", "retryEnabled": false});
//! let result = settings.apply_update(Some(&update), &registry).unwrap();
//! assert!(!result.retry_enabled);
//! let err = settings.apply_update(Some(&json!({"transport": "http"})), &registry).unwrap_err();
//! assert_eq!(err.to_string(), "Invalid transport: \"http\". Valid values: sse, websocket, auto");
//!
//! // A runtime setter's persistence side effect (set_auto_compaction).
//! settings.set_compaction_enabled(false).unwrap();
//! assert_eq!(
//!     std::fs::read_to_string(agent_dir.join("settings.json")).unwrap(),
//!     "{\n  \"defaultProvider\": \"mock\",\n  \"defaultModel\": \"mock-model\",\n  \"retry\": {\n    \"enabled\": false\n  },\n  \"compaction\": {\n    \"enabled\": false\n  }\n}"
//! );
//! ```

pub mod context_files;
pub mod context_trust;
mod file_lock;
pub mod frontmatter;
mod js;
pub mod manager;
pub mod memory;
pub mod model_catalog;
pub mod model_scope;
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
    EnabledModelsSource, ModelsUnavailable, RpcContextTrustMutationResult, RpcScopedModel,
    RpcSettingsSetResult, RpcSettingsSnapshot, RpcTrustedFolderRemovalResult,
};
pub use settings_file::{SettingsEdit, SettingsFileError};
