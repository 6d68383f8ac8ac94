//! Path helpers shared by settings, trust and context loading: home directory, the agent dir,
//! settings-style `~` expansion and lexical normalisation (`path.resolve` without touching disk).

use std::path::{Component, Path, PathBuf};

/// The workspace's one home / agent directory resolution (see `dreb-paths`).
pub use dreb_paths::{
    AGENT_DIR_ENV as ENV_AGENT_DIR, CONFIG_DIR_NAME, agent_dir as agent_dir_from_env, home_dir,
};

fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// Settings-style path expansion used for trusted folders: strip one pair of surrounding
/// quotes, a leading `@`, map unicode spaces to ASCII spaces, then expand `~` / `~/...`.
pub fn expand_settings_path(input: &str) -> String {
    let unquoted = if input.len() >= 2
        && ((input.starts_with('"') && input.ends_with('"'))
            || (input.starts_with('\'') && input.ends_with('\'')))
    {
        &input[1..input.len() - 1]
    } else {
        input
    };
    let without_at = unquoted.strip_prefix('@').unwrap_or(unquoted);
    let normalized: String = without_at
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if normalized == "~" {
        return home_dir().to_string_lossy().into_owned();
    }
    if let Some(rest) = normalized.strip_prefix("~/") {
        let mut home = home_dir().to_string_lossy().into_owned();
        home.push('/');
        home.push_str(rest);
        return home;
    }
    normalized
}

/// The repository `dir` is in: its nearest ancestor (itself included) with a `.git` entry.
pub fn git_root(dir: &Path) -> Option<&Path> {
    dir.ancestors().find(|d| d.join(".git").exists())
}

/// Lexically normalise an absolute path (drop `.`, resolve `..`), like Node's `path.resolve`.
pub fn normalize_lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolve `raw` against `base` (absolute paths win), normalised lexically.
pub fn resolve_against(base: &Path, raw: &Path) -> PathBuf {
    if raw.is_absolute() {
        normalize_lexical(raw)
    } else {
        normalize_lexical(&base.join(raw))
    }
}

/// Strict native realpath as a UTF-8 string; `None` when it fails or is not UTF-8
/// (trust decisions fail closed rather than guess).
pub fn strict_realpath(path: &Path) -> Option<String> {
    std::fs::canonicalize(path)
        .ok()
        .and_then(|p| p.into_os_string().into_string().ok())
}

/// Realpath that falls back to the input on error.
pub fn safe_realpath(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_like_the_reference() {
        let home = home_dir().to_string_lossy().into_owned();
        assert_eq!(expand_settings_path("~"), home);
        assert_eq!(expand_settings_path("~/x"), format!("{home}/x"));
        assert_eq!(expand_settings_path("'\"/a b\"'"), "\"/a b\"");
        assert_eq!(expand_settings_path("\"/a b\""), "/a b");
        assert_eq!(expand_settings_path("@/tmp"), "/tmp");
        assert_eq!(expand_settings_path("/a\u{00A0}b"), "/a b");
        assert_eq!(expand_settings_path("~user/x"), "~user/x");
        assert_eq!(expand_settings_path("rel"), "rel");
    }

    #[test]
    fn normalises_lexically() {
        assert_eq!(
            normalize_lexical(Path::new("/a/./b/../c/")),
            PathBuf::from("/a/c")
        );
        assert_eq!(normalize_lexical(Path::new("/..")), PathBuf::from("/"));
        assert_eq!(
            resolve_against(Path::new("/w"), Path::new("x/../y")),
            PathBuf::from("/w/y")
        );
    }
}
