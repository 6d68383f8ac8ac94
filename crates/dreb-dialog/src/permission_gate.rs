//! Permission gate: ask the host before the agent's `bash` tool runs a dangerous command; deny unless the
//! user explicitly allows it (an unanswered, timed-out, cancelled or aborted prompt denies).
//!
//! This is a dreb-rs feature modelled on the reference's example permission-gate extension (which asks a
//! `select` for commands matching recursive `rm`, `sudo` or `chmod/chown … 777`). It complements the
//! always-on forbidden-commands guard (`dreb_tools::guards`), which blocks outright and runs first: the
//! gate only sees commands that guard let through. Enabled by the `permissionGate` setting (see
//! [`PermissionGateSettings`]).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use regex::Regex;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::engine::{DialogEnd, DialogEngine, DialogOptions};
use crate::response::text_value;

/// The settings.json key: `"permissionGate": { "enabled": bool, "timeoutMs": number }`.
pub const PERMISSION_GATE_SETTING: &str = "permissionGate";

/// Timeout when `timeoutMs` is absent, so an unattended host never wedges a run.
pub const DEFAULT_PERMISSION_TIMEOUT: Duration = Duration::from_secs(60);

/// The option that allows the command.
pub const ALLOW_OPTION: &str = "Allow";
/// The option that blocks it.
pub const BLOCK_OPTION: &str = "Block";

/// The `permissionGate` setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionGateSettings {
    /// Default `false`.
    pub enabled: bool,
    /// From `timeoutMs`: default [`DEFAULT_PERMISSION_TIMEOUT`]; `0` means wait until answered or aborted.
    pub timeout: Option<Duration>,
}

impl Default for PermissionGateSettings {
    fn default() -> Self {
        PermissionGateSettings {
            enabled: false,
            timeout: Some(DEFAULT_PERMISSION_TIMEOUT),
        }
    }
}

impl PermissionGateSettings {
    /// Reads the `permissionGate` value of the merged settings (`None` or `null`: the defaults). Unknown
    /// keys are ignored; a wrong type is an error naming the field.
    pub fn from_value(value: Option<&Value>) -> Result<Self, String> {
        let mut out = PermissionGateSettings::default();
        let obj = match value {
            None | Some(Value::Null) => return Ok(out),
            Some(Value::Object(o)) => o,
            Some(_) => return Err(format!("{PERMISSION_GATE_SETTING} must be an object")),
        };
        match obj.get("enabled") {
            None => {}
            Some(Value::Bool(b)) => out.enabled = *b,
            Some(_) => {
                return Err(format!(
                    "{PERMISSION_GATE_SETTING}.enabled must be a boolean"
                ));
            }
        }
        match obj.get("timeoutMs") {
            None => {}
            Some(v) => {
                let ms = v
                    .as_f64()
                    .filter(|f| f.is_finite() && *f >= 0.0)
                    .ok_or_else(|| {
                        format!("{PERMISSION_GATE_SETTING}.timeoutMs must be a non-negative number")
                    })?;
                let ms = ms.round();
                out.timeout = (ms >= 1.0).then(|| Duration::from_millis(ms as u64));
            }
        }
        Ok(out)
    }
}

/// Decides whether a command needs confirmation: `Some(label)` names why it is dangerous.
pub type DangerPredicate = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The built-in danger patterns (checked on the raw command, quoted text included: a false positive only
/// costs a prompt, a false negative runs the command unasked).
pub fn dangerous_command_reason(command: &str) -> Option<&'static str> {
    static PATTERNS: OnceLock<Vec<(Regex, &'static str)>> = OnceLock::new();
    let patterns = PATTERNS.get_or_init(|| {
        [
            (
                r"\brm\b[^|;&\n]*\s(?:-[A-Za-z]*[rR][A-Za-z]*|--recursive)\b",
                "recursive delete",
            ),
            (r"\bsudo\b", "elevated privileges"),
            (
                r"\b(?:chmod|chown)\b[^|;&\n]*\b777\b",
                "world-writable permissions",
            ),
            (r"\bgit\s+reset\s+--hard\b", "discards uncommitted changes"),
            (
                r"\bgit\s+clean\b[^|;&\n]*\s-[A-Za-z]*f",
                "deletes untracked files",
            ),
            (r"\bmkfs\b", "formats a filesystem"),
            (r"\bdd\b[^|;&\n]*\bof=", "raw device or file write"),
        ]
        .into_iter()
        .map(|(p, label)| (Regex::new(p).expect("valid danger pattern"), label))
        .collect()
    });
    patterns
        .iter()
        .find(|(re, _)| re.is_match(command))
        .map(|(_, label)| *label)
}

/// The host's answer to a permission prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionAnswer {
    /// The user picked [`ALLOW_OPTION`].
    Allowed,
    /// The user picked anything else (normally [`BLOCK_OPTION`]) or cancelled.
    Blocked,
    /// Timed out, aborted, or shut down.
    Unanswered,
}

/// The prompt's title: the question, a blank line, the command.
pub fn permission_title(command: &str) -> String {
    format!("Allow dangerous command?\n\n{command}")
}

impl DialogEngine {
    /// Asks the host (a `select` with [`ALLOW_OPTION`] / [`BLOCK_OPTION`]) whether `command` may run; true
    /// only for an explicit allow. Unanswered, timed out, cancelled, aborted or shut down: false.
    pub async fn confirm_dangerous_command(&self, command: &str, opts: DialogOptions) -> bool {
        self.ask_permission(command, opts).await == PermissionAnswer::Allowed
    }

    /// Like [`confirm_dangerous_command`](Self::confirm_dangerous_command), telling a refusal from no answer.
    pub async fn ask_permission(&self, command: &str, opts: DialogOptions) -> PermissionAnswer {
        let options = [ALLOW_OPTION.to_string(), BLOCK_OPTION.to_string()];
        match self
            .select_end(&permission_title(command), &options, opts)
            .await
        {
            DialogEnd::Host(frame) => match text_value(&frame) {
                Some(v) if v == ALLOW_OPTION => PermissionAnswer::Allowed,
                _ => PermissionAnswer::Blocked,
            },
            DialogEnd::TimedOut | DialogEnd::Aborted | DialogEnd::Shutdown | DialogEnd::Refused => {
                PermissionAnswer::Unanswered
            }
        }
    }
}

/// What the gate decided for one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    /// Gate disabled, or the command is not dangerous: run it.
    NotGated,
    /// Dangerous, and the user allowed it.
    Allowed,
    /// Dangerous and not allowed: block the tool call with `reason` (the tool result's error text).
    Denied { reason: String },
}

/// The gate the runtime's before-tool-call hook consults for the `bash` tool.
#[derive(Clone)]
pub struct PermissionGate {
    engine: DialogEngine,
    settings: PermissionGateSettings,
    predicate: DangerPredicate,
}

impl std::fmt::Debug for PermissionGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionGate")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl PermissionGate {
    /// A gate using the built-in [`dangerous_command_reason`] patterns.
    pub fn new(engine: DialogEngine, settings: PermissionGateSettings) -> Self {
        PermissionGate {
            engine,
            settings,
            predicate: Arc::new(|c: &str| dangerous_command_reason(c).map(str::to_string)),
        }
    }

    /// Replaces the danger predicate.
    pub fn with_predicate(mut self, predicate: DangerPredicate) -> Self {
        self.predicate = predicate;
        self
    }

    /// The settings in force.
    pub fn settings(&self) -> &PermissionGateSettings {
        &self.settings
    }

    /// Checks one `bash` command; prompts the host when it is dangerous. `cancel` is the agent run's token.
    pub async fn check(&self, command: &str, cancel: Option<CancellationToken>) -> GateDecision {
        if !self.settings.enabled {
            return GateDecision::NotGated;
        }
        let Some(label) = (self.predicate)(command) else {
            return GateDecision::NotGated;
        };
        let opts = DialogOptions {
            timeout: self.settings.timeout,
            cancel,
        };
        match self.engine.ask_permission(command, opts).await {
            PermissionAnswer::Allowed => GateDecision::Allowed,
            PermissionAnswer::Blocked => GateDecision::Denied {
                reason: format!("Dangerous command ({label}) blocked by the user."),
            },
            PermissionAnswer::Unanswered => GateDecision::Denied {
                reason: format!(
                    "Dangerous command ({label}) blocked: the user did not confirm it."
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn danger_patterns() {
        for (cmd, label) in [
            ("rm -rf build", "recursive delete"),
            ("rm -f -r build", "recursive delete"),
            ("rm --recursive x", "recursive delete"),
            ("ls && rm -R x", "recursive delete"),
            ("sudo ls", "elevated privileges"),
            ("chmod -R 777 .", "world-writable permissions"),
            ("git reset --hard HEAD~1", "discards uncommitted changes"),
            ("git clean -fdx", "deletes untracked files"),
            ("mkfs.ext4 /dev/sdb1", "formats a filesystem"),
            ("dd if=/dev/zero of=disk.img", "raw device or file write"),
            ("bash -c 'rm -rf /tmp/x'", "recursive delete"),
        ] {
            assert_eq!(dangerous_command_reason(cmd), Some(label), "{cmd}");
        }
        for cmd in [
            "rm file.txt",
            "ls -la",
            "chmod 644 a",
            "git status",
            "cargo build --release",
            "git reset HEAD file",
            "echo remove",
        ] {
            assert_eq!(dangerous_command_reason(cmd), None, "{cmd}");
        }
    }

    #[test]
    fn settings_parse() {
        assert_eq!(
            PermissionGateSettings::from_value(None).unwrap(),
            PermissionGateSettings::default()
        );
        let s =
            PermissionGateSettings::from_value(Some(&json!({"enabled": true, "timeoutMs": 1500})))
                .unwrap();
        assert_eq!(
            s,
            PermissionGateSettings {
                enabled: true,
                timeout: Some(Duration::from_millis(1500))
            }
        );
        let s = PermissionGateSettings::from_value(Some(&json!({"enabled": true, "timeoutMs": 0})))
            .unwrap();
        assert_eq!(s.timeout, None);
        assert_eq!(
            PermissionGateSettings::from_value(Some(&json!(true))).unwrap_err(),
            "permissionGate must be an object"
        );
        assert_eq!(
            PermissionGateSettings::from_value(Some(&json!({"enabled": "yes"}))).unwrap_err(),
            "permissionGate.enabled must be a boolean"
        );
        for bad in [json!(-1), json!("10"), json!(null)] {
            assert_eq!(
                PermissionGateSettings::from_value(Some(&json!({"timeoutMs": bad}))).unwrap_err(),
                "permissionGate.timeoutMs must be a non-negative number"
            );
        }
    }
}
