//! The session's MCP servers (see `dreb-mcp`): configuration read and servers started in the background at start-up
//! and on `reload` (the first response never waits), their tools beside the built-in and extension tools, their
//! prompts in `get_commands` and `prompt`, their state in `get_resources`, the `mcp_server` command, elicitations
//! as extension-UI dialogs, failures as `extension_error` events (`extensionPath: "mcp:<server>"`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use dreb_mcp::{ConfigInput, McpEnv, McpManager, ServerState};
use dreb_protocol::{McpServerInfo, McpServerState};
use serde_json::{Value, json};

use crate::runtime::{Inner, Runtime};

/// How long a host's prompt waits for servers still starting (`DREB_MCP_PROMPT_WAIT_MS`); after it, the prompt
/// runs without their tools, which join from the next run once ready.
const DEFAULT_PROMPT_WAIT: Duration = Duration::from_secs(10);

fn env_ms(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()?
        .parse()
        .ok()
        .map(Duration::from_millis)
}

/// The extension-UI dialogs an elicitation opens (no timeout: a person answers; shutdown settles them).
struct Dialogs(dreb_dialog::DialogEngine);

#[async_trait]
impl dreb_mcp::DialogUi for Dialogs {
    async fn confirm(&self, title: &str, message: &str) -> bool {
        self.0
            .confirm(title, message, dreb_dialog::DialogOptions::default())
            .await
    }
    async fn select(&self, title: &str, options: &[String]) -> Option<String> {
        self.0
            .select(title, options, dreb_dialog::DialogOptions::default())
            .await
    }
    async fn input(&self, title: &str, placeholder: Option<&str>) -> Option<String> {
        self.0
            .input(title, placeholder, dreb_dialog::DialogOptions::default())
            .await
    }
}

/// The MCP servers of a new session (nothing is started yet).
pub(crate) fn new_manager(
    inner: &std::sync::Weak<Inner>,
    dialog: &dreb_dialog::DialogEngine,
    outbox: &dreb_protocol::Outbox,
) -> Arc<McpManager> {
    let weak = inner.clone();
    let outbox = outbox.clone();
    Arc::new(McpManager::new(McpEnv {
        dialogs: Arc::new(Dialogs(dialog.clone())),
        on_tools_changed: Arc::new(move || {
            if let Some(inner) = weak.upgrade() {
                Runtime { inner }.apply_tools();
            }
        }),
        on_failure: Arc::new(move |server, what, error| {
            outbox.send(&dreb_protocol::Event::ExtensionError(
                dreb_protocol::ExtensionErrorEvent {
                    extension_path: format!("mcp:{server}"),
                    event: what.to_string(),
                    error: error.to_string(),
                },
            ))
        }),
        startup_timeout: env_ms("DREB_MCP_STARTUP_TIMEOUT_MS")
            .unwrap_or(dreb_mcp::DEFAULT_STARTUP_TIMEOUT),
        tool_timeout: env_ms("DREB_MCP_TOOL_TIMEOUT_MS").unwrap_or(dreb_mcp::DEFAULT_TOOL_TIMEOUT),
        client_name: "dreb".into(),
        client_version: env!("CARGO_PKG_VERSION").into(),
    }))
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

impl Runtime {
    /// Read the MCP configuration and start the servers, in the background.
    pub(crate) fn load_mcp_servers(&self) {
        let rt = self.clone();
        tokio::spawn(async move {
            let inner = rt.inner.clone();
            let read = tokio::task::spawn_blocking(move || config_input(&inner)).await;
            let (configs, problems) = match read {
                Ok(input) => dreb_mcp::config::load(&input, &|k| std::env::var(k).ok()),
                Err(_) => (Vec::new(), Vec::new()),
            };
            rt.inner.mcp.start(configs, problems);
        });
    }

    /// Stop every MCP server (their processes included).
    pub async fn stop_mcp_servers(&self) {
        self.inner.mcp.shutdown().await;
    }

    /// Wait (bounded) for MCP servers still starting: a host's prompt needs their tools.
    pub(crate) async fn mcp_ready(&self) {
        let bound = env_ms("DREB_MCP_PROMPT_WAIT_MS").unwrap_or(DEFAULT_PROMPT_WAIT);
        if !self.inner.mcp.ready(bound).await {
            tracing::warn!(
                "MCP servers still starting after {} ms; the prompt runs without their tools",
                bound.as_millis()
            );
        }
    }

    /// The MCP tools the session offers: all of them, or with `--tools` those it names (`mcp__<server>__<tool>`,
    /// or `mcp__<server>__*` for all of a server's).
    pub(crate) fn mcp_tools(&self) -> Vec<Arc<dyn dreb_agent::Tool>> {
        let filter = self.inner.mcp_tool_filter.as_deref();
        self.inner
            .mcp
            .tools()
            .into_iter()
            .filter(|t| {
                let name = &dreb_agent::Tool::definition(t.as_ref()).name;
                filter.is_none_or(|list| {
                    list.iter().any(|f| match f.strip_suffix('*') {
                        Some(prefix) => name.starts_with(prefix),
                        None => f == name,
                    })
                })
            })
            .map(|t| t as Arc<dyn dreb_agent::Tool>)
            .collect()
    }

    /// `/mcp__<server>__<prompt> args` → the prompt's text; `None` when the message names no MCP prompt.
    pub(crate) async fn expand_mcp_prompt(&self, message: &str) -> Option<Result<String, String>> {
        let (name, args) = crate::extensions::slash_command(message)?;
        self.inner.mcp.expand_prompt(name, args).await
    }

    /// `get_commands` entries of the servers' prompts.
    pub(crate) fn mcp_command_values(&self) -> Vec<Value> {
        self.inner
            .mcp
            .prompt_commands()
            .into_iter()
            .map(|p| {
                let mut v = json!({"name": p.command});
                if let Some(d) = &p.prompt.description {
                    v["description"] = json!(d);
                }
                v["source"] = json!("mcp");
                v["server"] = json!(p.server);
                v["arguments"] = json!(
                    p.prompt
                        .arguments
                        .iter()
                        .map(|(n, _)| n)
                        .collect::<Vec<_>>()
                );
                v
            })
            .collect()
    }

    /// `get_resources.mcpServers`: `None` when nothing is configured (the reference's shape).
    pub(crate) fn mcp_resource_infos(&self) -> Option<Vec<McpServerInfo>> {
        let mcp = &self.inner.mcp;
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

/// What the MCP configuration is read from: both settings files' `mcpServers`, the project's `.mcp.json`, and
/// whether the context-trust policy grants the cwd.
fn config_input(inner: &Inner) -> ConfigInput {
    let settings = &inner.settings;
    let policy = settings.global_context_trust_policy();
    ConfigInput {
        user: settings.global_settings().get("mcpServers").cloned(),
        project: settings.project_settings().get("mcpServers").cloned(),
        client: inner.mcp_client_servers.clone(),
        mcp_json_path: Some(inner.cwd.join(".mcp.json")),
        project_trusted: dreb_settings::context_trust::match_context_trust(&policy, &inner.cwd)
            .is_some(),
        cwd: inner.cwd.clone(),
    }
}
