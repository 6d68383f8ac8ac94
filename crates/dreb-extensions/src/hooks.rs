//! An extension on the session's hook bus: each point it subscribed to becomes a call of the same name, with
//! the hook timeout; a failed or timed-out call is the handler's failure (the bus reports it as
//! `extension_error`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use dreb_agent::{AgentMessage, CustomMessage};
use dreb_ai::{ImageContent, UserBlock};
use dreb_extension_protocol as ext;
use dreb_hooks::{
    BeforeAgentStartEvent, BeforeAgentStartResult, CompactPreparation, HookError, HookHandler,
    HookResult, InputDecision, InputEvent, InputSource, Notice, SessionBeforeDecision,
    SessionBeforeEvent, SessionStartReason, Supplied, SuppliedSummary, SwitchReason,
    ToolCallDecision, ToolCallEvent, ToolResultEvent, ToolResultPatch, TreeOverrides,
    TreePreparation, UserBashEvent, UserBashResult,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::extension::Extension;

/// The default time a hook call may take (`DREB_EXTENSION_HOOK_TIMEOUT_MS` overrides it).
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// The hook timeout of this process.
pub fn hook_timeout() -> Duration {
    std::env::var("DREB_EXTENSION_HOOK_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_HOOK_TIMEOUT)
}

/// What arrives as events rather than calls: `session_start`, `model_select` and the agent events.
const NOTICE_EVENTS: [&str; 16] = [
    "session_start",
    "model_select",
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "auto_compaction_start",
    "auto_compaction_end",
    "auto_retry_start",
    "auto_retry_end",
];

/// One extension as a hook handler.
pub struct ExtensionHooks {
    pub(crate) ext: Arc<Extension>,
    pub(crate) timeout: Duration,
}

impl ExtensionHooks {
    /// `ext` on the bus, with `timeout` for each hook call.
    pub fn new(ext: Arc<Extension>, timeout: Duration) -> Self {
        ExtensionHooks { ext, timeout }
    }
}

/// Same wire shape, other crate's type.
fn convert<A: Serialize, B: DeserializeOwned>(a: &A) -> HookResult<B> {
    serde_json::to_value(a)
        .and_then(serde_json::from_value)
        .map_err(|e| HookError(format!("Extension protocol error: {e}")))
}

impl ExtensionHooks {
    async fn before_compact(
        &self,
        preparation: &CompactPreparation,
        branch_entries: &[Value],
        custom_instructions: &Option<String>,
    ) -> HookResult<SessionBeforeDecision> {
        let r = self
            .ask(
                ext::SessionBeforeCompactParams {
                    preparation: compaction_preparation(preparation),
                    branch_entries: branch_entries.to_vec(),
                    custom_instructions: custom_instructions.clone(),
                },
                None,
            )
            .await?;
        compaction_decision(r, branch_entries)
    }

    async fn before_tree(
        &self,
        target_id: &str,
        summarize: bool,
        preparation: &TreePreparation,
    ) -> HookResult<SessionBeforeDecision> {
        let r = self
            .ask(
                ext::SessionBeforeTreeParams {
                    target_id: target_id.to_string(),
                    summarize,
                    preparation: tree_preparation(preparation),
                },
                None,
            )
            .await?;
        Ok(tree_decision(r))
    }

    async fn ask<C: ext::CallSpec>(
        &self,
        params: C,
        cancel: Option<&CancellationToken>,
    ) -> HookResult<C::Output> {
        self.ext
            .call(params, Some(self.timeout), cancel)
            .await
            .map_err(|e| HookError(e.to_string()))
    }
}

fn tree_decision(r: ext::TreeHookResult) -> SessionBeforeDecision {
    if r.cancel == Some(true) {
        return SessionBeforeDecision::Cancel;
    }
    SessionBeforeDecision::Tree {
        summary: r.summary.map(|s| SuppliedSummary {
            summary: s.summary,
            details: s.details,
        }),
        overrides: TreeOverrides {
            custom_instructions: r.custom_instructions,
            replace_instructions: r.replace_instructions,
            label: r.label,
        },
    }
}

fn fork_decision(r: ext::ForkHookResult) -> SessionBeforeDecision {
    if r.cancel == Some(true) {
        return SessionBeforeDecision::Cancel;
    }
    SessionBeforeDecision::Fork {
        skip_conversation_restore: r.skip_conversation_restore == Some(true),
    }
}

/// A `session_before_compact` answer; a supplied `firstKeptEntryId` must be an entry of `branch`.
fn compaction_decision(
    r: ext::CompactHookResult,
    branch: &[Value],
) -> HookResult<SessionBeforeDecision> {
    if r.cancel == Some(true) {
        return Ok(SessionBeforeDecision::Cancel);
    }
    let Some(s) = r.summary else {
        return Ok(SessionBeforeDecision::Continue);
    };
    if let Some(id) = &s.first_kept_entry_id
        && !branch
            .iter()
            .any(|e| e.get("id").and_then(Value::as_str) == Some(id.as_str()))
    {
        return Err(HookError(format!(
            "firstKeptEntryId \"{id}\" is not an entry of the branch"
        )));
    }
    let tokens_before = match s.tokens_before {
        Some(n) if n < 0 => {
            return Err(HookError(format!("tokensBefore {n} is negative")));
        }
        other => other.map(|n| n as u64),
    };
    Ok(SessionBeforeDecision::SupplyCompaction(Supplied {
        summary: s.summary,
        details: s.details,
        first_kept_entry_id: s.first_kept_entry_id,
        tokens_before,
    }))
}

/// The protocol's form of a compaction's preparation.
fn compaction_preparation(p: &CompactPreparation) -> ext::CompactionPreparation {
    ext::CompactionPreparation {
        first_kept_entry_id: p.first_kept_entry_id.clone(),
        messages_to_summarize: p.messages_to_summarize.clone(),
        turn_prefix_messages: p.turn_prefix_messages.clone(),
        is_split_turn: p.is_split_turn,
        tokens_before: p.tokens_before as i64,
        previous_summary: p.previous_summary.clone(),
        file_ops: ext::FileOperations {
            read: p.file_ops.read.clone(),
            written: p.file_ops.written.clone(),
            edited: p.file_ops.edited.clone(),
        },
        settings: ext::CompactionSettings {
            enabled: p.settings.enabled,
            reserve_tokens: p.settings.reserve_tokens as i64,
            keep_recent_tokens: p.settings.keep_recent_tokens as i64,
        },
    }
}

/// The protocol's form of a tree navigation's preparation.
fn tree_preparation(p: &TreePreparation) -> ext::TreePreparation {
    ext::TreePreparation {
        target_id: p.target_id.clone(),
        old_leaf_id: p.old_leaf_id.clone(),
        common_ancestor_id: p.common_ancestor_id.clone(),
        entries_to_summarize: p.entries_to_summarize.clone(),
        user_wants_summary: p.user_wants_summary,
        custom_instructions: p.custom_instructions.clone(),
        replace_instructions: p.replace_instructions,
        label: p.label.clone(),
    }
}

#[async_trait]
impl HookHandler for ExtensionHooks {
    async fn tool_call(
        &self,
        event: &mut ToolCallEvent,
        cancel: &CancellationToken,
    ) -> HookResult<ToolCallDecision> {
        if !self.ext.subscribes("tool_call") {
            return Ok(ToolCallDecision::Continue);
        }
        let input = match &event.input {
            Value::Object(map) => map.clone(),
            _ => Default::default(),
        };
        let r = self
            .ask(
                ext::ToolCallParams {
                    tool_name: event.tool_name.clone(),
                    tool_call_id: event.tool_call_id.clone(),
                    input,
                },
                Some(cancel),
            )
            .await?;
        if let Some(input) = r.input {
            event.input = Value::Object(input);
        }
        Ok(if r.block == Some(true) {
            ToolCallDecision::Block { reason: r.reason }
        } else {
            ToolCallDecision::Continue
        })
    }

    async fn tool_result(&self, event: &ToolResultEvent) -> HookResult<Option<ToolResultPatch>> {
        if !self.ext.subscribes("tool_result") {
            return Ok(None);
        }
        let input = match &event.input {
            Value::Object(map) => map.clone(),
            _ => Default::default(),
        };
        let r = self
            .ask(
                ext::ToolResultParams {
                    tool_name: event.tool_name.clone(),
                    tool_call_id: event.tool_call_id.clone(),
                    input,
                    content: convert(&event.content)?,
                    details: event.details.clone(),
                    is_error: event.is_error,
                },
                None,
            )
            .await?;
        let content: Option<Vec<UserBlock>> = match &r.content {
            Some(c) => Some(convert(c)?),
            None => None,
        };
        Ok(Some(ToolResultPatch {
            content,
            details: r.details,
            is_error: r.is_error,
        }))
    }

    async fn context(&self, messages: &[AgentMessage]) -> HookResult<Option<Vec<AgentMessage>>> {
        if !self.ext.subscribes("context") {
            return Ok(None);
        }
        let r = self
            .ask(
                ext::ContextParams {
                    messages: convert(&messages)?,
                },
                None,
            )
            .await?;
        match r.messages {
            Some(list) => Ok(Some(convert(&list)?)),
            None => Ok(None),
        }
    }

    async fn before_provider_request(&self, payload: &Value) -> HookResult<Option<Value>> {
        if !self.ext.subscribes("before_provider_request") {
            return Ok(None);
        }
        let r = self
            .ask(
                ext::BeforeProviderRequestParams {
                    payload: payload.clone(),
                },
                None,
            )
            .await?;
        Ok(r.payload)
    }

    async fn input(&self, event: &InputEvent) -> HookResult<InputDecision> {
        if !self.ext.subscribes("input") {
            return Ok(InputDecision::Continue);
        }
        let images = if event.images.is_empty() {
            None
        } else {
            Some(convert(&event.images)?)
        };
        let r = self
            .ask(
                ext::InputParams {
                    text: event.text.clone(),
                    images,
                    source: match event.source {
                        InputSource::Rpc => ext::InputSource::Rpc,
                        InputSource::Extension => ext::InputSource::Extension,
                    },
                },
                None,
            )
            .await?;
        Ok(match r.action {
            ext::InputAction::Handled => InputDecision::Handled,
            ext::InputAction::Transform => {
                let images: Option<Vec<ImageContent>> = match &r.images {
                    Some(i) => Some(convert(i)?),
                    None => None,
                };
                InputDecision::Transform {
                    text: r.text.unwrap_or_else(|| event.text.clone()),
                    images,
                }
            }
            _ => InputDecision::Continue,
        })
    }

    async fn before_agent_start(
        &self,
        event: &BeforeAgentStartEvent,
    ) -> HookResult<Option<BeforeAgentStartResult>> {
        if !self.ext.subscribes("before_agent_start") {
            return Ok(None);
        }
        let images = if event.images.is_empty() {
            None
        } else {
            Some(convert(&event.images)?)
        };
        let r = self
            .ask(
                ext::BeforeAgentStartParams {
                    prompt: event.prompt.clone(),
                    images,
                    system_prompt: event.system_prompt.clone(),
                },
                None,
            )
            .await?;
        let message = match r.message {
            Some(m) => Some(CustomMessage {
                role: Default::default(),
                custom_type: m.custom_type,
                content: convert(&m.content)?,
                display: m.display.unwrap_or(true),
                details: m.details,
                timestamp: dreb_agent::agent::now_ms(),
            }),
            None => None,
        };
        Ok(Some(BeforeAgentStartResult {
            message,
            system_prompt: r.system_prompt,
        }))
    }

    async fn session_before(
        &self,
        event: &SessionBeforeEvent,
    ) -> HookResult<SessionBeforeDecision> {
        if !self.ext.subscribes(event.name()) {
            return Ok(SessionBeforeDecision::Continue);
        }
        let cancel_of = |r: ext::CancelResult| {
            if r.cancel == Some(true) {
                SessionBeforeDecision::Cancel
            } else {
                SessionBeforeDecision::Continue
            }
        };
        Ok(match event {
            SessionBeforeEvent::Switch {
                reason,
                target_session_file,
            } => cancel_of(
                self.ask(
                    ext::SessionBeforeSwitchParams {
                        reason: match reason {
                            SwitchReason::New => ext::SwitchReason::New,
                            SwitchReason::Resume => ext::SwitchReason::Resume,
                        },
                        target_session_file: target_session_file.clone(),
                    },
                    None,
                )
                .await?,
            ),
            SessionBeforeEvent::Fork { entry_id } => fork_decision(
                self.ask(
                    ext::SessionBeforeForkParams {
                        entry_id: entry_id.clone(),
                    },
                    None,
                )
                .await?,
            ),
            SessionBeforeEvent::Compaction {
                preparation,
                branch_entries,
                custom_instructions,
            } => {
                self.before_compact(preparation, branch_entries, custom_instructions)
                    .await?
            }
            SessionBeforeEvent::TreeNavigation {
                target_id,
                summarize,
                preparation,
            } => self.before_tree(target_id, *summarize, preparation).await?,
        })
    }

    async fn user_bash(&self, event: &UserBashEvent) -> HookResult<Option<UserBashResult>> {
        if !self.ext.subscribes("user_bash") {
            return Ok(None);
        }
        let r = self
            .ask(
                ext::UserBashParams {
                    command: event.command.clone(),
                    exclude_from_context: false,
                    cwd: event.cwd.clone(),
                },
                None,
            )
            .await?;
        Ok(r.result.map(|r| UserBashResult {
            output: r.output,
            exit_code: r.exit_code.map(|c| c as i32),
            cancelled: r.cancelled.unwrap_or(false),
            truncated: r.truncated.unwrap_or(false),
        }))
    }

    async fn notify(&self, notice: Notice<'_>) -> HookResult<()> {
        match notice {
            Notice::SessionShutdown => {
                // The host stops the processes itself (`ExtensionHost::shutdown`), which sends the call.
            }
            // The host tells a freshly loaded extension itself (start-up, reload).
            Notice::SessionStart(SessionStartReason::Startup | SessionStartReason::Reload) => {}
            Notice::SessionStart(reason) if self.ext.subscribes("session_start") => {
                let reason = match reason {
                    SessionStartReason::Startup | SessionStartReason::Reload => return Ok(()),
                    SessionStartReason::New => ext::SessionStartReason::New,
                    SessionStartReason::Resume => ext::SessionStartReason::Resume,
                    SessionStartReason::Fork => ext::SessionStartReason::Fork,
                };
                self.ext
                    .notify(&ext::Event::SessionStart(ext::SessionStartEvent { reason }))
                    .await;
            }
            Notice::ModelSelect { model, previous } if self.ext.subscribes("model_select") => {
                self.ext
                    .notify(&ext::Event::ModelSelect(ext::ModelSelectEvent {
                        model: model.to_string(),
                        previous_model: previous.map(str::to_string),
                    }))
                    .await;
            }
            Notice::Agent(event) if self.ext.subscribes(event.type_name()) => {
                if let Ok(Value::Object(event)) = serde_json::to_value(event) {
                    self.ext
                        .notify(&ext::Event::AgentEvent(ext::AgentEventEvent { event }))
                        .await;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn wants_notices(&self) -> bool {
        NOTICE_EVENTS.iter().any(|name| self.ext.subscribes(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn supplied(first_kept: Option<&str>, tokens: Option<i64>) -> ext::CompactHookResult {
        ext::CompactHookResult {
            cancel: None,
            summary: Some(ext::SuppliedCompaction {
                summary: "s".into(),
                first_kept_entry_id: first_kept.map(str::to_string),
                tokens_before: tokens,
                details: None,
            }),
        }
    }

    #[test]
    fn a_supplied_compaction_must_keep_an_entry_of_the_branch() {
        let branch = [
            json!({"type": "message", "id": "a1"}),
            json!({"type": "message", "id": "b2"}),
        ];
        let ok = compaction_decision(supplied(Some("b2"), Some(7)), &branch).unwrap();
        assert_eq!(
            ok,
            SessionBeforeDecision::SupplyCompaction(Supplied {
                summary: "s".into(),
                details: None,
                first_kept_entry_id: Some("b2".into()),
                tokens_before: Some(7),
            })
        );
        let defaults = compaction_decision(supplied(None, None), &branch).unwrap();
        assert_eq!(
            defaults,
            SessionBeforeDecision::SupplyCompaction(Supplied {
                summary: "s".into(),
                ..Default::default()
            })
        );
        let err = compaction_decision(supplied(Some("zz"), None), &branch).unwrap_err();
        assert_eq!(
            err.0,
            "firstKeptEntryId \"zz\" is not an entry of the branch"
        );
        let err = compaction_decision(supplied(None, Some(-1)), &branch).unwrap_err();
        assert_eq!(err.0, "tokensBefore -1 is negative");
        let cancel = ext::CompactHookResult {
            cancel: Some(true),
            summary: None,
        };
        assert_eq!(
            compaction_decision(cancel, &branch).unwrap(),
            SessionBeforeDecision::Cancel
        );
    }
}
