//! Secret scrubbing of tool output: private keys, cloud and API tokens, URL passwords become
//! `<REDACTED:name>` before the text reaches the model.

use std::sync::OnceLock;

use fancy_regex::{Captures, Regex};

/// A named pattern (JavaScript regex syntax).
#[derive(Debug, Clone)]
pub struct SecretPattern {
    pub name: String,
    pub regex: Regex,
}

impl SecretPattern {
    pub fn new(name: impl Into<String>, pattern: &str) -> Result<Self, String> {
        Ok(SecretPattern {
            name: name.into(),
            regex: Regex::new(pattern).map_err(|e| e.to_string())?,
        })
    }
}

fn defaults() -> &'static Vec<SecretPattern> {
    static D: OnceLock<Vec<SecretPattern>> = OnceLock::new();
    D.get_or_init(|| {
        [
            // Multi-line patterns first.
            ("pem_private_key", r"-----BEGIN (?:RSA |EC |DSA |ENCRYPTED )?PRIVATE KEY-----[\s\S]*?-----END (?:RSA |EC |DSA |ENCRYPTED )?PRIVATE KEY-----"),
            ("openssh_private_key", r"-----BEGIN OPENSSH PRIVATE KEY-----[\s\S]*?-----END OPENSSH PRIVATE KEY-----"),
            ("aws_access_key", r"\bAKIA[0-9A-Z]{16}\b"),
            ("github_token", r"ghp_[A-Za-z0-9_]{36,}|gho_[A-Za-z0-9_]{36,}|ghu_[A-Za-z0-9_]{36,}|ghs_[A-Za-z0-9_]{36,}|ghr_[A-Za-z0-9_]{36,}|github_pat_[A-Za-z0-9_]{22,}"),
            ("gitlab_token", r"glpat-[0-9a-zA-Z_-]{20,}"),
            ("anthropic_key", r"sk-ant-[a-zA-Z0-9_-]{90,}"),
            ("openai_key", r"sk-(?!ant-)[a-zA-Z0-9_-]{20,}"),
            ("slack_token", r"xox[baprs]-[0-9a-zA-Z-]{10,}"),
            ("stripe_key", r"[sr]k_(?:test|live)_[0-9a-zA-Z]{24,}"),
            ("url_credentials", r"(https?://)([^\s:]+):([^\s@]+)@"),
        ]
        .iter()
        .map(|(n, p)| SecretPattern::new(*n, p).expect("valid built-in secret pattern"))
        .collect()
    })
}

/// The settings' `secretOutputPatterns` (`[{name, pattern}]`) compiled; empty or invalid ones are skipped with
/// a warning, as the reference does.
pub fn compile_extra_secret_patterns(entries: &[(String, String)]) -> Vec<SecretPattern> {
    entries
        .iter()
        .filter_map(|(name, pattern)| {
            if pattern.trim().is_empty() {
                tracing::warn!("[secret-scrubber] Skipping empty or invalid pattern in secretOutputPatterns: \"{name}\"");
                return None;
            }
            match SecretPattern::new(name.clone(), pattern) {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::warn!(
                        "[secret-scrubber] Skipping invalid regex in secretOutputPatterns \"{name}\": {pattern} — {e}"
                    );
                    None
                }
            }
        })
        .collect()
}

/// Scrubbed text and how many secrets were replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScrubResult {
    pub scrubbed: String,
    pub redaction_count: usize,
}

fn apply(p: &SecretPattern, text: &str, count: &mut usize) -> String {
    let url = p.name == "url_credentials";
    let name = p.name.clone();
    let mut n = 0usize;
    // A pathological user pattern that exceeds the backtracking limit leaves the text unchanged.
    let out = match p.regex.try_replacen(text, 0, |c: &Captures| {
        n += 1;
        if url {
            format!("{}{}:<REDACTED:url_credentials>@", &c[1], &c[2])
        } else {
            format!("<REDACTED:{name}>")
        }
    }) {
        Ok(s) => s.into_owned(),
        Err(_) => return text.to_string(),
    };
    *count += n;
    out
}

/// Replace every secret in `text` (built-in patterns, then `extra`).
pub fn scrub_secrets(text: &str, extra: &[SecretPattern]) -> ScrubResult {
    let mut count = 0;
    let mut s = text.to_string();
    for p in defaults().iter().chain(extra.iter()) {
        s = apply(p, &s, &mut count);
    }
    ScrubResult {
        scrubbed: s,
        redaction_count: count,
    }
}

/// The after-tool-call step: scrub every text block of a result. Returns the new content when anything was
/// redacted (the hook's "override content"), `None` when nothing changed.
pub fn scrub_tool_content(
    content: &[dreb_ai::UserBlock],
    extra: &[SecretPattern],
) -> Option<Vec<dreb_ai::UserBlock>> {
    let mut total = 0;
    let out: Vec<dreb_ai::UserBlock> = content
        .iter()
        .map(|b| match b {
            dreb_ai::UserBlock::Text(t) if !t.text.is_empty() => {
                let r = scrub_secrets(&t.text, extra);
                total += r.redaction_count;
                dreb_ai::UserBlock::Text(dreb_ai::TextContent {
                    text: r.scrubbed,
                    text_signature: t.text_signature.clone(),
                    ..Default::default()
                })
            }
            other => other.clone(),
        })
        .collect();
    (total > 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_known_secrets() {
        let cases = [
            (
                "key AKIAIOSFODNN7EXAMPLE here",
                "key <REDACTED:aws_access_key> here",
            ),
            (
                &format!("t=ghp_{}", "a".repeat(36)),
                "t=<REDACTED:github_token>",
            ),
            (
                &format!("glpat-{}", "x".repeat(20)),
                "<REDACTED:gitlab_token>",
            ),
            (
                &format!("sk-ant-{}", "a".repeat(95)),
                "<REDACTED:anthropic_key>",
            ),
            (&format!("sk-{}", "b".repeat(30)), "<REDACTED:openai_key>"),
            ("xoxb-1234567890abc", "<REDACTED:slack_token>"),
            (
                &format!("sk_live_{}", "c".repeat(24)),
                "<REDACTED:stripe_key>",
            ),
            (
                "git clone https://bob:hunter2@example.com/r",
                "git clone https://bob:<REDACTED:url_credentials>@example.com/r",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(scrub_secrets(input, &[]).scrubbed, want, "input {input}");
        }
        let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nxyz\n-----END RSA PRIVATE KEY-----\nb";
        let r = scrub_secrets(pem, &[]);
        assert_eq!(r.scrubbed, "a\n<REDACTED:pem_private_key>\nb");
        assert_eq!(r.redaction_count, 1);
    }

    #[test]
    fn short_anthropic_like_key_is_not_openai() {
        // sk-ant- with fewer than 90 chars matches neither pattern (the OpenAI one excludes `ant-`).
        let s = format!("sk-ant-{}", "a".repeat(30));
        assert_eq!(scrub_secrets(&s, &[]).redaction_count, 0);
    }

    #[test]
    fn extra_patterns_and_content_blocks() {
        let extra = compile_extra_secret_patterns(&[
            ("internal".into(), r"INT-[0-9]{6}".into()),
            ("bad".into(), "(".into()),
            ("empty".into(), " ".into()),
        ]);
        assert_eq!(extra.len(), 1);
        let blocks = vec![
            crate::common::text_block("id INT-123456"),
            crate::common::text_block("clean"),
        ];
        let out = scrub_tool_content(&blocks, &extra).unwrap();
        assert_eq!(out[0], crate::common::text_block("id <REDACTED:internal>"));
        assert_eq!(out[1], crate::common::text_block("clean"));
        assert!(scrub_tool_content(&[crate::common::text_block("nothing")], &extra).is_none());
    }
}
