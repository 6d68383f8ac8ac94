//! `Agent`: the handle over the state it shares with its runs (module `state`): subscribers, state accessors, queues and the run
//! lifecycle (prompt / continue / abort / idle).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use dreb_ai::{
    ImageContent, LlmClient, Model, TextContent, ThinkingLevel, UserBlock, UserContent, UserMessage,
};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::event::AgentEvent;
use crate::hooks::{AgentHooks, DefaultHooks};
use crate::message::AgentMessage;
use crate::queue::{MessageQueue, QueueMode};
use crate::run;
use crate::run_context::{Fatal, RunCtx, error_assistant_message};
use crate::state::{Inner, Shared};
use crate::tool::Tool;
use crate::validate::ValidatorCache;

// Defined below the loop modules (which use them too); public here, where they always were.
pub use crate::clock::now_ms;
pub use crate::state::{AgentConfig, AgentEventSink, AgentState, RetryConfig};

/// Everything needed to build an [`Agent`].
pub struct AgentOptions {
    pub llm: Arc<dyn LlmClient>,
    pub model: Option<Model>,
    pub system_prompt: String,
    pub thinking_level: ThinkingLevel,
    pub tools: Vec<Arc<dyn Tool>>,
    pub messages: Conversation,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    pub hooks: Arc<dyn AgentHooks>,
    pub config: AgentConfig,
}

impl AgentOptions {
    pub fn new(llm: Arc<dyn LlmClient>) -> Self {
        AgentOptions {
            llm,
            model: None,
            system_prompt: String::new(),
            thinking_level: ThinkingLevel::Off,
            tools: Vec::new(),
            messages: Conversation::default(),
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            hooks: Arc::new(DefaultHooks),
            config: AgentConfig::default(),
        }
    }
}

/// Errors of `prompt` / `continue_run`, with the reference's texts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error(
        "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."
    )]
    AlreadyProcessingPrompt,
    #[error("Agent is already processing. Wait for completion before continuing.")]
    AlreadyProcessing,
    #[error("No model configured")]
    NoModel,
    #[error("No messages to continue from")]
    NoMessages,
    #[error("Cannot continue from message role: assistant")]
    CannotContinueFromAssistant,
}

struct FnSink<F>(F);

#[async_trait]
impl<F: Fn(&AgentEvent) + Send + Sync> AgentEventSink for FnSink<F> {
    async fn on_event(&self, event: &AgentEvent) {
        (self.0)(event)
    }
}

struct ChannelSink(mpsc::UnboundedSender<AgentEvent>);

#[async_trait]
impl AgentEventSink for ChannelSink {
    async fn on_event(&self, event: &AgentEvent) {
        let _ = self.0.send(event.clone());
    }
}

/// Handle of a subscription, for [`Agent::unsubscribe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriptionId(u64);

/// A started run. Dropping it does not stop the run (use [`Agent::abort`]).
pub struct RunHandle(JoinHandle<()>);

impl RunHandle {
    /// Waits until the run has ended and `agent_end` was delivered.
    pub async fn wait(self) {
        let _ = self.0.await;
    }
}

/// Releases the run slot even if the run task panics, so the agent never stays busy forever.
struct RunSlotGuard(Arc<Shared>);

impl Drop for RunSlotGuard {
    fn drop(&mut self) {
        {
            let mut inner = self.0.lock();
            inner.state.is_streaming = false;
            inner.state.pending_tool_calls.clear();
            inner.run_cancel = None;
        }
        self.0.idle.send_replace(true);
    }
}

/// The agent: conversation state plus the loop that runs prompts against an [`LlmClient`] and tools.
/// Cheap to clone (shared handle).
#[derive(Clone)]
pub struct Agent {
    shared: Arc<Shared>,
}

impl Agent {
    pub fn new(opts: AgentOptions) -> Self {
        let inner = Inner {
            state: AgentState {
                system_prompt: opts.system_prompt,
                model: opts.model,
                thinking_level: opts.thinking_level,
                tools: opts.tools,
                messages: opts.messages,
                is_streaming: false,
                pending_tool_calls: Vec::new(),
                error: None,
            },
            steering: MessageQueue::new(opts.steering_mode),
            follow_up: MessageQueue::new(opts.follow_up_mode),
            config: opts.config,
            hooks: opts.hooks,
            llm: opts.llm,
            run_cancel: None,
        };
        Agent {
            shared: Arc::new(Shared {
                inner: Mutex::new(inner),
                subscribers: Mutex::new(Arc::new(Vec::new())),
                next_subscription: AtomicU64::new(1),
                idle: watch::Sender::new(true),
                validators: ValidatorCache::default(),
            }),
        }
    }

    // ----- subscribers ------------------------------------------------------------------------------------------

    pub fn subscribe(&self, sink: Arc<dyn AgentEventSink>) -> SubscriptionId {
        let id = self
            .shared
            .next_subscription
            .fetch_add(1, Ordering::Relaxed);
        let mut subs = self
            .shared
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut next: Vec<_> = subs.iter().cloned().collect();
        next.push((id, sink));
        *subs = Arc::new(next);
        SubscriptionId(id)
    }

    /// Subscribes a synchronous callback.
    pub fn subscribe_fn(&self, f: impl Fn(&AgentEvent) + Send + Sync + 'static) -> SubscriptionId {
        self.subscribe(Arc::new(FnSink(f)))
    }

    /// Subscribes a channel receiving a clone of every event.
    pub fn subscribe_channel(&self) -> (SubscriptionId, mpsc::UnboundedReceiver<AgentEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (self.subscribe(Arc::new(ChannelSink(tx))), rx)
    }

    pub fn unsubscribe(&self, id: SubscriptionId) {
        let mut subs = self
            .shared
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let next: Vec<_> = subs.iter().filter(|(i, _)| *i != id.0).cloned().collect();
        *subs = Arc::new(next);
    }

    // ----- state ------------------------------------------------------------------------------------------------

    /// Reads the state under the lock (cheap; avoids cloning the conversation).
    pub fn with_state<R>(&self, f: impl FnOnce(&AgentState) -> R) -> R {
        f(&self.shared.lock().state)
    }

    /// A clone of the whole state.
    pub fn state(&self) -> AgentState {
        self.with_state(Clone::clone)
    }

    /// A copy of the messages (decoded first if the conversation still keeps them in their source).
    pub fn messages(&self) -> Vec<AgentMessage> {
        self.with_state(|s| s.messages.to_vec())
    }

    /// The number of messages, without decoding any.
    pub fn message_count(&self) -> usize {
        self.with_state(|s| s.messages.len())
    }

    pub fn model(&self) -> Option<Model> {
        self.with_state(|s| s.model.clone())
    }

    pub fn thinking_level(&self) -> ThinkingLevel {
        self.with_state(|s| s.thinking_level)
    }

    pub fn is_streaming(&self) -> bool {
        self.with_state(|s| s.is_streaming)
    }

    pub fn pending_tool_calls(&self) -> Vec<String> {
        self.with_state(|s| s.pending_tool_calls.clone())
    }

    pub fn error(&self) -> Option<String> {
        self.with_state(|s| s.error.clone())
    }

    pub fn set_system_prompt(&self, prompt: impl Into<String>) {
        self.shared.lock().state.system_prompt = prompt.into();
    }

    pub fn set_model(&self, model: Option<Model>) {
        self.shared.lock().state.model = model;
    }

    /// Stores the requested level; callers clamp with [`crate::thinking::clamp_thinking_level`] first.
    pub fn set_thinking_level(&self, level: ThinkingLevel) {
        self.shared.lock().state.thinking_level = level;
    }

    /// Takes effect from the next run.
    pub fn set_tools(&self, tools: Vec<Arc<dyn Tool>>) {
        self.shared.lock().state.tools = tools;
    }

    pub fn replace_messages(&self, messages: impl Into<Conversation>) {
        self.shared.lock().state.messages = messages.into();
    }

    pub fn append_message(&self, message: AgentMessage) {
        self.shared.lock().state.messages.push(message);
    }

    pub fn clear_messages(&self) {
        self.shared.lock().state.messages.clear();
    }

    /// Takes effect from the next run.
    pub fn set_hooks(&self, hooks: Arc<dyn AgentHooks>) {
        self.shared.lock().hooks = hooks;
    }

    pub fn set_llm(&self, llm: Arc<dyn LlmClient>) {
        self.shared.lock().llm = llm;
    }

    pub fn config(&self) -> AgentConfig {
        self.shared.lock().config.clone()
    }

    /// Takes effect from the next run.
    pub fn set_config(&self, config: AgentConfig) {
        self.shared.lock().config = config;
    }

    // ----- queues -----------------------------------------------------------------------------------------------

    /// Queues a message delivered after the current turn's tool calls, before the next LLM call.
    pub fn steer(&self, message: AgentMessage) {
        self.shared.lock().steering.push(message);
    }

    /// Takes a queued steering message back out; false when a run already delivered it (or it was never queued).
    pub fn take_queued_steering(&self, message: &AgentMessage) -> bool {
        self.shared.lock().steering.remove(message)
    }

    /// Queues a message delivered only when the agent would otherwise stop.
    pub fn follow_up(&self, message: AgentMessage) {
        self.shared.lock().follow_up.push(message);
    }

    pub fn steering_mode(&self) -> QueueMode {
        self.shared.lock().steering.mode
    }

    pub fn set_steering_mode(&self, mode: QueueMode) {
        self.shared.lock().steering.mode = mode;
    }

    pub fn follow_up_mode(&self) -> QueueMode {
        self.shared.lock().follow_up.mode
    }

    pub fn set_follow_up_mode(&self, mode: QueueMode) {
        self.shared.lock().follow_up.mode = mode;
    }

    pub fn queued_steering(&self) -> Vec<AgentMessage> {
        self.shared.lock().steering.iter().cloned().collect()
    }

    pub fn queued_follow_up(&self) -> Vec<AgentMessage> {
        self.shared.lock().follow_up.iter().cloned().collect()
    }

    pub fn clear_steering_queue(&self) {
        self.shared.lock().steering.clear();
    }

    pub fn clear_follow_up_queue(&self) {
        self.shared.lock().follow_up.clear();
    }

    pub fn clear_all_queues(&self) {
        let mut inner = self.shared.lock();
        inner.steering.clear();
        inner.follow_up.clear();
    }

    pub fn has_queued_messages(&self) -> bool {
        let inner = self.shared.lock();
        !inner.steering.is_empty() || !inner.follow_up.is_empty()
    }

    // ----- runs -------------------------------------------------------------------------------------------------

    /// Starts a run with `messages` as the prompt and returns at once (the busy check is synchronous).
    pub fn start_prompt(&self, messages: Vec<AgentMessage>) -> Result<RunHandle, AgentError> {
        self.prepare_run();
        let inner = self.shared.lock();
        if inner.run_cancel.is_some() {
            return Err(AgentError::AlreadyProcessingPrompt);
        }
        if inner.state.model.is_none() {
            return Err(AgentError::NoModel);
        }
        Ok(self.launch(inner, Some(messages), false))
    }

    /// Runs a prompt to completion.
    pub async fn prompt(&self, messages: Vec<AgentMessage>) -> Result<(), AgentError> {
        self.start_prompt(messages)?.wait().await;
        Ok(())
    }

    /// Runs a text prompt (one user message with a text block, then the images) to completion.
    pub async fn prompt_text(
        &self,
        text: &str,
        images: Vec<ImageContent>,
    ) -> Result<(), AgentError> {
        let mut content = vec![UserBlock::Text(TextContent {
            text: text.to_owned(),
            text_signature: None,
            ..Default::default()
        })];
        content.extend(images.into_iter().map(UserBlock::Image));
        let message = AgentMessage::User(UserMessage {
            role: Default::default(),
            content: UserContent::Blocks(content),
            timestamp: now_ms(),
        });
        self.prompt(vec![message]).await
    }

    /// Continues from the current conversation (retries, queued messages). If the last message is from the
    /// assistant, queued steering (then follow-up) messages become the prompt instead.
    pub fn start_continue(&self) -> Result<RunHandle, AgentError> {
        self.prepare_run();
        let mut inner = self.shared.lock();
        if inner.run_cancel.is_some() {
            return Err(AgentError::AlreadyProcessing);
        }
        if inner.state.model.is_none() {
            return Err(AgentError::NoModel);
        }
        let Some(last) = inner.state.messages.last() else {
            return Err(AgentError::NoMessages);
        };
        if matches!(last, AgentMessage::Assistant(_)) {
            let steering = inner.steering.dequeue();
            if !steering.is_empty() {
                return Ok(self.launch(inner, Some(steering), true));
            }
            let follow_up = inner.follow_up.dequeue();
            if !follow_up.is_empty() {
                return Ok(self.launch(inner, Some(follow_up), false));
            }
            return Err(AgentError::CannotContinueFromAssistant);
        }
        Ok(self.launch(inner, None, false))
    }

    /// Runs [`Agent::start_continue`] to completion.
    pub async fn continue_run(&self) -> Result<(), AgentError> {
        self.start_continue()?.wait().await;
        Ok(())
    }

    /// Cancels the current run: the provider stream ends as `aborted`, tools see the cancellation.
    pub fn abort(&self) {
        if let Some(token) = &self.shared.lock().run_cancel {
            token.cancel();
        }
    }

    /// Resolves when no run is active.
    pub async fn wait_for_idle(&self) {
        let mut rx = self.shared.idle.subscribe();
        let _ = rx.wait_for(|idle| *idle).await;
    }

    /// Clears the conversation, error and both queues (not the configuration).
    pub fn reset(&self) {
        let mut inner = self.shared.lock();
        inner.state.messages.clear();
        inner.state.error = None;
        inner.steering.clear();
        inner.follow_up.clear();
    }

    /// The hooks' [`AgentHooks::prepare_run`], called without the lock held.
    fn prepare_run(&self) {
        let hooks = self.shared.lock().hooks.clone();
        hooks.prepare_run();
    }

    /// Claims the run slot (caller holds the lock and has checked it is free) and spawns the run.
    fn launch(
        &self,
        mut inner: MutexGuard<'_, Inner>,
        prompts: Option<Vec<AgentMessage>>,
        skip_initial_steering: bool,
    ) -> RunHandle {
        let cancel = CancellationToken::new();
        inner.run_cancel = Some(cancel.clone());
        inner.state.is_streaming = true;
        inner.state.error = None;
        let model = inner.state.model.clone().expect("model checked by caller");
        let ctx = RunCtx {
            shared: self.shared.clone(),
            tool_defs: inner
                .state
                .tools
                .iter()
                .map(|t| t.definition().clone())
                .collect(),
            tools: inner.state.tools.clone(),
            thinking_level: inner.state.thinking_level,
            system_prompt: inner.state.system_prompt.clone(),
            hooks: inner.hooks.clone(),
            llm: inner.llm.clone(),
            config: inner.config.clone(),
            cancel,
            model,
        };
        let initial = inner.state.messages.to_vec();
        drop(inner);
        self.shared.idle.send_replace(false);
        let guard = RunSlotGuard(self.shared.clone());
        RunHandle(tokio::spawn(async move {
            let _guard = guard;
            if let Err(Fatal(message)) =
                run::run(&ctx, prompts, skip_initial_steering, initial).await
            {
                let error_message = error_assistant_message(
                    &ctx.model,
                    None,
                    message.clone(),
                    ctx.cancel.is_cancelled(),
                );
                {
                    let mut inner = ctx.shared.lock();
                    inner
                        .state
                        .messages
                        .push(AgentMessage::Assistant(error_message.clone()));
                    inner.state.error = Some(message);
                }
                // Only agent_end: no message_end, so the runtime does not persist or retry it.
                ctx.shared
                    .deliver(&AgentEvent::AgentEnd {
                        messages: vec![AgentMessage::Assistant(error_message)],
                    })
                    .await;
            }
        }))
    }
}
