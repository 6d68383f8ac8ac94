//! Session-level auto-retry of transient provider errors, checked at `agent_end` (3 attempts, 2 s / 4 s / 8 s by
//! default), and `abort_retry`. Retryable runs never reach the auto-compaction check.

use std::time::Duration;

use dreb_ai::{AssistantMessage, StopReason};
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;

use crate::run_phase::{CompactionKind, RetryStep};
use crate::services::Runtime;

/// Overrides `retry.baseDelayMs` (tests use a few milliseconds instead of seconds).
pub const RETRY_BASE_DELAY_ENV: &str = "DREB_RETRY_BASE_DELAY_MS";

/// The reference's rule: an error reply (with a message) that is not a context overflow and names a transient failure.
fn is_retryable(message: &AssistantMessage, context_window: u64) -> bool {
    let Some(err) = message.error_message.as_deref().filter(|e| !e.is_empty()) else {
        return false;
    };
    message.stop_reason == StopReason::Error
        && !dreb_ai::is_context_overflow(message, Some(context_window))
        && dreb_ai::is_retryable_error(err)
}

/// A valid `DREB_RETRY_BASE_DELAY_MS` value (whole milliseconds); anything else is ignored.
fn base_delay_override(value: Option<&str>) -> Option<u64> {
    value.and_then(|v| v.trim().parse().ok())
}

/// The `auto_retry_end` event.
fn retry_end(success: bool, attempt: u32, final_error: Option<String>) -> Event {
    Event::AutoRetryEnd(AutoRetryEndEvent {
        success,
        attempt: i64::from(attempt),
        final_error,
    })
}

/// `base · 2^(attempt−1)`, saturating.
fn backoff_ms(base: u64, attempt: u32) -> u64 {
    base.saturating_mul(2u64.saturating_pow(attempt.saturating_sub(1)))
}

/// `message_end` of an assistant message: remember it for the `agent_end` checks. A non-error reply ends a
/// retry chain successfully and re-arms overflow recovery.
pub(crate) fn on_assistant_end(rt: &Runtime, message: &AssistantMessage) {
    rt.phase.set_last_assistant(message.clone());
    if message.stop_reason != StopReason::Error {
        let attempt = rt.phase.reply_succeeded();
        if attempt > 0 {
            rt.outbox.send(&retry_end(true, attempt, None));
        }
    }
}

/// `agent_end`: retry a transient error, otherwise end any retry chain and check auto-compaction. Runs inside
/// the agent's event delivery, so it only decides and emits; waiting happens on spawned tasks.
pub(crate) fn after_agent_end(rt: &Runtime) {
    let Some(message) = rt.phase.take_last_assistant() else {
        // A fatal run error (no assistant `message_end`) ends a retry chain: say so, or hosts wait forever.
        end_retry_chain_without_reply(rt);
        return;
    };
    if rt.phase.compaction() == Some(CompactionKind::Manual) {
        // `compact` aborted this run on purpose.
        return;
    }
    let window = rt
        .agent
        .model()
        .map(|m| m.context_window_tokens())
        .unwrap_or(0);
    if is_retryable(&message, window) && start_retry(rt, &message) {
        return;
    }
    rt.phase.retry_chain_over();
    crate::commands::compaction::check_compaction(rt, &message);
}

fn end_retry_chain_without_reply(rt: &Runtime) {
    let attempt = rt.phase.end_retry_chain();
    if attempt > 0 {
        rt.outbox.send(&retry_end(false, attempt, rt.agent.error()));
    }
}

fn retry_base_delay_ms(settings_base: u64) -> u64 {
    base_delay_override(std::env::var(RETRY_BASE_DELAY_ENV).ok().as_deref())
        .unwrap_or(settings_base)
}

/// Schedule the next attempt; `false` when retrying is off or the attempts are used up.
fn start_retry(rt: &Runtime, message: &AssistantMessage) -> bool {
    if !rt.settings.auto_retry() {
        return false;
    }
    let settings = rt.settings.retry_settings();
    let (attempt, cancel) = match rt.phase.next_retry(settings.max_retries) {
        RetryStep::Scheduled { attempt, cancel } => (attempt, cancel),
        RetryStep::GaveUp { attempts } => {
            rt.outbox
                .send(&retry_end(false, attempts, message.error_message.clone()));
            return false;
        }
    };
    let delay_ms = backoff_ms(retry_base_delay_ms(settings.base_delay_ms), attempt);
    rt.outbox.send(&Event::AutoRetryStart(AutoRetryStartEvent {
        attempt: i64::from(attempt),
        max_attempts: i64::try_from(settings.max_retries).unwrap_or(i64::MAX),
        delay_ms: i64::try_from(delay_ms).unwrap_or(i64::MAX),
        error_message: message
            .error_message
            .clone()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| "Unknown error".into()),
    }));
    // The failed reply stays in the session file but leaves the context the retry sends.
    crate::commands::compaction::remove_last_assistant(rt);

    let rt = rt.clone();
    tokio::spawn(async move {
        let slept = tokio::select! {
            _ = cancel.cancelled() => false,
            _ = rt.stop.cancelled() => false,
            _ = async {
                rt.agent.wait_for_idle().await;
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            } => true,
        };
        // No other retry can start before this one continues, so the slot still holds ours (or was taken).
        rt.phase.backoff_over();
        if !slept {
            let attempt = rt.phase.end_retry_chain();
            rt.outbox
                .send(&retry_end(false, attempt, Some("Retry cancelled".into())));
            return;
        }
        if let Err(e) = rt.agent.start_continue() {
            tracing::warn!("Agent retry failed: {e}");
            rt.phase.end_retry_chain();
        }
    });
    true
}

/// The `Retry` commands.
impl RetryHandler for Runtime {
    async fn set_auto_retry(
        &self,
        _ctx: &RequestContext,
        p: SetAutoRetryParams,
    ) -> Result<(), errors::SetAutoRetryError> {
        use errors::SetAutoRetryError as E;
        self.settings.set_auto_retry(p.enabled);
        self.settings
            .persist(move |s| s.set_retry_enabled(p.enabled))
            .await
            .map_err(E::unexpected)
    }

    async fn abort_retry(
        &self,
        _ctx: &RequestContext,
        _p: AbortRetryParams,
    ) -> Result<(), errors::AbortRetryError> {
        // The sleeping task then emits `auto_retry_end` with `Retry cancelled`.
        self.phase.abort_retry();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_per_attempt() {
        assert_eq!(backoff_ms(2000, 1), 2000);
        assert_eq!(backoff_ms(2000, 2), 4000);
        assert_eq!(backoff_ms(2000, 3), 8000);
        assert_eq!(backoff_ms(u64::MAX, 70), u64::MAX);
    }

    #[test]
    fn base_delay_override_takes_whole_milliseconds_only() {
        assert_eq!(base_delay_override(Some("5")), Some(5));
        assert_eq!(base_delay_override(Some(" 250 ")), Some(250));
        assert_eq!(base_delay_override(Some("-1")), None);
        assert_eq!(base_delay_override(Some("1.5")), None);
        assert_eq!(base_delay_override(Some("")), None);
        assert_eq!(base_delay_override(None), None);
    }
}
