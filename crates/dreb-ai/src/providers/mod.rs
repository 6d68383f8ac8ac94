//! The provider registry: one [`LlmClient`] that dispatches on `model.api`.

pub(crate) mod anthropic;
pub(crate) mod azure;
pub mod faux;
pub(crate) mod google;
pub(crate) mod openai_completions;
pub(crate) mod openai_responses;

use crate::auth::env_api_key;
use crate::output::{ProviderError, event_stream};
use crate::provider::{AssistantEventStream, LlmClient, StreamOptions};
use crate::scenario::Scenario;
use crate::thinking::ThinkingBudgets;
use crate::types::{Context, Model, api};

/// The APIs this crate implements.
pub const SUPPORTED_APIS: [&str; 6] = [
    api::ANTHROPIC_MESSAGES,
    api::OPENAI_COMPLETIONS,
    api::OPENAI_RESPONSES,
    api::AZURE_OPENAI_RESPONSES,
    api::GOOGLE_GENERATIVE_AI,
    api::FAUX,
];

/// Request tuning shared by the HTTP providers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tuning {
    pub http_retries: u32,
    /// The longest server-requested retry delay waited for; 0 disables the cap.
    pub max_retry_delay_ms: u64,
    pub budgets: ThinkingBudgets,
}

impl Tuning {
    pub fn retry_policy(&self) -> crate::http::RetryPolicy {
        crate::http::RetryPolicy {
            max_retries: self.http_retries,
            max_server_delay_ms: self.max_retry_delay_ms,
        }
    }
}

/// The reference's default `maxRetryDelayMs` (settings `retry.maxDelayMs`).
pub const DEFAULT_MAX_RETRY_DELAY_MS: u64 = 60_000;

/// Streams from real providers over HTTP (and from the offline `faux` provider). Cheap to clone.
#[derive(Clone)]
pub struct Providers {
    tuning: Tuning,
    faux: faux::FauxState,
}

impl Default for Providers {
    fn default() -> Self {
        Self::new()
    }
}

impl Providers {
    /// HTTP retries default to 2, like the vendor SDKs the reference uses; `faux` plays `DREB_FAUX_SCENARIO` or its
    /// built-in scenario.
    pub fn new() -> Self {
        Providers {
            tuning: Tuning {
                http_retries: 2,
                max_retry_delay_ms: DEFAULT_MAX_RETRY_DELAY_MS,
                budgets: ThinkingBudgets::default(),
            },
            faux: faux::FauxState::from_env(),
        }
    }

    /// Transport-level retries per request (connection errors, 408/409/429/5xx); 0 disables them.
    pub fn with_http_retries(mut self, retries: u32) -> Self {
        self.tuning.http_retries = retries;
        self
    }

    /// The reference's `maxRetryDelayMs` (settings `retry.maxDelayMs`, default 60 s): when a server asks for a longer
    /// wait before a retry, the request fails at once with `Server requested <n>s retry delay (max: <m>s). <error>`,
    /// so the session-level retry (which matches "retry delay") takes over visibly. 0 disables the cap.
    pub fn with_max_retry_delay_ms(mut self, ms: u64) -> Self {
        self.tuning.max_retry_delay_ms = ms;
        self
    }

    /// Thinking budget overrides (settings `thinkingBudgets`) for budget-based thinking.
    pub fn with_thinking_budgets(mut self, budgets: ThinkingBudgets) -> Self {
        self.tuning.budgets = budgets;
        self
    }

    /// Replaces the scenario the `faux` provider plays.
    pub fn with_faux_scenario(mut self, scenario: Scenario) -> Self {
        self.faux = faux::FauxState::new(Ok(scenario));
        self
    }
}

/// Whether requests for this model need an API key: `faux` does not, nor does a model served on loopback (a local
/// server such as Ollama or llama.cpp; a key is still sent when one is configured).
pub fn requires_api_key(model: &Model) -> bool {
    model.api != api::FAUX && !crate::http::is_loopback_url(&model.base_url)
}

impl LlmClient for Providers {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantEventStream {
        let ctx = context.clone();
        let tuning = self.tuning.clone();
        let faux = self.faux.clone();
        let api_name = model.api.clone();
        let key = options
            .api_key
            .clone()
            .filter(|k| !k.is_empty())
            .or_else(|| env_api_key(&model.provider));
        let provider = model.provider.clone();
        let requires = requires_api_key(model);
        event_stream(model, options.cancel.clone(), move |mut out| async move {
            out.deltas_without_content = options.deltas_without_content;
            if api_name == api::FAUX {
                let r = faux::run(&mut out, &ctx, &faux).await;
                return out.finish(r).await;
            }
            if !SUPPORTED_APIS.contains(&api_name.as_str()) {
                return out
                    .finish(Err(ProviderError::Message(format!(
                        "No API provider registered for api: {api_name}"
                    ))))
                    .await;
            }
            let Some(key) = key.or_else(|| (!requires).then(String::new)) else {
                return out
                    .finish(Err(ProviderError::Message(format!(
                        "No API key for provider: {provider}"
                    ))))
                    .await;
            };
            let r = match api_name.as_str() {
                api::ANTHROPIC_MESSAGES => {
                    anthropic::run(&mut out, &ctx, &options, &key, &tuning).await
                }
                api::OPENAI_COMPLETIONS => {
                    openai_completions::run(&mut out, &ctx, &options, &key, &tuning).await
                }
                api::OPENAI_RESPONSES | api::AZURE_OPENAI_RESPONSES => {
                    openai_responses::run(&mut out, &ctx, &options, &key, &tuning).await
                }
                _ => google::run(&mut out, &ctx, &options, &key, &tuning).await,
            };
            out.finish(r).await
        })
    }
}
