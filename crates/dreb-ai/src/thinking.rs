//! Which reasoning levels a model supports, and the level → request-parameter rules shared by the providers.

use std::sync::LazyLock;

use regex::Regex;

use crate::types::{Model, ThinkingLevel};

/// Output budget when the caller sets none: `min(model.maxTokens, 32000)`.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 32_000;

/// The request's output token budget.
pub fn base_max_tokens(model: &Model, requested: Option<u64>) -> u64 {
    requested
        .filter(|n| *n > 0)
        .unwrap_or_else(|| model.max_output_tokens().min(DEFAULT_MAX_OUTPUT_TOKENS))
}

static CLAUDE_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(opus|sonnet)-(\d{1,2})(?:[.-](\d{1,2}))?(\D|$)").expect("valid regex")
});
static QWEN_VERSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\bqwen[\s_-]*v?(\d)(?:\.(\d+))?([\d.]*b\b)?").expect("valid regex")
});
static GPT56: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:^|/)gpt-5\.6(?:$|[-.])").expect("valid regex"));

/// (family, major, minor) of a Claude Opus/Sonnet id. A two-digit "minor" that is really a date is not a minor.
fn claude_version(id: &str) -> Option<(String, u32, Option<u32>)> {
    let c = CLAUDE_VERSION.captures(id)?;
    let major: u32 = c.get(2)?.as_str().parse().ok()?;
    let minor = c.get(3).and_then(|m| m.as_str().parse().ok());
    Some((c[1].to_string(), major, minor))
}

fn is_qwen_38_or_later(id: &str) -> bool {
    let Some(c) = QWEN_VERSION.captures(id) else {
        return false;
    };
    if c.get(3).is_some() {
        return false; // a parameter-count suffix like "3-32b", not a version
    }
    let major: u32 = c[1].parse().unwrap_or(0);
    let minor: u32 = c.get(2).and_then(|m| m.as_str().parse().ok()).unwrap_or(0);
    major > 3 || (major == 3 && minor >= 8)
}

/// Claude Opus/Sonnet ≥ 4.6 and Claude 5: adaptive thinking with an effort level instead of a token budget.
pub fn supports_adaptive_thinking(model: &Model) -> bool {
    matches!(claude_version(&model.id), Some((_, major, minor)) if major >= 5 || (major == 4 && minor.unwrap_or(0) >= 6))
}

/// Models with an extra-high reasoning level.
pub fn supports_xhigh(model: &Model) -> bool {
    if model.provider == "kimi-coding-oauth" && model.id == "k3" {
        return true;
    }
    if is_qwen_38_or_later(&model.id) {
        return true;
    }
    if ["gpt-5.2", "gpt-5.3", "gpt-5.4", "gpt-5.5", "gpt-5.6"]
        .iter()
        .any(|v| model.id.contains(v))
    {
        return true;
    }
    match claude_version(&model.id) {
        Some((family, major, minor)) if family == "opus" => {
            major >= 5 || (major == 4 && minor.unwrap_or(0) >= 6)
        }
        Some((_, major, _)) => major >= 5,
        None => false,
    }
}

/// Models with a level above xhigh.
pub fn supports_max(model: &Model) -> bool {
    GPT56.is_match(&model.id.to_lowercase())
}

/// The thinking levels a model accepts, lowest first.
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    let mut levels = vec![
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
    ];
    if supports_xhigh(model) {
        levels.push(ThinkingLevel::Xhigh);
    }
    if supports_max(model) {
        levels.push(ThinkingLevel::Max);
    }
    levels
}

/// Clamps a requested level to the highest one the model supports (non-reasoning models: off).
pub fn clamp_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let levels = supported_thinking_levels(model);
    levels
        .iter()
        .copied()
        .filter(|l| *l <= level)
        .max()
        .unwrap_or(ThinkingLevel::Off)
}

/// The effort sent to OpenAI-style APIs: max → xhigh (if supported) else high; xhigh → high when unsupported.
pub fn resolve_reasoning_effort(model: &Model, level: ThinkingLevel) -> Option<ThinkingLevel> {
    match level {
        ThinkingLevel::Off => None,
        ThinkingLevel::Max if !supports_max(model) => Some(if supports_xhigh(model) {
            ThinkingLevel::Xhigh
        } else {
            ThinkingLevel::High
        }),
        ThinkingLevel::Xhigh if !supports_xhigh(model) => Some(ThinkingLevel::High),
        l => Some(l),
    }
}

/// xhigh/max → high, for APIs with four levels.
pub fn clamp_to_high(level: ThinkingLevel) -> ThinkingLevel {
    match level {
        ThinkingLevel::Xhigh | ThinkingLevel::Max => ThinkingLevel::High,
        l => l,
    }
}

/// Default token budgets for budget-based thinking.
pub fn default_thinking_budget(level: ThinkingLevel) -> u64 {
    match clamp_to_high(level) {
        ThinkingLevel::Minimal => 1024,
        ThinkingLevel::Low => 2048,
        ThinkingLevel::Medium => 8192,
        _ => 16384,
    }
}

/// Token budgets per level overriding the defaults (settings `thinkingBudgets {minimal, low, medium, high}`); used by
/// budget-based thinking (older Claude models, Gemini 2.x).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThinkingBudgets {
    pub minimal: Option<u64>,
    pub low: Option<u64>,
    pub medium: Option<u64>,
    pub high: Option<u64>,
}

impl ThinkingBudgets {
    /// Reads the settings object; non-numeric entries are ignored.
    pub fn from_settings(map: &serde_json::Map<String, serde_json::Value>) -> Self {
        let get = |k: &str| {
            map.get(k)
                .and_then(serde_json::Value::as_f64)
                .filter(|v| *v >= 0.0)
                .map(|v| v as u64)
        };
        ThinkingBudgets {
            minimal: get("minimal"),
            low: get("low"),
            medium: get("medium"),
            high: get("high"),
        }
    }

    /// The override for a level (xhigh/max use `high`).
    pub fn get(&self, level: ThinkingLevel) -> Option<u64> {
        match clamp_to_high(level) {
            ThinkingLevel::Minimal => self.minimal,
            ThinkingLevel::Low => self.low,
            ThinkingLevel::Medium => self.medium,
            ThinkingLevel::High => self.high,
            _ => None,
        }
    }
}

/// Budget-based thinking: the request's max tokens grow by the budget (up to the model ceiling); if that leaves no
/// room, the budget shrinks so at least 1024 tokens remain for output.
pub fn adjust_max_tokens_for_thinking(
    base_max_tokens: u64,
    model_max_tokens: u64,
    level: ThinkingLevel,
) -> (u64, u64) {
    adjust_max_tokens_with_budgets(
        base_max_tokens,
        model_max_tokens,
        level,
        &ThinkingBudgets::default(),
    )
}

/// [`adjust_max_tokens_for_thinking`] with budget overrides.
pub fn adjust_max_tokens_with_budgets(
    base_max_tokens: u64,
    model_max_tokens: u64,
    level: ThinkingLevel,
    budgets: &ThinkingBudgets,
) -> (u64, u64) {
    let mut budget = budgets
        .get(level)
        .unwrap_or_else(|| default_thinking_budget(level));
    let max_tokens = (base_max_tokens + budget).min(model_max_tokens);
    if max_tokens <= budget {
        budget = max_tokens.saturating_sub(1024);
    }
    (max_tokens, budget)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{InputKind, ModelCost};

    fn m(id: &str, reasoning: bool) -> Model {
        Model {
            id: id.into(),
            name: id.into(),
            api: "x".into(),
            provider: "p".into(),
            base_url: String::new(),
            reasoning,
            input: vec![InputKind::Text],
            cost: ModelCost::default(),
            context_window: 1,
            max_tokens: 64000,
            headers: None,
            wire_model_id: None,
            auth_mode: None,
            compat: None,
        }
    }

    #[test]
    fn claude_families() {
        assert!(supports_adaptive_thinking(&m("claude-opus-4-6", true)));
        assert!(supports_adaptive_thinking(&m("claude-sonnet-4-6", true)));
        assert!(!supports_adaptive_thinking(&m(
            "claude-sonnet-4-5-20250929",
            true
        )));
        assert!(!supports_adaptive_thinking(&m(
            "claude-sonnet-4-20250514",
            true
        )));
        assert!(supports_xhigh(&m("claude-opus-4-6", true)));
        assert!(!supports_xhigh(&m("claude-sonnet-4-6", true)));
        assert!(supports_xhigh(&m("gpt-5.4", true)));
        assert!(supports_max(&m("gpt-5.6", true)));
        assert!(!is_qwen_38_or_later("qwen3-32b"));
        assert!(is_qwen_38_or_later("qwen3.8-coder"));
    }

    #[test]
    fn clamping() {
        assert_eq!(
            clamp_thinking_level(&m("mock", false), ThinkingLevel::High),
            ThinkingLevel::Off
        );
        assert_eq!(
            clamp_thinking_level(&m("o3", true), ThinkingLevel::Max),
            ThinkingLevel::High
        );
        assert_eq!(
            clamp_thinking_level(&m("gpt-5.4", true), ThinkingLevel::Max),
            ThinkingLevel::Xhigh
        );
        assert_eq!(
            resolve_reasoning_effort(&m("o3", true), ThinkingLevel::Xhigh),
            Some(ThinkingLevel::High)
        );
        assert_eq!(
            adjust_max_tokens_for_thinking(32000, 64000, ThinkingLevel::Medium),
            (40192, 8192)
        );
        assert_eq!(
            adjust_max_tokens_for_thinking(1000, 1500, ThinkingLevel::High),
            (1500, 476)
        );
    }
}
