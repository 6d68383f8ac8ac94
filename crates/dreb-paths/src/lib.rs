//! The home directory, the agent directory (and the memory directory beside it) and `~` expansion, for the whole
//! workspace.
//!
//! Every crate that needs `$HOME` or `<agentDir>` calls these functions (this crate has no dependencies, so all
//! of them can depend on it). The agent directory is `$DREB_CODING_AGENT_DIR` with a leading `~` / `~/`
//! expanded (as the reference does), else `~/.dreb/agent`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Environment variable overriding the agent directory.
pub const AGENT_DIR_ENV: &str = "DREB_CODING_AGENT_DIR";

/// Name of the per-user (and per-project) configuration directory.
pub const CONFIG_DIR_NAME: &str = ".dreb";

/// The user's home directory: `$HOME` when set and not empty (as Node's `os.homedir()`), else the OS lookup,
/// else `/`.
pub fn home_dir() -> PathBuf {
    match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => PathBuf::from(h),
        _ => std::env::home_dir().unwrap_or_else(|| PathBuf::from("/")),
    }
}

/// `~` → `home`, `~/rest` → `home/rest`; anything else (including `~user/...`) unchanged.
pub fn expand_tilde_with(path: &str, home: &Path) -> PathBuf {
    if path == "~" {
        home.to_path_buf()
    } else if let Some(rest) = path.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(path)
    }
}

/// [`expand_tilde_with`] against [`home_dir`].
pub fn expand_tilde(path: &str) -> PathBuf {
    if path == "~" || path.starts_with("~/") {
        expand_tilde_with(path, &home_dir())
    } else {
        PathBuf::from(path)
    }
}

/// The agent directory for a value of `DREB_CODING_AGENT_DIR` (`None` or empty: `<home>/.dreb/agent`).
pub fn agent_dir_from(value: Option<&OsStr>, home: &Path) -> PathBuf {
    match value.filter(|v| !v.is_empty()) {
        None => home.join(CONFIG_DIR_NAME).join("agent"),
        Some(v) => match v.to_str() {
            Some(s) => expand_tilde_with(s, home),
            // Not UTF-8: cannot start with `~/` as text; used as given.
            None => PathBuf::from(v),
        },
    }
}

/// `<agentDir>`: `$DREB_CODING_AGENT_DIR` (with `~` expanded), else `~/.dreb/agent`.
pub fn agent_dir() -> PathBuf {
    agent_dir_from(std::env::var_os(AGENT_DIR_ENV).as_deref(), &home_dir())
}

/// The user's memory directory: `memory` next to the agent directory (`~/.dreb/memory` by default), as the
/// reference resolves it (`resolve(agentDir, "..")`, so a relative agent dir counts from the working directory).
pub fn memory_dir(agent_dir: &Path) -> PathBuf {
    let absolute = if agent_dir.is_absolute() {
        agent_dir.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(agent_dir)
    };
    // `..` of the agent dir: its last normal component dropped (the root stays the root).
    let mut root = PathBuf::new();
    for c in absolute.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                root.pop();
            }
            other => root.push(other),
        }
    }
    root.pop();
    root.join("memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_dir_expands_tilde() {
        let home = Path::new("/h/u");
        let dir = |v: &str| agent_dir_from(Some(OsStr::new(v)), home);
        assert_eq!(dir("~"), PathBuf::from("/h/u"));
        assert_eq!(dir("~/myagent"), PathBuf::from("/h/u/myagent"));
        assert_eq!(dir("~/a/b/"), PathBuf::from("/h/u/a/b/"));
        assert_eq!(dir("/abs/agent"), PathBuf::from("/abs/agent"));
        assert_eq!(dir("rel/agent"), PathBuf::from("rel/agent"));
        // Only the current user's home is expanded (as the reference does).
        assert_eq!(dir("~other/x"), PathBuf::from("~other/x"));
    }

    #[test]
    fn agent_dir_defaults_under_home() {
        let home = Path::new("/h/u");
        assert_eq!(
            agent_dir_from(None, home),
            PathBuf::from("/h/u/.dreb/agent")
        );
        assert_eq!(
            agent_dir_from(Some(OsStr::new("")), home),
            PathBuf::from("/h/u/.dreb/agent")
        );
    }

    #[test]
    fn the_memory_dir_is_next_to_the_agent_dir() {
        assert_eq!(
            memory_dir(Path::new("/h/u/.dreb/agent")),
            PathBuf::from("/h/u/.dreb/memory")
        );
        assert_eq!(
            memory_dir(Path::new("/h/custom/agent/")),
            PathBuf::from("/h/custom/memory")
        );
        assert_eq!(
            memory_dir(Path::new("/h/x/../agent")),
            PathBuf::from("/h/memory")
        );
        assert_eq!(memory_dir(Path::new("/")), PathBuf::from("/memory"));
        assert_eq!(
            memory_dir(Path::new("rel/agent")),
            std::env::current_dir().unwrap().join("rel/memory")
        );
    }

    #[test]
    fn tilde_expansion() {
        let home = Path::new("/h");
        assert_eq!(expand_tilde_with("~", home), PathBuf::from("/h"));
        assert_eq!(expand_tilde_with("~/x", home), PathBuf::from("/h/x"));
        assert_eq!(expand_tilde_with("x/~", home), PathBuf::from("x/~"));
        assert_eq!(expand_tilde("/abs"), PathBuf::from("/abs"));
        assert_eq!(expand_tilde("~/x"), home_dir().join("x"));
    }
}
