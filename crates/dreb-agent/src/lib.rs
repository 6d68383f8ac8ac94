//! The agent loop: turns, tool execution, steering and follow-up queues, retries.
//!
//! Entry point: [`Agent`] (state, queues, `prompt` / `continue_run` / `abort`), observed through
//! [`AgentEvent`]s delivered in order to subscribers ([`Agent::subscribe`]). The runtime customises the loop with
//! [`AgentHooks`] and provides tools through the [`Tool`] trait and the model through a `dreb_ai::LlmClient`.
//! Runs are spawned on the current tokio runtime.
//!
//! ```
//! use dreb_agent::testing::{Script, ScriptedLlm, test_model};
//! use dreb_agent::{Agent, AgentEvent, AgentMessage, AgentOptions};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let llm = ScriptedLlm::with_scripts([Script::reply("Hello.")]);
//! let mut opts = AgentOptions::new(llm);
//! opts.model = Some(test_model());
//! let agent = Agent::new(opts);
//! // Every event, in order, exactly as the RPC layer writes it.
//! agent.subscribe_fn(|e: &AgentEvent| {
//!     let _frame = serde_json::to_string(e).unwrap();
//! });
//! agent.prompt(vec![AgentMessage::user_text("Hi", 0)]).await.unwrap();
//! assert_eq!(agent.messages().len(), 2);
//! # });
//! ```

pub mod agent;
mod clock;
pub mod conversation;
pub mod event;
pub mod hooks;
pub mod llm_call;
pub mod message;
pub mod queue;
mod run;
mod run_context;
mod state;
pub mod thinking;
pub mod tool;
mod tool_exec;
pub mod validate;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use agent::{
    Agent, AgentConfig, AgentError, AgentEventSink, AgentOptions, AgentState, RetryConfig,
    RunHandle, SubscriptionId, now_ms,
};
pub use conversation::{Conversation, MessageSource, SourceMessage};
pub use event::{AgentEvent, AssistantEventJson, ModelRef};
pub use hooks::{
    AfterToolCallContext, AfterToolCallResult, AgentHooks, BeforeToolCallContext,
    BeforeToolCallResult, DefaultHooks,
};
pub use message::{
    AgentMessage, BashExecutionMessage, BranchSummaryMessage, CompactionSummaryMessage,
    CustomMessage, default_convert_to_llm,
};
pub use queue::{MessageQueue, QueueMode};
pub use thinking::{
    available_thinking_levels, clamp_thinking_level, effective_thinking_level, supports_max,
    supports_xhigh,
};
pub use tool::{Tool, ToolError, ToolOutput, ToolUpdateFn};
