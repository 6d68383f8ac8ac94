//! Commands not implemented yet. Each answers `success: false` with a clear text naming the command (see
//! `docs/status.md`), so a host can tell "not available in this build" from a real failure.

use dreb_protocol::support::RequestContext;
use dreb_protocol::*;

use crate::runtime::Runtime;

pub(crate) fn not_implemented(command: &str) -> String {
    format!("{command} is not implemented yet in dreb-rs")
}

impl Runtime {
    pub(crate) async fn cmd_list_background_agents(
        &self,
        _ctx: &RequestContext,
        _p: ListBackgroundAgentsParams,
    ) -> Result<BackgroundAgentsResult, String> {
        Err(not_implemented("list_background_agents"))
    }

    pub(crate) async fn cmd_steer_background_agent(
        &self,
        _ctx: &RequestContext,
        _p: SteerBackgroundAgentParams,
    ) -> Result<(), String> {
        Err(not_implemented("steer_background_agent"))
    }

    pub(crate) async fn cmd_get_background_agent_pending(
        &self,
        _ctx: &RequestContext,
        _p: GetBackgroundAgentPendingParams,
    ) -> Result<BackgroundAgentPendingResult, String> {
        Err(not_implemented("get_background_agent_pending"))
    }
}
