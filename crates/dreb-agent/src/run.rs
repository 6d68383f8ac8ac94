//! One run of the loop (runtime-behaviour §1.2): turns, steering and follow-up polls, the event sequence.

use std::sync::Arc;

use dreb_ai::{
    AssistantMessage, LlmClient, Model, StopReason, ThinkingLevel, ToolCall, ToolDefinition,
};
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentConfig, Shared};
use crate::event::{AgentEvent, ModelRef};
use crate::hooks::AgentHooks;
use crate::message::AgentMessage;
use crate::thinking::effective_thinking_level;
use crate::tool::Tool;
use crate::{llm_call, tool_exec};

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
    async fn emit_whole(&self, message: AgentMessage) -> AgentMessage {
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

/// Runs the loop. `prompts` is None for `continue`. Returns Err only for fatal errors (no `agent_end` emitted yet).
pub(crate) async fn run(
    ctx: &RunCtx,
    prompts: Option<Vec<AgentMessage>>,
    skip_initial_steering: bool,
    mut messages: Vec<AgentMessage>,
) -> Result<(), Fatal> {
    let mut new_messages: Vec<AgentMessage> = Vec::new();
    ctx.emit(&AgentEvent::AgentStart {
        model: ModelRef {
            provider: ctx.model.provider.clone(),
            id: ctx.model.id.clone(),
        },
        thinking_level: effective_thinking_level(&ctx.model, ctx.thinking_level),
    })
    .await;
    ctx.emit(&AgentEvent::TurnStart).await;
    for prompt in prompts.into_iter().flatten() {
        let prompt = ctx.emit_whole(prompt).await;
        messages.push(prompt.clone());
        new_messages.push(prompt);
    }

    let mut first_turn = true;
    let mut llm_calls = 0u32;
    // Steering typed while the agent was idle goes right after the prompt.
    let mut pending = if skip_initial_steering {
        Vec::new()
    } else {
        ctx.shared.dequeue_steering()
    };

    loop {
        let mut has_more_tool_calls = true;
        while has_more_tool_calls || !pending.is_empty() {
            // Queued messages are injected before the shouldContinue check so they are never lost.
            for message in std::mem::take(&mut pending) {
                let message = ctx.emit_whole(message).await;
                messages.push(message.clone());
                new_messages.push(message);
            }
            if llm_calls > 0 && !ctx.hooks.should_continue() {
                break;
            }
            if first_turn {
                first_turn = false;
            } else {
                ctx.emit(&AgentEvent::TurnStart).await;
            }

            let message = llm_call::stream_assistant_response(ctx, &mut messages).await?;
            new_messages.push(AgentMessage::Assistant(message.clone()));
            llm_calls += 1;

            if matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
                ctx.emit(&AgentEvent::TurnEnd {
                    message,
                    tool_results: Vec::new(),
                })
                .await;
                ctx.emit(&AgentEvent::AgentEnd {
                    messages: new_messages,
                })
                .await;
                return Ok(());
            }

            let tool_calls: Vec<ToolCall> = message.tool_calls().cloned().collect();
            has_more_tool_calls = !tool_calls.is_empty();
            let mut tool_results = Vec::new();
            let mut end_turn = false;
            if has_more_tool_calls {
                let batch =
                    tool_exec::execute_tool_calls(ctx, &message, tool_calls, &messages).await?;
                for result in &batch.results {
                    messages.push(AgentMessage::ToolResult(result.clone()));
                    new_messages.push(AgentMessage::ToolResult(result.clone()));
                }
                tool_results = batch.results;
                end_turn = batch.end_turn;
            }

            ctx.emit(&AgentEvent::TurnEnd {
                message,
                tool_results,
            })
            .await;

            if end_turn {
                // A tool asked to yield: no further LLM call in this inner loop.
                pending.clear();
                break;
            }
            pending = ctx.shared.dequeue_steering();
        }

        // Wind-down: steering that arrived late, and follow-ups, start another turn.
        let mut late = ctx.shared.dequeue_steering();
        late.extend(ctx.shared.dequeue_follow_up());
        if late.is_empty() {
            break;
        }
        pending = late;
    }

    ctx.emit(&AgentEvent::AgentEnd {
        messages: new_messages,
    })
    .await;
    Ok(())
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
        content: partial.map(|p| p.content.clone()).unwrap_or_else(|| {
            vec![dreb_ai::AssistantBlock::Text(dreb_ai::TextContent {
                text: String::new(),
                text_signature: None,
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
        timestamp: partial
            .map(|p| p.timestamp)
            .unwrap_or_else(crate::agent::now_ms),
        response_id: None,
        error_message: Some(error),
        duration_ms: None,
    }
}
