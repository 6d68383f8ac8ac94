//! Parallel tool execution (runtime-behaviour §1.4): sequential preparation in source order (lookup, validation,
//! `before_tool_call`), immediate failures emitted right away, concurrent execution, results finalised in source
//! order among the executed calls.

use std::sync::Arc;

use dreb_ai::{AssistantMessage, ToolCall, ToolResultMessage, UserBlock};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::now_ms;
use crate::event::AgentEvent;
use crate::hooks::{AfterToolCallContext, BeforeToolCallContext};
use crate::message::AgentMessage;
use crate::run_context::{Fatal, RunCtx};
use crate::tool::{Tool, ToolOutput, ToolUpdateFn};
use crate::validate::validate_tool_arguments;

pub(crate) struct ToolBatch {
    pub results: Vec<ToolResultMessage>,
    pub end_turn: bool,
}

struct Prepared {
    call: ToolCall,
    tool: Arc<dyn Tool>,
    args: Value,
}

/// One per tool call, moved once: its size costs nothing worth another box.
#[allow(clippy::large_enum_variant)]
enum Preparation {
    Ready(Box<Prepared>),
    /// Not found / invalid arguments / blocked: an error result without running the tool.
    Immediate(ToolCall, String),
}

/// Stops still-running tools when the batch is abandoned (a fatal hook error).
struct AbortRemaining {
    handles: Vec<AbortHandle>,
    cancel: CancellationToken,
}

impl Drop for AbortRemaining {
    fn drop(&mut self) {
        self.cancel.cancel();
        for h in &self.handles {
            h.abort();
        }
    }
}

pub(crate) async fn execute_tool_calls(
    ctx: &RunCtx,
    assistant: &AssistantMessage,
    calls: Vec<ToolCall>,
    messages: &[AgentMessage],
) -> Result<ToolBatch, Fatal> {
    let mut results = Vec::new();
    let mut end_turn = false;
    let mut prepared = Vec::new();

    for call in calls {
        ctx.emit(&AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
        })
        .await;
        match prepare(ctx, assistant, call, messages).await {
            Preparation::Immediate(call, text) => {
                results.push(emit_outcome(ctx, &call, ToolOutput::error(text), true).await);
            }
            Preparation::Ready(p) => prepared.push(*p),
        }
    }
    if prepared.is_empty() {
        return Ok(ToolBatch { results, end_turn });
    }

    // Each tool runs on its own task; updates flow back through one channel so this task emits every event.
    let (update_tx, mut update_rx) = mpsc::unbounded_channel::<(usize, ToolOutput)>();
    let tool_cancel = ctx.cancel.child_token();
    let mut guard = AbortRemaining {
        handles: Vec::new(),
        cancel: tool_cancel.clone(),
    };
    let mut running = FuturesUnordered::new();
    // Tools start in call order, like the reference's (each runs until its first real wait before the next
    // starts), so what they queue (e.g. `ask_user` dialogs) is queued in call order; then they run in parallel.
    let mut previous_started: Option<oneshot::Receiver<()>> = None;
    for (index, p) in prepared.iter().enumerate() {
        let tx = update_tx.clone();
        let on_update: ToolUpdateFn = Arc::new(move |partial| {
            let _ = tx.send((index, partial));
        });
        let (tool, id, args, cancel) = (
            p.tool.clone(),
            p.call.id.clone(),
            p.args.clone(),
            tool_cancel.clone(),
        );
        let (started_tx, started_rx) = oneshot::channel::<()>();
        let after = previous_started.replace(started_rx);
        let handle = tokio::spawn(async move {
            if let Some(after) = after {
                let _ = after.await;
            }
            let mut execution = std::pin::pin!(tool.execute(&id, args, cancel, on_update));
            let first = futures::poll!(execution.as_mut());
            let _ = started_tx.send(());
            match first {
                std::task::Poll::Ready(output) => output,
                std::task::Poll::Pending => execution.await,
            }
        });
        guard.handles.push(handle.abort_handle());
        running.push(async move { (index, handle.await) });
    }
    drop(update_tx);

    let mut finished: Vec<Option<(ToolOutput, bool)>> = prepared.iter().map(|_| None).collect();
    let mut next = 0;
    while next < prepared.len() {
        tokio::select! {
            biased;
            Some((index, partial)) = update_rx.recv() => emit_update(ctx, &prepared[index].call, partial).await,
            Some((index, joined)) = running.next() => {
                // Every update a tool sent happened before it returned: flush them before its end event.
                while let Ok((i, partial)) = update_rx.try_recv() {
                    emit_update(ctx, &prepared[i].call, partial).await;
                }
                finished[index] = Some(match joined {
                    Ok(Ok(output)) => (output, false),
                    Ok(Err(err)) => (
                        ToolOutput {
                            details: Some(err.details.unwrap_or_else(|| Value::Object(Default::default()))),
                            ..ToolOutput::text(err.message)
                        },
                        true,
                    ),
                    Err(join) => (ToolOutput::error(format!("Tool {} failed: {join}", prepared[index].call.name)), true),
                });
                while next < prepared.len() {
                    let Some((output, is_error)) = finished[next].take() else { break };
                    end_turn |= output.end_turn;
                    results.push(finalize(ctx, assistant, &prepared[next], output, is_error, messages).await?);
                    next += 1;
                }
            }
            else => break,
        }
    }
    Ok(ToolBatch { results, end_turn })
}

async fn prepare(
    ctx: &RunCtx,
    assistant: &AssistantMessage,
    call: ToolCall,
    messages: &[AgentMessage],
) -> Preparation {
    let Some(tool) = ctx.tools.iter().find(|t| t.name() == call.name).cloned() else {
        let text = format!("Tool {} not found", call.name);
        return Preparation::Immediate(call, text);
    };
    let args = match validate_tool_arguments(&ctx.shared.validators, tool.definition(), &call) {
        Ok(args) => args,
        Err(text) => return Preparation::Immediate(call, text),
    };
    let before = ctx
        .hooks
        .before_tool_call(
            BeforeToolCallContext {
                assistant_message: assistant,
                tool_call: &call,
                args: &args,
                messages,
            },
            &ctx.cancel,
        )
        .await;
    match before {
        Ok(Some(r)) if r.block => {
            let reason = r
                .reason
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "Tool execution was blocked".to_owned());
            Preparation::Immediate(call, reason)
        }
        Ok(r) => {
            let args = r.and_then(|r| r.args).unwrap_or(args);
            Preparation::Ready(Box::new(Prepared { call, tool, args }))
        }
        Err(text) => Preparation::Immediate(call, text),
    }
}

async fn emit_update(ctx: &RunCtx, call: &ToolCall, partial: ToolOutput) {
    ctx.emit(&AgentEvent::ToolExecutionUpdate {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: call.arguments.clone(),
        partial_result: partial,
    })
    .await;
}

async fn finalize(
    ctx: &RunCtx,
    assistant: &AssistantMessage,
    p: &Prepared,
    output: ToolOutput,
    is_error: bool,
    messages: &[AgentMessage],
) -> Result<ToolResultMessage, Fatal> {
    let overrides = ctx
        .hooks
        .after_tool_call(
            AfterToolCallContext {
                assistant_message: assistant,
                tool_call: &p.call,
                args: &p.args,
                result: &output,
                is_error,
                messages,
            },
            &ctx.cancel,
        )
        .await
        .map_err(Fatal)?;
    let (output, is_error) = match overrides {
        // The reference rebuilds the result from content/details only (endTurn was already taken into account).
        Some(o) => (
            ToolOutput {
                content: o.content.unwrap_or(output.content),
                details: o.details.or(output.details),
                end_turn: false,
            },
            o.is_error.unwrap_or(is_error),
        ),
        None => (output, is_error),
    };
    Ok(emit_outcome(ctx, &p.call, output, is_error).await)
}

/// `tool_execution_end`, then `message_start`/`message_end` of the tool result message.
async fn emit_outcome(
    ctx: &RunCtx,
    call: &ToolCall,
    output: ToolOutput,
    is_error: bool,
) -> ToolResultMessage {
    let content: Vec<UserBlock> = output.content.clone();
    let details = output.details.clone();
    ctx.emit(&AgentEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: output,
        is_error,
    })
    .await;
    let message = ToolResultMessage {
        role: Default::default(),
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content,
        details,
        is_error,
        timestamp: now_ms(),
    };
    let start = AgentEvent::MessageStart {
        message: AgentMessage::ToolResult(message),
    };
    ctx.emit(&start).await;
    let AgentEvent::MessageStart { message } = start else {
        unreachable!()
    };
    ctx.emit(&AgentEvent::MessageEnd {
        message: message.clone(),
    })
    .await;
    match message {
        AgentMessage::ToolResult(m) => m,
        _ => unreachable!(),
    }
}
