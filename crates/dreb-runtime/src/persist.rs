//! What each message becomes in the session file.

use dreb_agent::AgentMessage;
use dreb_session::SessionManager;

/// Persist a finished message: LLM roles and bash executions as `message` entries, custom messages as
/// `custom_message` entries. Summaries are written by compaction and navigation themselves.
pub(crate) fn append_agent_message(
    session: &mut SessionManager,
    message: &AgentMessage,
) -> Result<(), String> {
    match message {
        AgentMessage::User(_)
        | AgentMessage::Assistant(_)
        | AgentMessage::ToolResult(_)
        | AgentMessage::BashExecution(_) => {
            let value = serde_json::to_value(message).map_err(|e| e.to_string())?;
            session
                .append_message(value)
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        AgentMessage::Custom(c) => {
            let content = serde_json::to_value(&c.content).map_err(|e| e.to_string())?;
            session
                .append_custom_message_entry(&c.custom_type, content, c.display, c.details.clone())
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        AgentMessage::BranchSummary(_) | AgentMessage::CompactionSummary(_) => Ok(()),
    }
}
