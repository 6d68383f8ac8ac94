//! A tool an extension registered, offered to the model like a built-in one and run with `execute_tool`.

use std::sync::Arc;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::{ToolDefinition, UserBlock};
use dreb_extension_protocol as ext;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::extension::Extension;

pub struct ExtensionTool {
    ext: Arc<Extension>,
    definition: ToolDefinition,
}

impl ExtensionTool {
    pub fn new(ext: Arc<Extension>, registration: &ext::ToolRegistration) -> Self {
        ExtensionTool {
            ext,
            definition: ToolDefinition {
                name: registration.name.clone(),
                description: registration.description.clone(),
                parameters: Value::Object(registration.parameters.clone()),
            },
        }
    }

    /// The extension that registered it.
    pub fn extension(&self) -> &Arc<Extension> {
        &self.ext
    }
}

fn text_of(content: &[UserBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            UserBlock::Text(t) => Some(t.text.as_str()),
            UserBlock::Image(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[async_trait]
impl Tool for ExtensionTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn execute(
        &self,
        tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let result = self
            .ext
            .execute_tool(
                &self.definition.name,
                tool_call_id,
                params,
                cancel,
                on_update,
            )
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        let content: Vec<UserBlock> = serde_json::to_value(&result.content)
            .and_then(serde_json::from_value)
            .map_err(|e| ToolError::new(format!("Extension protocol error: {e}")))?;
        if result.is_error == Some(true) {
            return Err(ToolError {
                message: text_of(&content),
                details: result.details,
            });
        }
        Ok(ToolOutput {
            content,
            details: result.details,
            end_turn: false,
        })
    }
}
