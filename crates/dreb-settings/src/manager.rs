//! `SettingsManager`: the global (`<agentDir>/settings.json`) and project
//! (`<cwd>/.dreb/settings.json`) files, their merged view, typed getters and persisting setters.
//!
//! Merge rule: project over global; when both values of a key are plain objects the merge is one
//! level deep (`{...global, ...project}`); arrays and scalars are replaced. `agentModels.models`
//! and `modelSettings` merge per entry. The trust policy (`context.*`) and `subagentArbiter` are
//! global-only and are re-read from disk whenever they are consulted, so a long-running process
//! sees changes made by another process.
//!
//! Every write goes through [`update_settings_file`]: take the file lock, re-read the file,
//! apply only the changed keys, write atomically. A global file that failed to load is never
//! written.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use serde_json::{Map, Value};

use crate::context_trust::ContextTrustPolicy;
use crate::js::non_negative_safe_integer;
use crate::paths::{CONFIG_DIR_NAME, expand_settings_path, home_dir, resolve_against};
use crate::settings_file::{
    SettingsEdit, SettingsFileError, read_settings_file_consistent as read_settings_file,
    update_settings_file,
};

pub const DEFAULT_MAX_CONCURRENT_SUBAGENTS: u64 = 4;
pub const DEFAULT_BG_PARENT_TURN_LIMIT: u64 = 3;

/// Which settings file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SettingsScope {
    Global,
    Project,
}

impl SettingsScope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Global => "global",
            Self::Project => "project",
        }
    }
}

/// A load or write failure attributed to one file (`"<scope>: <message>"` in RPC texts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedSettingsError {
    pub scope: SettingsScope,
    pub error: SettingsFileError,
}

impl std::fmt::Display for ScopedSettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.scope.as_str(), self.error)
    }
}

/// Why a setter did not persist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// The global file failed to load; it is never overwritten.
    #[error("Cannot write settings: the global settings file {} failed to load ({reason}); fix or remove it first", path.display())]
    GlobalLoadFailed { path: PathBuf, reason: String },
    /// The project file failed to load; it is never overwritten.
    #[error("Cannot write settings: the project settings file {} failed to load ({reason}); fix or remove it first", path.display())]
    ProjectLoadFailed { path: PathBuf, reason: String },
    /// Locking, re-reading or writing the file failed.
    #[error("{0}")]
    Write(ScopedSettingsError),
    /// A value the setter cannot store.
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Default)]
struct State {
    global: Map<String, Value>,
    project: Map<String, Value>,
    global_load_error: Option<SettingsFileError>,
    project_load_error: Option<SettingsFileError>,
}

/// Compaction settings with defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionSettings {
    pub enabled: bool,
    pub reserve_tokens: u64,
    pub keep_recent_tokens: u64,
}

/// Branch-summary settings with defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BranchSummarySettings {
    pub reserve_tokens: u64,
    pub skip_prompt: bool,
}

/// Retry settings with defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrySettings {
    pub enabled: bool,
    pub max_retries: u64,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
}

/// Background-agent guardrail with defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackgroundAgentGuardrail {
    pub enabled: bool,
    pub turn_limit: u64,
}

/// Per-model prompt override (`modelSettings["provider/id"]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelPromptSettings {
    SystemPrompt(String),
    AppendSystemPrompt(String),
}

/// Tab-title settings with defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TabTitleSettings {
    pub enabled: bool,
    pub trigger_after: u64,
    pub max_title_length: u64,
}

/// Global + project settings for one agent dir and working directory.
#[derive(Debug)]
pub struct SettingsManager {
    global_path: PathBuf,
    project_path: PathBuf,
    state: Mutex<State>,
    /// Serialises whole RPC settings operations (validate-apply-snapshot).
    pub(crate) op_lock: Mutex<()>,
}

/// One-level merge: project wins; two plain objects merge key by key.
pub fn merge_settings(
    global: &Map<String, Value>,
    project: &Map<String, Value>,
) -> Map<String, Value> {
    let mut result = global.clone();
    for (key, value) in project {
        match (result.get_mut(key), value) {
            (Some(Value::Object(base)), Value::Object(over)) => {
                for (k, v) in over {
                    base.insert(k.clone(), v.clone());
                }
            }
            _ => {
                result.insert(key.clone(), value.clone());
            }
        }
    }
    result
}

fn lookup<'a>(map: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut current = map.get(*first)?;
    for key in rest {
        current = current.as_object()?.get(*key)?;
    }
    Some(current)
}

/// `lookup(merge_settings(global, project), path)` without building the merge.
fn merged_lookup(
    global: &Map<String, Value>,
    project: &Map<String, Value>,
    path: &[&str],
) -> Option<Value> {
    let (top, rest) = path.split_first()?;
    let (g, p) = (global.get(*top), project.get(*top));
    match (g, p) {
        (Some(Value::Object(g)), Some(Value::Object(p))) => match rest.split_first() {
            // Both objects: one-level merge, project keys win.
            None => {
                let mut merged = g.clone();
                merged.extend(p.iter().map(|(k, v)| (k.clone(), v.clone())));
                Some(Value::Object(merged))
            }
            Some((key, deeper)) => {
                let base = p.get(*key).or_else(|| g.get(*key))?;
                deeper
                    .iter()
                    .try_fold(base, |v, k| v.as_object()?.get(*k))
                    .cloned()
            }
        },
        (_, Some(p)) => rest
            .iter()
            .try_fold(p, |v, k| v.as_object()?.get(*k))
            .cloned(),
        (Some(g), None) => rest
            .iter()
            .try_fold(g, |v, k| v.as_object()?.get(*k))
            .cloned(),
        (None, None) => None,
    }
}

fn string_list(value: Option<&Value>) -> Option<Vec<String>> {
    value?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

impl SettingsManager {
    /// Load both files. Load failures are recorded (see [`Self::load_errors`]), never fatal:
    /// the affected scope reads as empty and, for the global file, writes are refused.
    pub fn load(agent_dir: &Path, cwd: &Path) -> Self {
        let manager = Self {
            global_path: agent_dir.join("settings.json"),
            project_path: cwd.join(CONFIG_DIR_NAME).join("settings.json"),
            state: Mutex::new(State::default()),
            op_lock: Mutex::new(()),
        };
        manager.reload();
        manager
    }

    pub fn global_path(&self) -> &Path {
        &self.global_path
    }

    pub fn project_path(&self) -> &Path {
        &self.project_path
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied write (writes are atomic
        // renames), so a poisoned lock is safe to keep using.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Re-read both files. A file that fails keeps its previous in-memory values and its error
    /// is returned (and remembered until a later successful reload).
    pub fn reload(&self) -> Vec<ScopedSettingsError> {
        let mut errors = Vec::new();
        // Read under the state lock so a concurrent in-process write cannot be overtaken by
        // this (older) read.
        let mut state = self.state();
        let global = read_settings_file(&self.global_path);
        let project = read_settings_file(&self.project_path);
        match global {
            Ok(map) => {
                state.global = map.unwrap_or_default();
                state.global_load_error = None;
            }
            Err(error) => {
                tracing::warn!(%error, "global settings failed to load");
                state.global_load_error = Some(error.clone());
                errors.push(ScopedSettingsError {
                    scope: SettingsScope::Global,
                    error,
                });
            }
        }
        match project {
            Ok(map) => {
                state.project = map.unwrap_or_default();
                state.project_load_error = None;
            }
            Err(error) => {
                tracing::warn!(%error, "project settings failed to load");
                state.project_load_error = Some(error.clone());
                errors.push(ScopedSettingsError {
                    scope: SettingsScope::Project,
                    error,
                });
            }
        }
        errors
    }

    /// Errors from the last load/reload that have not been cleared by a successful reload.
    pub fn load_errors(&self) -> Vec<ScopedSettingsError> {
        let state = self.state();
        let mut errors = Vec::new();
        if let Some(error) = &state.global_load_error {
            errors.push(ScopedSettingsError {
                scope: SettingsScope::Global,
                error: error.clone(),
            });
        }
        if let Some(error) = &state.project_load_error {
            errors.push(ScopedSettingsError {
                scope: SettingsScope::Project,
                error: error.clone(),
            });
        }
        errors
    }

    pub fn has_global_settings_load_error(&self) -> bool {
        self.state().global_load_error.is_some()
    }

    pub fn has_project_settings_load_error(&self) -> bool {
        self.state().project_load_error.is_some()
    }

    /// The global file's content as last loaded or written.
    pub fn global_settings(&self) -> Map<String, Value> {
        self.state().global.clone()
    }

    /// The project file's content as last loaded or written.
    pub fn project_settings(&self) -> Map<String, Value> {
        self.state().project.clone()
    }

    /// The effective (merged) settings.
    pub fn merged_settings(&self) -> Map<String, Value> {
        let state = self.state();
        merge_settings(&state.global, &state.project)
    }

    /// One value of the merged view, without materialising the whole merge (getters are
    /// called on hot paths).
    fn merged_value(&self, path: &[&str]) -> Option<Value> {
        let state = self.state();
        merged_lookup(&state.global, &state.project, path)
    }

    fn merged_bool(&self, path: &[&str], default: bool) -> bool {
        self.merged_value(path)
            .and_then(|v| v.as_bool())
            .unwrap_or(default)
    }

    fn merged_string(&self, path: &[&str]) -> Option<String> {
        self.merged_value(path)
            .and_then(|v| v.as_str().map(str::to_string))
    }

    fn merged_u64(&self, path: &[&str], default: u64) -> u64 {
        self.merged_value(path)
            .as_ref()
            .and_then(non_negative_safe_integer)
            .unwrap_or(default)
    }

    // ----- getters -------------------------------------------------------------------------

    pub fn default_provider(&self) -> Option<String> {
        self.merged_string(&["defaultProvider"])
    }

    pub fn default_model(&self) -> Option<String> {
        self.merged_string(&["defaultModel"])
    }

    /// Stored default thinking level, unvalidated (the runtime clamps it; unset means `xhigh`).
    pub fn default_thinking_level(&self) -> Option<String> {
        self.merged_string(&["defaultThinkingLevel"])
    }

    pub fn steering_mode(&self) -> String {
        self.merged_string(&["steeringMode"])
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "one-at-a-time".into())
    }

    pub fn follow_up_mode(&self) -> String {
        self.merged_string(&["followUpMode"])
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "one-at-a-time".into())
    }

    pub fn transport(&self) -> String {
        self.merged_string(&["transport"])
            .unwrap_or_else(|| "sse".into())
    }

    pub fn theme(&self) -> Option<String> {
        self.merged_string(&["theme"])
    }

    pub fn compaction_settings(&self) -> CompactionSettings {
        CompactionSettings {
            enabled: self.merged_bool(&["compaction", "enabled"], true),
            reserve_tokens: self.merged_u64(&["compaction", "reserveTokens"], 16384),
            keep_recent_tokens: self.merged_u64(&["compaction", "keepRecentTokens"], 20000),
        }
    }

    pub fn compaction_enabled(&self) -> bool {
        self.compaction_settings().enabled
    }

    pub fn branch_summary_settings(&self) -> BranchSummarySettings {
        BranchSummarySettings {
            reserve_tokens: self.merged_u64(&["branchSummary", "reserveTokens"], 16384),
            skip_prompt: self.merged_bool(&["branchSummary", "skipPrompt"], false),
        }
    }

    pub fn retry_settings(&self) -> RetrySettings {
        RetrySettings {
            enabled: self.merged_bool(&["retry", "enabled"], true),
            max_retries: self.merged_u64(&["retry", "maxRetries"], 3),
            base_delay_ms: self.merged_u64(&["retry", "baseDelayMs"], 2000),
            max_delay_ms: self.merged_u64(&["retry", "maxDelayMs"], 60000),
        }
    }

    pub fn retry_enabled(&self) -> bool {
        self.retry_settings().enabled
    }

    pub fn background_agent_guardrail(&self) -> BackgroundAgentGuardrail {
        let turn_limit = self
            .merged_value(&["backgroundAgents", "parentTurnLimit"])
            .and_then(|v| v.as_f64())
            .filter(|n| n.is_finite() && *n >= 1.0)
            .map(|n| n as u64)
            .unwrap_or(DEFAULT_BG_PARENT_TURN_LIMIT);
        BackgroundAgentGuardrail {
            enabled: self.merged_bool(&["backgroundAgents", "parentTurnGuardrail"], true),
            turn_limit,
        }
    }

    /// Concurrent subagent limit (0 disables the subagent tool); invalid values fall back to 4.
    pub fn max_concurrent_subagents(&self) -> u64 {
        match self.merged_value(&["backgroundAgents", "maxConcurrentSubagents"]) {
            None => DEFAULT_MAX_CONCURRENT_SUBAGENTS,
            Some(v) => non_negative_safe_integer(&v).unwrap_or_else(|| {
                tracing::warn!(
                    value = %v,
                    "ignoring invalid backgroundAgents.maxConcurrentSubagents; it must be a non-negative whole number"
                );
                DEFAULT_MAX_CONCURRENT_SUBAGENTS
            }),
        }
    }

    pub fn hide_thinking_block(&self) -> bool {
        self.merged_bool(&["hideThinkingBlock"], false)
    }

    pub fn shell_path(&self) -> Option<String> {
        self.merged_string(&["shellPath"])
    }

    pub fn quiet_startup(&self) -> bool {
        self.merged_bool(&["quietStartup"], false)
    }

    /// Prepended (with a newline) to every bash command.
    pub fn shell_command_prefix(&self) -> Option<String> {
        self.merged_string(&["shellCommandPrefix"])
    }

    pub fn npm_command(&self) -> Option<Vec<String>> {
        string_list(self.merged_value(&["npmCommand"]).as_ref())
    }

    /// Package sources, each a string or `{source, extensions?, skills?, prompts?, themes?}`.
    pub fn packages(&self) -> Vec<Value> {
        self.merged_value(&["packages"])
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
    }

    pub fn extension_paths(&self) -> Vec<String> {
        string_list(self.merged_value(&["extensions"]).as_ref()).unwrap_or_default()
    }

    /// Global settings `extensions` only (paths relative to the agent dir).
    pub fn global_extension_paths(&self) -> Vec<String> {
        string_list(self.state().global.get("extensions")).unwrap_or_default()
    }

    /// Project settings `extensions` only (paths relative to `<cwd>/.dreb`); they run code, so they load only
    /// in a trusted project.
    pub fn project_extension_paths(&self) -> Vec<String> {
        string_list(self.state().project.get("extensions")).unwrap_or_default()
    }

    pub fn skill_paths(&self) -> Vec<String> {
        string_list(self.merged_value(&["skills"]).as_ref()).unwrap_or_default()
    }

    pub fn prompt_template_paths(&self) -> Vec<String> {
        string_list(self.merged_value(&["prompts"]).as_ref()).unwrap_or_default()
    }

    pub fn theme_paths(&self) -> Vec<String> {
        string_list(self.merged_value(&["themes"]).as_ref()).unwrap_or_default()
    }

    pub fn enable_skill_commands(&self) -> bool {
        self.merged_bool(&["enableSkillCommands"], true)
    }

    pub fn show_images(&self) -> bool {
        self.merged_bool(&["terminal", "showImages"], true)
    }

    pub fn image_auto_resize(&self) -> bool {
        self.merged_bool(&["images", "autoResize"], true)
    }

    pub fn block_images(&self) -> bool {
        self.merged_bool(&["images", "blockImages"], false)
    }

    /// Scoped model patterns (`enabledModels`), merged.
    pub fn enabled_models(&self) -> Option<Vec<String>> {
        string_list(self.merged_value(&["enabledModels"]).as_ref())
    }

    /// Project settings replace the global enabled-model scope.
    pub fn has_project_enabled_models_override(&self) -> bool {
        self.state().project.contains_key("enabledModels")
    }

    pub fn double_escape_action(&self) -> String {
        self.merged_string(&["doubleEscapeAction"])
            .unwrap_or_else(|| "tree".into())
    }

    pub fn tree_filter_mode(&self) -> String {
        self.merged_string(&["treeFilterMode"])
            .filter(|m| {
                ["default", "no-tools", "user-only", "labeled-only", "all"].contains(&m.as_str())
            })
            .unwrap_or_else(|| "default".into())
    }

    /// `thinkingBudgets {minimal, low, medium, high}` as stored.
    pub fn thinking_budgets(&self) -> Option<Map<String, Value>> {
        self.merged_value(&["thinkingBudgets"])
            .and_then(|v| v.as_object().cloned())
    }

    pub fn editor_padding_x(&self) -> u64 {
        self.merged_u64(&["editorPaddingX"], 0)
    }

    pub fn autocomplete_max_visible(&self) -> u64 {
        self.merged_u64(&["autocompleteMaxVisible"], 5)
    }

    pub fn code_block_indent(&self) -> String {
        self.merged_string(&["markdown", "codeBlockIndent"])
            .unwrap_or_else(|| "  ".into())
    }

    pub fn session_dir(&self) -> Option<String> {
        self.merged_string(&["sessionDir"])
    }

    /// Extra forbidden-command regexes.
    pub fn forbidden_commands(&self) -> Option<Vec<String>> {
        string_list(self.merged_value(&["forbiddenCommands"]).as_ref())
    }

    /// Extra sensitive-path globs.
    pub fn sensitive_file_paths(&self) -> Option<Vec<String>> {
        string_list(self.merged_value(&["sensitiveFilePaths"]).as_ref())
    }

    /// Extra secret-scrubbing patterns `(name, pattern)`; malformed entries are skipped.
    pub fn secret_output_patterns(&self) -> Option<Vec<(String, String)>> {
        let items = self
            .merged_value(&["secretOutputPatterns"])?
            .as_array()?
            .clone();
        Some(
            items
                .iter()
                .filter_map(|i| {
                    Some((
                        i.get("name")?.as_str()?.to_string(),
                        i.get("pattern")?.as_str()?.to_string(),
                    ))
                })
                .collect(),
        )
    }

    pub fn tab_title_settings(&self) -> TabTitleSettings {
        TabTitleSettings {
            enabled: self.merged_bool(&["tabTitle", "enabled"], true),
            trigger_after: self.merged_u64(&["tabTitle", "triggerAfter"], 9),
            max_title_length: self.merged_u64(&["tabTitle", "maxTitleLength"], 60),
        }
    }

    /// `dream.archivePath` (expanded, resolved) or `~/.dreb/memory-archive`.
    pub fn dream_archive_path(&self) -> PathBuf {
        match self
            .merged_string(&["dream", "archivePath"])
            .filter(|s| !s.is_empty())
        {
            Some(p) => {
                let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
                resolve_against(&cwd, Path::new(&expand_settings_path(&p)))
            }
            None => home_dir().join(".dreb").join("memory-archive"),
        }
    }

    /// Per-agent model fallback lists, global and project merged per agent name.
    pub fn agent_models(&self) -> indexmap::IndexMap<String, Vec<String>> {
        let state = self.state();
        let mut merged = indexmap::IndexMap::new();
        for scope in [&state.global, &state.project] {
            if let Some(Value::Object(models)) = lookup(scope, &["agentModels", "models"]) {
                for (name, list) in models {
                    let list = string_list(Some(list)).unwrap_or_default();
                    merged.insert(name.clone(), list);
                }
            }
        }
        merged
    }

    /// The fallback list for one agent, if non-empty.
    pub fn agent_models_for_agent(&self, agent: &str) -> Option<Vec<String>> {
        self.agent_models()
            .get(agent)
            .filter(|l| !l.is_empty())
            .cloned()
    }

    /// A project entry for this agent shadows any global change.
    pub fn has_project_agent_model_override(&self, agent: &str) -> bool {
        lookup(&self.state().project, &["agentModels", "models", agent]).is_some()
    }

    /// `modelSettings[key]`, global and project merged per property.
    pub fn model_settings(&self, model_key: &str) -> Option<Map<String, Value>> {
        let state = self.state();
        let global =
            lookup(&state.global, &["modelSettings", model_key]).and_then(Value::as_object);
        let project =
            lookup(&state.project, &["modelSettings", model_key]).and_then(Value::as_object);
        if global.is_none() && project.is_none() {
            return None;
        }
        let mut merged = global.cloned().unwrap_or_default();
        for (k, v) in project.into_iter().flatten() {
            merged.insert(k.clone(), v.clone());
        }
        Some(merged)
    }

    /// Prompt override for an exact `provider/id` key; errors on empty or conflicting values.
    pub fn model_prompt_settings(
        &self,
        provider: &str,
        model_id: &str,
    ) -> Result<Option<ModelPromptSettings>, String> {
        let model_ref = format!("{provider}/{model_id}");
        let Some(settings) = self.model_settings(&model_ref) else {
            return Ok(None);
        };
        let check = |key: &str| -> Result<Option<String>, String> {
            match settings.get(key) {
                None => Ok(None),
                Some(Value::String(s)) if !crate::js::js_trim(s).is_empty() => Ok(Some(s.clone())),
                Some(_) => Err(format!(
                    "modelSettings.{model_ref}.{key} must be a non-empty string"
                )),
            }
        };
        let system = check("systemPrompt")?;
        let append = check("appendSystemPrompt")?;
        match (system, append) {
            (Some(_), Some(_)) => Err(format!(
                "modelSettings.{model_ref} cannot define both systemPrompt and appendSystemPrompt"
            )),
            (Some(s), None) => Ok(Some(ModelPromptSettings::SystemPrompt(s))),
            (None, Some(a)) => Ok(Some(ModelPromptSettings::AppendSystemPrompt(a))),
            (None, None) => Ok(None),
        }
    }

    /// `modelSettings[modelId].thinkingDisplay` (`summarized` | `omitted`).
    pub fn model_thinking_display(&self, model_id: &str) -> Option<String> {
        self.model_settings(model_id)?
            .get("thinkingDisplay")?
            .as_str()
            .map(str::to_string)
    }

    // ----- global-only slices, always re-read from disk ------------------------------------

    /// Fresh read of the global file; on failure, the last loaded content is not trusted.
    fn fresh_global(&self) -> Result<Map<String, Value>, SettingsFileError> {
        let mut state = self.state(); // held across the read, as in `reload`
        let fresh = read_settings_file(&self.global_path)?.unwrap_or_default();
        state.global = fresh.clone();
        Ok(fresh)
    }

    /// The lazy-context trust policy from the global file only. Unreadable or malformed
    /// values fail closed (nothing trusted).
    pub fn global_context_trust_policy(&self) -> ContextTrustPolicy {
        let global = match self.fresh_global() {
            Ok(g) => g,
            Err(error) => {
                tracing::warn!(%error, "global settings unreadable; lazy nested context loading is disabled");
                return ContextTrustPolicy::default();
            }
        };
        let context = global.get("context");
        let auto = context.and_then(|c| c.get("autoLoadNested"));
        let folders = context.and_then(|c| c.get("trustedFolders"));
        let malformed = match context {
            None => false,
            Some(Value::Object(_)) | Some(Value::Array(_)) => {
                auto.is_some_and(|v| !v.is_boolean())
                    || folders.is_some_and(|v| string_list(Some(v)).is_none())
            }
            Some(_) => true,
        };
        if malformed {
            tracing::warn!(
                "Global context trust settings are malformed; lazy nested context loading is disabled"
            );
            return ContextTrustPolicy::default();
        }
        ContextTrustPolicy {
            unrestricted: auto.and_then(Value::as_bool).unwrap_or(false),
            trusted_folders: string_list(folders).unwrap_or_default(),
        }
    }

    /// The raw configured global trusted-folder strings (`[]` when unreadable or malformed).
    pub fn configured_trusted_context_folders(&self) -> Vec<String> {
        let Ok(global) = self.fresh_global() else {
            return Vec::new();
        };
        match global.get("context") {
            Some(Value::Object(c)) => string_list(c.get("trustedFolders")).unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// The global Dispatch Arbiter policy object, exactly as stored (project never applies).
    pub fn global_subagent_arbiter(&self) -> Result<Option<Value>, SettingsFileError> {
        let global = self.fresh_global()?;
        Ok(global
            .get("subagentArbiter")
            .filter(|v| crate::js::truthy(v))
            .cloned())
    }

    // ----- writes ---------------------------------------------------------------------------

    /// Apply key-level edits to the global file (locked, re-read, atomic).
    pub fn update_global(&self, edits: &[SettingsEdit]) -> Result<(), SettingsError> {
        let mut state = self.state();
        if let Some(err) = &state.global_load_error {
            return Err(SettingsError::GlobalLoadFailed {
                path: self.global_path.clone(),
                reason: err.message.clone(),
            });
        }
        if edits.is_empty() {
            return Ok(()); // nothing to change: do not create or rewrite the file
        }
        let written = update_settings_file(&self.global_path, edits, true).map_err(|error| {
            SettingsError::Write(ScopedSettingsError {
                scope: SettingsScope::Global,
                error,
            })
        })?;
        state.global = written;
        Ok(())
    }

    /// Apply key-level edits to the project file (locked, re-read, atomic).
    pub fn update_project(&self, edits: &[SettingsEdit]) -> Result<(), SettingsError> {
        let mut state = self.state();
        if let Some(err) = &state.project_load_error {
            return Err(SettingsError::ProjectLoadFailed {
                path: self.project_path.clone(),
                reason: err.message.clone(),
            });
        }
        let written = update_settings_file(&self.project_path, edits, false).map_err(|error| {
            SettingsError::Write(ScopedSettingsError {
                scope: SettingsScope::Project,
                error,
            })
        })?;
        state.project = written;
        Ok(())
    }

    /// `set_model` / `cycle_model` side effect.
    pub fn set_default_model_and_provider(
        &self,
        provider: &str,
        model_id: &str,
    ) -> Result<(), SettingsError> {
        self.update_global(&[
            SettingsEdit::set(["defaultProvider"], provider),
            SettingsEdit::set(["defaultModel"], model_id),
        ])
    }

    pub fn set_default_provider(&self, provider: &str) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["defaultProvider"], provider)])
    }

    pub fn set_default_model(&self, model_id: &str) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["defaultModel"], model_id)])
    }

    /// `set_thinking_level` side effect (the caller skips it when nothing changed).
    pub fn set_default_thinking_level(&self, level: &str) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["defaultThinkingLevel"], level)])
    }

    /// `set_thinking_level` persistence rule: write the new default only when the effective
    /// level changed, and not when a model that cannot think stays at `off`. Returns whether
    /// it wrote.
    pub fn persist_thinking_level_change(
        &self,
        previous: &str,
        effective: &str,
        model_supports_thinking: bool,
    ) -> Result<bool, SettingsError> {
        if effective == previous || (!model_supports_thinking && effective == "off") {
            return Ok(false);
        }
        self.set_default_thinking_level(effective)?;
        Ok(true)
    }

    /// `set_steering_mode` side effect (stored unvalidated, like the reference).
    pub fn set_steering_mode(&self, mode: &str) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["steeringMode"], mode)])
    }

    /// `set_follow_up_mode` side effect.
    pub fn set_follow_up_mode(&self, mode: &str) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["followUpMode"], mode)])
    }

    pub fn set_transport(&self, transport: &str) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["transport"], transport)])
    }

    pub fn set_theme(&self, theme: &str) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["theme"], theme)])
    }

    /// `set_auto_compaction` side effect (`compaction.enabled`).
    pub fn set_compaction_enabled(&self, enabled: bool) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["compaction", "enabled"], enabled)])
    }

    /// `set_auto_retry` side effect (`retry.enabled`).
    pub fn set_retry_enabled(&self, enabled: bool) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["retry", "enabled"], enabled)])
    }

    pub fn set_max_concurrent_subagents(&self, value: u64) -> Result<(), SettingsError> {
        if value as f64 > crate::js::MAX_SAFE_INTEGER {
            return Err(SettingsError::Invalid(
                "maxConcurrentSubagents must be a non-negative whole number".into(),
            ));
        }
        self.update_global(&[SettingsEdit::set(
            ["backgroundAgents", "maxConcurrentSubagents"],
            value,
        )])
    }

    pub fn set_background_agent_guardrail_enabled(
        &self,
        enabled: bool,
    ) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(
            ["backgroundAgents", "parentTurnGuardrail"],
            enabled,
        )])
    }

    pub fn set_image_auto_resize(&self, enabled: bool) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["images", "autoResize"], enabled)])
    }

    pub fn set_block_images(&self, blocked: bool) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["images", "blockImages"], blocked)])
    }

    pub fn set_enable_skill_commands(&self, enabled: bool) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["enableSkillCommands"], enabled)])
    }

    pub fn set_hide_thinking_block(&self, hide: bool) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["hideThinkingBlock"], hide)])
    }

    /// `None` removes the key (all available models).
    pub fn set_enabled_models(&self, patterns: Option<&[String]>) -> Result<(), SettingsError> {
        self.update_global(&[enabled_models_edit(patterns)])
    }

    /// An empty list removes the agent's global entry.
    pub fn set_agent_models_for_agent(
        &self,
        agent: &str,
        models: &[String],
    ) -> Result<(), SettingsError> {
        self.update_global(&[agent_models_edit(agent, models)])
    }

    /// `None` removes the global arbiter policy.
    pub fn set_global_subagent_arbiter(
        &self,
        policy: Option<Map<String, Value>>,
    ) -> Result<(), SettingsError> {
        let edit = match policy {
            Some(p) => SettingsEdit::set(["subagentArbiter"], Value::Object(p)),
            None => SettingsEdit::remove(["subagentArbiter"]),
        };
        self.update_global(&[edit])
    }

    /// Write one or both trust fields; untouched siblings keep their on-disk value, and
    /// malformed ones are normalised fail-closed.
    pub fn set_context_trust(
        &self,
        auto_load_nested: Option<bool>,
        trusted_folders: Option<&[String]>,
    ) -> Result<(), SettingsError> {
        self.update_global(&context_trust_edits(auto_load_nested, trusted_folders))
    }

    pub fn set_auto_load_nested_context(&self, enabled: bool) -> Result<(), SettingsError> {
        self.set_context_trust(Some(enabled), None)
    }

    pub fn set_trusted_context_folders(&self, folders: &[String]) -> Result<(), SettingsError> {
        self.set_context_trust(None, Some(folders))
    }

    pub fn set_dream_archive_path(&self, path: &str) -> Result<(), SettingsError> {
        self.update_global(&[SettingsEdit::set(["dream", "archivePath"], path)])
    }

    /// Global per-model thinking display; `None` removes it (and an emptied entry).
    pub fn set_model_thinking_display(
        &self,
        model_id: &str,
        value: Option<&str>,
    ) -> Result<(), SettingsError> {
        let path = vec![
            "modelSettings".to_string(),
            model_id.to_string(),
            "thinkingDisplay".to_string(),
        ];
        match value {
            Some(v) => self.update_global(&[SettingsEdit::Set(path, v.into())]),
            None => {
                let entry = lookup(&self.state().global, &["modelSettings", model_id]).cloned();
                let Some(Value::Object(entry)) = entry else {
                    return Ok(());
                };
                if !entry.contains_key("thinkingDisplay") {
                    return Ok(());
                }
                let edit = if entry.len() == 1 {
                    SettingsEdit::Remove(path[..2].to_vec())
                } else {
                    SettingsEdit::Remove(path)
                };
                self.update_global(&[edit])
            }
        }
    }

    /// Resource lists (`packages`, `extensions`, `skills`, `prompts`, `themes`) in either scope.
    pub fn set_resource_list(
        &self,
        scope: SettingsScope,
        key: ResourceListKey,
        items: Vec<Value>,
    ) -> Result<(), SettingsError> {
        let edit = SettingsEdit::Set(vec![key.as_str().to_string()], Value::Array(items));
        match scope {
            SettingsScope::Global => self.update_global(&[edit]),
            SettingsScope::Project => self.update_project(&[edit]),
        }
    }
}

/// Keys of the resource path lists that can be written to either scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceListKey {
    Packages,
    Extensions,
    Skills,
    Prompts,
    Themes,
}

impl ResourceListKey {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Packages => "packages",
            Self::Extensions => "extensions",
            Self::Skills => "skills",
            Self::Prompts => "prompts",
            Self::Themes => "themes",
        }
    }
}

pub(crate) fn enabled_models_edit(patterns: Option<&[String]>) -> SettingsEdit {
    match patterns {
        Some(p) => SettingsEdit::set(["enabledModels"], p.to_vec()),
        None => SettingsEdit::remove(["enabledModels"]),
    }
}

pub(crate) fn agent_models_edit(agent: &str, models: &[String]) -> SettingsEdit {
    let path = vec![
        "agentModels".to_string(),
        "models".to_string(),
        agent.to_string(),
    ];
    if models.is_empty() {
        SettingsEdit::Remove(path)
    } else {
        SettingsEdit::Set(path, models.to_vec().into())
    }
}

pub(crate) fn context_trust_edits(
    auto_load_nested: Option<bool>,
    trusted_folders: Option<&[String]>,
) -> Vec<SettingsEdit> {
    let mut edits = Vec::new();
    if let Some(auto) = auto_load_nested {
        edits.push(SettingsEdit::set(["context", "autoLoadNested"], auto));
    }
    if let Some(folders) = trusted_folders {
        edits.push(SettingsEdit::set(
            ["context", "trustedFolders"],
            folders.to_vec(),
        ));
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merged_lookup_agrees_with_full_merge() {
        let global = json!({"a": 1, "o": {"x": 1, "y": {"deep": 1}}, "arr": [1], "g": {"k": true}, "n": {"q": 1}});
        let project = json!({"a": 2, "o": {"y": {"other": 2}, "z": 3}, "arr": [2], "p": {"k": false}, "n": null});
        let (g, p) = (global.as_object().unwrap(), project.as_object().unwrap());
        let merged = merge_settings(g, p);
        let paths: &[&[&str]] = &[
            &["a"],
            &["o"],
            &["o", "x"],
            &["o", "y"],
            &["o", "y", "deep"],
            &["o", "y", "other"],
            &["o", "z"],
            &["arr"],
            &["g", "k"],
            &["p", "k"],
            &["n"],
            &["n", "q"],
            &["missing"],
            &["a", "b"],
        ];
        for path in paths {
            assert_eq!(
                merged_lookup(g, p, path),
                lookup(&merged, path).cloned(),
                "{path:?}"
            );
        }
    }
}
