//! Resolution of `enabledModels` scope patterns (`resolveModelScopePatterns`) against the
//! available models, for [`ModelCatalog::resolve_scope`] implementations that want the
//! reference's rules: exact `provider/id` references, bare ids, fuzzy id/name substrings
//! (aliases preferred over dated versions), globs (`*`, `?`, `[...]`, `{a,b}`), and optional
//! `:<thinking level>` suffixes.
//!
//! [`ModelCatalog::resolve_scope`]: crate::ModelCatalog::resolve_scope

use std::cmp::Ordering;

use globset::{GlobBuilder, GlobMatcher};

use crate::model_catalog::{
    ModelInfo, ScopeResolution, ScopeWarning, ScopedModel, is_valid_thinking_level,
};

/// `isModelAlias`: not ending in an 8-digit date (or explicitly `-latest`).
fn is_model_alias(id: &str) -> bool {
    if id.ends_with("-latest") {
        return true;
    }
    let bytes = id.as_bytes();
    let dated = bytes.len() >= 9
        && bytes[bytes.len() - 9] == b'-'
        && bytes[bytes.len() - 8..].iter().all(u8::is_ascii_digit);
    !dated
}

/// Approximates `a.localeCompare(b)` for model ids: case-insensitive first, punctuation
/// before digits before letters (as the root collation orders them).
fn locale_compare(a: &str, b: &str) -> Ordering {
    fn key(c: char) -> (u8, char) {
        let lower = c.to_ascii_lowercase();
        let class = if lower.is_ascii_alphabetic() {
            3
        } else if lower.is_ascii_digit() {
            2
        } else if lower.is_ascii_punctuation() || lower.is_whitespace() {
            1
        } else {
            4
        };
        (class, lower)
    }
    let primary = a.chars().map(key).cmp(b.chars().map(key));
    primary.then_with(|| b.cmp(a)) // lowercase before uppercase on a tie
}

/// `findModelInList`: exact id, else unique id/name substring, else the best alias/dated id.
pub fn find_model_in_list<'a>(pattern: &str, models: &'a [ModelInfo]) -> Option<&'a ModelInfo> {
    let wanted = pattern.to_lowercase();
    if let Some(exact) = models.iter().find(|m| m.id.to_lowercase() == wanted) {
        return Some(exact);
    }
    let matches: Vec<&ModelInfo> = models
        .iter()
        .filter(|m| {
            m.id.to_lowercase().contains(&wanted) || m.name.to_lowercase().contains(&wanted)
        })
        .collect();
    if matches.len() <= 1 {
        return matches.first().copied();
    }
    let (mut aliases, mut dated): (Vec<&ModelInfo>, Vec<&ModelInfo>) =
        matches.into_iter().partition(|m| is_model_alias(&m.id));
    let pool = if aliases.is_empty() {
        &mut dated
    } else {
        &mut aliases
    };
    pool.sort_by(|a, b| locale_compare(&b.id, &a.id));
    pool.first().copied()
}

/// `findExactModelReferenceMatch`: canonical `provider/id` (case-insensitive), else a unique
/// bare id. Ambiguity gives `None`.
pub fn find_exact_model_reference<'a>(
    reference: &str,
    models: &'a [ModelInfo],
) -> Option<&'a ModelInfo> {
    let trimmed = crate::js::js_trim(reference);
    if trimmed.is_empty() {
        return None;
    }
    let wanted = trimmed.to_lowercase();
    let canonical: Vec<&ModelInfo> = models
        .iter()
        .filter(|m| m.reference().to_lowercase() == wanted)
        .collect();
    match canonical.len() {
        1 => return Some(canonical[0]),
        n if n > 1 => return None,
        _ => {}
    }
    if let Some((provider, id)) = trimmed.split_once('/') {
        let (provider, id) = (
            crate::js::js_trim(provider).to_lowercase(),
            crate::js::js_trim(id).to_lowercase(),
        );
        if !provider.is_empty() && !id.is_empty() {
            let hits: Vec<&ModelInfo> = models
                .iter()
                .filter(|m| m.provider.to_lowercase() == provider && m.id.to_lowercase() == id)
                .collect();
            match hits.len() {
                1 => return Some(hits[0]),
                n if n > 1 => return None,
                _ => {}
            }
        }
    }
    let by_id: Vec<&ModelInfo> = models
        .iter()
        .filter(|m| m.id.to_lowercase() == wanted)
        .collect();
    (by_id.len() == 1).then(|| by_id[0])
}

struct ParsedPattern<'a> {
    model: Option<&'a ModelInfo>,
    thinking_level: Option<String>,
    warning: Option<String>,
}

/// `parseModelPattern` in scope mode (an invalid `:suffix` falls back with a warning).
fn parse_model_pattern<'a>(pattern: &str, models: &'a [ModelInfo]) -> ParsedPattern<'a> {
    if let Some(m) =
        find_exact_model_reference(pattern, models).or_else(|| find_model_in_list(pattern, models))
    {
        return ParsedPattern {
            model: Some(m),
            thinking_level: None,
            warning: None,
        };
    }
    let Some((prefix, suffix)) = pattern.rsplit_once(':') else {
        return ParsedPattern {
            model: None,
            thinking_level: None,
            warning: None,
        };
    };
    let inner = parse_model_pattern(prefix, models);
    if inner.model.is_none() {
        return inner;
    }
    if is_valid_thinking_level(suffix) {
        let thinking_level = inner.warning.is_none().then(|| suffix.to_string());
        ParsedPattern {
            thinking_level,
            ..inner
        }
    } else {
        ParsedPattern {
            model: inner.model,
            thinking_level: None,
            warning: Some(format!(
                "Invalid thinking level \"{suffix}\" in pattern \"{pattern}\". Using default instead."
            )),
        }
    }
}

/// The reference's `minimatch(name, glob, {nocase: true})`, on globset: case-insensitive; `*`, `?` and classes
/// (`[a-z]`, `[!x]`, `[^x]`) stay within a `/` segment; `**` alone in a segment crosses segments (elsewhere it is a
/// `*`); `{a,b}` alternatives. A glob globset rejects (an unclosed `[`) is retried with its `[`s literal, as
/// minimatch reads them; `None` when it still does not build (it then matches nothing).
fn glob_matcher(glob: &str) -> Option<GlobMatcher> {
    let build = |g: &str| {
        GlobBuilder::new(g)
            .case_insensitive(true)
            .literal_separator(true)
            .build()
            .map(|g| g.compile_matcher())
    };
    build(glob)
        .or_else(|_| build(&glob.replace('[', "[[]")))
        .ok()
}

/// `resolveModelScopePatterns`: ordered, de-duplicated models plus per-pattern warnings.
pub fn resolve_model_scope_patterns(
    patterns: &[String],
    available: &[ModelInfo],
) -> ScopeResolution {
    let mut out = ScopeResolution::default();
    let push = |out: &mut ScopeResolution, model: &ModelInfo, thinking_level: Option<String>| {
        if !out
            .models
            .iter()
            .any(|s| s.model.provider == model.provider && s.model.id == model.id)
        {
            out.models.push(ScopedModel {
                model: model.clone(),
                thinking_level,
            });
        }
    };
    for pattern in patterns {
        let no_match = || ScopeWarning {
            pattern: pattern.clone(),
            message: format!("No models match pattern \"{pattern}\""),
        };
        if pattern.contains(['*', '?', '[']) {
            let (glob, level) = match pattern.rsplit_once(':') {
                Some((g, l)) if is_valid_thinking_level(l) => (g, Some(l.to_string())),
                _ => (pattern.as_str(), None),
            };
            let matcher = glob_matcher(glob);
            let matching: Vec<&ModelInfo> = available
                .iter()
                .filter(|m| {
                    matcher
                        .as_ref()
                        .is_some_and(|g| g.is_match(m.reference()) || g.is_match(&m.id))
                })
                .collect();
            if matching.is_empty() {
                out.warnings.push(no_match());
                continue;
            }
            for model in matching {
                push(&mut out, model, level.clone());
            }
            continue;
        }
        let parsed = parse_model_pattern(pattern, available);
        if let Some(warning) = parsed.warning {
            out.warnings.push(ScopeWarning {
                pattern: pattern.clone(),
                message: warning,
            });
        }
        match parsed.model {
            Some(model) => push(&mut out, model, parsed.thinking_level),
            None => out.warnings.push(no_match()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(provider: &str, id: &str, name: &str) -> ModelInfo {
        ModelInfo {
            provider: provider.into(),
            id: id.into(),
            name: name.into(),
            reasoning: true,
            supports_xhigh: false,
            supports_max: false,
        }
    }

    fn models() -> Vec<ModelInfo> {
        vec![
            m("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5"),
            m(
                "anthropic",
                "claude-sonnet-4-5-20250929",
                "Claude Sonnet 4.5 (dated)",
            ),
            m("anthropic", "claude-opus-4-6", "Claude Opus 4.6"),
            m("openai", "gpt-5.4", "GPT-5.4"),
            m("openrouter", "openai/gpt-5.1-codex", "Codex via OpenRouter"),
            m("mock", "mock-model", "Mock"),
        ]
    }

    fn resolve(patterns: &[&str]) -> (Vec<String>, Vec<String>) {
        let patterns: Vec<String> = patterns.iter().map(|s| s.to_string()).collect();
        let r = resolve_model_scope_patterns(&patterns, &models());
        (
            r.models
                .iter()
                .map(|s| match &s.thinking_level {
                    Some(l) => format!("{}:{l}", s.model.reference()),
                    None => s.model.reference(),
                })
                .collect(),
            r.warnings.iter().map(|w| w.message.clone()).collect(),
        )
    }

    #[test]
    fn exact_fuzzy_and_levels() {
        assert_eq!(resolve(&["MOCK/mock-model"]).0, ["mock/mock-model"]);
        assert_eq!(
            resolve(&["sonnet"]).0,
            ["anthropic/claude-sonnet-4-5"],
            "alias preferred over dated"
        );
        assert_eq!(
            resolve(&["opus:high"]).0,
            ["anthropic/claude-opus-4-6:high"]
        );
        assert_eq!(
            resolve(&["openrouter/openai/gpt-5.1-codex:low"]).0,
            ["openrouter/openai/gpt-5.1-codex:low"]
        );
        let (models, warnings) = resolve(&["gpt-5.4:turbo"]);
        assert_eq!(models, ["openai/gpt-5.4"]);
        assert_eq!(
            warnings,
            [
                "Invalid thinking level \"turbo\" in pattern \"gpt-5.4:turbo\". Using default instead."
            ]
        );
        assert_eq!(
            resolve(&["nothing-like-it"]).1,
            ["No models match pattern \"nothing-like-it\""]
        );
        assert_eq!(
            resolve(&["mock-model", "mock/mock-model"]).0,
            ["mock/mock-model"],
            "deduplicated"
        );
    }

    #[test]
    fn globs() {
        assert_eq!(
            resolve(&["anthropic/*sonnet*:medium"]).0,
            [
                "anthropic/claude-sonnet-4-5:medium",
                "anthropic/claude-sonnet-4-5-20250929:medium"
            ]
        );
        assert_eq!(resolve(&["*OPUS*"]).0, ["anthropic/claude-opus-4-6"]);
        assert_eq!(
            resolve(&["openrouter/*"]).0,
            Vec::<String>::new(),
            "* stays within a segment"
        );
        assert_eq!(
            resolve(&["openrouter/**"]).0,
            ["openrouter/openai/gpt-5.1-codex"]
        );
        assert_eq!(resolve(&["gpt-5.[0-4]"]).0, ["openai/gpt-5.4"]);
        assert_eq!(
            resolve(&["anthropic/claude-{opus,sonnet}-4-?"]).0,
            ["anthropic/claude-sonnet-4-5", "anthropic/claude-opus-4-6"]
        );
        assert_eq!(resolve(&["zzz*"]).1, ["No models match pattern \"zzz*\""]);
        // minimatch: `**` crosses segments only alone in one; `a**` is `a*`.
        assert_eq!(resolve(&["openrouter**"]).0, Vec::<String>::new());
        assert_eq!(
            resolve(&["**/gpt-5.1-*"]).0,
            ["openrouter/openai/gpt-5.1-codex"]
        );
        assert_eq!(resolve(&["GPT-5.[!0-3]"]).0, ["openai/gpt-5.4"]);
        assert_eq!(resolve(&["gpt-5.[^4]"]).0, Vec::<String>::new());
        assert_eq!(
            resolve(&["anthropic/claude-{opus-4-?,{sonnet,haiku}-4-5}"]).0,
            ["anthropic/claude-sonnet-4-5", "anthropic/claude-opus-4-6"],
            "nested alternatives"
        );
        // An unclosed class is a literal `[`, as minimatch reads it.
        let odd = [m("local", "odd[1]", "Odd")];
        let r = resolve_model_scope_patterns(&["local/ODD[1*".to_string()], &odd);
        assert_eq!(r.models.len(), 1, "{:?}", r.warnings);
        assert_eq!(
            resolve(&["gpt-5.4["]).1,
            ["No models match pattern \"gpt-5.4[\""]
        );
    }

    #[test]
    fn alias_detection() {
        assert!(is_model_alias("claude-sonnet-4-5"));
        assert!(!is_model_alias("claude-sonnet-4-5-20250929"));
        assert!(is_model_alias("model-20250929-latest"));
    }
}
