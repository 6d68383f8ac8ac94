//! `get_dashboard_snapshot`: the state captured, the `dashboard_snapshot_barrier` event and the response written
//! while the outbox is held, so no event can fall between the capture and the barrier, or between the barrier and
//! the response.
//!
//! Lock order: the outbox's gate comes before every runtime lock (the snapshot reads the state while holding it),
//! so never emit an event while holding a runtime lock (`session`, `tasks`, `queued`, ...).

use dreb_protocol::*;
use serde_json::Value;

use crate::services::Runtime;

pub(crate) fn snapshot_id(id: &Option<Value>) -> String {
    match id {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => uuid::Uuid::new_v4().to_string(),
        Some(other) => other.to_string(),
    }
}

/// The snapshot of `state` (read by the caller, under the same hold of the outbox) and the rest of the session.
pub(crate) fn capture_snapshot(
    rt: &Runtime,
    snapshot_id: String,
    state: RpcSessionState,
) -> Result<RpcDashboardSnapshot, String> {
    // Live messages while streaming; otherwise the persisted branch (it keeps attempts a retry dropped), each
    // message read from its line straight into the wire type.
    let messages = if rt.agent.is_streaming() {
        rt.agent.messages()
    } else {
        rt.sessions
            .lock()
            .build_session_context_as::<AgentMessage>()
            .messages
    };
    Ok(RpcDashboardSnapshot {
        snapshot_id,
        state,
        messages,
        background_agents: rt.background.list(),
        pending_extension_ui_requests: rt.dialogs.pending(),
    })
}
