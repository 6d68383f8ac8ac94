//! Model registry, credentials and streaming LLM providers.

pub mod provider;
pub mod types;

pub use provider::{AssistantEventStream, LlmClient, StreamOptions};
pub use types::*;
