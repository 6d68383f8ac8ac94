//! The extension-UI dialogs (`extension_ui_request` / `extension_ui_response`) and the tool safety guards the agent
//! hooks apply (forbidden commands, sensitive paths, the dangerous-command permission gate, secret scrubbing).

use dreb_agent::{
    AfterToolCallContext, AfterToolCallResult, BeforeToolCallContext, BeforeToolCallResult,
};
use dreb_dialog::{GateDecision, PERMISSION_GATE_SETTING, PermissionGate, PermissionGateSettings};
use dreb_protocol::Input;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::runtime::{Inner, Runtime};

impl Runtime {
    /// Routes a non-command input from the host (an `extension_ui_response`) to the dialog waiting for it. Unknown
    /// or settled ids are ignored, like the reference; nothing is ever answered.
    pub fn handle_input(&self, input: &Input) {
        let disposition = self.inner.dialog.handle_response(input);
        tracing::debug!(?disposition, "extension_ui_response routed");
    }
}

/// `before_tool_call`: the forbidden-commands and sensitive-path guards, then the permission gate for `bash`.
pub(crate) async fn guard_before_tool_call(
    inner: &Inner,
    ctx: &BeforeToolCallContext<'_>,
    cancel: &CancellationToken,
) -> Option<BeforeToolCallResult> {
    let block = |reason: String| {
        Some(BeforeToolCallResult {
            block: true,
            reason: Some(reason),
        })
    };
    match ctx.tool_call.name.as_str() {
        "bash" => {
            let command = ctx.args.get("command").and_then(Value::as_str)?;
            let extra = inner.settings.forbidden_commands().unwrap_or_default();
            if let Some(reason) =
                dreb_tools::guards::check_bash_command(command, &extra, &inner.cwd)
            {
                return block(reason);
            }
            let raw = inner
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
            let gate = PermissionGate::new(inner.dialog.clone(), settings);
            match gate.check(command, Some(cancel.clone())).await {
                GateDecision::Denied { reason } => block(reason),
                GateDecision::NotGated | GateDecision::Allowed => None,
            }
        }
        "read" => {
            let path = ctx.args.get("path").and_then(Value::as_str)?;
            let extra = inner.settings.sensitive_file_paths().unwrap_or_default();
            dreb_tools::guards::check_read_path(path, &extra, &inner.cwd).and_then(block)
        }
        _ => None,
    }
}

/// `after_tool_call`: secrets in text blocks become `<REDACTED:name>` (built-in plus `secretOutputPatterns`).
pub(crate) fn scrub_after_tool_call(
    inner: &Inner,
    ctx: &AfterToolCallContext<'_>,
) -> Option<AfterToolCallResult> {
    let extra = inner.settings.secret_output_patterns().unwrap_or_default();
    let extra = dreb_tools::guards::compile_extra_secret_patterns(&extra);
    let content = dreb_tools::guards::scrub_tool_content(&ctx.result.content, &extra)?;
    Some(AfterToolCallResult {
        content: Some(content),
        ..Default::default()
    })
}
