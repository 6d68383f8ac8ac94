//! Session config options: the model (category `model`, values `provider/id`) and the thinking level (category
//! `thought_level`, the model's available levels), read from and applied to the runtime.

use agent_client_protocol_schema::v1::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption,
};
use dreb_protocol::handlers::{ModelHandler as _, StateHandler as _, ThinkingHandler as _};
use dreb_protocol::support::RequestContext;
use dreb_protocol::{
    GetAvailableModelsParams, GetStateParams, SetModelParams, SetThinkingLevelParams, ThinkingLevel,
};
use dreb_runtime::Runtime;

pub const MODEL: &str = "model";
pub const THOUGHT_LEVEL: &str = "thought_level";

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("unknown config option `{0}` (this agent has `model` and `thought_level`)")]
    UnknownOption(String),
    #[error("`{0}` takes one of its listed values")]
    BadValue(String),
    #[error("{0}")]
    Runtime(String),
}

fn wire<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// The session's options as they are now.
pub async fn options(runtime: &Runtime) -> Result<Vec<SessionConfigOption>, ConfigError> {
    let ctx = RequestContext::detached(None);
    let state = runtime
        .get_state(&ctx, GetStateParams {})
        .await
        .map_err(|e| ConfigError::Runtime(e.wire_text()))?;
    let models = runtime
        .get_available_models(&ctx, GetAvailableModelsParams {})
        .await
        .map_err(|e| ConfigError::Runtime(e.wire_text()))?
        .models;
    let mut out = Vec::new();
    if let Some(current) = &state.model {
        // The current model is always a choice, also when it is not in the available list (no key on file).
        let choices: Vec<_> = std::iter::once(current)
            .chain(
                models
                    .iter()
                    .filter(|m| (&m.provider, &m.id) != (&current.provider, &current.id)),
            )
            .map(|m| {
                SessionConfigSelectOption::new(format!("{}/{}", m.provider, m.id), m.name.clone())
            })
            .collect();
        out.push(
            SessionConfigOption::select(
                MODEL,
                "Model",
                format!("{}/{}", current.provider, current.id),
                choices,
            )
            .category(SessionConfigOptionCategory::Model),
        );
    }
    let levels: Vec<_> = state
        .available_thinking_levels
        .iter()
        .map(|l| SessionConfigSelectOption::new(wire(l), wire(l)))
        .collect();
    if !levels.is_empty() {
        out.push(
            SessionConfigOption::select(
                THOUGHT_LEVEL,
                "Thinking",
                wire(&state.thinking_level),
                levels,
            )
            .category(SessionConfigOptionCategory::ThoughtLevel),
        );
    }
    Ok(out)
}

/// Applies one option; the caller answers with [`options`] afterwards (a model change changes the levels).
pub async fn set(
    runtime: &Runtime,
    id: &str,
    value: &SessionConfigOptionValue,
) -> Result<(), ConfigError> {
    let ctx = RequestContext::detached(None);
    let value = value
        .as_value_id()
        .map(|v| v.to_string())
        .ok_or_else(|| ConfigError::BadValue(id.to_string()))?;
    match id {
        MODEL => {
            let (provider, model_id) = value
                .split_once('/')
                .ok_or_else(|| ConfigError::BadValue(id.to_string()))?;
            runtime
                .set_model(
                    &ctx,
                    SetModelParams {
                        provider: provider.to_string(),
                        model_id: model_id.to_string(),
                    },
                )
                .await
                .map_err(|e| ConfigError::Runtime(e.wire_text()))?;
        }
        THOUGHT_LEVEL => {
            let level: ThinkingLevel = serde_json::from_value(serde_json::Value::String(value))
                .map_err(|_| ConfigError::BadValue(id.to_string()))?;
            runtime
                .set_thinking_level(&ctx, SetThinkingLevelParams { level })
                .await
                .map_err(|e| ConfigError::Runtime(e.wire_text()))?;
        }
        other => return Err(ConfigError::UnknownOption(other.to_string())),
    }
    Ok(())
}
