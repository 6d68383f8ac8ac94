//! `compact`, `abort_compaction`, and auto-compaction after `agent_end` and before each `prompt` (threshold, and
//! overflow recovery with one compact-and-retry per user message).

use std::time::Duration;

use dreb_agent::AgentMessage;
use dreb_ai::{AssistantMessage, StopReason};
use dreb_compaction::{
    CompactionSettings, SummaryError, SummaryLlm, estimate::usage_context_tokens,
};
use dreb_protocol::errors::CompactError;
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_session::CompactionData;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use dreb_hooks::{SessionBeforeEvent, SessionBeforeOutcome};

use crate::run_phase::{CompactionKind, CompactionTicket};
use crate::services::Runtime;
/// Why an auto-compaction runs: the spec's list.
use dreb_protocol::CompactionReason as Reason;

const OVERFLOW_RETRY_FAILED: &str = "Context overflow recovery failed after one compact-and-retry attempt. Try reducing \
                                     context or switching to a larger-context model.";

/// Milliseconds since the epoch of an ISO entry timestamp.
fn iso_ms(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|d| d.timestamp_millis())
}

/// The `auto_compaction_end` event.
fn auto_end(
    result: Option<CompactionResult>,
    aborted: bool,
    will_retry: bool,
    error: Option<String>,
) -> Event {
    Event::AutoCompactionEnd(AutoCompactionEndEvent {
        result,
        aborted,
        will_retry,
        error_message: error,
    })
}

/// The compaction settings, scaled to the current model's context window.
fn compaction_settings(rt: &Runtime) -> CompactionSettings {
    let s = rt.settings.compaction_settings();
    let settings = CompactionSettings {
        enabled: rt.settings.auto_compaction(),
        reserve_tokens: s.reserve_tokens,
        keep_recent_tokens: s.keep_recent_tokens,
    };
    let window = rt
        .agent
        .with_state(|st| st.model.as_ref().map(|m| m.context_window_tokens()));
    match window {
        Some(window) => settings.scaled_to(window),
        None => settings,
    }
}

/// Mark a compaction as running and return its ticket (its token is also cancelled at shutdown).
fn begin_compaction(rt: &Runtime, kind: CompactionKind) -> CompactionTicket {
    rt.phase.begin_compaction(kind, rt.stop.child_token())
}

/// Summarise the current branch with the session model, write the `compaction` entry and rebuild the agent's
/// messages from the session context.
async fn run_compaction(
    rt: &Runtime,
    custom_instructions: Option<&str>,
    cancel: CancellationToken,
) -> Result<CompactionResult, CompactError> {
    let model = rt.agent.model().ok_or(CompactError::NoModel)?;
    let api_key = {
        let registry = rt.models.registry();
        registry
            .api_key_for(&model)
            .map_err(|_| CompactError::NoApiKey {
                provider: model.provider.clone(),
            })?
    };
    let branch: Vec<Value> = rt
        .sessions
        .lock()
        .branch(None)
        .iter()
        .map(|e| e.to_value())
        .collect();
    let settings = compaction_settings(rt);
    let Some(prep) = dreb_compaction::prepare_compaction(&branch, &settings) else {
        let last_is_compaction = branch
            .last()
            .and_then(|e| e.get("type"))
            .and_then(Value::as_str)
            == Some("compaction");
        return Err(if last_is_compaction {
            CompactError::AlreadyCompacted
        } else {
            CompactError::NothingToCompact
        });
    };
    // `session_before_compact`: a handler may cancel, or supply the compaction instead of the model.
    let event = SessionBeforeEvent::Compaction {
        preparation: crate::extensions::compact_preparation(&prep, &settings),
        branch_entries: branch,
        custom_instructions: custom_instructions.map(str::to_string),
    };
    let supplied = match crate::extensions::ask_session_before(rt, &event).await {
        SessionBeforeOutcome::Cancelled => return Err(CompactError::Cancelled),
        SessionBeforeOutcome::Continue { supplied, .. } => supplied,
    };
    let from_hook = supplied.is_some();
    let result = match supplied {
        Some(s) => CompactionResult {
            summary: s.summary,
            first_kept_entry_id: s
                .first_kept_entry_id
                .unwrap_or_else(|| prep.first_kept_entry_id.clone()),
            tokens_before: i64::try_from(s.tokens_before.unwrap_or(prep.tokens_before))
                .unwrap_or(i64::MAX),
            details: Some(s.details.unwrap_or_else(|| prep.file_ops.details())),
        },
        None => {
            let llm = SummaryLlm {
                client: rt.models.providers(),
                model: &model,
                api_key,
                cancel: cancel.clone(),
            };
            dreb_compaction::compact(&prep, &llm, custom_instructions, &settings)
                .await
                .map_err(|e| match e {
                    SummaryError::Aborted => CompactError::Cancelled,
                    SummaryError::Failed(m) => CompactError::Unexpected(m),
                })?
        }
    };
    if cancel.is_cancelled() {
        return Err(CompactError::Cancelled);
    }
    {
        let mut session = rt.sessions.lock();
        session
            .append_compaction(CompactionData {
                summary: result.summary.clone(),
                first_kept_entry_id: result.first_kept_entry_id.clone(),
                tokens_before: u64::try_from(result.tokens_before).unwrap_or(0),
                details: result.details.clone(),
                from_hook: Some(from_hook),
            })
            .map_err(CompactError::unexpected)?;
    }
    let context = crate::persist::session_context(&rt.sessions.lock());
    rt.agent.replace_messages(context.messages);
    Ok(result)
}

/// The compaction entry closest to the leaf, as its timestamp in ms.
fn latest_compaction_ms(rt: &Runtime) -> Option<i64> {
    let session = rt.sessions.lock();
    let entry = session.latest_compaction()?;
    entry.str_field("timestamp").and_then(iso_ms)
}

/// After `agent_end` (no retry): compact on context overflow (then retry once) or above the threshold.
pub(crate) fn check_compaction(rt: &Runtime, message: &AssistantMessage) {
    if let Some((reason, will_retry)) = compaction_verdict(rt, message, false) {
        start_auto_compaction(rt, reason, will_retry);
    }
}

/// The reference's compaction check, shared by `agent_end` and the pre-prompt check: which auto-compaction to
/// run, if any. Aborted replies count only for the pre-prompt check (`include_aborted`). A repeated overflow
/// emits the recovery-failed `auto_compaction_end` here; an overflow to recover from leaves the context here.
fn compaction_verdict(
    rt: &Runtime,
    message: &AssistantMessage,
    include_aborted: bool,
) -> Option<(Reason, bool)> {
    if !include_aborted && message.stop_reason == StopReason::Aborted {
        return None;
    }
    let model = rt.agent.model()?;
    let window = model.context_window_tokens();
    let compaction_ms = latest_compaction_ms(rt);
    // A reply from before the latest compaction says nothing about the compacted context.
    if compaction_ms.is_some_and(|ts| message.timestamp <= ts) {
        return None;
    }
    let settings = compaction_settings(rt);
    let same_model = message.provider == model.provider && message.model == model.id;
    if same_model && dreb_ai::is_context_overflow(message, Some(window)) {
        if !settings.enabled {
            return None;
        }
        if !rt.phase.claim_overflow_recovery() {
            rt.outbox.send(&auto_end(
                None,
                false,
                false,
                Some(OVERFLOW_RETRY_FAILED.into()),
            ));
            return None;
        }
        remove_last_assistant(rt);
        return Some((Reason::Overflow, true));
    }
    let tokens = if message.stop_reason == StopReason::Error {
        // No usage on an error: the last valid usage plus estimates of what follows.
        let values = crate::convert::message_values(&rt.agent);
        let estimate = dreb_compaction::estimate_context_tokens(&values);
        let i = estimate.last_usage_index?;
        let usage_ts = values[i]
            .get("timestamp")
            .and_then(Value::as_i64)
            .unwrap_or(i64::MAX);
        if compaction_ms.is_some_and(|ts| usage_ts <= ts) {
            return None;
        }
        estimate.tokens
    } else {
        usage_context_tokens(&serde_json::to_value(message.usage).unwrap_or(Value::Null))
    };
    dreb_compaction::should_compact(tokens, window, &settings).then_some((Reason::Threshold, false))
}

/// Before a `prompt` reaches the model: check the last assistant reply in the context (aborted ones included,
/// which `agent_end` skips). When a compaction is due it is marked as running and returned, to be finished by
/// [`Runtime::run_pre_prompt_compaction`] before the prompt starts. Nothing when a compaction already runs: it
/// covers the same context.
pub(crate) fn pre_prompt_compaction(rt: &Runtime) -> Option<PendingCompaction> {
    if rt.phase.is_compacting() {
        return None;
    }
    let last = rt
        .agent
        .messages()
        .into_iter()
        .rev()
        .find_map(|m| match m {
            AgentMessage::Assistant(a) => Some(a),
            _ => None,
        })?;
    let (reason, will_retry) = compaction_verdict(rt, &last, true)?;
    Some(PendingCompaction {
        reason,
        will_retry,
        ticket: begin_compaction(rt, CompactionKind::Auto),
    })
}

/// Run a compaction found by [`Runtime::pre_prompt_compaction`] with its events. The prompt that follows is the
/// continuation, so nothing is continued here even when `willRetry` is reported (as the reference reports it).
pub(crate) async fn run_pre_prompt_compaction(rt: &Runtime, pending: PendingCompaction) {
    emit_auto_start(rt, pending.reason);
    let compacted =
        finish_auto_compaction(rt, pending.reason, pending.will_retry, pending.ticket).await;
    if compacted && pending.will_retry {
        drop_trailing_error(rt);
    }
}

/// The rebuilt context ends with the overflow error again (it stays in the file): drop it before going on.
fn drop_trailing_error(rt: &Runtime) {
    let ends_in_error = matches!(
        rt.agent.messages().last(),
        Some(AgentMessage::Assistant(a)) if a.stop_reason == StopReason::Error
    );
    if ends_in_error {
        remove_last_assistant(rt);
    }
}

/// Emit `auto_compaction_start` now (in event order), then compact once the run has fully ended.
fn start_auto_compaction(rt: &Runtime, reason: Reason, will_retry: bool) {
    emit_auto_start(rt, reason);
    let ticket = begin_compaction(rt, CompactionKind::Auto);
    let rt = rt.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = rt.agent.wait_for_idle() => {}
            _ = ticket.cancel.cancelled() => {}
        }
        if !finish_auto_compaction(&rt, reason, will_retry, ticket).await {
            return;
        }
        if will_retry || rt.agent.has_queued_messages() {
            if will_retry {
                drop_trailing_error(&rt);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            if let Err(e) = rt.agent.start_continue() {
                tracing::warn!("Agent failed to continue after compaction: {e}");
            }
        }
    });
}

/// Compact (unless already cancelled), clear the running mark and emit `auto_compaction_end`. `true` when the
/// compaction entry was written.
async fn finish_auto_compaction(
    rt: &Runtime,
    reason: Reason,
    will_retry: bool,
    ticket: CompactionTicket,
) -> bool {
    let outcome = if ticket.cancel.is_cancelled() {
        Err(CompactError::Cancelled)
    } else {
        run_compaction(rt, None, ticket.cancel.clone()).await
    };
    rt.phase.end_compaction(&ticket);
    let sink = &rt.outbox;
    match outcome {
        Ok(result) => {
            sink.send(&auto_end(Some(result), false, will_retry, None));
            true
        }
        Err(CompactError::Cancelled) => {
            sink.send(&auto_end(None, true, false, None));
            false
        }
        Err(CompactError::Unexpected(m)) => {
            let text = match reason {
                Reason::Overflow => format!("Context overflow recovery failed: {m}"),
                Reason::Threshold => format!("Auto-compaction failed: {m}"),
            };
            sink.send(&auto_end(None, false, false, Some(text)));
            false
        }
        // No model, no key, nothing to compact: ends quietly.
        Err(_) => {
            sink.send(&auto_end(None, false, false, None));
            false
        }
    }
}

fn emit_auto_start(rt: &Runtime, reason: Reason) {
    rt.outbox
        .send(&Event::AutoCompactionStart(AutoCompactionStartEvent {
            reason,
        }));
}

/// Drop the last message from the agent's context when it is an assistant reply (it stays in the file).
pub(crate) fn remove_last_assistant(rt: &Runtime) {
    let mut messages = rt.agent.messages();
    if matches!(messages.last(), Some(AgentMessage::Assistant(_))) {
        messages.pop();
        rt.agent.replace_messages(messages);
    }
}

/// A pre-prompt auto-compaction that is due and already marked as running (`isCompacting`).
pub(crate) struct PendingCompaction {
    reason: Reason,
    will_retry: bool,
    ticket: CompactionTicket,
}

/// The `Compaction` commands.
impl CompactionHandler for Runtime {
    async fn compact(
        &self,
        ctx: &RequestContext,
        p: CompactParams,
    ) -> Result<CompactionResult, CompactError> {
        // A manual compaction: the run aborted below must not start a retry or an auto-compaction of its own.
        let ticket = begin_compaction(self, CompactionKind::Manual);
        // The compaction has begun (`isCompacting`); the summary call is a long wait later commands need not sit
        // behind (`get_state`, `abort_compaction`, a queued prompt), as in the reference.
        ctx.release_order();
        self.phase.abort_retry();
        self.agent.abort();
        self.agent.wait_for_idle().await;
        let outcome = run_compaction(
            self,
            p.custom_instructions.as_deref(),
            ticket.cancel.clone(),
        )
        .await;
        self.phase.end_compaction(&ticket);
        outcome
    }

    async fn set_auto_compaction(
        &self,
        _ctx: &RequestContext,
        p: SetAutoCompactionParams,
    ) -> Result<(), errors::SetAutoCompactionError> {
        use errors::SetAutoCompactionError as E;
        self.settings.set_auto_compaction(p.enabled);
        self.settings
            .persist(move |s| s.set_compaction_enabled(p.enabled))
            .await
            .map_err(E::unexpected)
    }

    async fn abort_compaction(
        &self,
        _ctx: &RequestContext,
        _p: AbortCompactionParams,
    ) -> Result<(), errors::AbortCompactionError> {
        self.phase.abort_compaction();
        Ok(())
    }
}
