//! Model registry, credentials and streaming LLM providers.
//!
//! - [`registry::ModelRegistry`]: built-in catalog + `<agentDir>/models.json` + credentials (`auth.json`, env,
//!   `--api-key`); which models are available; default model per provider.
//! - [`providers::Providers`]: the [`LlmClient`] that streams from `anthropic-messages`, `openai-completions`,
//!   `openai-responses`, `google-generative-ai`, and the offline scripted `faux` provider.
//! - [`classify`]: retryable-error and context-overflow classification.
//! - [`thinking`]: which thinking levels a model supports.

pub mod auth;
mod catalog;
pub mod classify;
pub mod cost;
mod http;
mod output;
pub mod partial_json;
pub mod provider;
pub mod providers;
pub mod registry;
pub mod scenario;
mod sse;
pub mod thinking;
mod transform;
pub mod types;

#[doc(hidden)]
pub mod bench_support;

pub use classify::{
    is_context_overflow, is_context_overflow_message, is_retryable_error, is_stream_drop,
};
pub use cost::calculate_cost;
pub use output::ABORTED_MESSAGE;
pub use provider::{AssistantEventStream, LlmClient, PayloadHook, StreamOptions, final_message};
pub use providers::Providers;
pub use registry::{ModelRegistry, agent_dir};
pub use types::*;
