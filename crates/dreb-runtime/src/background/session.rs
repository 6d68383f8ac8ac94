//! Where the background registry meets the live session: launching a child with its hooks (relayed events,
//! arbitration records, the control channel), delivering its result to the parent, and the parent-side guardrails
//! the event bridge and the agent hooks consult.

use std::path::PathBuf;
use std::sync::{Arc, Weak};

use dreb_agent::AgentMessage;
use dreb_ai::{TextContent, UserBlock, UserContent, UserMessage};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::child::{ControlClient, SubagentResult};
use super::{AgentInfo, PRUNE_AFTER_MS, SENTINEL, arbiter, iso, new_id, now_ms};
use crate::services::Services;
use crate::sync::lock;
use dreb_protocol::{
    ArbitrationStatus, BackgroundAgentEventEvent, BackgroundAgentStartEvent, BackgroundAgentStatus,
    DispatchArbitrationRecord, Event, ParentPausedForBackgroundAgentsEvent,
    SubagentArbitrationEvent,
};

/// Where a launch's work reports to.
pub(crate) struct LaunchHooks {
    pub agent_id: String,
    pub cancel: CancellationToken,
    services: Weak<Services>,
}

impl LaunchHooks {
    /// Relay one child frame as `background_agent_event`.
    pub fn relay(&self, mut event: Value) {
        if let Some(services) = self.services.upgrade() {
            if services.dashboard_projection {
                crate::projection::project_dashboard_event(&mut event);
            }
            let event = match event {
                Value::Object(fields) => fields,
                other => {
                    tracing::warn!("a child frame that is not an object: {other}");
                    return;
                }
            };
            services
                .outbox
                .send(&Event::BackgroundAgentEvent(BackgroundAgentEventEvent {
                    agent_id: self.agent_id.clone(),
                    event,
                }));
        }
    }

    /// Keep a Dispatch Arbiter record: on the registry entry (a success also renames the agent type), as a
    /// non-context `subagent_arbitration` entry of the parent session, and as an event.
    pub fn record_arbitration(&self, record: DispatchArbitrationRecord) {
        let Some(services) = self.services.upgrade() else {
            return;
        };
        services.background.update(&self.agent_id, |e| {
            if record.status == ArbitrationStatus::Success
                && let Some(route) = &record.r#final
            {
                e.info.agent_type = route.agent.clone();
            }
            e.info
                .arbitrations
                .get_or_insert_with(Vec::new)
                .push(record.clone());
        });
        let DispatchArbitrationRecord {
            status,
            proposed,
            r#final,
            changed,
            step,
            error_code,
            error_message,
        } = record;
        let event = Event::SubagentArbitration(SubagentArbitrationEvent {
            agent_id: self.agent_id.clone(),
            status,
            proposed,
            r#final,
            changed,
            step,
            error_code,
            error_message,
        });
        // The session keeps the event's fields as a non-context custom entry, as the reference does.
        match serde_json::to_value(&event) {
            Ok(data) => {
                if let Err(e) = services
                    .sessions
                    .lock()
                    .append_custom_entry("subagent_arbitration", Some(data))
                {
                    tracing::error!("could not persist an arbitration record: {e}");
                }
            }
            Err(e) => tracing::error!("could not encode an arbitration record: {e}"),
        }
        services.outbox.send(&event);
    }

    /// Track the child's control channel and process once it is up; forget both once it has exited.
    pub fn set_control(&self, control: Option<Arc<ControlClient>>) {
        if let Some(services) = self.services.upgrade() {
            services.background.update(&self.agent_id, |e| {
                e.pid = control.as_ref().and_then(|c| c.pid);
                // An aborted entry takes no more commands, even while its child winds down.
                e.control = control.filter(|_| e.abort.is_some());
            });
        }
    }
}

/// Register an agent, announce it, and run `work` in the background once a concurrency slot is free. The result
/// is delivered to the parent agent when `work` finishes. Returns the agent id.
pub(crate) fn launch<F, Fut>(
    services: &Arc<Services>,
    agent_type: &str,
    task_summary: &str,
    session_dir: PathBuf,
    cwd: PathBuf,
    work: F,
) -> String
where
    F: FnOnce(Arc<LaunchHooks>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = SubagentResult> + Send + 'static,
{
    let agent_id = new_id();
    let cancel = CancellationToken::new();
    let started = now_ms();
    let session_dir_text = session_dir.display().to_string();
    services.background.register(
        AgentInfo {
            agent_id: agent_id.clone(),
            agent_type: agent_type.to_string(),
            task_summary: task_summary.to_string(),
            started_at: iso(started),
            status: BackgroundAgentStatus::Running,
            session_dir: Some(session_dir_text.clone()),
            session_file: None,
            cwd: Some(cwd.display().to_string()),
            arbitrations: None,
        },
        Some(cancel.clone()),
    );
    services
        .outbox
        .send(&Event::BackgroundAgentStart(BackgroundAgentStartEvent {
            agent_id: agent_id.clone(),
            agent_type: agent_type.to_string(),
            task_summary: task_summary.to_string(),
            session_dir: Some(session_dir_text),
        }));
    let hooks = Arc::new(LaunchHooks {
        agent_id: agent_id.clone(),
        cancel: cancel.clone(),
        services: Arc::downgrade(services),
    });
    let gate = services.background.gate.clone();
    let weak = Arc::downgrade(services);
    let agent_type = agent_type.to_string();
    let id = agent_id.clone();
    tokio::spawn(async move {
        // Waiting for a slot ends early on abort; the work then reports "Aborted before spawn".
        let _permit = tokio::select! {
            p = gate.acquire_owned() => p.ok(),
            _ = cancel.cancelled() => None,
        };
        let result = work(hooks).await;
        let Some(services) = weak.upgrade() else {
            return;
        };
        let cancelled = cancel.is_cancelled();
        services.background.update(&id, |e| {
            if !cancelled {
                e.info.status = if result.success() {
                    BackgroundAgentStatus::Completed
                } else {
                    BackgroundAgentStatus::Failed
                };
            }
            if let Some(f) = &result.session_file {
                e.info.session_file = Some(f.display().to_string());
            }
            e.abort = None;
            e.control = None;
            e.prune_at_ms = Some(now_ms() + PRUNE_AFTER_MS);
        });
        deliver_completion(&services, &id, &agent_type, result, cancelled).await;
    });
    agent_id
}

/// The notice the parent agent receives when a child finishes.
fn completion_text(
    services: &Services,
    agent_id: &str,
    result: &SubagentResult,
    cancelled: bool,
) -> String {
    let mut parts = Vec::new();
    let metadata: Vec<String> = [
        result.model.as_ref().map(|m| format!("model: {m}")),
        result.thinking.as_ref().map(|t| format!("thinking: {t}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !metadata.is_empty() {
        parts.push(format!("Execution metadata: {}", metadata.join(", ")));
    }
    if cancelled {
        parts.push("This agent was cancelled by the user.".to_string());
    } else if !result.success() || result.error_message.is_some() {
        parts.push(format!(
            "Error: {}",
            result.error_message.as_deref().unwrap_or("unknown")
        ));
    }
    if !result.output.is_empty() {
        parts.push(result.output.clone());
    }
    if let Some(f) = &result.session_file {
        parts.push(format!("Session log: {}", f.display()));
    }
    let still_running = services.background.running();
    if !still_running.is_empty() {
        let list: Vec<String> = still_running
            .iter()
            .map(|a| format!("  {} ({}): {}", a.agent_id, a.agent_type, a.task_summary))
            .collect();
        parts.push(format!(
            "Still running ({}):\n{}",
            still_running.len(),
            list.join("\n")
        ));
    }
    let summary = if parts.is_empty() {
        "(no output)".to_string()
    } else {
        parts.join("\n\n")
    };
    let status = if cancelled { "cancelled" } else { "completed" };
    format!(
        "{SENTINEL}\nBackground agent {agent_id} ({}) {status}.\n\n{summary}\n</background-agent-complete>",
        result.agent
    )
}

/// Hand a finished child's result to the parent agent: a cancelled one is only recorded; a finished one resumes
/// the parent (steered into a running turn, else as a new prompt). Then `background_agent_end` is sent.
async fn deliver_completion(
    services: &Arc<Services>,
    agent_id: &str,
    agent_type: &str,
    result: SubagentResult,
    cancelled: bool,
) {
    let message = AgentMessage::User(UserMessage {
        role: Default::default(),
        content: UserContent::Blocks(vec![UserBlock::Text(TextContent {
            text: completion_text(services, agent_id, &result, cancelled),
            text_signature: None,
            ..Default::default()
        })]),
        timestamp: dreb_agent::agent::now_ms(),
    });
    let agent = &services.agent;
    if cancelled {
        agent.append_message(message.clone());
        if let Err(e) =
            crate::persist::append_agent_message(&mut services.sessions.lock(), &message)
        {
            tracing::error!("could not persist a background agent notice: {e}");
        }
        // The agent's own event type: the same frames as the loop's message events.
        services.outbox.send(&dreb_agent::AgentEvent::MessageStart {
            message: message.clone(),
        });
        services.outbox.send(&dreb_agent::AgentEvent::MessageEnd {
            message: message.clone(),
        });
    } else if !services.stop.is_cancelled() {
        services.background.reset_guardrail();
        // A run that already sent agent_end would keep a steer until the next prompt: start a run instead.
        services.phase.settle_after_agent_end(&services.agent).await;
        if agent.is_streaming() {
            agent.steer(message.clone());
            // A run already past its last steering check would end with the notice still queued: once idle, a
            // notice nobody took starts a run of its own.
            let services = services.clone();
            tokio::spawn(async move {
                services.agent.wait_for_idle().await;
                if !services.stop.is_cancelled() && services.agent.take_queued_steering(&message) {
                    start_or_follow_up(&services, message);
                }
            });
        } else {
            start_or_follow_up(services, message);
        }
    }
    // A level the spec does not list is left out rather than sent as an invalid value.
    let level = |t: &Option<String>| -> Option<dreb_protocol::ThinkingLevel> {
        t.as_ref()
            .and_then(|t| serde_json::from_value(Value::String(t.clone())).ok())
    };
    let steps = result.steps.as_ref().map(|steps| {
        steps
            .iter()
            .map(|s| dreb_protocol::SubagentStepMetadata {
                step: i64::try_from(s.step).unwrap_or(i64::MAX),
                agent: s.agent.clone(),
                success: s.success,
                model: s.model.clone(),
                thinking: level(&s.thinking),
            })
            .collect()
    });
    let agent_type = if result.agent.is_empty() {
        agent_type
    } else {
        &result.agent
    };
    services.outbox.send(&Event::BackgroundAgentEnd(
        dreb_protocol::BackgroundAgentEndEvent {
            agent_id: agent_id.to_string(),
            agent_type: agent_type.to_string(),
            success: result.success(),
            model: result.model.clone(),
            thinking: level(&result.thinking),
            steps,
            session_file: result
                .session_file
                .as_ref()
                .map(|f| f.display().to_string()),
        },
    ));
}

/// Resume the parent with `message`, or, if a run started in between, deliver it when that run would stop.
fn start_or_follow_up(services: &Services, message: AgentMessage) {
    if let Err(e) = services.agent.start_prompt(vec![message.clone()]) {
        tracing::debug!("background completion queued as a follow-up: {e}");
        services.agent.follow_up(message);
    }
}

// ----- guardrails (called from the runtime's event bridge and hooks) ------------------------------------------

/// A new assistant message may be checked for the sentinel again.
pub(crate) fn on_assistant_message_start(services: &Services) {
    lock(&services.background.guard).sentinel_steered = false;
}

/// The parent model began writing a completion notice itself while agents run: tell it (once per message) that
/// results arrive on their own.
pub(crate) fn on_text_delta(services: &Services, partial_text: &str) {
    // Cheap checks first: this runs for every text delta, and the scan reads the whole reply so far.
    if services.background.running_count() == 0 {
        return;
    }
    {
        let mut g = lock(&services.background.guard);
        if g.sentinel_steered || !partial_text.contains(SENTINEL) {
            return;
        }
        g.sentinel_steered = true;
    }
    services.agent.steer(AgentMessage::User(UserMessage { role: Default::default(),
        content: UserContent::Blocks(vec![UserBlock::Text(TextContent {
            text: "Background agents are still running and have not reported back; their results arrive as \
                   messages of their own. Stop and wait for them instead of writing a result. If the tag is \
                   intentional (for example inside a code block), say so and continue."
                .into(),
            text_signature: None, ..Default::default()
        })]),
        timestamp: dreb_agent::agent::now_ms(),
    }));
}

pub(crate) fn on_turn_start(services: &Services) {
    let running = services.background.running_count() > 0;
    let mut g = lock(&services.background.guard);
    g.running_at_turn_start = running;
    g.pause_notified = false;
}

pub(crate) fn on_turn_end(services: &Services) {
    if services.background.running_count() == 0 {
        services.background.reset_guardrail();
        return;
    }
    let mut g = lock(&services.background.guard);
    if g.running_at_turn_start {
        g.turns_used += 1;
    }
}

/// Before each further LLM call of a run: false pauses the parent once its turn budget is spent while agents run.
pub(crate) fn should_continue(services: &Services) -> bool {
    let running = services.background.running_count();
    if running == 0 {
        services.background.reset_guardrail();
        return true;
    }
    let guardrail = services.settings.background_agent_guardrail();
    if !guardrail.enabled {
        return true;
    }
    let mut g = lock(&services.background.guard);
    if g.turns_used < guardrail.turn_limit {
        return true;
    }
    if !g.pause_notified {
        g.pause_notified = true;
        let turns_used = g.turns_used;
        drop(g);
        let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        services
            .outbox
            .send(&Event::ParentPausedForBackgroundAgents(
                ParentPausedForBackgroundAgentsEvent {
                    running_agent_count: count(running as u64),
                    turns_used: count(turns_used),
                    turn_limit: count(guardrail.turn_limit),
                },
            ));
    }
    false
}

/// Parent activity the Dispatch Arbiter is shown: assistant replies and tool calls…
pub(crate) fn on_assistant_end(services: &Services, message: &dreb_ai::AssistantMessage) {
    let mut activity = lock(&services.background.activity);
    for entry in arbiter::label_assistant(message) {
        activity.push(entry);
    }
}

/// … and tool results.
pub(crate) fn on_tool_end(
    services: &Services,
    tool_name: &str,
    result: &dreb_agent::ToolOutput,
    is_error: bool,
) {
    let output: String = result
        .content
        .iter()
        .filter_map(|b| match b {
            UserBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    lock(&services.background.activity).push(arbiter::label_tool_end(tool_name, is_error, &output));
}

/// The text of the first text block of an assistant message (what the sentinel check reads).
pub(crate) fn first_text(message: &dreb_ai::AssistantMessage) -> &str {
    message
        .content
        .iter()
        .find_map(|b| match b {
            dreb_ai::AssistantBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .unwrap_or("")
}
