//! What the MCP servers of a session share with the runtime: the dialogs elicitations use, where tool-set changes
//! and failures are reported, and the time bounds.

use std::sync::Arc;
use std::time::Duration;

use crate::elicit::DialogUi;

/// Called with (server, what failed, error text).
pub type FailureFn = Arc<dyn Fn(&str, &str, &str) + Send + Sync>;

pub struct McpEnv {
    pub dialogs: Arc<dyn DialogUi>,
    /// A server's tools or prompts changed (connected, exited, `list_changed`, disabled): re-apply the tool set.
    pub on_tools_changed: Arc<dyn Fn() + Send + Sync>,
    pub on_failure: FailureFn,
    /// Longest wait for a server to start (connect, initialize, list tools and prompts).
    pub startup_timeout: Duration,
    /// Longest wait for one tool call, unless the server's entry sets `timeout`.
    pub tool_timeout: Duration,
    pub client_name: String,
    pub client_version: String,
}

/// Default of [`McpEnv::startup_timeout`] (`DREB_MCP_STARTUP_TIMEOUT_MS`).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of [`McpEnv::tool_timeout`] (`DREB_MCP_TOOL_TIMEOUT_MS`).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(600);
