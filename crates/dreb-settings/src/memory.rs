//! The agent's file-based memory as the system prompt shows it: the `MEMORY.md` indexes of the global and the
//! project memory directory (and, read-only, Claude Code's for the same scopes), and when memory was last
//! consolidated. The files themselves are read by the model with its tools; only the indexes are loaded here.

use std::path::{Path, PathBuf};

use crate::paths::{CONFIG_DIR_NAME, git_root, home_dir, normalize_lexical};

/// An index is cut to this many lines (the rest is never shown; a diagnostic says so).
pub const MEMORY_INDEX_MAX_LINES: usize = 200;

/// The index file of a memory directory.
pub const MEMORY_INDEX_FILE: &str = "MEMORY.md";

/// Where consolidation (`dream`) records its last run, in the global memory directory.
pub const LAST_CONSOLIDATED_FILE: &str = ".dream-last-run";

/// Who writes a memory directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryOrigin {
    /// dreb's own: the model saves here.
    Dreb,
    /// Claude Code's, for the same scope: shown, never written.
    ClaudeCode,
}

/// One loaded index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryIndex {
    pub dir: PathBuf,
    pub content: String,
    pub origin: MemoryOrigin,
}

/// What the system prompt's memory section is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryIndexes {
    /// `<agent dir>/../memory`: every project's.
    pub global_dir: PathBuf,
    /// `<git root, else cwd>/.dreb/memory`: this project's.
    pub project_dir: PathBuf,
    pub global: Vec<MemoryIndex>,
    pub project: Vec<MemoryIndex>,
    /// The consolidation record's text (a date the prompt shows), when it holds one.
    pub last_consolidated: Option<String>,
}

/// A problem reading an index (the session starts without it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryDiagnostic {
    pub path: PathBuf,
    pub message: String,
}

/// The project's root for memory: the nearest ancestor of `cwd` with a `.git` entry, else `cwd`.
pub fn project_root(cwd: &Path) -> PathBuf {
    let cwd = normalize_lexical(cwd);
    git_root(&cwd).map(Path::to_path_buf).unwrap_or(cwd)
}

/// Claude Code's name for a project directory under `~/.claude/projects`: the path with `/` and `_` as `-`.
pub fn claude_project_name(path: &Path) -> String {
    path.to_string_lossy().replace(['/', '_'], "-")
}

/// Load the indexes for a session in `cwd` whose agent directory is `agent_dir`.
pub fn load_memory_indexes(cwd: &Path, agent_dir: &Path) -> (MemoryIndexes, Vec<MemoryDiagnostic>) {
    load_memory_indexes_with_home(cwd, agent_dir, &home_dir())
}

/// [`load_memory_indexes`] with an explicit home directory (Claude Code's memory lives under it).
pub fn load_memory_indexes_with_home(
    cwd: &Path,
    agent_dir: &Path,
    home: &Path,
) -> (MemoryIndexes, Vec<MemoryDiagnostic>) {
    let root = project_root(cwd);
    let global_dir = dreb_paths::memory_dir(agent_dir);
    let project_dir = root.join(CONFIG_DIR_NAME).join("memory");
    let claude_projects = home.join(".claude").join("projects");
    let claude_global = claude_projects
        .join(claude_project_name(home))
        .join("memory");
    let claude_project = claude_projects
        .join(claude_project_name(&root))
        .join("memory");

    let mut diagnostics = Vec::new();
    let mut read = |dir: &Path, origin| {
        read_index(dir, &mut diagnostics).map(|content| MemoryIndex {
            dir: dir.to_path_buf(),
            content,
            origin,
        })
    };
    // dreb's first, then Claude Code's; a directory that is both scopes (a project at the agent's home) counts
    // once, as global.
    let mut global: Vec<MemoryIndex> = read(&global_dir, MemoryOrigin::Dreb).into_iter().collect();
    let mut project: Vec<MemoryIndex> = Vec::new();
    if project_dir != global_dir {
        project.extend(read(&project_dir, MemoryOrigin::Dreb));
    }
    global.extend(read(&claude_global, MemoryOrigin::ClaudeCode));
    if claude_project != claude_global {
        project.extend(read(&claude_project, MemoryOrigin::ClaudeCode));
    }
    let last_consolidated = read_last_consolidated(&global_dir);
    (
        MemoryIndexes {
            global_dir,
            project_dir,
            global,
            project,
            last_consolidated,
        },
        diagnostics,
    )
}

/// A directory's `MEMORY.md`, cut to [`MEMORY_INDEX_MAX_LINES`]; `None` when there is none or it cannot be read.
fn read_index(dir: &Path, diagnostics: &mut Vec<MemoryDiagnostic>) -> Option<String> {
    let path = dir.join(MEMORY_INDEX_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            diagnostics.push(MemoryDiagnostic {
                message: format!("Could not read {}: {e}", path.display()),
                path,
            });
            return None;
        }
    };
    let content = String::from_utf8_lossy(&bytes).into_owned();
    let lines = content.split('\n').count();
    if lines <= MEMORY_INDEX_MAX_LINES {
        return Some(content);
    }
    diagnostics.push(MemoryDiagnostic {
        message: format!(
            "{} has {lines} lines; only the first {MEMORY_INDEX_MAX_LINES} are loaded. Consider removing old entries.",
            path.display()
        ),
        path,
    });
    Some(
        content
            .split('\n')
            .take(MEMORY_INDEX_MAX_LINES)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The consolidation record's text in `global_dir`, if the file holds something that starts with a `YYYY-MM-DD`
/// date.
pub fn read_last_consolidated(global_dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(global_dir.join(LAST_CONSOLIDATED_FILE)).ok()?;
    let text = text.trim();
    let date = text.get(..10)?;
    let b = date.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    (digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10))
        .then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn loads_both_scopes_and_claude_codes_read_only_indexes() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let agent_dir = home.join(".dreb").join("agent");
        let repo = tmp.path().join("my_repo");
        let cwd = repo.join("src");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        write(
            &home.join(".dreb/memory/MEMORY.md"),
            "- [Role](role.md) — the user",
        );
        write(
            &repo.join(".dreb/memory/MEMORY.md"),
            "- [Auth](auth.md) — rewrite",
        );
        let claude = home.join(".claude/projects");
        write(
            &claude
                .join(claude_project_name(&home))
                .join("memory/MEMORY.md"),
            "claude global",
        );
        write(
            &claude
                .join(claude_project_name(&repo))
                .join("memory/MEMORY.md"),
            "claude project",
        );
        write(
            &home.join(".dreb/memory/.dream-last-run"),
            "2026-11-30T10:00:00.000Z\n",
        );

        let (m, diagnostics) = load_memory_indexes_with_home(&cwd, &agent_dir, &home);
        assert!(diagnostics.is_empty());
        assert_eq!(m.global_dir, home.join(".dreb/memory"));
        assert_eq!(
            m.project_dir,
            repo.join(".dreb/memory"),
            "the git root, not cwd"
        );
        let texts = |v: &[MemoryIndex]| {
            v.iter()
                .map(|i| (i.content.clone(), i.origin))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            texts(&m.global),
            [
                (
                    "- [Role](role.md) — the user".to_string(),
                    MemoryOrigin::Dreb
                ),
                ("claude global".to_string(), MemoryOrigin::ClaudeCode)
            ]
        );
        assert_eq!(
            texts(&m.project),
            [
                (
                    "- [Auth](auth.md) — rewrite".to_string(),
                    MemoryOrigin::Dreb
                ),
                ("claude project".to_string(), MemoryOrigin::ClaudeCode)
            ]
        );
        assert_eq!(
            m.last_consolidated.as_deref(),
            Some("2026-11-30T10:00:00.000Z")
        );
        assert!(claude_project_name(&repo).ends_with("-my-repo"));
    }

    #[test]
    fn long_indexes_are_cut_and_reported_missing_ones_are_not() {
        let tmp = tempfile::tempdir().unwrap();
        let agent_dir = tmp.path().join(".dreb/agent");
        let long: Vec<String> = (1..=250).map(|i| format!("- line {i}")).collect();
        write(&tmp.path().join(".dreb/memory/MEMORY.md"), &long.join("\n"));
        write(
            &tmp.path().join(".dreb/memory/.dream-last-run"),
            "not a date",
        );
        let cwd = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&cwd).unwrap();

        let (m, diagnostics) = load_memory_indexes_with_home(&cwd, &agent_dir, tmp.path());
        let index = &m.global[0].content;
        assert_eq!(index.lines().count(), MEMORY_INDEX_MAX_LINES);
        assert!(index.ends_with("- line 200"));
        assert_eq!(diagnostics.len(), 1);
        assert!(
            diagnostics[0]
                .message
                .contains("has 250 lines; only the first 200")
        );
        assert!(m.project.is_empty(), "no project index");
        assert_eq!(
            m.project_dir,
            cwd.join(".dreb/memory"),
            "outside a repository: cwd"
        );
        assert_eq!(m.last_consolidated, None, "an unreadable date is no date");
    }
}
