//! How the serving layer schedules each command (see [`crate::outbox`] for the turns).
//!
//! The model is the reference's: there every handler starts in arrival order and runs until its first real wait,
//! so a command sees every state change sent before it, and a long wait (an LLM call, a process) holds nothing up.
//! Here ordered commands take turns in arrival order; a turn ends when the command answers, or where the handler
//! begins a long wait ([`crate::RequestContext::release_order`]).

use crate::generated::Command;

/// Where a command runs relative to the others on its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Ordered, and reads in-memory state without waiting: answered on the reading task itself as soon as its turn
    /// comes (at once, unless an earlier state change is still being applied).
    Immediate,
    /// Runs at once on its own task, beside everything else: aborts, reads of state no command here changes,
    /// and work with its own lifetime (background agents, buddy calls). A slow command never blocks these.
    Concurrent,
    /// Takes its turn in arrival order with the other ordered (and immediate) commands: state changes and the
    /// reads that must see them, so pipelined `set_*`, session switches and prompts apply in the order sent.
    Ordered,
}

impl Command {
    pub fn lane(&self) -> Lane {
        use Command as C;
        match self {
            C::GetState(_) => Lane::Immediate,
            // Reads nothing any command changes.
            C::GetVersion(_)
            | C::Abort(_)
            | C::AbortBash(_)
            | C::AbortCompaction(_)
            | C::AbortRetry(_)
            | C::GetDashboardSnapshot(_)
            | C::GetGitBranch(_)
            | C::GetDailyCost(_)
            | C::GetPerformanceStats(_)
            | C::BuddyHatch(_)
            | C::BuddyReroll(_)
            | C::ListSessions(_)
            | C::ListAllSessions(_)
            | C::ListBackgroundAgents(_)
            | C::SteerBackgroundAgent(_)
            | C::GetBackgroundAgentPending(_)
            | C::ListAgentTypes(_) => Lane::Concurrent,
            C::Prompt(_)
            | C::Steer(_)
            | C::FollowUp(_)
            | C::NewSession(_)
            | C::Reload(_)
            | C::GetResources(_)
            | C::GetMessages(_)
            | C::SetModel(_)
            | C::ResolveModel(_)
            | C::CycleModel(_)
            | C::GetAvailableModels(_)
            | C::SetThinkingLevel(_)
            | C::CycleThinkingLevel(_)
            | C::SetSteeringMode(_)
            | C::SetFollowUpMode(_)
            | C::GetPendingMessages(_)
            | C::ClearPendingMessages(_)
            | C::Compact(_)
            | C::SetAutoCompaction(_)
            | C::SetAutoRetry(_)
            | C::Bash(_)
            | C::GetSessionStats(_)
            | C::ExportHtml(_)
            | C::ImportJsonl(_)
            | C::SwitchSession(_)
            | C::DeleteSession(_)
            | C::Fork(_)
            | C::GetForkMessages(_)
            | C::GetLastAssistantText(_)
            | C::SetSessionName(_)
            | C::GetCommands(_)
            | C::GetTree(_)
            | C::NavigateTree(_)
            | C::GetSettings(_)
            | C::SetSettings(_)
            | C::EvaluateContextTrust(_)
            | C::TrustContextFolder(_)
            | C::UntrustContextFolder(_)
            | C::RemoveTrustedContextFolder(_)
            | C::McpServer(_) => Lane::Ordered,
        }
    }
}
