//! The built-in tool guards, as the first handler on the hook bus: the forbidden-commands and sensitive-path
//! checks and the dangerous-command permission gate before a call, secret scrubbing after it.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use dreb_dialog::{
    DialogEngine, GateDecision, PERMISSION_GATE_SETTING, PermissionGate, PermissionGateSettings,
};
use dreb_hooks::{
    HookHandler, HookResult, ToolCallDecision, ToolCallEvent, ToolResultEvent, ToolResultPatch,
};
use dreb_settings::SettingsManager;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The bus source name of the built-in guards.
pub(crate) const SOURCE: &str = "builtin:tool-guards";

pub(crate) struct BuiltinGuards {
    pub settings: Arc<SettingsManager>,
    pub cwd: PathBuf,
    pub dialog: DialogEngine,
}

impl BuiltinGuards {
    /// The forbidden-commands guard, then the permission gate (when enabled) for a `bash` command.
    async fn check_bash(&self, command: &str, cancel: &CancellationToken) -> Option<String> {
        let extra = self.settings.forbidden_commands().unwrap_or_default();
        if let Some(reason) = dreb_tools::guards::check_bash_command(command, &extra, &self.cwd) {
            return Some(reason);
        }
        let raw = self
            .settings
            .merged_settings()
            .get(PERMISSION_GATE_SETTING)
            .cloned();
        let settings = PermissionGateSettings::from_value(raw.as_ref()).unwrap_or_else(|e| {
            tracing::warn!("ignoring the {PERMISSION_GATE_SETTING} setting: {e}");
            PermissionGateSettings::default()
        });
        if !settings.enabled {
            return None;
        }
        let gate = PermissionGate::new(self.dialog.clone(), settings);
        match gate.check(command, Some(cancel.clone())).await {
            GateDecision::Denied { reason } => Some(reason),
            GateDecision::NotGated | GateDecision::Allowed => None,
        }
    }
}

#[async_trait]
impl HookHandler for BuiltinGuards {
    async fn tool_call(
        &self,
        event: &mut ToolCallEvent,
        cancel: &CancellationToken,
    ) -> HookResult<ToolCallDecision> {
        let input = |key: &str| event.input.get(key).and_then(Value::as_str);
        let reason = match event.tool_name.as_str() {
            "bash" => match input("command") {
                Some(command) => self.check_bash(command, cancel).await,
                None => None,
            },
            "read" => input("path").and_then(|path| {
                let extra = self.settings.sensitive_file_paths().unwrap_or_default();
                dreb_tools::guards::check_read_path(path, &extra, &self.cwd)
            }),
            _ => None,
        };
        Ok(match reason {
            Some(reason) => ToolCallDecision::Block {
                reason: Some(reason),
            },
            None => ToolCallDecision::Continue,
        })
    }

    fn wants_notices(&self) -> bool {
        false
    }

    /// Secrets in text blocks become `<REDACTED:name>` (built-in plus `secretOutputPatterns`).
    async fn tool_result(&self, event: &ToolResultEvent) -> HookResult<Option<ToolResultPatch>> {
        let extra = self.settings.secret_output_patterns().unwrap_or_default();
        let extra = dreb_tools::guards::compile_extra_secret_patterns(&extra);
        Ok(
            dreb_tools::guards::scrub_tool_content(&event.content, &extra).map(|content| {
                ToolResultPatch {
                    content: Some(content),
                    ..Default::default()
                }
            }),
        )
    }
}
