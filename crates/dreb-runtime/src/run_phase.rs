//! The run's lifecycle around the agent loop, in one place: the moment after `agent_end`, the auto-retry chain
//! (its attempt and the backoff's cancel), the running compaction (manual or automatic, with its cancel), branch
//! summaries, and the one overflow recovery per user message.
//!
//! Every transition is one method taking the one lock, so a reader (`get_state`, the dashboard snapshot) gets a
//! consistent [`PhaseView`] instead of flags read one after another while they change. Whether the agent loop
//! itself is streaming is the agent's own state; [`PhaseView`] combines it with `ending` into what hosts see.

use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// Which compaction is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CompactionKind {
    /// The `compact` command: the run it aborted starts no retry or auto-compaction of its own.
    Manual,
    /// After `agent_end` or before a prompt (threshold or overflow).
    Auto,
}

/// A running compaction, as [`RunPhase::begin_compaction`] hands it out.
#[derive(Debug, Clone)]
pub(crate) struct CompactionTicket {
    id: u64,
    /// Cancelled by `abort_compaction` (and at shutdown, when made from the stop token).
    pub cancel: CancellationToken,
}

/// One consistent reading of the phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PhaseView {
    /// A run is in progress as hosts see it: the loop streams and its `agent_end` is not out yet.
    pub is_streaming: bool,
    /// An auto-retry chain is active (a backoff is scheduled or the continued run streams).
    pub is_retrying: bool,
    /// Attempts made in the current retry chain (0 when none).
    pub retry_attempt: u32,
    /// A compaction or a branch summary is running.
    pub is_compacting: bool,
}

/// What the next retry attempt is.
#[derive(Debug, Clone)]
pub(crate) enum RetryStep {
    /// Attempt `attempt` is scheduled; `cancel` ends its backoff (`abort_retry`, `abort`).
    Scheduled {
        attempt: u32,
        cancel: CancellationToken,
    },
    /// The attempts are used up after `attempts`; the chain is over.
    GaveUp { attempts: u32 },
}

#[derive(Debug, Default)]
struct State {
    /// `agent_end` is out and the next `agent_start` is not: the loop is finishing.
    ending: bool,
    retrying: bool,
    retry_attempt: u32,
    /// Cancels the backoff sleep; taken when it ends.
    retry_cancel: Option<CancellationToken>,
    compaction: Option<(u64, CompactionKind, CancellationToken)>,
    next_compaction_id: u64,
    /// Branch summaries in flight (`navigate_tree` with `summarize`): they count as compacting, `abort_compaction`
    /// does not stop them (as in the reference).
    summaries: u32,
    overflow_recovery_attempted: bool,
}

impl State {
    fn compacting(&self) -> bool {
        self.compaction.is_some() || self.summaries > 0
    }
}

/// The run's lifecycle (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct RunPhase {
    state: Mutex<State>,
    /// The last assistant message of the current run (from `message_end`), checked at `agent_end`.
    last_assistant: Mutex<Option<dreb_ai::AssistantMessage>>,
}

impl RunPhase {
    /// A run is in progress, as hosts see it: from `agent_start` until its `agent_end` was sent. (The loop still
    /// holds its slot for a moment after `agent_end`; commands sent in that moment treat the session as idle.)
    pub(crate) fn is_busy(&self, agent: &dreb_agent::Agent) -> bool {
        self.view(agent.is_streaming()).is_streaming
    }

    /// Wait out the moment between a run's `agent_end` and the loop releasing its slot.
    pub(crate) async fn settle_after_agent_end(&self, agent: &dreb_agent::Agent) {
        if agent.is_streaming() && self.is_ending() {
            agent.wait_for_idle().await;
        }
    }

    /// `message_end` of an assistant message: kept for the `agent_end` checks.
    pub(crate) fn set_last_assistant(&self, message: dreb_ai::AssistantMessage) {
        *lock(&self.last_assistant) = Some(message);
    }

    /// The run's last assistant message, taken at `agent_end` (none after a fatal run error).
    pub(crate) fn take_last_assistant(&self) -> Option<dreb_ai::AssistantMessage> {
        lock(&self.last_assistant).take()
    }

    /// The phase as hosts see it; `agent_streaming` is whether the agent loop holds its run slot.
    pub(crate) fn view(&self, agent_streaming: bool) -> PhaseView {
        let s = lock(&self.state);
        PhaseView {
            is_streaming: agent_streaming && !s.ending,
            is_retrying: s.retrying,
            retry_attempt: s.retry_attempt,
            is_compacting: s.compacting(),
        }
    }

    /// A compaction or a branch summary is running.
    pub(crate) fn is_compacting(&self) -> bool {
        lock(&self.state).compacting()
    }

    // -- the run ---------------------------------------------------------------------------------------------

    pub(crate) fn agent_started(&self) {
        lock(&self.state).ending = false;
    }

    pub(crate) fn agent_ended(&self) {
        lock(&self.state).ending = true;
    }

    /// Between a run's `agent_end` and the next `agent_start`.
    pub(crate) fn is_ending(&self) -> bool {
        lock(&self.state).ending
    }

    // -- auto-retry ------------------------------------------------------------------------------------------

    /// Count the next attempt of the chain: scheduled while at most `max_retries` were made, else the chain ends.
    pub(crate) fn next_retry(&self, max_retries: u64) -> RetryStep {
        let mut s = lock(&self.state);
        let attempt = s.retry_attempt + 1;
        if u64::from(attempt) > max_retries {
            s.retry_attempt = 0;
            s.retrying = false;
            return RetryStep::GaveUp {
                attempts: attempt - 1,
            };
        }
        let cancel = CancellationToken::new();
        s.retry_attempt = attempt;
        s.retrying = true;
        s.retry_cancel = Some(cancel.clone());
        RetryStep::Scheduled { attempt, cancel }
    }

    /// The backoff ended (slept or cancelled): its cancel is no longer needed.
    pub(crate) fn backoff_over(&self) {
        lock(&self.state).retry_cancel.take();
    }

    /// A reply that is not an error: the chain (if any) succeeded after the returned attempts (0 = no chain). The
    /// chain stays active until [`RunPhase::retry_chain_over`] at `agent_end`.
    pub(crate) fn reply_succeeded(&self) -> u32 {
        let mut s = lock(&self.state);
        s.overflow_recovery_attempted = false;
        std::mem::take(&mut s.retry_attempt)
    }

    /// The chain is over (cancelled, failed to continue, or the run ended without a reply): the attempts it made
    /// (0 = there was none).
    pub(crate) fn end_retry_chain(&self) -> u32 {
        let mut s = lock(&self.state);
        s.retrying = false;
        std::mem::take(&mut s.retry_attempt)
    }

    /// `agent_end` of a run that is not retried: no retry is in progress any more (the attempt count was settled by
    /// the reply).
    pub(crate) fn retry_chain_over(&self) {
        lock(&self.state).retrying = false;
    }

    /// `abort_retry` / `abort`: cancel the backoff (its task then reports the end) and stop reporting a retry.
    pub(crate) fn abort_retry(&self) {
        let mut s = lock(&self.state);
        if let Some(token) = s.retry_cancel.take() {
            token.cancel();
        }
        s.retrying = false;
    }

    // -- compaction ------------------------------------------------------------------------------------------

    /// Mark a compaction as running (replacing one that runs) and return its ticket; `cancel` is its token.
    pub(crate) fn begin_compaction(
        &self,
        kind: CompactionKind,
        cancel: CancellationToken,
    ) -> CompactionTicket {
        let mut s = lock(&self.state);
        s.next_compaction_id += 1;
        let id = s.next_compaction_id;
        s.compaction = Some((id, kind, cancel.clone()));
        CompactionTicket { id, cancel }
    }

    /// The compaction of `ticket` ended (a newer one that replaced it keeps running).
    pub(crate) fn end_compaction(&self, ticket: &CompactionTicket) {
        let mut s = lock(&self.state);
        if s.compaction
            .as_ref()
            .is_some_and(|(id, ..)| *id == ticket.id)
        {
            s.compaction = None;
        }
    }

    /// The kind of the running compaction.
    pub(crate) fn compaction(&self) -> Option<CompactionKind> {
        lock(&self.state)
            .compaction
            .as_ref()
            .map(|(_, kind, _)| *kind)
    }

    /// `abort_compaction`: cancel the running compaction (not a branch summary).
    pub(crate) fn abort_compaction(&self) {
        if let Some((_, _, token)) = lock(&self.state).compaction.as_ref() {
            token.cancel();
        }
    }

    pub(crate) fn begin_summary(&self) {
        lock(&self.state).summaries += 1;
    }

    pub(crate) fn end_summary(&self) {
        let mut s = lock(&self.state);
        s.summaries = s.summaries.saturating_sub(1);
    }

    // -- overflow recovery -----------------------------------------------------------------------------------

    /// A user message reached the conversation: it gets its own overflow recovery.
    pub(crate) fn rearm_overflow_recovery(&self) {
        lock(&self.state).overflow_recovery_attempted = false;
    }

    /// Claim this user message's one overflow recovery; `false` when it was used already.
    pub(crate) fn claim_overflow_recovery(&self) -> bool {
        !std::mem::replace(&mut lock(&self.state).overflow_recovery_attempted, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_see_no_run_once_agent_end_is_out() {
        let phase = RunPhase::default();
        assert!(phase.view(true).is_streaming);
        phase.agent_ended();
        assert!(!phase.view(true).is_streaming);
        assert!(phase.is_ending());
        phase.agent_started();
        assert!(phase.view(true).is_streaming);
        assert!(!phase.view(false).is_streaming);
    }

    #[test]
    fn a_retry_chain_counts_attempts_and_gives_up_after_the_last() {
        let phase = RunPhase::default();
        let RetryStep::Scheduled { attempt, cancel } = phase.next_retry(2) else {
            panic!()
        };
        assert_eq!(attempt, 1);
        let view = phase.view(false);
        assert!(view.is_retrying);
        assert_eq!(view.retry_attempt, 1);
        phase.abort_retry();
        assert!(cancel.is_cancelled());
        assert!(!phase.view(false).is_retrying);
        assert_eq!(phase.end_retry_chain(), 1);

        assert!(matches!(
            phase.next_retry(2),
            RetryStep::Scheduled { attempt: 1, .. }
        ));
        assert!(matches!(
            phase.next_retry(2),
            RetryStep::Scheduled { attempt: 2, .. }
        ));
        assert!(matches!(
            phase.next_retry(2),
            RetryStep::GaveUp { attempts: 2 }
        ));
        let view = phase.view(false);
        assert_eq!((view.is_retrying, view.retry_attempt), (false, 0));
    }

    #[test]
    fn a_successful_reply_settles_the_attempts_and_agent_end_the_chain() {
        let phase = RunPhase::default();
        phase.next_retry(3);
        assert_eq!(phase.reply_succeeded(), 1);
        assert!(phase.view(false).is_retrying, "until agent_end");
        phase.retry_chain_over();
        assert!(!phase.view(false).is_retrying);
        assert_eq!(phase.reply_succeeded(), 0);
    }

    #[test]
    fn an_older_compaction_ending_leaves_a_newer_one_running() {
        let phase = RunPhase::default();
        let auto = phase.begin_compaction(CompactionKind::Auto, CancellationToken::new());
        let manual = phase.begin_compaction(CompactionKind::Manual, CancellationToken::new());
        phase.end_compaction(&auto);
        assert_eq!(phase.compaction(), Some(CompactionKind::Manual));
        assert!(phase.view(false).is_compacting);
        phase.abort_compaction();
        assert!(manual.cancel.is_cancelled());
        assert!(!auto.cancel.is_cancelled());
        phase.end_compaction(&manual);
        assert!(!phase.view(false).is_compacting);
    }

    #[test]
    fn a_branch_summary_counts_as_compacting_and_is_not_aborted_by_abort_compaction() {
        let phase = RunPhase::default();
        phase.begin_summary();
        phase.abort_compaction();
        assert!(phase.view(false).is_compacting);
        let ticket = phase.begin_compaction(CompactionKind::Auto, CancellationToken::new());
        phase.end_compaction(&ticket);
        assert!(phase.view(false).is_compacting, "the summary still runs");
        phase.end_summary();
        assert!(!phase.view(false).is_compacting);
    }

    #[test]
    fn one_overflow_recovery_per_user_message() {
        let phase = RunPhase::default();
        assert!(phase.claim_overflow_recovery());
        assert!(!phase.claim_overflow_recovery());
        phase.rearm_overflow_recovery();
        assert!(phase.claim_overflow_recovery());
        assert!(!phase.claim_overflow_recovery());
        phase.reply_succeeded();
        assert!(phase.claim_overflow_recovery());
    }
}
