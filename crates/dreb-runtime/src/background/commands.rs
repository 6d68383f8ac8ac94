//! `list_background_agents`, `steer_background_agent` and `get_background_agent_pending`.

use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use serde_json::{Value, json};

use crate::convert::wire;
use crate::runtime::Runtime;

/// Handler failures of these commands carry the reference's generic prefix.
fn failed(e: String) -> String {
    format!("Command failed: {e}")
}

impl Runtime {
    pub(crate) async fn cmd_list_background_agents(
        &self,
        _ctx: &RequestContext,
        _p: ListBackgroundAgentsParams,
    ) -> Result<BackgroundAgentsResult, String> {
        Ok(BackgroundAgentsResult {
            agents: wire(&self.inner.background.list())?,
        })
    }

    pub(crate) async fn cmd_steer_background_agent(
        &self,
        _ctx: &RequestContext,
        p: SteerBackgroundAgentParams,
    ) -> Result<(), String> {
        crate::commands::reject_builtin(&p.message)?;
        let control = self.inner.background.control(&p.agent_id).map_err(failed)?;
        control
            .request(json!({"type": "steer", "message": p.message}))
            .await
            .map_err(failed)?;
        Ok(())
    }

    pub(crate) async fn cmd_get_background_agent_pending(
        &self,
        _ctx: &RequestContext,
        p: GetBackgroundAgentPendingParams,
    ) -> Result<BackgroundAgentPendingResult, String> {
        let control = self.inner.background.control(&p.agent_id).map_err(failed)?;
        let (state, pending) = tokio::join!(
            control.request(json!({"type": "get_state"})),
            control.request(json!({"type": "get_pending_messages"})),
        );
        let state = state.map_err(failed)?;
        let pending = pending.map_err(failed)?;
        wire(&json!({
            "steeringMode": state.get("steeringMode").cloned().unwrap_or(Value::Null),
            "pending": pending,
        }))
        .map_err(failed)
    }
}
