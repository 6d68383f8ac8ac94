//! The event bridge: every agent event goes to the host through the outbox (merged into pending deltas while the
//! host is behind, projected for the dashboard), then what it changed is applied (background bookkeeping, the
//! queue, persistence, retry and compaction checks).

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use dreb_agent::{AgentEvent, AgentEventSink, AgentMessage};

use crate::services::{Runtime, Services};

/// Forwards every agent event to the host, then persists what it changed.
pub(crate) struct EventBridge {
    pub(crate) services: Weak<Services>,
}

#[async_trait]
impl AgentEventSink for EventBridge {
    async fn on_event(&self, event: &AgentEvent) {
        let Some(services) = self.services.upgrade() else {
            return;
        };
        match event {
            AgentEvent::AgentStart { .. } => services.phase.agent_started(),
            AgentEvent::AgentEnd { .. } => services.phase.agent_ended(),
            _ => {}
        }
        // A host that sees a turn end finds the turn's messages in the session file.
        if matches!(
            event,
            AgentEvent::TurnEnd { .. } | AgentEvent::AgentEnd { .. }
        ) {
            services.sessions.flush();
        }
        // As in the reference: the hook handlers hear of an event before the host does.
        if services.hooks.has_listeners() {
            services
                .hooks
                .notify(dreb_hooks::Notice::Agent(event))
                .await;
        }
        match mergeable_delta(event, services.dashboard_projection, &services.outbox) {
            Some(delta) => services.outbox.send_delta(delta),
            None if services.dashboard_projection => services
                .outbox
                .send(&dreb_agent::event::DashboardEventJson(event)),
            None => services.outbox.send(event),
        }
        let outbox = services.outbox.clone();
        self.after_sent(services, event);
        // Backpressure: the loop (and so the provider stream) goes no faster than the host reads.
        outbox.ready().await;
        // Fairness: a stream that is always ready (an unpaced provider) would otherwise keep this task running and
        // starve the stdout writer it just woke; yield once the task's coop budget is spent.
        tokio::task::consume_budget().await;
    }
}

/// A streaming delta as a [`DeltaFrame`] the writer may merge, when the writer is behind; `None` otherwise (a
/// reader that keeps up gets every delta in its own frame, and the clone below is not paid).
fn mergeable_delta(
    event: &AgentEvent,
    dashboard_projection: bool,
    outbox: &dreb_protocol::Outbox,
) -> Option<dreb_protocol::DeltaFrame> {
    use dreb_ai::AssistantMessageEvent as E;
    let AgentEvent::MessageUpdate {
        assistant_message_event: stream_event,
    } = event
    else {
        return None;
    };
    let (kind, content_index, delta) = match stream_event {
        E::TextDelta {
            content_index,
            delta,
            ..
        } => ("text_delta", content_index, delta),
        E::ThinkingDelta {
            content_index,
            delta,
            ..
        } => ("thinking_delta", content_index, delta),
        E::ToolcallDelta {
            content_index,
            delta,
            ..
        } => ("toolcall_delta", content_index, delta),
        _ => return None,
    };
    if !outbox.is_behind() {
        return None;
    }
    let key = dreb_protocol::DeltaKey {
        kind,
        content_index: *content_index as u64,
    };
    let mut owned = if dashboard_projection {
        // The projection writes neither `partial` nor `message`: the queued frame keeps none of the reply (it would
        // otherwise hold a copy of it per queued frame, far more than the frame's bytes it is counted by).
        AgentEvent::MessageUpdate {
            assistant_message_event: without_reply(stream_event),
        }
    } else {
        event.clone()
    };
    let render = move |joined: &str| {
        if let AgentEvent::MessageUpdate {
            assistant_message_event:
                E::TextDelta { delta, .. }
                | E::ThinkingDelta { delta, .. }
                | E::ToolcallDelta { delta, .. },
        } = &mut owned
        {
            joined.clone_into(delta);
        }
        let encoded = if dashboard_projection {
            dreb_protocol::framing::encode_frame(&dreb_agent::event::DashboardEventJson(&owned))
        } else {
            dreb_protocol::framing::encode_frame(&owned)
        };
        encoded.unwrap_or_else(|e| {
            tracing::error!("could not encode a frame: {e}");
            Vec::new()
        })
    };
    Some(dreb_protocol::DeltaFrame::new(key, delta.clone(), render))
}

/// A streaming delta with an empty `partial` (see [`mergeable_delta`]).
fn without_reply(event: &dreb_ai::AssistantMessageEvent) -> dreb_ai::AssistantMessageEvent {
    use dreb_ai::AssistantMessageEvent as E;
    match event {
        E::TextDelta {
            content_index,
            delta,
            partial,
        } => E::TextDelta {
            content_index: *content_index,
            delta: delta.clone(),
            partial: partial.clone_without_content(),
        },
        E::ThinkingDelta {
            content_index,
            delta,
            partial,
        } => E::ThinkingDelta {
            content_index: *content_index,
            delta: delta.clone(),
            partial: partial.clone_without_content(),
        },
        E::ToolcallDelta {
            content_index,
            delta,
            partial,
        } => E::ToolcallDelta {
            content_index: *content_index,
            delta: delta.clone(),
            partial: partial.clone_without_content(),
        },
        other => other.clone(),
    }
}

impl EventBridge {
    /// What an event changes once the host has it: background bookkeeping, the queue, persistence.
    fn after_sent(&self, services: Arc<Services>, event: &AgentEvent) {
        let rt = Runtime::from(services);
        match event {
            AgentEvent::TurnStart => crate::background::session::on_turn_start(&rt),
            AgentEvent::TurnEnd { .. } => crate::background::session::on_turn_end(&rt),
            AgentEvent::MessageStart {
                message: AgentMessage::Assistant(_),
            } => crate::background::session::on_assistant_message_start(&rt),
            AgentEvent::MessageUpdate {
                assistant_message_event: dreb_ai::AssistantMessageEvent::TextDelta { partial, .. },
            } => crate::background::session::on_text_delta(
                &rt,
                crate::background::session::first_text(partial),
            ),
            AgentEvent::ToolExecutionEnd {
                tool_name,
                result,
                is_error,
                ..
            } => {
                crate::background::session::on_tool_end(&rt, tool_name, result, *is_error);
                crate::session_naming::on_tool_end(&rt);
            }
            AgentEvent::MessageStart {
                message: AgentMessage::User(user),
            } => {
                rt.phase.rearm_overflow_recovery();
                // A queued message reached the conversation: it is no longer pending.
                rt.queue.delivered(&user.content.text());
            }
            AgentEvent::MessageEnd { message } => {
                crate::commands::performance::on_message_end(&rt.sessions, &rt.agent_dir, message);
                rt.sessions.append_from_run(message);
                if let AgentMessage::Assistant(assistant) = message {
                    crate::background::session::on_assistant_end(&rt, assistant);
                    crate::commands::retry::on_assistant_end(&rt, assistant);
                }
            }
            AgentEvent::AgentEnd { .. } => crate::commands::retry::after_agent_end(&rt),
            _ => {}
        }
    }
}
