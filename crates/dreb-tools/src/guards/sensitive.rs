//! Sensitive-path guard for `read`: credential files never go to the model.

use std::path::Path;

use crate::paths::normalize_lexically;

/// Built-in patterns (trailing-wildcard globs).
pub const DEFAULT_SENSITIVE_PATTERNS: [&str; 6] = [
    "~/.ssh/id_*",
    "~/.gnupg/private-keys-v1.d/*",
    "~/.dreb/secrets/*",
    "~/.dreb/agent/auth.json",
    "~/.aws/credentials",
    "~/.config/gcloud/credentials.db",
];

fn home() -> String {
    dreb_paths::home_dir().to_string_lossy().into_owned()
}

fn expand_home(p: &str) -> String {
    if p == "~" {
        home()
    } else if let Some(rest) = p.strip_prefix("~/") {
        format!("{}/{rest}", home().trim_end_matches('/'))
    } else {
        p.to_string()
    }
}

fn resolve(p: &str, cwd: &Path) -> String {
    normalize_lexically(&cwd.join(expand_home(p)))
        .to_string_lossy()
        .into_owned()
}

fn strip_trailing_wildcard(p: &str) -> &str {
    let p = p
        .strip_suffix("**")
        .or_else(|| p.strip_suffix('*'))
        .unwrap_or(p);
    p.strip_suffix('/').unwrap_or(p)
}

/// Only trailing wildcards are supported; a pattern with `*` elsewhere is skipped (with a warning).
pub fn has_mid_path_wildcard(pattern: &str) -> bool {
    let p = pattern;
    let without =
        if p.ends_with("/**") || p.ends_with("**") || p.ends_with("/*") || p.ends_with('*') {
            strip_trailing_wildcard(p)
        } else {
            p
        };
    without.contains('*')
}

fn matches_pattern(resolved: &str, pattern: &str, cwd: &Path) -> bool {
    let base = resolve(strip_trailing_wildcard(pattern), cwd);
    if pattern.ends_with("/**") || pattern.ends_with("/*") {
        let prefix = if base.ends_with('/') {
            base.clone()
        } else {
            format!("{base}/")
        };
        return resolved == base || resolved.starts_with(&prefix);
    }
    if pattern.ends_with('*') {
        return resolved.starts_with(&base);
    }
    resolved == resolve(pattern, cwd)
}

/// The pattern that makes `file_path` sensitive, if any. Relative paths resolve against `cwd`; SSH public keys
/// (`.pub`) stay readable. `extra` are the settings' `sensitiveFilePaths`.
pub fn sensitive_path_match(file_path: &str, extra: &[String], cwd: &Path) -> Option<String> {
    let resolved = resolve(file_path, cwd);
    for pattern in DEFAULT_SENSITIVE_PATTERNS {
        if matches_pattern(&resolved, pattern, cwd) {
            if pattern == "~/.ssh/id_*" && resolved.ends_with(".pub") {
                continue;
            }
            return Some(pattern.to_string());
        }
    }
    for pattern in extra {
        if has_mid_path_wildcard(pattern) {
            tracing::warn!(
                "[sensitive-paths] Skipping unsupported mid-path wildcard pattern: \"{pattern}\". Only trailing wildcards (e.g. \"~/.ssh/id_*\", \"~/.secrets/*\") are supported."
            );
            continue;
        }
        if matches_pattern(&resolved, pattern, cwd) {
            return Some(pattern.clone());
        }
    }
    None
}

/// The before-tool-call check for `read`: the block reason when the path is sensitive.
pub fn check_read_path(file_path: &str, extra: &[String], cwd: &Path) -> Option<String> {
    sensitive_path_match(file_path, extra, cwd).map(|pattern| {
        format!(
            "File blocked by sensitive-path guard: \"{pattern}\". This file contains credentials that should not be sent to the model."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_patterns() {
        let cwd = Path::new("/work");
        let h = home();
        assert_eq!(
            sensitive_path_match("~/.ssh/id_rsa", &[], cwd).as_deref(),
            Some("~/.ssh/id_*")
        );
        assert_eq!(sensitive_path_match("~/.ssh/id_rsa.pub", &[], cwd), None);
        assert_eq!(
            sensitive_path_match(&format!("{h}/.aws/credentials"), &[], cwd).as_deref(),
            Some("~/.aws/credentials")
        );
        assert_eq!(
            sensitive_path_match("~/.dreb/secrets/providers.env", &[], cwd).as_deref(),
            Some("~/.dreb/secrets/*")
        );
        assert_eq!(
            sensitive_path_match("~/.dreb/secrets", &[], cwd).as_deref(),
            Some("~/.dreb/secrets/*")
        );
        assert_eq!(sensitive_path_match("README.md", &[], cwd), None);
        // Traversal resolves before matching.
        let trav = format!("{h}/x/../.ssh/id_ed25519");
        assert!(sensitive_path_match(&trav, &[], cwd).is_some());
    }

    #[test]
    fn extra_patterns_and_reason_text() {
        let cwd = Path::new("/work");
        let extra = vec!["/work/vault/*".to_string(), "~/a/*/key.pem".to_string()];
        assert_eq!(
            sensitive_path_match("vault/k", &extra, cwd).as_deref(),
            Some("/work/vault/*")
        );
        assert_eq!(sensitive_path_match("~/a/b/key.pem", &extra, cwd), None);
        assert_eq!(
            check_read_path("~/.aws/credentials", &[], cwd).unwrap(),
            "File blocked by sensitive-path guard: \"~/.aws/credentials\". This file contains credentials that should not be sent to the model."
        );
    }
}
