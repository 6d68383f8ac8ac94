//! The tool contract between the agent loop and the tools the runtime provides.

use std::sync::Arc;

use async_trait::async_trait;
use dreb_ai::{ToolDefinition, UserBlock};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What a tool returns (and what `tool_execution_end.result` / `tool_execution_update.partialResult` carry).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    pub content: Vec<UserBlock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// Stop the run after this batch of tool results (used by `suggest_next`, `wait`). The reference keeps it on
    /// `tool_execution_end.result` (`endTurn: true`), so it is written only when set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub end_turn: bool,
}

impl ToolOutput {
    /// The result the loop builds for a failed call (unknown tool, invalid arguments, blocked, thrown): the message
    /// as text and `details: {}`, like the reference.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            details: Some(Value::Object(Default::default())),
            ..ToolOutput::text(message)
        }
    }

    /// A plain text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![UserBlock::Text(dreb_ai::TextContent {
                text: text.into(),
                text_signature: None,
                ..Default::default()
            })],
            ..Default::default()
        }
    }
}

/// A failed tool call; the message becomes the text of an `isError: true` tool result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub message: String,
    /// Optional details kept on the error result.
    pub details: Option<Value>,
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            details: None,
        }
    }
}

impl<E: std::fmt::Display> From<E> for ToolError {
    fn from(e: E) -> Self {
        ToolError::new(e.to_string())
    }
}

/// Receives partial results while a tool runs (becomes `tool_execution_update` events).
pub type ToolUpdateFn = Arc<dyn Fn(ToolOutput) + Send + Sync>;

/// A tool the model can call. `params` have already been validated against `definition().parameters`.
#[async_trait]
pub trait Tool: Send + Sync {
    fn definition(&self) -> &ToolDefinition;

    /// `definition().name`; a tool that builds its definition on first use answers without building it.
    fn name(&self) -> &str {
        &self.definition().name
    }

    async fn execute(
        &self,
        tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError>;
}
