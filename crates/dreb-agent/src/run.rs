//! One run of the loop (runtime-behaviour §1.2): turns, steering and follow-up polls, the event sequence.

use dreb_ai::{StopReason, ToolCall};

use crate::event::{AgentEvent, ModelRef};
use crate::message::AgentMessage;
use crate::run_context::{Fatal, RunCtx};
use crate::thinking::effective_thinking_level;
use crate::{llm_call, tool_exec};

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
