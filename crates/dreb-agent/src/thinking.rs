//! Thinking-level capabilities of a model and the two clamping rules the reference uses:
//! [`effective_thinking_level`] (what `agent_start` reports and providers send) and [`clamp_thinking_level`]
//! (what `set_thinking_level` stores). Shared with the runtime so both layers agree; the tests below pin the
//! capability checks (from dreb-ai) to the reference's cases.

use dreb_ai::{Model, ThinkingLevel};

// The capability checks live with the providers (dreb-ai) so both layers share one definition.
pub use dreb_ai::thinking::{supports_adaptive_thinking, supports_max, supports_xhigh};

/// The level actually sent for a run (reported by `agent_start`): non-reasoning models → `off`; unsupported `max` →
/// `xhigh` if supported, else `high`; unsupported `xhigh` → `high`.
pub fn effective_thinking_level(model: &Model, requested: ThinkingLevel) -> ThinkingLevel {
    if !model.reasoning {
        return ThinkingLevel::Off;
    }
    match requested {
        ThinkingLevel::Max if !supports_max(model) => {
            if supports_xhigh(model) {
                ThinkingLevel::Xhigh
            } else {
                ThinkingLevel::High
            }
        }
        ThinkingLevel::Xhigh if !supports_xhigh(model) => ThinkingLevel::High,
        level => level,
    }
}

/// The levels a model offers (`availableThinkingLevels`): `off` only without reasoning, else off…high plus
/// `xhigh` and `max` where supported.
pub fn available_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    dreb_ai::thinking::supported_thinking_levels(model)
}

/// `set_thinking_level` clamping: the requested level if available, else the nearest available level searching
/// upward first, then downward.
pub fn clamp_thinking_level(model: &Model, requested: ThinkingLevel) -> ThinkingLevel {
    let available = available_thinking_levels(model);
    if available.contains(&requested) {
        return requested;
    }
    let ordered = ThinkingLevel::ALL;
    let idx = ordered.iter().position(|l| *l == requested).unwrap_or(0);
    ordered[idx..]
        .iter()
        .chain(ordered[..idx].iter().rev())
        .find(|l| available.contains(l))
        .copied()
        .unwrap_or(ThinkingLevel::Off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dreb_ai::{ModelCost, ThinkingLevel::*};

    fn model(provider: &str, id: &str, reasoning: bool) -> Model {
        Model {
            id: id.into(),
            name: id.into(),
            api: "openai-completions".into(),
            provider: provider.into(),
            base_url: String::new(),
            reasoning,
            input: vec![],
            cost: ModelCost::default(),
            context_window: 200_000,
            max_tokens: 64_000,
            headers: None,
            wire_model_id: None,
            auth_mode: None,
            compat: None,
        }
    }

    #[test]
    fn capability_checks() {
        let xhigh = [
            ("openai", "gpt-5.2"),
            ("openai", "gpt-5.4-mini"),
            ("anthropic", "claude-opus-4-6"),
            ("anthropic", "claude-opus-4.7-20260101"),
            ("anthropic", "claude-sonnet-5"),
            ("kimi-coding-oauth", "k3"),
            ("ollama", "qwen3.8-27b"),
            ("ollama", "Qwen-3.8"),
            ("ollama", "qwen4"),
        ];
        for (p, id) in xhigh {
            assert!(
                supports_xhigh(&model(p, id, true)),
                "{id} should support xhigh"
            );
        }
        let no_xhigh = [
            ("openai", "gpt-5.1"),
            ("anthropic", "claude-opus-4-5"),
            ("anthropic", "claude-sonnet-4-20250514"),
            ("anthropic", "claude-3-5-sonnet-20241022"),
            ("anthropic", "claude-sonnet-4-6"),
            ("kimi", "k3"),
            ("ollama", "qwen3-32b"),
            ("ollama", "qwen-32b"),
            ("ollama", "Qwen2.5-72B-Instruct"),
            ("ollama", "deepseek-r1-distill-qwen-32b"),
        ];
        for (p, id) in no_xhigh {
            assert!(
                !supports_xhigh(&model(p, id, true)),
                "{id} should not support xhigh"
            );
        }
        assert!(supports_max(&model("openai", "gpt-5.6", true)));
        assert!(supports_max(&model(
            "openrouter",
            "openai/GPT-5.6-sol",
            true
        )));
        assert!(!supports_max(&model("openai", "gpt-5.60", true)));
        assert!(!supports_max(&model("openai", "my-gpt-5.6", true)));
        assert!(supports_adaptive_thinking(&model(
            "anthropic",
            "claude-sonnet-4-6",
            true
        )));
        assert!(!supports_adaptive_thinking(&model(
            "anthropic",
            "claude-sonnet-4-5",
            true
        )));
    }

    #[test]
    fn effective_level_clamps_like_agent_start() {
        let plain = model("openai", "gpt-4o", false);
        assert_eq!(effective_thinking_level(&plain, High), Off);
        let r = model("anthropic", "claude-sonnet-4-5", true);
        assert_eq!(effective_thinking_level(&r, Max), High);
        assert_eq!(effective_thinking_level(&r, Xhigh), High);
        assert_eq!(effective_thinking_level(&r, Medium), Medium);
        let x = model("anthropic", "claude-opus-4-6", true);
        assert_eq!(effective_thinking_level(&x, Max), Xhigh);
        assert_eq!(effective_thinking_level(&x, Xhigh), Xhigh);
        let m = model("openai", "gpt-5.6", true);
        assert_eq!(effective_thinking_level(&m, Max), Max);
    }

    #[test]
    fn set_level_clamping_searches_up_then_down() {
        let plain = model("openai", "gpt-4o", false);
        assert_eq!(available_thinking_levels(&plain), vec![Off]);
        assert_eq!(clamp_thinking_level(&plain, High), Off);
        let r = model("anthropic", "claude-sonnet-4-5", true);
        assert_eq!(
            available_thinking_levels(&r),
            vec![Off, Minimal, Low, Medium, High]
        );
        assert_eq!(clamp_thinking_level(&r, Xhigh), High);
        assert_eq!(clamp_thinking_level(&r, Max), High);
        assert_eq!(clamp_thinking_level(&r, Low), Low);
        let x = model("openai", "gpt-5.4", true);
        assert_eq!(clamp_thinking_level(&x, Max), Xhigh);
        let m = model("openai", "gpt-5.6", true);
        assert_eq!(available_thinking_levels(&m).last(), Some(&Max));
    }
}
