//! The agent's state and what its handle shares with the running loop: configuration, the observable
//! [`AgentState`], queues, subscribers and the event emission that keeps the state in step with the events.
//! Below both the [`Agent`](crate::Agent) handle and the loop modules, so data flows one way:
//! `agent` → `run` → `llm_call` / `tool_exec` → `run_context` → `state`.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use dreb_ai::{LlmClient, Model, ThinkingLevel};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::event::AgentEvent;
use crate::hooks::AgentHooks;
use crate::message::AgentMessage;
use crate::queue::MessageQueue;
use crate::tool::Tool;
use crate::validate::ValidatorCache;

/// Loop-level retry settings (reference defaults: 3 stream-drop retries from 1 s, 2 length retries doubling).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryConfig {
    pub stream_retries: u32,
    /// Backoff before stream-drop retry `n` (0-based) is `base · 2^n`.
    pub stream_retry_base_delay: Duration,
    pub length_retries: u32,
    pub length_budget_multiplier: f64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            stream_retries: 3,
            stream_retry_base_delay: Duration::from_millis(1000),
            length_retries: 2,
            length_budget_multiplier: 2.0,
        }
    }
}

/// Per-request settings forwarded to the provider.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentConfig {
    pub retry: RetryConfig,
    /// Explicit output budget; None = provider default `min(model.maxTokens, 32000)`.
    pub max_tokens: Option<u64>,
    /// Prompt-cache affinity for providers that support it.
    pub session_id: Option<String>,
}

/// The agent's observable state.
#[derive(Clone)]
pub struct AgentState {
    pub system_prompt: String,
    pub model: Option<Model>,
    /// The requested level (clamped per run for `agent_start` and the provider).
    pub thinking_level: ThinkingLevel,
    pub tools: Vec<Arc<dyn Tool>>,
    /// The conversation; grows on every `message_end` (and by the synthetic message of a fatal error).
    pub messages: Conversation,
    pub is_streaming: bool,
    /// Tool calls between `tool_execution_start` and `tool_execution_end`, in start order.
    pub pending_tool_calls: Vec<String>,
    /// The error text of the last failed turn or fatal error of the current/last run.
    pub error: Option<String>,
}

impl std::fmt::Debug for AgentState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentState")
            .field("system_prompt", &self.system_prompt)
            .field(
                "model",
                &self
                    .model
                    .as_ref()
                    .map(|m| format!("{}/{}", m.provider, m.id)),
            )
            .field("thinking_level", &self.thinking_level)
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.name().to_string())
                    .collect::<Vec<_>>(),
            )
            .field("messages", &self.messages.len())
            .field("is_streaming", &self.is_streaming)
            .field("pending_tool_calls", &self.pending_tool_calls)
            .field("error", &self.error)
            .finish()
    }
}

/// Receives every event of every run, in order. The loop awaits each call, so a slow sink slows the loop rather
/// than buffering without bound. A sink must not wait for the current run to finish (that would deadlock); to
/// start a follow-up run from `agent_end`, spawn a task that awaits
/// [`Agent::wait_for_idle`](crate::Agent::wait_for_idle).
#[async_trait]
pub trait AgentEventSink: Send + Sync {
    async fn on_event(&self, event: &AgentEvent);
}

pub(crate) type Subscribers = Arc<Vec<(u64, Arc<dyn AgentEventSink>)>>;

/// The mutable part, under one lock.
pub(crate) struct Inner {
    pub(crate) state: AgentState,
    pub(crate) steering: MessageQueue,
    pub(crate) follow_up: MessageQueue,
    pub(crate) config: AgentConfig,
    pub(crate) hooks: Arc<dyn AgentHooks>,
    pub(crate) llm: Arc<dyn LlmClient>,
    /// Set while a run is active (the run slot); cancelling it aborts the run.
    pub(crate) run_cancel: Option<CancellationToken>,
}

/// What the [`Agent`](crate::Agent) handle and its running loop share.
pub(crate) struct Shared {
    pub(crate) inner: Mutex<Inner>,
    pub(crate) subscribers: Mutex<Subscribers>,
    pub(crate) next_subscription: AtomicU64,
    /// True while no run is active.
    pub(crate) idle: watch::Sender<bool>,
    pub(crate) validators: ValidatorCache,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panicking subscriber must not wedge the agent: keep using the data.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies an event to the state (like the reference's `_processLoopEvent`), then hands it to every subscriber.
    pub(crate) async fn emit(&self, event: &AgentEvent) {
        {
            let mut inner = self.lock();
            let state = &mut inner.state;
            match event {
                AgentEvent::MessageEnd { message } => state.messages.push(message.clone()),
                AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                    state.pending_tool_calls.push(tool_call_id.clone())
                }
                AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                    state.pending_tool_calls.retain(|id| id != tool_call_id)
                }
                AgentEvent::TurnEnd { message, .. } => {
                    if let Some(err) = &message.error_message {
                        state.error = Some(err.clone());
                    }
                }
                _ => {}
            }
        }
        self.deliver(event).await;
    }

    /// Hands an event to the subscribers without touching the state.
    pub(crate) async fn deliver(&self, event: &AgentEvent) {
        let subscribers = self
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for (_, sink) in subscribers.iter() {
            sink.on_event(event).await;
        }
    }

    pub(crate) fn dequeue_steering(&self) -> Vec<AgentMessage> {
        self.lock().steering.dequeue()
    }

    pub(crate) fn dequeue_follow_up(&self) -> Vec<AgentMessage> {
        self.lock().follow_up.dequeue()
    }
}
