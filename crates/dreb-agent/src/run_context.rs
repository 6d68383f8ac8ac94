//! What one run of the loop works with, snapshotted when it starts ([`RunCtx`]), and the loop's fatal error. Used
//! by the loop modules (`run`, `llm_call`, `tool_exec`) and by the [`Agent`](crate::Agent) that starts runs.

use std::sync::Arc;

use dreb_ai::{AssistantMessage, LlmClient, Model, StopReason, ThinkingLevel, ToolDefinition};
use tokio_util::sync::CancellationToken;

use crate::clock::now_ms;
use crate::event::AgentEvent;
use crate::hooks::AgentHooks;
use crate::message::AgentMessage;
use crate::state::{AgentConfig, Shared};
use crate::tool::Tool;

/// An error that escapes the loop (a failing hook): the run ends with a synthetic error message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fatal(pub String);

/// What a run sees, snapshotted when it starts.
pub(crate) struct RunCtx {
    pub shared: Arc<Shared>,
    pub model: Model,
    pub thinking_level: ThinkingLevel,
    pub system_prompt: String,
    pub tools: Vec<Arc<dyn Tool>>,
    pub tool_defs: Vec<ToolDefinition>,
    pub hooks: Arc<dyn AgentHooks>,
    pub llm: Arc<dyn LlmClient>,
    pub config: AgentConfig,
    pub cancel: CancellationToken,
}

impl RunCtx {
    pub async fn emit(&self, event: &AgentEvent) {
        self.shared.emit(event).await
    }

    /// Emits `message_start` + `message_end` for a message that arrives whole (prompts, queued messages).
    pub async fn emit_whole(&self, message: AgentMessage) -> AgentMessage {
        let start = AgentEvent::MessageStart { message };
        self.emit(&start).await;
        let AgentEvent::MessageStart { message } = start else {
            unreachable!()
        };
        let end = AgentEvent::MessageEnd { message };
        self.emit(&end).await;
        let AgentEvent::MessageEnd { message } = end else {
            unreachable!()
        };
        message
    }
}

/// The error message used for synthetic assistant messages: the partial's content/usage/timestamp if streaming
/// had started, otherwise an empty text block and zero usage.
pub(crate) fn error_assistant_message(
    model: &Model,
    partial: Option<&AssistantMessage>,
    error: String,
    aborted: bool,
) -> AssistantMessage {
    AssistantMessage {
        role: Default::default(),
        content: partial.map(|p| p.content.clone()).unwrap_or_else(|| {
            vec![dreb_ai::AssistantBlock::Text(dreb_ai::TextContent {
                text: String::new(),
                text_signature: None,
                ..Default::default()
            })]
        }),
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        usage: partial.map(|p| p.usage).unwrap_or_default(),
        stop_reason: if aborted {
            StopReason::Aborted
        } else {
            StopReason::Error
        },
        timestamp: partial.map(|p| p.timestamp).unwrap_or_else(now_ms),
        response_id: None,
        error_message: Some(error),
        duration_ms: None,
    }
}
