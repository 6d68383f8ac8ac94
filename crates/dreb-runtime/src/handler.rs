//! `RpcHandler` for [`Runtime`]: each command delegates to the module of its group under `commands/`.
//!
//! Every command returns its generated `dreb_protocol::errors::<Command>Error`, which knows its exact wire text
//! (`String::from` = `wire_text()`: `Command failed: <message>` for the failures the reference throws and for
//! unexpected ones, the text as it is for those it returns); no text is matched here. The settings and
//! context-trust commands still return dreb-settings' texts, which the reference returns as they are (see
//! `docs/adr/0006-typed-command-errors.md`).

use dreb_protocol::support::RequestContext;
use dreb_protocol::*;

use crate::runtime::Runtime;

impl RpcHandler for Runtime {
    async fn prompt(&self, ctx: &RequestContext, params: PromptParams) -> Result<(), String> {
        self.cmd_prompt(ctx, params).await.map_err(String::from)
    }

    async fn steer(&self, ctx: &RequestContext, params: SteerParams) -> Result<(), String> {
        self.cmd_steer(ctx, params).await.map_err(String::from)
    }

    async fn follow_up(&self, ctx: &RequestContext, params: FollowUpParams) -> Result<(), String> {
        self.cmd_follow_up(ctx, params).await.map_err(String::from)
    }

    async fn abort(&self, ctx: &RequestContext, params: AbortParams) -> Result<(), String> {
        self.cmd_abort(ctx, params).await.map_err(String::from)
    }

    async fn new_session(
        &self,
        ctx: &RequestContext,
        params: NewSessionParams,
    ) -> Result<CancelledResult, String> {
        self.cmd_new_session(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn reload(&self, ctx: &RequestContext, params: ReloadParams) -> Result<(), String> {
        self.cmd_reload(ctx, params).await.map_err(String::from)
    }

    async fn get_state(
        &self,
        ctx: &RequestContext,
        params: GetStateParams,
    ) -> Result<RpcSessionState, String> {
        self.cmd_get_state(ctx, params).await.map_err(String::from)
    }

    async fn get_dashboard_snapshot(
        &self,
        ctx: &RequestContext,
        params: GetDashboardSnapshotParams,
    ) -> Result<RpcDashboardSnapshot, String> {
        self.cmd_get_dashboard_snapshot(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_resources(
        &self,
        ctx: &RequestContext,
        params: GetResourcesParams,
    ) -> Result<RpcResources, String> {
        self.cmd_get_resources(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_git_branch(
        &self,
        ctx: &RequestContext,
        params: GetGitBranchParams,
    ) -> Result<GitBranchResult, String> {
        self.cmd_get_git_branch(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_daily_cost(
        &self,
        ctx: &RequestContext,
        params: GetDailyCostParams,
    ) -> Result<DailyCostResult, String> {
        self.cmd_get_daily_cost(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_messages(
        &self,
        ctx: &RequestContext,
        params: GetMessagesParams,
    ) -> Result<MessagesResult, String> {
        self.cmd_get_messages(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn set_model(
        &self,
        ctx: &RequestContext,
        params: SetModelParams,
    ) -> Result<Model, String> {
        self.cmd_set_model(ctx, params).await.map_err(String::from)
    }

    async fn resolve_model(
        &self,
        ctx: &RequestContext,
        params: ResolveModelParams,
    ) -> Result<Option<ResolveModelResult>, String> {
        self.cmd_resolve_model(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn cycle_model(
        &self,
        ctx: &RequestContext,
        params: CycleModelParams,
    ) -> Result<Option<ModelCycleResult>, String> {
        self.cmd_cycle_model(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_available_models(
        &self,
        ctx: &RequestContext,
        params: GetAvailableModelsParams,
    ) -> Result<AvailableModelsResult, String> {
        self.cmd_get_available_models(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn buddy_hatch(
        &self,
        ctx: &RequestContext,
        params: BuddyHatchParams,
    ) -> Result<BuddyResult, String> {
        self.cmd_buddy_hatch(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn buddy_reroll(
        &self,
        ctx: &RequestContext,
        params: BuddyRerollParams,
    ) -> Result<BuddyResult, String> {
        self.cmd_buddy_reroll(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn set_thinking_level(
        &self,
        ctx: &RequestContext,
        params: SetThinkingLevelParams,
    ) -> Result<(), String> {
        self.cmd_set_thinking_level(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn cycle_thinking_level(
        &self,
        ctx: &RequestContext,
        params: CycleThinkingLevelParams,
    ) -> Result<Option<ThinkingLevelResult>, String> {
        self.cmd_cycle_thinking_level(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn set_steering_mode(
        &self,
        ctx: &RequestContext,
        params: SetSteeringModeParams,
    ) -> Result<(), String> {
        self.cmd_set_steering_mode(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn set_follow_up_mode(
        &self,
        ctx: &RequestContext,
        params: SetFollowUpModeParams,
    ) -> Result<(), String> {
        self.cmd_set_follow_up_mode(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_pending_messages(
        &self,
        ctx: &RequestContext,
        params: GetPendingMessagesParams,
    ) -> Result<RpcPendingMessages, String> {
        self.cmd_get_pending_messages(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn clear_pending_messages(
        &self,
        ctx: &RequestContext,
        params: ClearPendingMessagesParams,
    ) -> Result<RpcPendingMessages, String> {
        self.cmd_clear_pending_messages(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn compact(
        &self,
        ctx: &RequestContext,
        params: CompactParams,
    ) -> Result<CompactionResult, String> {
        self.cmd_compact(ctx, params).await.map_err(String::from)
    }

    async fn set_auto_compaction(
        &self,
        ctx: &RequestContext,
        params: SetAutoCompactionParams,
    ) -> Result<(), String> {
        self.cmd_set_auto_compaction(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn abort_compaction(
        &self,
        ctx: &RequestContext,
        params: AbortCompactionParams,
    ) -> Result<(), String> {
        self.cmd_abort_compaction(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn set_auto_retry(
        &self,
        ctx: &RequestContext,
        params: SetAutoRetryParams,
    ) -> Result<(), String> {
        self.cmd_set_auto_retry(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn abort_retry(
        &self,
        ctx: &RequestContext,
        params: AbortRetryParams,
    ) -> Result<(), String> {
        self.cmd_abort_retry(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn bash(&self, ctx: &RequestContext, params: BashParams) -> Result<BashResult, String> {
        self.cmd_bash(ctx, params).await.map_err(String::from)
    }

    async fn abort_bash(
        &self,
        ctx: &RequestContext,
        params: AbortBashParams,
    ) -> Result<(), String> {
        self.cmd_abort_bash(ctx, params).await.map_err(String::from)
    }

    async fn get_session_stats(
        &self,
        ctx: &RequestContext,
        params: GetSessionStatsParams,
    ) -> Result<SessionStats, String> {
        self.cmd_get_session_stats(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_performance_stats(
        &self,
        ctx: &RequestContext,
        params: GetPerformanceStatsParams,
    ) -> Result<RpcPerformanceStats, String> {
        self.cmd_get_performance_stats(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn export_html(
        &self,
        ctx: &RequestContext,
        params: ExportHtmlParams,
    ) -> Result<ExportHtmlResult, String> {
        self.cmd_export_html(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn import_jsonl(
        &self,
        ctx: &RequestContext,
        params: ImportJsonlParams,
    ) -> Result<CancelledResult, String> {
        self.cmd_import_jsonl(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn switch_session(
        &self,
        ctx: &RequestContext,
        params: SwitchSessionParams,
    ) -> Result<CancelledResult, String> {
        self.cmd_switch_session(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn delete_session(
        &self,
        ctx: &RequestContext,
        params: DeleteSessionParams,
    ) -> Result<DeleteSessionResult, String> {
        self.cmd_delete_session(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn fork(&self, ctx: &RequestContext, params: ForkParams) -> Result<ForkResult, String> {
        self.cmd_fork(ctx, params).await.map_err(String::from)
    }

    async fn get_fork_messages(
        &self,
        ctx: &RequestContext,
        params: GetForkMessagesParams,
    ) -> Result<ForkMessagesResult, String> {
        self.cmd_get_fork_messages(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_last_assistant_text(
        &self,
        ctx: &RequestContext,
        params: GetLastAssistantTextParams,
    ) -> Result<LastAssistantTextResult, String> {
        self.cmd_get_last_assistant_text(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn set_session_name(
        &self,
        ctx: &RequestContext,
        params: SetSessionNameParams,
    ) -> Result<(), String> {
        self.cmd_set_session_name(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn mcp_server(
        &self,
        ctx: &RequestContext,
        params: McpServerParams,
    ) -> Result<McpServerInfo, String> {
        self.cmd_mcp_server(ctx, params).await.map_err(String::from)
    }

    async fn get_commands(
        &self,
        ctx: &RequestContext,
        params: GetCommandsParams,
    ) -> Result<CommandsResult, String> {
        self.cmd_get_commands(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn list_sessions(
        &self,
        ctx: &RequestContext,
        params: ListSessionsParams,
    ) -> Result<SessionsResult, String> {
        self.cmd_list_sessions(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn list_all_sessions(
        &self,
        ctx: &RequestContext,
        params: ListAllSessionsParams,
    ) -> Result<SessionsResult, String> {
        self.cmd_list_all_sessions(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn list_background_agents(
        &self,
        ctx: &RequestContext,
        params: ListBackgroundAgentsParams,
    ) -> Result<BackgroundAgentsResult, String> {
        self.cmd_list_background_agents(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn steer_background_agent(
        &self,
        ctx: &RequestContext,
        params: SteerBackgroundAgentParams,
    ) -> Result<(), String> {
        self.cmd_steer_background_agent(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_background_agent_pending(
        &self,
        ctx: &RequestContext,
        params: GetBackgroundAgentPendingParams,
    ) -> Result<BackgroundAgentPendingResult, String> {
        self.cmd_get_background_agent_pending(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn list_agent_types(
        &self,
        ctx: &RequestContext,
        params: ListAgentTypesParams,
    ) -> Result<AgentTypesResult, String> {
        self.cmd_list_agent_types(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_tree(
        &self,
        ctx: &RequestContext,
        params: GetTreeParams,
    ) -> Result<TreeResult, String> {
        self.cmd_get_tree(ctx, params).await.map_err(String::from)
    }

    async fn navigate_tree(
        &self,
        ctx: &RequestContext,
        params: NavigateTreeParams,
    ) -> Result<NavigateTreeResult, String> {
        self.cmd_navigate_tree(ctx, params)
            .await
            .map_err(String::from)
    }

    async fn get_settings(
        &self,
        ctx: &RequestContext,
        params: GetSettingsParams,
    ) -> Result<RpcSettingsSnapshot, String> {
        // Settings and context-trust operations return result objects: their errors are clean.
        self.cmd_get_settings(ctx, params).await
    }

    async fn set_settings(
        &self,
        ctx: &RequestContext,
        params: SetSettingsParams,
    ) -> Result<RpcSettingsSetResult, String> {
        self.cmd_set_settings(ctx, params).await
    }

    async fn evaluate_context_trust(
        &self,
        ctx: &RequestContext,
        params: EvaluateContextTrustParams,
    ) -> Result<RpcContextTrustEvaluation, String> {
        self.cmd_evaluate_context_trust(ctx, params).await
    }

    async fn trust_context_folder(
        &self,
        ctx: &RequestContext,
        params: TrustContextFolderParams,
    ) -> Result<RpcContextTrustMutationResult, String> {
        self.cmd_trust_context_folder(ctx, params).await
    }

    async fn untrust_context_folder(
        &self,
        ctx: &RequestContext,
        params: UntrustContextFolderParams,
    ) -> Result<RpcContextTrustMutationResult, String> {
        self.cmd_untrust_context_folder(ctx, params).await
    }

    async fn remove_trusted_context_folder(
        &self,
        ctx: &RequestContext,
        params: RemoveTrustedContextFolderParams,
    ) -> Result<RpcTrustedFolderRemovalResult, String> {
        self.cmd_remove_trusted_context_folder(ctx, params).await
    }

    async fn get_version(
        &self,
        ctx: &RequestContext,
        params: GetVersionParams,
    ) -> Result<VersionResult, String> {
        self.cmd_get_version(ctx, params)
            .await
            .map_err(String::from)
    }
}
