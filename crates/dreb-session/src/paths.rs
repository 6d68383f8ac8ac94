//! Where session files live: `<agentDir>/sessions/--<encoded cwd>--/<timestamp>_<uuid>.jsonl`.

use std::path::{Component, Path, PathBuf};

/// The agent dir (`$DREB_CODING_AGENT_DIR` with `~` expanded, or `~/.dreb/agent`): the workspace's one
/// resolution, in `dreb-paths`.
pub use dreb_paths::{AGENT_DIR_ENV, agent_dir};

/// `<agentDir>/sessions`.
pub fn sessions_root(agent_dir: &Path) -> PathBuf {
    agent_dir.join("sessions")
}

/// The directory name for a cwd: one leading `/` or `\` dropped, every `/`, `\` and `:` replaced by `-`, wrapped
/// in `--…--` (`/home/u/proj` → `--home-u-proj--`).
pub fn encode_cwd(cwd: &str) -> String {
    let trimmed = cwd.strip_prefix(['/', '\\']).unwrap_or(cwd);
    let body: String = trimmed
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// `<agentDir>/sessions/--<encoded cwd>--` (not created).
pub fn default_session_dir(cwd: &str, agent_dir: &Path) -> PathBuf {
    sessions_root(agent_dir).join(encode_cwd(cwd))
}

/// `<ISO timestamp with : and . replaced by ->_<session id>.jsonl`.
pub fn session_file_name(iso_timestamp: &str, session_id: &str) -> String {
    format!(
        "{}_{session_id}.jsonl",
        crate::time::file_timestamp(iso_timestamp)
    )
}

/// Node's `path.resolve(p)`: absolute against the process cwd, `.` and `..` collapsed lexically (no symlinks).
pub fn resolve(p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(p)
    };
    let mut out = PathBuf::new();
    for comp in joined.components() {
        match comp {
            Component::Prefix(_) | Component::RootDir => out.push(comp.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_the_reference() {
        assert_eq!(encode_cwd("/home/user/project"), "--home-user-project--");
        assert_eq!(encode_cwd("C:\\Users\\me"), "--C--Users-me--");
        assert_eq!(encode_cwd("//srv/x"), "---srv-x--");
        assert_eq!(
            session_file_name(
                "2026-12-01T06:28:51.158Z",
                "5e930a75-fb5d-4fa5-862a-452f28eea405"
            ),
            "2026-12-01T06-28-51-158Z_5e930a75-fb5d-4fa5-862a-452f28eea405.jsonl"
        );
        assert_eq!(
            default_session_dir("/home/user/project", Path::new("/a")),
            PathBuf::from("/a/sessions/--home-user-project--")
        );
    }

    #[test]
    fn resolve_is_lexical() {
        assert_eq!(
            resolve(Path::new("/a/b/../c/./d.jsonl")),
            PathBuf::from("/a/c/d.jsonl")
        );
        assert_eq!(resolve(Path::new("/../x")), PathBuf::from("/x"));
        assert!(resolve(Path::new("rel.jsonl")).is_absolute());
    }
}
