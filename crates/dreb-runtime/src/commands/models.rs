//! Models and thinking levels.

use dreb_agent::{available_thinking_levels, clamp_thinking_level};
use dreb_ai::ThinkingLevel;
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;

use crate::services::Runtime;

/// Apply a thinking level (clamped); on change, record it in the session and persist it as the default.
async fn apply_thinking_level(
    rt: &Runtime,
    requested: ThinkingLevel,
) -> Result<ThinkingLevel, String> {
    let agent = &rt.agent;
    let Some(model) = agent.model() else {
        agent.set_thinking_level(requested);
        return Ok(requested);
    };
    let level = clamp_thinking_level(&model, requested);
    if level != agent.thinking_level() {
        agent.set_thinking_level(level);
        rt.sessions
            .lock()
            .append_thinking_level_change(level.as_str())
            .map_err(|e| e.to_string())?;
        if model.reasoning || level != ThinkingLevel::Off {
            rt.settings
                .persist(move |s| s.set_default_thinking_level(level.as_str()))
                .await?;
        }
    }
    Ok(level)
}

/// The `Thinking` commands.
impl ThinkingHandler for Runtime {
    async fn set_thinking_level(
        &self,
        _ctx: &RequestContext,
        p: SetThinkingLevelParams,
    ) -> Result<(), errors::SetThinkingLevelError> {
        use errors::SetThinkingLevelError as E;
        let requested: ThinkingLevel = p.level;
        apply_thinking_level(self, requested)
            .await
            .map(|_| ())
            .map_err(E::unexpected)
    }

    async fn cycle_thinking_level(
        &self,
        _ctx: &RequestContext,
        _p: CycleThinkingLevelParams,
    ) -> Result<Option<ThinkingLevelResult>, errors::CycleThinkingLevelError> {
        use errors::CycleThinkingLevelError as E;
        let agent = &self.agent;
        let Some(model) = agent.model().filter(|m| m.reasoning) else {
            return Ok(None);
        };
        let levels = available_thinking_levels(&model);
        let current = agent.thinking_level();
        let next = match levels.iter().position(|l| *l == current) {
            Some(i) => levels[(i + 1) % levels.len()],
            None => levels[0],
        };
        let level = apply_thinking_level(self, next)
            .await
            .map_err(E::unexpected)?;
        Ok(Some(ThinkingLevelResult { level }))
    }
}
