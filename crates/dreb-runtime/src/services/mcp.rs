//! The session's MCP servers as a service: their manager (`dreb-mcp`: the servers, their tools, prompts and
//! states), the servers the front end's client gave, and what `prompt`, `get_commands`, `get_resources` and
//! `mcp_server` read of them. Reading the configuration and starting them is `crate::mcp`'s.

use std::sync::Arc;
use std::time::Duration;

use dreb_mcp::{McpManager, ServerState};
use dreb_protocol::{McpServerInfo, McpServerState, McpSlashCommand, RpcSlashCommand};
use serde_json::Value;

use super::tool_set::ToolSet;

/// The session's MCP servers: their manager (see `dreb-mcp`) and the servers the front end's client gave
/// (`RuntimeOptions::mcp_servers`).
pub(crate) struct Mcp {
    manager: Arc<McpManager>,
    client_servers: Option<Value>,
}

/// How long a host's prompt waits for servers still starting (`DREB_MCP_PROMPT_WAIT_MS`); after it, the prompt
/// runs without their tools, which join from the next run once ready.
const DEFAULT_PROMPT_WAIT: Duration = Duration::from_secs(10);

pub(crate) fn env_ms(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()?
        .parse()
        .ok()
        .map(Duration::from_millis)
}

fn server_state(state: &ServerState) -> (McpServerState, Option<String>) {
    match state {
        ServerState::Starting => (McpServerState::Starting, None),
        ServerState::Ready => (McpServerState::Ready, None),
        ServerState::Failed(e) => (McpServerState::Failed, Some(e.clone())),
        ServerState::Disabled => (McpServerState::Disabled, None),
    }
}

pub(crate) fn info(status: dreb_mcp::ServerStatus) -> McpServerInfo {
    let (state, error) = server_state(&status.state);
    McpServerInfo {
        name: status.name,
        state,
        transport: Some(status.transport.to_string()),
        scope: status.scope.to_string(),
        tool_count: status.tool_count as i64,
        prompt_count: status.prompt_count as i64,
        error,
    }
}

impl Mcp {
    /// The MCP servers of a new session (`manager`: nothing started yet); `client_servers`: the front end's.
    pub(crate) fn new(manager: Arc<McpManager>, client_servers: Option<Value>) -> Mcp {
        Mcp {
            manager,
            client_servers,
        }
    }

    /// The servers the front end's client gave (read with the configuration).
    pub(crate) fn client_servers(&self) -> Option<Value> {
        self.client_servers.clone()
    }

    /// Wait (bounded) for MCP servers still starting: a host's prompt needs their tools.
    pub(crate) async fn wait_ready(&self) {
        let bound = env_ms("DREB_MCP_PROMPT_WAIT_MS").unwrap_or(DEFAULT_PROMPT_WAIT);
        if !self.manager.ready(bound).await {
            tracing::warn!(
                "MCP servers still starting after {} ms; the prompt runs without their tools",
                bound.as_millis()
            );
        }
    }

    /// The MCP tools the session offers: those `tools` lets through (`--tools`' MCP entries, or all).
    pub(crate) fn tools_offered(&self, tools: &ToolSet) -> Vec<Arc<dyn dreb_agent::Tool>> {
        self.manager
            .tools()
            .into_iter()
            .filter(|t| tools.offers_mcp_tool(&dreb_agent::Tool::definition(t.as_ref()).name))
            .map(|t| t as Arc<dyn dreb_agent::Tool>)
            .collect()
    }

    /// `/mcp__<server>__<prompt> args` → the prompt's text; `None` when the message names no MCP prompt.
    pub(crate) async fn expand(&self, message: &str) -> Option<Result<String, String>> {
        let (name, args) = super::extensions::slash_command(message)?;
        self.manager.expand_prompt(name, args).await
    }

    /// `get_commands` entries of the servers' prompts.
    pub(crate) fn commands(&self) -> Vec<RpcSlashCommand> {
        self.manager
            .prompt_commands()
            .into_iter()
            .map(|p| {
                RpcSlashCommand::Mcp(McpSlashCommand {
                    name: p.command,
                    description: p.prompt.description.clone(),
                    source: Default::default(),
                    server: p.server,
                    arguments: p.prompt.arguments.iter().map(|(n, _)| n.clone()).collect(),
                })
            })
            .collect()
    }

    /// `get_resources.mcpServers`: `None` when nothing is configured (the reference's shape).
    pub(crate) fn resource_infos(&self) -> Option<Vec<McpServerInfo>> {
        let mcp = &self.manager;
        let mut out: Vec<McpServerInfo> = mcp.statuses().into_iter().map(info).collect();
        out.extend(
            mcp.problems()
                .into_iter()
                .filter(|p| !p.name.is_empty())
                .map(|p| McpServerInfo {
                    name: p.name,
                    state: McpServerState::Skipped,
                    transport: None,
                    scope: p.scope.as_str().to_string(),
                    tool_count: 0,
                    prompt_count: 0,
                    error: Some(p.error),
                }),
        );
        (!out.is_empty()).then_some(out)
    }
}

/// Managing the servers is the manager's.
impl std::ops::Deref for Mcp {
    type Target = McpManager;

    fn deref(&self) -> &McpManager {
        &self.manager
    }
}
