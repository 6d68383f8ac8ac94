//! Model Context Protocol servers as a source of tools, prompts and dialogs, on the official Rust SDK (`rmcp`).
//!
//! - [`config`]: the `mcpServers` objects of the settings and `.mcp.json` (project servers only when trusted).
//! - [`server`]: one server: its connection (stdio child or Streamable HTTP), state, tools, prompts and calls.
//! - [`manager`]: every server of a session: parallel background start, status, reconnect / disable, stop.
//! - [`tool`]: a server's tool as an agent tool (`mcp__<server>__<tool>`).
//! - [`content`]: tool results and prompts as agent content.
//! - [`elicit`]: a server's elicitation as the host's dialogs.
//! - [`env`]: what the servers share with the runtime.

pub mod config;
pub mod content;
pub mod elicit;
pub mod env;
pub mod manager;
pub mod server;
pub mod tool;

pub use config::{ConfigInput, ConfigProblem, ConfigScope, ServerConfig, Transport};
pub use elicit::DialogUi;
pub use env::{DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, McpEnv};
pub use manager::{ManageError, McpManager, PromptCommand, ServerStatus};
pub use server::{McpServer, ServerState};
pub use tool::{McpTool, tool_name};
