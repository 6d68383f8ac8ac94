//! The runtime's hooks into the loop. One trait with defaults, so the runtime implements only what it needs.

use async_trait::async_trait;
use dreb_ai::{AssistantMessage, Message, ToolCall, UserBlock};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::message::{AgentMessage, default_convert_to_llm};
use crate::tool::ToolOutput;

/// What `before_tool_call` sees: the validated arguments and the context at preparation time.
pub struct BeforeToolCallContext<'a> {
    pub assistant_message: &'a AssistantMessage,
    pub tool_call: &'a ToolCall,
    pub args: &'a Value,
    pub messages: &'a [AgentMessage],
}

/// Returned by `before_tool_call`: stop the call (the result is an error with `reason`, default "Tool execution was
/// blocked"), or run it with other arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BeforeToolCallResult {
    pub block: bool,
    pub reason: Option<String>,
    /// Run the tool with these arguments instead of the validated ones (a hook changed them).
    pub args: Option<Value>,
}

/// What `after_tool_call` sees: the executed result before overrides.
pub struct AfterToolCallContext<'a> {
    pub assistant_message: &'a AssistantMessage,
    pub tool_call: &'a ToolCall,
    pub args: &'a Value,
    pub result: &'a ToolOutput,
    pub is_error: bool,
    pub messages: &'a [AgentMessage],
}

/// Field-level overrides from `after_tool_call` (no deep merge; unset fields keep the executed values).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AfterToolCallResult {
    pub content: Option<Vec<UserBlock>>,
    pub details: Option<Value>,
    pub is_error: Option<bool>,
}

/// Hooks consulted by the loop. Errors (`Err(text)`) from `transform_context`, `convert_to_llm`, `get_api_key` and
/// `after_tool_call` are fatal to the run (synthetic error message, only `agent_end`), as in the reference; an error
/// from `before_tool_call` becomes that call's error result.
#[async_trait]
pub trait AgentHooks: Send + Sync {
    /// Rewrites the agent messages before each LLM call (pruning, injection).
    async fn transform_context(
        &self,
        messages: Vec<AgentMessage>,
        _cancel: &CancellationToken,
    ) -> Result<Vec<AgentMessage>, String> {
        Ok(messages)
    }

    /// Converts agent messages to LLM messages before each call. Default: the reference conversion (§1b.5).
    fn convert_to_llm(&self, messages: &[AgentMessage]) -> Result<Vec<Message>, String> {
        Ok(default_convert_to_llm(messages))
    }

    /// Resolves the credential for `provider`, once per LLM call (tokens may expire during long tool phases).
    async fn get_api_key(&self, _provider: &str) -> Result<Option<String>, String> {
        Ok(None)
    }

    /// Runs after argument validation; may block the call.
    async fn before_tool_call(
        &self,
        _ctx: BeforeToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<BeforeToolCallResult>, String> {
        Ok(None)
    }

    /// Runs after a tool finished, before its `tool_execution_end`; may override content/details/isError.
    async fn after_tool_call(
        &self,
        _ctx: AfterToolCallContext<'_>,
        _cancel: &CancellationToken,
    ) -> Result<Option<AfterToolCallResult>, String> {
        Ok(None)
    }

    /// Rewrites each provider request body before it is sent (`None`, the default: sent as built).
    fn payload_hook(&self) -> Option<dreb_ai::PayloadHook> {
        None
    }

    /// Consulted before every LLM call of a run except the first; `false` ends the run cleanly.
    fn should_continue(&self) -> bool {
        true
    }

    /// Called as a run starts (a prompt or a continue), before the run takes its copy of the state (system prompt,
    /// tools): state set up lazily is set up here at the latest. No lock of the agent is held.
    fn prepare_run(&self) {}
}

/// The hooks used when the runtime installs none.
#[derive(Debug, Default, Clone, Copy)]
pub struct DefaultHooks;

#[async_trait]
impl AgentHooks for DefaultHooks {}
