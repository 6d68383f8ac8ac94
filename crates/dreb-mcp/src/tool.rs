//! A server's tool as an agent tool, named `mcp__<server>__<tool>` (characters providers refuse in tool names
//! become `_`, and the name is cut to 64 characters), run with `tools/call` on that server.

use std::sync::Arc;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::server::{McpServer, ServerTool};

/// The longest tool name the providers accept.
const MAX_TOOL_NAME: usize = 64;

/// The name the model sees for `tool` of `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    let raw = format!("mcp__{server}__{tool}");
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    name.truncate(MAX_TOOL_NAME);
    name
}

pub struct McpTool {
    server: Arc<McpServer>,
    /// The server's own name for it.
    remote: String,
    definition: ToolDefinition,
}

impl McpTool {
    pub fn new(server: Arc<McpServer>, tool: &ServerTool) -> Self {
        let mut parameters = tool.input_schema.clone();
        // Providers want an object schema; a server may omit `type` or `properties`.
        if let Value::Object(map) = &mut parameters {
            map.entry("type")
                .or_insert_with(|| Value::String("object".into()));
        }
        McpTool {
            definition: ToolDefinition {
                name: tool_name(server.name(), &tool.name),
                description: tool.description.clone(),
                parameters,
            },
            remote: tool.name.clone(),
            server,
        }
    }

    pub fn server(&self) -> &Arc<McpServer> {
        &self.server
    }
}

#[async_trait]
impl Tool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        self.server
            .call_tool(&self.remote, params, cancel, on_update)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::tool_name;

    #[test]
    fn names_are_prefixed_sanitised_and_bounded() {
        assert_eq!(
            tool_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        assert_eq!(tool_name("fs", "read.file v2"), "mcp__fs__read_file_v2");
        assert_eq!(tool_name("s", &"x".repeat(100)).len(), 64);
    }
}
