//! Context-folder trust: which directories may lazily load nested AGENTS.md/CLAUDE.md files.
//!
//! Everything here resolves paths with the native realpath and never falls back to a lexical
//! path: a missing path, a broken symlink or a non-directory is simply not trusted. Because
//! targets are resolved before matching, a symlink under a trusted root that points outside
//! it evaluates as untrusted.

use std::path::{MAIN_SEPARATOR, Path};

use serde_json::Value;

use crate::js::js_trim;
use crate::paths::{expand_settings_path, strict_realpath};

/// The global-only lazy-context policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextTrustPolicy {
    /// Expert trust-all (`context.autoLoadNested`).
    pub unrestricted: bool,
    /// Configured roots (`context.trustedFolders`); invalid ones are ignored fail-closed.
    pub trusted_folders: Vec<String>,
}

impl ContextTrustPolicy {
    /// Lazy nested loading runs at all only when something is trusted.
    pub fn is_active(&self) -> bool {
        self.unrestricted || !self.trusted_folders.is_empty()
    }
}

/// A granted lazy-load target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextTrustMatch {
    /// Canonical directory the tool operates in.
    pub target_dir: String,
    /// Canonical root granting access; `None` when access comes from trust-all.
    pub trusted_root: Option<String>,
}

pub use dreb_protocol::{ContextTrustState, RpcContextTrustEvaluation};

/// True when `path` equals `root` or lies below it on a segment boundary.
pub fn is_within_canonical_root(root: &str, path: &str) -> bool {
    if path == root {
        return true;
    }
    if root.ends_with(MAIN_SEPARATOR) {
        path.starts_with(root)
    } else {
        path.len() > root.len()
            && path.starts_with(root)
            && path[root.len()..].starts_with(MAIN_SEPARATOR)
    }
}

/// Realpath of an existing directory, or `None` (no lexical fallback).
pub fn canonicalize_directory(path: &Path) -> Option<String> {
    let canonical = strict_realpath(path)?;
    std::fs::metadata(&canonical)
        .ok()
        .filter(|m| m.is_dir())
        .map(|_| canonical)
}

/// Drop roots inside an earlier root; a later ancestor replaces earlier descendants.
fn normalize_canonical_roots(roots: Vec<String>) -> Vec<String> {
    let mut effective: Vec<String> = Vec::new();
    for root in roots {
        if effective.iter().any(|r| is_within_canonical_root(r, &root)) {
            continue;
        }
        effective.retain(|r| !is_within_canonical_root(&root, r));
        effective.push(root);
    }
    effective
}

/// The enforceable root set: absolute (after `~`), existing directories, canonical,
/// deduplicated and ancestor-subsumed. Anything else is ignored fail-closed.
pub fn canonicalize_trusted_roots(configured: &[String]) -> Vec<String> {
    let roots = configured
        .iter()
        .filter_map(|root| {
            let expanded = expand_settings_path(root);
            let p = Path::new(&expanded);
            if !p.is_absolute() {
                return None;
            }
            canonicalize_directory(p)
        })
        .collect();
    normalize_canonical_roots(roots)
}

/// Why a user-supplied trust folder was refused (the texts are rpc.yaml's, per command).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FolderProblem {
    /// Not a non-empty string.
    NotAString,
    /// Not absolute after `~` expansion.
    NotAbsolute,
    /// Not an existing directory.
    NotADirectory,
}

/// Why a replacement list of trust folders was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FoldersError {
    /// The value is not a list.
    NotAList,
    /// The entry at `index` is refused.
    Entry {
        index: usize,
        problem: FolderProblem,
    },
}

/// Validate one user-supplied folder; returns the canonical directory.
pub fn validate_trusted_context_folder(path: &Value) -> Result<String, FolderProblem> {
    let Some(raw) = path.as_str().filter(|s| !js_trim(s).is_empty()) else {
        return Err(FolderProblem::NotAString);
    };
    let expanded = expand_settings_path(raw);
    let p = Path::new(&expanded);
    if !p.is_absolute() {
        return Err(FolderProblem::NotAbsolute);
    }
    canonicalize_directory(p).ok_or(FolderProblem::NotADirectory)
}

/// Validate a whole replacement list; rejects every invalid entry (updates are atomic).
pub fn validate_trusted_context_folders(value: &Value) -> Result<Vec<String>, FoldersError> {
    let Some(items) = value.as_array() else {
        return Err(FoldersError::NotAList);
    };
    let mut roots = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let root = validate_trusted_context_folder(item)
            .map_err(|problem| FoldersError::Entry { index, problem })?;
        roots.push(root);
    }
    Ok(normalize_canonical_roots(roots))
}

/// Decide a lazy-load target against the policy (target and roots resolved right now).
pub fn match_context_trust(
    policy: &ContextTrustPolicy,
    target_dir: &Path,
) -> Option<ContextTrustMatch> {
    let canonical_target = canonicalize_directory(target_dir)?;
    if policy.unrestricted {
        return Some(ContextTrustMatch {
            target_dir: canonical_target,
            trusted_root: None,
        });
    }
    canonicalize_trusted_roots(&policy.trusted_folders)
        .into_iter()
        .find(|root| is_within_canonical_root(root, &canonical_target))
        .map(|root| ContextTrustMatch {
            target_dir: canonical_target,
            trusted_root: Some(root),
        })
}

/// `evaluate_context_trust` against a given policy.
pub fn evaluate_context_trust(
    policy: &ContextTrustPolicy,
    path: &Value,
) -> Result<RpcContextTrustEvaluation, FolderProblem> {
    let canonical_target = validate_trusted_context_folder(path)?;
    let evaluation = match match_context_trust(policy, Path::new(&canonical_target)) {
        None => RpcContextTrustEvaluation {
            canonical_target,
            state: ContextTrustState::Untrusted,
            granting_root: None,
        },
        Some(_) if policy.unrestricted => RpcContextTrustEvaluation {
            canonical_target,
            state: ContextTrustState::Unrestricted,
            granting_root: None,
        },
        Some(m) => RpcContextTrustEvaluation {
            canonical_target,
            state: ContextTrustState::TrustedRoot,
            granting_root: m.trusted_root,
        },
    };
    Ok(evaluation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment_is_segment_aware() {
        assert!(is_within_canonical_root("/a/b", "/a/b"));
        assert!(is_within_canonical_root("/a/b", "/a/b/c"));
        assert!(!is_within_canonical_root("/a/b", "/a/bc"));
        assert!(is_within_canonical_root("/", "/x"));
    }

    #[test]
    fn normalisation_dedups_and_subsumes() {
        let roots = vec![
            "/a/b".to_string(),
            "/a/b".into(),
            "/c".into(),
            "/a".into(),
            "/a/z".into(),
        ];
        assert_eq!(
            normalize_canonical_roots(roots),
            vec!["/c".to_string(), "/a".into()]
        );
    }
}
