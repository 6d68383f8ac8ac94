//! `get_dashboard_snapshot`: the state captured, the `dashboard_snapshot_barrier` event and the response written
//! while the outbox is held, so no event can fall between the capture and the barrier, or between the barrier and
//! the response.
//!
//! Lock order: the outbox's gate comes before every runtime lock (the snapshot reads the state while holding it),
//! so never emit an event while holding a runtime lock (`session`, `tasks`, `queued`, ...).

use dreb_protocol::*;
use serde_json::Value;

use crate::convert::wire;
use crate::runtime::Runtime;
use crate::sync::lock;

pub(crate) fn snapshot_id(id: &Option<Value>) -> String {
    match id {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => uuid::Uuid::new_v4().to_string(),
        Some(other) => other.to_string(),
    }
}

impl Runtime {
    pub(crate) fn capture_snapshot(
        &self,
        snapshot_id: String,
    ) -> Result<RpcDashboardSnapshot, String> {
        let state = self.state()?;
        // Live messages while streaming; otherwise the persisted branch (it keeps attempts a retry dropped).
        let messages: Vec<Value> = if self.inner.agent.is_streaming() {
            self.message_values()
        } else {
            lock(&self.inner.session).build_session_context().messages
        };
        Ok(RpcDashboardSnapshot {
            snapshot_id,
            state,
            messages: wire(&messages)?,
            background_agents: wire(&self.inner.background.list())?,
            pending_extension_ui_requests: self.inner.dialog_tracker.pending(),
        })
    }
}
