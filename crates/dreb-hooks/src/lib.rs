//! The hook bus: the points of a session where extensions, MCP servers, other front ends and the built-in guards
//! plug in, each with its typed result.
//!
//! The points are the ones the reference exposes to its extensions. A [`HookHandler`] implements the ones it
//! cares about (every method defaults to "no answer"); the session owns one [`HookBus`] and asks it at each point.
//! Handlers are asked in registration order (the built-in guards first, then extensions in load order), and how
//! their answers combine is fixed per point:
//!
//! | point | answer | several handlers |
//! |---|---|---|
//! | `tool_call` | change the arguments, or block the call | each sees the arguments as changed before it; the first block wins and the rest are not asked |
//! | `tool_result` | change content, details, `isError` | chained: each sees the result as changed before it |
//! | `context` | rewrite the messages sent to the model | chained |
//! | `before_provider_request` | rewrite the HTTP request body sent to the provider | chained |
//! | `input` | transform the prompt text/images, or handle it (no run) | chained; the first `Handled` wins |
//! | `before_agent_start` | add a message, replace the system prompt | every message is kept in order; the system prompt is chained |
//! | `user_bash` | run the host's `bash` command elsewhere and give its result | the first result wins |
//! | `session_before_*` | cancel, or supply the compaction / branch summary; `_tree` may override the summary's instructions and the label, `_fork` skip loading the new branch | the first cancel wins; the first supplied value is used; each override from the last handler that sets it |
//! | notifications (`session_start`, `session_shutdown`, agent events, `model_select`) | none | all are told, in order |
//!
//! A handler that fails is reported through the bus's [`FailureSink`] (the runtime turns it into an
//! `extension_error` event) and counts as no answer, except at `tool_call`, where a failing handler blocks the
//! call: a guard that could not decide must not let the call through.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use dreb_agent::{AgentEvent, AgentMessage, CustomMessage};
use dreb_ai::{ImageContent, UserBlock};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A handler's failure (an extension threw, a guard could not decide).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookError(pub String);

impl std::fmt::Display for HookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HookError {}

impl From<String> for HookError {
    fn from(s: String) -> Self {
        HookError(s)
    }
}

pub type HookResult<T> = Result<T, HookError>;

/// A tool call about to run (after argument validation).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallEvent {
    pub tool_name: String,
    pub tool_call_id: String,
    /// The arguments; a handler may change them in place.
    pub input: Value,
}

/// A `tool_call` handler's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolCallDecision {
    /// Let the call run (with the arguments as the handler left them).
    #[default]
    Continue,
    /// Do not run it; the model gets an error result with `reason` (default "Tool execution was blocked").
    Block { reason: Option<String> },
}

/// A finished tool call, before its `tool_execution_end`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResultEvent {
    pub tool_name: String,
    pub tool_call_id: String,
    pub input: Value,
    pub content: Vec<UserBlock>,
    pub details: Option<Value>,
    pub is_error: bool,
}

/// A `tool_result` handler's changes; unset fields keep their values.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolResultPatch {
    pub content: Option<Vec<UserBlock>>,
    pub details: Option<Value>,
    pub is_error: Option<bool>,
}

/// Where a prompt came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputSource {
    /// A host's `prompt` command.
    Rpc,
    /// An extension's `sendUserMessage`.
    Extension,
}

/// A prompt before skill and template expansion.
#[derive(Debug, Clone, PartialEq)]
pub struct InputEvent {
    pub text: String,
    pub images: Vec<ImageContent>,
    pub source: InputSource,
}

/// An `input` handler's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum InputDecision {
    #[default]
    Continue,
    /// Replace the text (and the images, when given).
    Transform {
        text: String,
        images: Option<Vec<ImageContent>>,
    },
    /// The handler dealt with the prompt: no run starts.
    Handled,
}

/// What the bus makes of the `input` answers.
#[derive(Debug, Clone, PartialEq)]
pub enum InputOutcome {
    /// Go on with this (possibly transformed) prompt.
    Continue(InputEvent),
    /// A handler consumed it.
    Handled,
}

/// A run about to start.
#[derive(Debug, Clone, PartialEq)]
pub struct BeforeAgentStartEvent {
    pub prompt: String,
    pub images: Vec<ImageContent>,
    /// The system prompt the run will use (as replaced by the handlers before).
    pub system_prompt: String,
}

/// A `before_agent_start` handler's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BeforeAgentStartResult {
    /// Sent after the user message, in this run only.
    pub message: Option<CustomMessage>,
    /// The system prompt for this run.
    pub system_prompt: Option<String>,
}

/// What the bus makes of the `before_agent_start` answers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BeforeAgentStartOutcome {
    pub messages: Vec<CustomMessage>,
    /// Set when a handler replaced it.
    pub system_prompt: Option<String>,
}

/// A host's `bash` command about to run (`user_bash`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserBashEvent {
    pub command: String,
    pub cwd: String,
}

/// A `user_bash` handler's own execution of the command (a sandbox, a remote machine), used instead of running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserBashResult {
    pub output: String,
    /// Absent when the command was cancelled or killed.
    pub exit_code: Option<i32>,
    pub cancelled: bool,
    pub truncated: bool,
}

/// Why the session is about to change (`session_before_switch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchReason {
    /// `new_session`.
    New,
    /// `switch_session`.
    Resume,
}

/// A session change that a handler may cancel.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionBeforeEvent {
    /// `session_before_switch`.
    Switch {
        reason: SwitchReason,
        target_session_file: Option<String>,
    },
    /// `session_before_fork`.
    Fork { entry_id: String },
    /// `session_before_compact`, with what the compaction would do.
    Compaction {
        /// What the compaction would summarise (computed before any model call).
        preparation: CompactPreparation,
        /// Every entry from the root to the leaf, as in the session file.
        branch_entries: Vec<Value>,
        custom_instructions: Option<String>,
    },
    /// `session_before_tree`, with what the navigation would do.
    TreeNavigation {
        target_id: String,
        summarize: bool,
        preparation: TreePreparation,
    },
}

/// The files the summarised messages read, wrote and edited (each list sorted).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileOps {
    pub read: Vec<String>,
    pub written: Vec<String>,
    pub edited: Vec<String>,
}

/// The compaction settings in effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompactSettings {
    pub enabled: bool,
    pub reserve_tokens: u64,
    pub keep_recent_tokens: u64,
}

/// What a compaction will do, before any model call (the reference's `CompactionPreparation`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompactPreparation {
    pub first_kept_entry_id: String,
    /// Agent messages (JSON), oldest first: summarised and dropped from the context.
    pub messages_to_summarize: Vec<Value>,
    /// A turn split at the cut: its messages before the cut (summarised separately).
    pub turn_prefix_messages: Vec<Value>,
    pub is_split_turn: bool,
    pub tokens_before: u64,
    pub previous_summary: Option<String>,
    pub file_ops: FileOps,
    pub settings: CompactSettings,
}

/// What `navigate_tree` will do (the reference's `TreePreparation`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TreePreparation {
    pub target_id: String,
    pub old_leaf_id: Option<String>,
    pub common_ancestor_id: Option<String>,
    /// Session entries (JSON) of the branch left behind, after the common ancestor, oldest first.
    pub entries_to_summarize: Vec<Value>,
    pub user_wants_summary: bool,
    pub custom_instructions: Option<String>,
    pub replace_instructions: Option<bool>,
    pub label: Option<String>,
}

impl SessionBeforeEvent {
    /// The reference's event name.
    pub fn name(&self) -> &'static str {
        match self {
            SessionBeforeEvent::Switch { .. } => "session_before_switch",
            SessionBeforeEvent::Fork { .. } => "session_before_fork",
            SessionBeforeEvent::Compaction { .. } => "session_before_compact",
            SessionBeforeEvent::TreeNavigation { .. } => "session_before_tree",
        }
    }
}

/// A summary a handler supplies instead of the LLM's (`session_before_compact`, `session_before_tree`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SuppliedSummary {
    pub summary: String,
    pub details: Option<Value>,
}

/// What the session gets of a supplied summary: the summary, and for a compaction where the kept context starts
/// and the size recorded (absent: the preparation's).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Supplied {
    pub summary: String,
    pub details: Option<Value>,
    /// Compaction only: where the kept context starts (an entry of the branch).
    pub first_kept_entry_id: Option<String>,
    /// Compaction only: the context size recorded.
    pub tokens_before: Option<u64>,
}

impl From<SuppliedSummary> for Supplied {
    fn from(s: SuppliedSummary) -> Self {
        Supplied {
            summary: s.summary,
            details: s.details,
            ..Default::default()
        }
    }
}

/// What a `session_before_tree` handler changes of the host's request (the reference's result overrides).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TreeOverrides {
    /// Instructions for the model's branch summary, instead of the request's.
    pub custom_instructions: Option<String>,
    /// Whether those instructions replace the default summary prompt, instead of the request's choice.
    pub replace_instructions: Option<bool>,
    /// The label to set, instead of the request's.
    pub label: Option<String>,
}

impl TreeOverrides {
    /// Each override `later` sets replaces this one's.
    fn merge(&mut self, later: TreeOverrides) {
        if later.custom_instructions.is_some() {
            self.custom_instructions = later.custom_instructions;
        }
        if later.replace_instructions.is_some() {
            self.replace_instructions = later.replace_instructions;
        }
        if later.label.is_some() {
            self.label = later.label;
        }
    }
}

/// A `session_before_*` handler's answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum SessionBeforeDecision {
    #[default]
    Continue,
    /// The change does not happen; the command answers `{"cancelled": true}`.
    Cancel,
    /// Go on, with this compaction or branch summary instead of asking the model.
    Supply(SuppliedSummary),
    /// Go on, with this compaction (its own first kept entry and size) instead of asking the model.
    SupplyCompaction(Supplied),
    /// `session_before_tree`: go on, with this branch summary (when given) instead of the model's, and these
    /// overrides of the request.
    Tree {
        summary: Option<SuppliedSummary>,
        overrides: TreeOverrides,
    },
    /// `session_before_fork`: go on; with `skip_conversation_restore` the agent keeps its messages instead of
    /// loading the new session's branch.
    Fork { skip_conversation_restore: bool },
}

/// What the bus makes of the `session_before_*` answers.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionBeforeOutcome {
    Continue {
        supplied: Option<Supplied>,
        /// `session_before_tree` only; empty otherwise.
        tree: TreeOverrides,
        /// `session_before_fork` only: the last handler's choice.
        skip_conversation_restore: bool,
    },
    Cancelled,
}

impl SessionBeforeOutcome {
    /// Go on, with nothing supplied or overridden.
    pub fn proceed() -> Self {
        SessionBeforeOutcome::Continue {
            supplied: None,
            tree: TreeOverrides::default(),
            skip_conversation_restore: false,
        }
    }
}

/// Why a session (re)started (`session_start`'s `reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStartReason {
    Startup,
    Reload,
    /// `new_session`.
    New,
    /// `switch_session`, `import_jsonl`.
    Resume,
    /// `fork`.
    Fork,
}

/// Things handlers are told about and cannot answer.
#[derive(Debug, Clone, Copy)]
pub enum Notice<'a> {
    /// The session started, was switched to, or was reloaded.
    SessionStart(SessionStartReason),
    /// The session is about to end (shutdown, reload).
    SessionShutdown,
    /// An agent event, after the host got it.
    Agent(&'a AgentEvent),
    /// The model changed (`provider/id`), with the one before.
    ModelSelect {
        model: &'a str,
        previous: Option<&'a str>,
    },
}

impl Notice<'_> {
    /// The reference's event name.
    pub fn name(&self) -> &'static str {
        match self {
            Notice::SessionStart(_) => "session_start",
            Notice::SessionShutdown => "session_shutdown",
            Notice::Agent(event) => event.type_name(),
            Notice::ModelSelect { .. } => "model_select",
        }
    }
}

/// One handler on the bus. Implement the points you need; the defaults give no answer.
#[async_trait]
pub trait HookHandler: Send + Sync {
    async fn tool_call(
        &self,
        _event: &mut ToolCallEvent,
        _cancel: &CancellationToken,
    ) -> HookResult<ToolCallDecision> {
        Ok(ToolCallDecision::Continue)
    }

    async fn tool_result(&self, _event: &ToolResultEvent) -> HookResult<Option<ToolResultPatch>> {
        Ok(None)
    }

    async fn context(&self, _messages: &[AgentMessage]) -> HookResult<Option<Vec<AgentMessage>>> {
        Ok(None)
    }

    /// The provider request body (the wire's JSON, after the model's compat rules), just before it is sent.
    async fn before_provider_request(&self, _payload: &Value) -> HookResult<Option<Value>> {
        Ok(None)
    }

    async fn input(&self, _event: &InputEvent) -> HookResult<InputDecision> {
        Ok(InputDecision::Continue)
    }

    async fn before_agent_start(
        &self,
        _event: &BeforeAgentStartEvent,
    ) -> HookResult<Option<BeforeAgentStartResult>> {
        Ok(None)
    }

    async fn session_before(
        &self,
        _event: &SessionBeforeEvent,
    ) -> HookResult<SessionBeforeDecision> {
        Ok(SessionBeforeDecision::Continue)
    }

    /// Run the command yourself (`Some(result)`) or let the session run it (`None`).
    async fn user_bash(&self, _event: &UserBashEvent) -> HookResult<Option<UserBashResult>> {
        Ok(None)
    }

    async fn notify(&self, _notice: Notice<'_>) -> HookResult<()> {
        Ok(())
    }

    /// Whether [`HookHandler::notify`] should be called at all. Agent events are the hot path (one per streamed
    /// delta); a handler that ignores notices says so here and the bus skips them when no handler wants them.
    fn wants_notices(&self) -> bool {
        true
    }
}

/// A handler failed: which one (`source`: an extension's path, or `builtin:<name>`), at which point, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFailure {
    pub source: String,
    pub event: String,
    pub error: String,
}

/// Told about every [`HookFailure`].
pub type FailureSink = Arc<dyn Fn(HookFailure) + Send + Sync>;

struct Registered {
    source: String,
    handler: Arc<dyn HookHandler>,
}

/// The session's handlers, asked in registration order (see the module docs for how answers combine).
pub struct HookBus {
    handlers: RwLock<Vec<Arc<Registered>>>,
    on_failure: RwLock<Option<FailureSink>>,
    /// Registered handlers that want notices.
    listeners: AtomicUsize,
}

impl Default for HookBus {
    fn default() -> Self {
        HookBus {
            handlers: RwLock::new(Vec::new()),
            on_failure: RwLock::new(None),
            listeners: AtomicUsize::new(0),
        }
    }
}

impl std::fmt::Debug for HookBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookBus")
            .field("sources", &self.sources())
            .finish()
    }
}

impl HookBus {
    pub fn new() -> Self {
        Self::default()
    }

    /// Where handler failures go (before this is set they are only logged).
    pub fn set_failure_sink(&self, sink: FailureSink) {
        *self.on_failure.write().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    /// Add `handler` after the ones registered so far.
    pub fn register(&self, source: impl Into<String>, handler: Arc<dyn HookHandler>) {
        if handler.wants_notices() {
            self.listeners.fetch_add(1, Ordering::AcqRel);
        }
        self.handlers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::new(Registered {
                source: source.into(),
                handler,
            }));
    }

    /// Remove every handler registered under `source` (an extension being reloaded or disabled).
    pub fn unregister(&self, source: &str) {
        let mut handlers = self.handlers.write().unwrap_or_else(|e| e.into_inner());
        handlers.retain(|r| r.source != source);
        let listening = handlers
            .iter()
            .filter(|r| r.handler.wants_notices())
            .count();
        self.listeners.store(listening, Ordering::Release);
    }

    /// The registered sources, in order.
    pub fn sources(&self) -> Vec<String> {
        self.snapshot().iter().map(|r| r.source.clone()).collect()
    }

    /// The handlers as they are now; held only to copy, never across an await.
    fn snapshot(&self) -> Vec<Arc<Registered>> {
        self.handlers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn fail(&self, source: &str, event: &str, error: HookError) {
        tracing::warn!(source, event, "hook handler failed: {error}");
        let sink = self
            .on_failure
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(sink) = sink {
            sink(HookFailure {
                source: source.to_string(),
                event: event.to_string(),
                error: error.0,
            });
        }
    }

    /// `tool_call`: the arguments as the handlers changed them, or the first block.
    pub async fn tool_call(
        &self,
        event: &mut ToolCallEvent,
        cancel: &CancellationToken,
    ) -> ToolCallDecision {
        for r in self.snapshot() {
            match r.handler.tool_call(event, cancel).await {
                Ok(ToolCallDecision::Continue) => {}
                Ok(block @ ToolCallDecision::Block { .. }) => return block,
                Err(e) => {
                    let reason = format!("Tool call blocked: a hook failed ({}): {e}", r.source);
                    self.fail(&r.source, "tool_call", e);
                    return ToolCallDecision::Block {
                        reason: Some(reason),
                    };
                }
            }
        }
        ToolCallDecision::Continue
    }

    /// `tool_result`: the result as every handler changed it, in order.
    pub async fn tool_result(&self, mut event: ToolResultEvent) -> ToolResultEvent {
        for r in self.snapshot() {
            match r.handler.tool_result(&event).await {
                Ok(Some(patch)) => {
                    if let Some(content) = patch.content {
                        event.content = content;
                    }
                    if let Some(details) = patch.details {
                        event.details = Some(details);
                    }
                    if let Some(is_error) = patch.is_error {
                        event.is_error = is_error;
                    }
                }
                Ok(None) => {}
                Err(e) => self.fail(&r.source, "tool_result", e),
            }
        }
        event
    }

    /// `context`: the messages as every handler rewrote them, in order.
    pub async fn context(&self, mut messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
        for r in self.snapshot() {
            match r.handler.context(&messages).await {
                Ok(Some(rewritten)) => messages = rewritten,
                Ok(None) => {}
                Err(e) => self.fail(&r.source, "context", e),
            }
        }
        messages
    }

    /// `before_provider_request`: the body as every handler rewrote it, in order.
    pub async fn before_provider_request(&self, mut payload: Value) -> Value {
        for r in self.snapshot() {
            match r.handler.before_provider_request(&payload).await {
                Ok(Some(rewritten)) => payload = rewritten,
                Ok(None) => {}
                Err(e) => self.fail(&r.source, "before_provider_request", e),
            }
        }
        payload
    }

    /// `input`: the prompt as the handlers transformed it, or `Handled` from the first that consumed it.
    pub async fn input(&self, mut event: InputEvent) -> InputOutcome {
        for r in self.snapshot() {
            match r.handler.input(&event).await {
                Ok(InputDecision::Continue) => {}
                Ok(InputDecision::Transform { text, images }) => {
                    event.text = text;
                    if let Some(images) = images {
                        event.images = images;
                    }
                }
                Ok(InputDecision::Handled) => return InputOutcome::Handled,
                Err(e) => self.fail(&r.source, "input", e),
            }
        }
        InputOutcome::Continue(event)
    }

    /// `before_agent_start`: every added message in order, and the system prompt as the handlers chained it.
    pub async fn before_agent_start(
        &self,
        mut event: BeforeAgentStartEvent,
    ) -> BeforeAgentStartOutcome {
        let mut outcome = BeforeAgentStartOutcome::default();
        for r in self.snapshot() {
            match r.handler.before_agent_start(&event).await {
                Ok(Some(result)) => {
                    outcome.messages.extend(result.message);
                    if let Some(prompt) = result.system_prompt {
                        event.system_prompt = prompt.clone();
                        outcome.system_prompt = Some(prompt);
                    }
                }
                Ok(None) => {}
                Err(e) => self.fail(&r.source, "before_agent_start", e),
            }
        }
        outcome
    }

    /// `session_before_*`: cancelled by the first handler that cancels; otherwise the first supplied summary,
    /// each tree override from the last handler that sets it, and the last fork handler's choice.
    pub async fn session_before(&self, event: &SessionBeforeEvent) -> SessionBeforeOutcome {
        let mut supplied = None;
        let mut tree = TreeOverrides::default();
        let mut skip_conversation_restore = false;
        for r in self.snapshot() {
            match r.handler.session_before(event).await {
                Ok(SessionBeforeDecision::Continue) => {}
                Ok(SessionBeforeDecision::Cancel) => return SessionBeforeOutcome::Cancelled,
                Ok(SessionBeforeDecision::Supply(summary)) => {
                    supplied.get_or_insert(summary.into());
                }
                Ok(SessionBeforeDecision::SupplyCompaction(compaction)) => {
                    supplied.get_or_insert(compaction);
                }
                Ok(SessionBeforeDecision::Tree { summary, overrides }) => {
                    if let Some(summary) = summary {
                        supplied.get_or_insert(summary.into());
                    }
                    tree.merge(overrides);
                }
                Ok(SessionBeforeDecision::Fork {
                    skip_conversation_restore: skip,
                }) => skip_conversation_restore = skip,
                Err(e) => self.fail(&r.source, event.name(), e),
            }
        }
        SessionBeforeOutcome::Continue {
            supplied,
            tree,
            skip_conversation_restore,
        }
    }

    /// Whether any handler wants notices (callers on hot paths check this before building one).
    pub fn has_listeners(&self) -> bool {
        self.listeners.load(Ordering::Acquire) > 0
    }

    /// `user_bash`: the first handler's own result, if one ran the command.
    pub async fn user_bash(&self, event: &UserBashEvent) -> Option<UserBashResult> {
        for r in self.snapshot() {
            match r.handler.user_bash(event).await {
                Ok(Some(result)) => return Some(result),
                Ok(None) => {}
                Err(e) => self.fail(&r.source, "user_bash", e),
            }
        }
        None
    }

    /// Tell every handler that wants notices, in order.
    pub async fn notify(&self, notice: Notice<'_>) {
        if !self.has_listeners() {
            return;
        }
        for r in self
            .snapshot()
            .into_iter()
            .filter(|r| r.handler.wants_notices())
        {
            if let Err(e) = r.handler.notify(notice).await {
                self.fail(&r.source, notice.name(), e);
            }
        }
    }
}

#[cfg(test)]
mod tests;
