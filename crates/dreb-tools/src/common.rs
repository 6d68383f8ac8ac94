//! Small helpers shared by the tool implementations.

use dreb_agent::{ToolError, ToolOutput};
use dreb_ai::{ImageContent, TextContent, UserBlock};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Error text every file tool returns when its call is aborted.
pub const ABORTED: &str = "Operation aborted";

pub fn text_block(text: impl Into<String>) -> UserBlock {
    UserBlock::Text(TextContent {
        text: text.into(),
        text_signature: None,
        ..Default::default()
    })
}

pub fn image_block(data: String, mime_type: impl Into<String>) -> UserBlock {
    UserBlock::Image(ImageContent {
        data,
        mime_type: mime_type.into(),
        ..Default::default()
    })
}

/// A text result with optional details.
pub fn text_output(text: impl Into<String>, details: Option<Value>) -> ToolOutput {
    ToolOutput {
        content: vec![text_block(text)],
        details,
        end_turn: false,
    }
}

/// Decode validated params into the tool's own struct; a shape mismatch is a clean tool error.
pub fn parse_params<T: DeserializeOwned>(tool: &str, params: Value) -> Result<T, ToolError> {
    serde_json::from_value(params)
        .map_err(|e| ToolError::new(format!("Invalid arguments for tool {tool}: {e}")))
}

/// Fail fast when the call was already aborted.
pub fn check_cancel(cancel: &CancellationToken) -> Result<(), ToolError> {
    if cancel.is_cancelled() {
        Err(ToolError::new(ABORTED))
    } else {
        Ok(())
    }
}

/// Run a future, answering `Operation aborted` as soon as `cancel` fires.
pub async fn abortable<T>(
    cancel: &CancellationToken,
    fut: impl std::future::Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    check_cancel(cancel)?;
    tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ToolError::new(ABORTED)),
        r = fut => r,
    }
}

/// Run blocking filesystem work off the async threads, abortable.
pub async fn blocking<T: Send + 'static>(
    cancel: &CancellationToken,
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    abortable(cancel, async move {
        tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| ToolError::new(format!("tool task failed: {e}")))?
    })
    .await
}

/// JS `Number` params arrive as floats; truncate toward zero like the reference's array indexing would.
pub fn as_count(v: Option<f64>) -> Option<i64> {
    v.filter(|x| x.is_finite()).map(|x| x.trunc() as i64)
}

/// A ToolDefinition from name, description and a JSON Schema literal.
pub fn definition(
    name: &str,
    description: impl Into<String>,
    parameters: Value,
) -> dreb_ai::ToolDefinition {
    dreb_ai::ToolDefinition {
        name: name.to_string(),
        description: description.into(),
        parameters,
    }
}

/// Run blocking work to completion (mutations must not be abandoned half-way while the per-file queue moves on).
pub async fn run_blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ToolError::new(format!("tool task failed: {e}")))?
}
