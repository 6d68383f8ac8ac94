//! `get_dashboard_snapshot`: the state captured, the `dashboard_snapshot_barrier` event and the response written as
//! one unit, so no event can fall between the capture and the barrier, or between the barrier and the response.
//!
//! The runtime writes both frames itself (through the gated sink, in one `send_frame`); the serving layer therefore
//! does not write a successful `get_dashboard_snapshot` response again (see `dreb_cli::serve`).

use std::sync::{Arc, Mutex};

use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use serde_json::{Value, json};

use crate::convert::wire;
use crate::runtime::{Runtime, lock};
use crate::sink::FrameSink;

/// Forwards frames to the host's sink under a gate; the snapshot holds the gate from capture to write.
///
/// Lock order: the gate comes before every runtime lock (the snapshot reads the state while holding it), so never
/// emit an event while holding a runtime lock (`session`, `tasks`, `queued`, ...).
pub(crate) struct GatedSink {
    pub(crate) inner: Arc<dyn FrameSink>,
    pub(crate) gate: Mutex<()>,
}

impl GatedSink {
    pub(crate) fn new(inner: Arc<dyn FrameSink>) -> Self {
        GatedSink {
            inner,
            gate: Mutex::new(()),
        }
    }
}

impl FrameSink for GatedSink {
    fn send_frame(&self, frame: Vec<u8>) {
        let _gate = lock(&self.gate);
        self.inner.send_frame(frame);
    }
}

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
    ) -> Result<RpcDashboardSnapshot, String> {
        let id = snapshot_id(&ctx.id);
        let gated = &self.inner.gated_sink;
        let _gate = lock(&gated.gate);
        let snapshot = self.capture_snapshot(id.clone())?;
        let barrier = json!({"type": "dashboard_snapshot_barrier", "snapshotId": id});
        let response = Response::ok(
            ctx.id.clone(),
            "get_dashboard_snapshot",
            ResponseData::GetDashboardSnapshot(snapshot.clone()),
        );
        let mut bytes =
            dreb_protocol::framing::encode_frame(&barrier).map_err(|e| e.to_string())?;
        bytes.extend(dreb_protocol::framing::encode_frame(&response).map_err(|e| e.to_string())?);
        gated.inner.send_frame(bytes);
        Ok(snapshot)
    }
}
