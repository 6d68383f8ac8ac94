//! The session's MCP servers (see `dreb-mcp`): configuration read and servers started in the background at start-up
//! and on `reload` (the first response never waits), their tools beside the built-in and extension tools, their
//! prompts in `get_commands` and `prompt`, their state in `get_resources`, the `mcp_server` command, elicitations
//! as extension-UI dialogs, failures as `extension_error` events (`extensionPath: "mcp:<server>"`).

use std::sync::Arc;

use async_trait::async_trait;
use dreb_mcp::{ConfigInput, McpEnv, McpManager};

use crate::services::mcp::env_ms;
use crate::services::{Runtime, Services};

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
    services: &std::sync::Weak<Services>,
    dialog: &dreb_dialog::DialogEngine,
    outbox: &dreb_protocol::Outbox,
) -> Arc<McpManager> {
    let weak = services.clone();
    let outbox = outbox.clone();
    Arc::new(McpManager::new(McpEnv {
        dialogs: Arc::new(Dialogs(dialog.clone())),
        on_tools_changed: Arc::new(move || {
            if let Some(services) = weak.upgrade() {
                crate::extensions::apply_tools(&services);
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

/// Read the MCP configuration and start the servers, in the background.
pub(crate) fn load_mcp_servers(rt: &Runtime) {
    let rt = rt.clone();
    tokio::spawn(async move {
        // On the task itself (settings in memory, the trust policy, one `.mcp.json` read): a blocking-pool thread
        // started for it cost more than the work, at the moment the first request is being answered. A panic
        // reading the configuration still starts the manager (with no server), so nothing waits for it forever.
        let (configs, problems) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            dreb_mcp::config::load(&config_input(&rt), &|k| std::env::var(k).ok())
        }))
        .unwrap_or_default();
        rt.mcp.start(configs, problems);
    });
}

/// What the MCP configuration is read from: both settings files' `mcpServers`, the project's `.mcp.json`, and
/// whether the context-trust policy grants the cwd.
fn config_input(services: &Services) -> ConfigInput {
    let settings = &services.settings;
    let policy = settings.global_context_trust_policy();
    ConfigInput {
        user: settings.global_settings().get("mcpServers").cloned(),
        project: settings.project_settings().get("mcpServers").cloned(),
        client: services.mcp.client_servers(),
        mcp_json_path: Some(services.cwd.join(".mcp.json")),
        project_trusted: dreb_settings::context_trust::match_context_trust(&policy, &services.cwd)
            .is_some(),
        cwd: services.cwd.clone(),
    }
}
