//! The agent loop: turns, tool execution, steering and follow-up queues, retries.

pub mod tool;

pub use tool::{Tool, ToolError, ToolOutput, ToolUpdateFn};
