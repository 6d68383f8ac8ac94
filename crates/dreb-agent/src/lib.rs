//! The agent loop: turns, tool execution, steering and follow-up queues, retries.
//!
//! Entry point: [`Agent`] (state, queues, `prompt` / `continue_run` / `abort`), observed through
//! [`AgentEvent`]s delivered in order to subscribers ([`Agent::subscribe`]). The runtime customises the loop with
//! [`AgentHooks`] and provides tools through the [`Tool`] trait and the model through a `dreb_ai::LlmClient`.

pub mod agent;
pub mod event;
pub mod hooks;
pub mod llm_call;
pub mod message;
pub mod queue;
mod run;
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
