//! What each message becomes in the session file.

use dreb_agent::AgentMessage;
use dreb_session::{SessionContext, SessionManager};

/// The current branch's context with its messages as the agent holds them. A message of a role this version does
/// not know (`AgentMessage::Unknown`, which the spec's open union keeps) is left out, as when such a line failed to
/// parse: no LLM context takes it and hosts were never shown it.
pub(crate) fn session_context(session: &SessionManager) -> SessionContext<AgentMessage> {
    let mut context = session.build_session_context_as::<AgentMessage>();
    context
        .messages
        .retain(|m| !matches!(m, AgentMessage::Unknown(_)));
    context
}

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
        // A role this version does not know is never produced here (the session load drops it).
        AgentMessage::Unknown(_) => Ok(()),
    }
}

/// Tells the host when the session file stops taking writes and when it takes them again
/// (`session_write_error` / `session_write_recovered`); the failure is logged on stderr too.
///
/// The observer runs with the session locked, and the outbox's gate comes before the session lock (the dashboard
/// snapshot reads the session while holding it), so the frames are handed to a task instead of sent in place.
/// Must be called inside a Tokio runtime.
pub(crate) fn write_health_reporter(outbox: dreb_protocol::Outbox) -> dreb_session::WriteObserver {
    use dreb_protocol::{Event, SessionWriteErrorEvent, SessionWriteRecoveredEvent};
    use dreb_session::WriteHealth;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<WriteHealth>();
    tokio::spawn(async move {
        while let Some(health) = rx.recv().await {
            let event = match health {
                WriteHealth::Failing {
                    path,
                    error,
                    unwritten,
                } => {
                    tracing::error!("could not write the session file: {error}");
                    Event::SessionWriteError(SessionWriteErrorEvent {
                        path: path.to_string_lossy().into_owned(),
                        error,
                        unwritten_entries: i64::try_from(unwritten).unwrap_or(i64::MAX),
                    })
                }
                WriteHealth::Recovered { path } => {
                    tracing::info!("the session file takes writes again");
                    Event::SessionWriteRecovered(SessionWriteRecoveredEvent {
                        path: path.to_string_lossy().into_owned(),
                    })
                }
            };
            outbox.send(&event);
        }
    });
    std::sync::Arc::new(move |health: &WriteHealth| {
        let _ = tx.send(health.clone());
    })
}
