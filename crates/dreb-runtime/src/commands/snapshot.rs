//! `get_dashboard_snapshot`: the state captured, the `dashboard_snapshot_barrier` event and the response written
//! while the outbox is held, so no event can fall between the capture and the barrier, or between the barrier and
//! the response.
//!
//! Lock order: the outbox's gate comes before every runtime lock (the snapshot reads the state while holding it),
//! so never emit an event while holding a runtime lock (`session`, `tasks`, `queued`, ...).

use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use serde_json::Value;

use crate::convert::wire;
use crate::runtime::Runtime;
use crate::sync::lock;

fn snapshot_id(id: &Option<Value>) -> String {
    match id {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => uuid::Uuid::new_v4().to_string(),
        Some(other) => other.to_string(),
    }
}

impl Runtime {
    fn capture_snapshot(&self, snapshot_id: String) -> Result<RpcDashboardSnapshot, String> {
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

    pub(crate) async fn cmd_get_dashboard_snapshot(
        &self,
        ctx: &RequestContext,
        _p: GetDashboardSnapshotParams,
    ) -> Result<RpcDashboardSnapshot, errors::GetDashboardSnapshotError> {
        use errors::GetDashboardSnapshotError as E;
        let id = snapshot_id(&ctx.id);
        let held = self.inner.outbox.hold();
        let snapshot = self.capture_snapshot(id.clone()).map_err(E::unexpected)?;
        held.send(&Event::DashboardSnapshotBarrier(
            DashboardSnapshotBarrierEvent { snapshot_id: id },
        ));
        ctx.reply
            .send_ok_in(&held, ResponseData::GetDashboardSnapshot(snapshot.clone()));
        Ok(snapshot)
    }
}
