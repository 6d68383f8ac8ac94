//! Thinking-level capabilities of a model and the two clamping rules the reference uses:
//! [`effective_thinking_level`] (what `agent_start` reports and providers send) and [`clamp_thinking_level`]
//! (what `set_thinking_level` stores). Shared with the runtime so both layers agree.

use dreb_ai::{Model, ThinkingLevel};

/// Whether the model has the native `max` reasoning tier (GPT-5.6 families).
pub fn supports_max(model: &Model) -> bool {
    let id = model.id.to_lowercase();
    // `gpt-5.6` at the start of the id or after a `/`, followed by the end, `-` or `.`.
    let needle = "gpt-5.6";
    let mut from = 0;
    while let Some(pos) = id[from..].find(needle) {
        let start = from + pos;
        let end = start + needle.len();
        let before_ok = start == 0 || id.as_bytes()[start - 1] == b'/';
        let after_ok = end == id.len() || matches!(id.as_bytes()[end], b'-' | b'.');
        if before_ok && after_ok {
            return true;
        }
        from = start + 1;
    }
    false
}

/// Whether the model accepts the `xhigh` level: GPT-5.2…5.6, Claude Opus ≥ 4.6 and Claude 5, Kimi OAuth `k3`,
/// Qwen ≥ 3.8.
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
    match claude_family_version(&model.id) {
        Some((ClaudeFamily::Opus, major, minor)) => {
            major >= 5 || (major == 4 && minor.unwrap_or(0) >= 6)
        }
        Some((ClaudeFamily::Sonnet, major, _)) => major >= 5,
        None => false,
    }
}

/// Claude Opus/Sonnet 4.6+ and Claude 5 use adaptive thinking (where `thinkingDisplay` applies).
pub fn supports_adaptive_thinking(model: &Model) -> bool {
    matches!(claude_family_version(&model.id), Some((_, major, minor)) if major >= 5 || (major == 4 && minor.unwrap_or(0) >= 6))
}

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

/// The levels a model offers (`availableThinkingLevels`).
pub fn available_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    use ThinkingLevel::*;
    if !model.reasoning {
        return vec![Off];
    }
    if supports_max(model) {
        return vec![Off, Minimal, Low, Medium, High, Xhigh, Max];
    }
    if supports_xhigh(model) {
        return vec![Off, Minimal, Low, Medium, High, Xhigh];
    }
    vec![Off, Minimal, Low, Medium, High]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClaudeFamily {
    Opus,
    Sonnet,
}

fn digits_at(s: &[u8], at: usize) -> usize {
    s[at.min(s.len())..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count()
}

fn parse_num(s: &[u8]) -> u32 {
    s.iter().fold(0u32, |acc, d| {
        acc.saturating_mul(10).saturating_add((d - b'0') as u32)
    })
}

/// `(opus|sonnet)-MAJOR([.-]MINOR)?` with 1–2 digit parts not followed by another digit (so date suffixes such
/// as `-20250514` are not read as a minor version). First match in the id wins.
fn claude_family_version(id: &str) -> Option<(ClaudeFamily, u32, Option<u32>)> {
    let b = id.as_bytes();
    for start in 0..b.len() {
        let (family, after) = if b[start..].starts_with(b"opus-") {
            (ClaudeFamily::Opus, start + 5)
        } else if b[start..].starts_with(b"sonnet-") {
            (ClaudeFamily::Sonnet, start + 7)
        } else {
            continue;
        };
        let not_digit_at = |i: usize| i >= b.len() || !b[i].is_ascii_digit();
        let avail = digits_at(b, after).min(2);
        for major_len in (1..=avail).rev() {
            let major_end = after + major_len;
            let major = parse_num(&b[after..major_end]);
            if major_end < b.len() && matches!(b[major_end], b'.' | b'-') {
                let minor_start = major_end + 1;
                let mavail = digits_at(b, minor_start).min(2);
                for minor_len in (1..=mavail).rev() {
                    let minor_end = minor_start + minor_len;
                    if not_digit_at(minor_end) {
                        return Some((family, major, Some(parse_num(&b[minor_start..minor_end]))));
                    }
                }
            }
            if not_digit_at(major_end) {
                return Some((family, major, None));
            }
        }
    }
    None
}

/// Qwen generation from ids such as `qwen3.8-27b`, `Qwen-3.8`, `qwen3-32b` (3.0). A digit directly followed by a
/// `b`-suffixed size token is a parameter count, not a version (`qwen-32b`, `Qwen-7B-Chat`).
fn qwen_family_version(id: &str) -> Option<(u32, u32)> {
    let lower = id.to_ascii_lowercase();
    let b = lower.as_bytes();
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    // Rejects a position where `[\d.]*b` followed by a word boundary starts.
    let size_token_at = |mut i: usize| {
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        i < b.len() && b[i] == b'b' && (i + 1 == b.len() || !is_word(b[i + 1]))
    };
    for start in 0..b.len() {
        if !b[start..].starts_with(b"qwen") || (start > 0 && is_word(b[start - 1])) {
            continue;
        }
        let mut i = start + 4;
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b'_' || b[i] == b'-') {
            i += 1;
        }
        // `v?` then one digit; try with the `v` consumed first, then without.
        let candidates: &[usize] = if i < b.len() && b[i] == b'v' {
            &[i + 1, i]
        } else {
            &[i]
        };
        for &d in candidates {
            if d >= b.len() || !b[d].is_ascii_digit() {
                continue;
            }
            let major = (b[d] - b'0') as u32;
            let after_major = d + 1;
            if after_major < b.len() && b[after_major] == b'.' {
                let n = digits_at(b, after_major + 1);
                for len in (1..=n).rev() {
                    let end = after_major + 1 + len;
                    if !size_token_at(end) {
                        return Some((major, parse_num(&b[after_major + 1..end])));
                    }
                }
            }
            if !size_token_at(after_major) {
                return Some((major, 0));
            }
        }
    }
    None
}

fn is_qwen_38_or_later(id: &str) -> bool {
    matches!(qwen_family_version(id), Some((major, minor)) if major > 3 || (major == 3 && minor >= 8))
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
