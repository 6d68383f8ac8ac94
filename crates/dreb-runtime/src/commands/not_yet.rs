//! Commands not implemented yet. Each answers `success: false` with a clear text naming the command (see
//! `docs/status.md`), so a host can tell "not available in this build" from a real failure.

use dreb_protocol::support::RequestContext;
use dreb_protocol::*;

use crate::runtime::Runtime;

pub(crate) fn not_implemented(command: &str) -> String {
    format!("{command} is not implemented yet in dreb-rs")
}

impl Runtime {
    pub(crate) async fn cmd_reload(&self, _ctx: &RequestContext, _p: ReloadParams) -> Result<(), String> {
        Err(not_implemented("reload"))
    }

    pub(crate) async fn cmd_get_resources(&self, _ctx: &RequestContext, _p: GetResourcesParams) -> Result<RpcResources, String> {
        Err(not_implemented("get_resources"))
    }

    pub(crate) async fn cmd_get_daily_cost(&self, _ctx: &RequestContext, _p: GetDailyCostParams) -> Result<DailyCostResult, String> {
        Err(not_implemented("get_daily_cost"))
    }

    pub(crate) async fn cmd_resolve_model(&self, _ctx: &RequestContext, _p: ResolveModelParams) -> Result<Option<ResolveModelResult>, String> {
        Err(not_implemented("resolve_model"))
    }

    pub(crate) async fn cmd_cycle_model(&self, _ctx: &RequestContext, _p: CycleModelParams) -> Result<Option<ModelCycleResult>, String> {
        Err(not_implemented("cycle_model"))
    }

    pub(crate) async fn cmd_buddy_hatch(&self, _ctx: &RequestContext, _p: BuddyHatchParams) -> Result<BuddyResult, String> {
        Err(not_implemented("buddy_hatch"))
    }

    pub(crate) async fn cmd_buddy_reroll(&self, _ctx: &RequestContext, _p: BuddyRerollParams) -> Result<BuddyResult, String> {
        Err(not_implemented("buddy_reroll"))
    }

    pub(crate) async fn cmd_get_performance_stats(&self, _ctx: &RequestContext, _p: GetPerformanceStatsParams) -> Result<RpcPerformanceStats, String> {
        Err(not_implemented("get_performance_stats"))
    }

    pub(crate) async fn cmd_get_commands(&self, _ctx: &RequestContext, _p: GetCommandsParams) -> Result<CommandsResult, String> {
        Err(not_implemented("get_commands"))
    }

    pub(crate) async fn cmd_list_background_agents(&self, _ctx: &RequestContext, _p: ListBackgroundAgentsParams) -> Result<BackgroundAgentsResult, String> {
        Err(not_implemented("list_background_agents"))
    }

    pub(crate) async fn cmd_steer_background_agent(&self, _ctx: &RequestContext, _p: SteerBackgroundAgentParams) -> Result<(), String> {
        Err(not_implemented("steer_background_agent"))
    }

    pub(crate) async fn cmd_get_background_agent_pending(&self, _ctx: &RequestContext, _p: GetBackgroundAgentPendingParams) -> Result<BackgroundAgentPendingResult, String> {
        Err(not_implemented("get_background_agent_pending"))
    }

    pub(crate) async fn cmd_list_agent_types(&self, _ctx: &RequestContext, _p: ListAgentTypesParams) -> Result<AgentTypesResult, String> {
        Err(not_implemented("list_agent_types"))
    }
}
