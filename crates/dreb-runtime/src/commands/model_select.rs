//! `resolve_model` (the interactive `/model` matching rules, without switching), `cycle_model` (through the scope or
//! all available models) and the `scopedModels` of `get_state`.

use dreb_agent::clamp_thinking_level;
use dreb_ai::{Model, ThinkingLevel};
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_settings::ModelInfo;
use dreb_settings::model_catalog::is_valid_thinking_level;
use dreb_settings::model_scope::{find_exact_model_reference, find_model_in_list};

use crate::catalog::model_info;
use crate::services::Runtime;

/// What a pattern resolved to: an index into the model list, the thinking level of a `:<level>` suffix, and the
/// warning of an invalid suffix.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ParsedPattern {
    pub index: Option<usize>,
    pub thinking_level: Option<String>,
    pub warning: Option<String>,
}

fn try_match(pattern: &str, models: &[ModelInfo]) -> Option<usize> {
    let found = find_exact_model_reference(pattern, models)
        .or_else(|| find_model_in_list(pattern, models))?;
    models.iter().position(|m| std::ptr::eq(m, found))
}

/// `parseModelPattern`: the whole pattern first (ids may contain colons), else split at the last colon; a valid
/// thinking level suffix applies when the prefix matches cleanly, an invalid one is dropped with a warning.
pub(crate) fn parse_model_pattern(pattern: &str, models: &[ModelInfo]) -> ParsedPattern {
    if let Some(index) = try_match(pattern, models) {
        return ParsedPattern {
            index: Some(index),
            ..Default::default()
        };
    }
    let Some((prefix, suffix)) = pattern.rsplit_once(':') else {
        return ParsedPattern::default();
    };
    let inner = parse_model_pattern(prefix, models);
    if inner.index.is_none() {
        return inner;
    }
    if is_valid_thinking_level(suffix) {
        let thinking_level = if inner.warning.is_some() {
            None
        } else {
            Some(suffix.to_string())
        };
        ParsedPattern {
            index: inner.index,
            thinking_level,
            warning: inner.warning,
        }
    } else {
        ParsedPattern {
            index: inner.index,
            thinking_level: None,
            warning: Some(format!(
                "Invalid thinking level \"{suffix}\" in pattern \"{pattern}\". Using default instead."
            )),
        }
    }
}

fn same(a: &Model, b: Option<&Model>) -> bool {
    b.is_some_and(|b| a.provider == b.provider && a.id == b.id)
}

pub(crate) fn scoped_models_for_state(rt: &Runtime) -> Vec<RpcScopedModel> {
    rt.models
        .scoped()
        .iter()
        .map(|s| RpcScopedModel {
            provider: s.model.provider.clone(),
            id: s.model.id.clone(),
            name: Some(s.model.name.clone()),
            reasoning: Some(s.model.reasoning),
            thinking_level: s.thinking_level,
        })
        .collect()
}

/// The `Model` commands.
impl ModelHandler for Runtime {
    async fn set_model(
        &self,
        _ctx: &RequestContext,
        p: SetModelParams,
    ) -> Result<dreb_protocol::Model, errors::SetModelError> {
        use errors::SetModelError as E;
        let model = {
            let registry = self.models.registry();
            registry
                .available()
                .into_iter()
                .find(|m| m.provider == p.provider && m.id == p.model_id)
                .ok_or(E::ModelNotFound {
                    provider: p.provider,
                    model_id: p.model_id,
                })?
        };
        let agent = &self.agent;
        let previous = agent.model();
        agent.set_model(Some(model.clone()));
        crate::commands::discovery::name_model_in_system_prompt(self, &model.provider, &model.id);
        self.sessions
            .lock()
            .append_model_change(&model.provider, &model.id)
            .map_err(E::unexpected)?;
        // Re-clamp the thinking level for the new model.
        let level = clamp_thinking_level(&model, agent.thinking_level());
        if level != agent.thinking_level() {
            agent.set_thinking_level(level);
            self.sessions
                .lock()
                .append_thinking_level_change(level.as_str())
                .map_err(E::unexpected)?;
        }
        let (provider, id) = (model.provider.clone(), model.id.clone());
        self.settings
            .persist(move |s| s.set_default_model_and_provider(&provider, &id))
            .await
            .map_err(E::unexpected)?;
        crate::announce::model_select(&self.hooks, &self.agent, previous.as_ref()).await;
        Ok(model)
    }

    async fn resolve_model(
        &self,
        _ctx: &RequestContext,
        p: ResolveModelParams,
    ) -> Result<Option<ResolveModelResult>, errors::ResolveModelError> {
        let mut available = self.models.refreshed_available();
        let infos: Vec<ModelInfo> = available.iter().map(model_info).collect();
        let parsed = parse_model_pattern(&p.pattern, &infos);
        let Some(index) = parsed.index else {
            return Ok(None);
        };
        Ok(Some(ResolveModelResult {
            model: available.swap_remove(index),
            warning: parsed.warning,
        }))
    }

    async fn cycle_model(
        &self,
        _ctx: &RequestContext,
        _p: CycleModelParams,
    ) -> Result<Option<ModelCycleResult>, errors::CycleModelError> {
        use errors::CycleModelError as E;
        let agent = &self.agent;
        let current = agent.model();
        let scoped = &self.models.scoped();
        let is_scoped = !scoped.is_empty();
        let (next, pinned) = {
            let registry = self.models.registry();
            let candidates: Vec<(Model, Option<ThinkingLevel>)> = if is_scoped {
                // Only scoped models whose provider has a key take part.
                scoped
                    .iter()
                    .filter(|s| {
                        registry.api_key(&s.model.provider).is_some()
                            || !dreb_ai::providers::requires_api_key(&s.model)
                    })
                    .map(|s| (s.model.clone(), s.thinking_level))
                    .collect()
            } else {
                registry
                    .available()
                    .into_iter()
                    .map(|m| (m, None))
                    .collect()
            };
            if candidates.len() <= 1 {
                return Ok(None);
            }
            let index = candidates
                .iter()
                .position(|(m, _)| same(m, current.as_ref()))
                .unwrap_or(0);
            let (next, pinned) = candidates[(index + 1) % candidates.len()].clone();
            if !is_scoped
                && !matches!(registry.api_key_for(&next), Ok(Some(_)))
                && dreb_ai::providers::requires_api_key(&next)
            {
                return Err(E::NoApiKey {
                    provider: next.provider.clone(),
                    model_id: next.id.clone(),
                });
            }
            let from_models_json = registry.prompt_settings(&next.provider, &next.id).is_some();
            let from_settings = self
                .settings
                .model_prompt_settings(&next.provider, &next.id)
                .map_err(E::unexpected)?;
            if from_models_json && from_settings.is_some() {
                return Err(E::SystemPromptConflict {
                    model: format!("{}/{}", next.provider, next.id),
                });
            }
            (next, pinned)
        };
        // The level to carry over: the scope's pinned level, else the session's (or the saved default when the
        // current model cannot think).
        let requested = pinned.unwrap_or_else(|| {
            if current.as_ref().is_some_and(|m| m.reasoning) {
                agent.thinking_level()
            } else {
                self.settings
                    .default_thinking_level()
                    .and_then(|t| ThinkingLevel::parse(&t))
                    .unwrap_or(ThinkingLevel::Xhigh)
            }
        });
        let previous = agent.model();
        agent.set_model(Some(next.clone()));
        crate::commands::discovery::name_model_in_system_prompt(self, &next.provider, &next.id);
        crate::announce::model_select(&self.hooks, &self.agent, previous.as_ref()).await;
        self.sessions
            .lock()
            .append_model_change(&next.provider, &next.id)
            .map_err(E::unexpected)?;
        let (provider, id) = (next.provider.clone(), next.id.clone());
        self.settings
            .persist(move |s| s.set_default_model_and_provider(&provider, &id))
            .await
            .map_err(E::unexpected)?;
        // Clamp to the new model; record and persist only a change.
        let level = clamp_thinking_level(&next, requested);
        if level != agent.thinking_level() {
            agent.set_thinking_level(level);
            self.sessions
                .lock()
                .append_thinking_level_change(level.as_str())
                .map_err(E::unexpected)?;
            if next.reasoning || level != ThinkingLevel::Off {
                self.settings
                    .persist(move |s| s.set_default_thinking_level(level.as_str()))
                    .await
                    .map_err(E::unexpected)?;
            }
        }
        Ok(Some(ModelCycleResult {
            model: next,
            thinking_level: agent.thinking_level(),
            is_scoped,
        }))
    }

    async fn get_available_models(
        &self,
        _ctx: &RequestContext,
        _p: GetAvailableModelsParams,
    ) -> Result<AvailableModelsResult, errors::GetAvailableModelsError> {
        Ok(AvailableModelsResult {
            models: self.models.refreshed_available(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(provider: &str, id: &str) -> ModelInfo {
        ModelInfo {
            provider: provider.into(),
            id: id.into(),
            name: id.into(),
            reasoning: true,
            supports_xhigh: false,
            supports_max: false,
        }
    }

    #[test]
    fn pattern_rules() {
        let models = vec![
            info("anthropic", "claude-sonnet-4-5"),
            info("openrouter", "qwen/qwen3:exacto"),
            info("openai", "gpt-5"),
        ];
        assert_eq!(parse_model_pattern("sonnet", &models).index, Some(0));
        // An id containing a colon matches whole before any suffix split.
        assert_eq!(
            parse_model_pattern("qwen/qwen3:exacto", &models).index,
            Some(1)
        );
        let p = parse_model_pattern("sonnet:high", &models);
        assert_eq!(
            (p.index, p.thinking_level.as_deref(), p.warning),
            (Some(0), Some("high"), None)
        );
        let p = parse_model_pattern("openai/gpt-5:turbo", &models);
        assert_eq!(p.index, Some(2));
        assert_eq!(p.thinking_level, None);
        assert_eq!(
            p.warning.as_deref(),
            Some(
                "Invalid thinking level \"turbo\" in pattern \"openai/gpt-5:turbo\". Using default instead."
            )
        );
        // A valid suffix after an invalid one: the inner warning wins and the level is dropped.
        let p = parse_model_pattern("gpt-5:bad:low", &models);
        assert_eq!((p.index, p.thinking_level.clone()), (Some(2), None));
        assert!(p.warning.is_some());
        assert_eq!(
            parse_model_pattern("no-such-model", &models),
            ParsedPattern::default()
        );
        assert_eq!(parse_model_pattern("nothing:high", &models).index, None);
    }
}
