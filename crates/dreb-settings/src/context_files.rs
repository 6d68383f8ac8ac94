//! Session-start context files (AGENTS.md / CLAUDE.md / CONTEXT.md and rules) and the
//! "# Project Context" system-prompt section built from them. Not trust-gated.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::context_trust::is_within_canonical_root;
use crate::paths::{CONFIG_DIR_NAME, home_dir, normalize_lexical, strict_realpath};

/// Candidates looked for in every directory, in load order.
pub const CONTEXT_FILE_CANDIDATES: [&str; 8] = [
    "AGENTS.md",
    "AGENTS.MD",
    "CLAUDE.md",
    "CLAUDE.MD",
    ".claude/CLAUDE.md",
    ".claude/CLAUDE.MD",
    ".dreb/CONTEXT.md",
    ".dreb/CONTEXT.MD",
];

/// Rules directories are walked at most this deep (the root is depth 0).
const MAX_RULES_DEPTH: usize = 10;

/// One loaded context file (HTML comments already stripped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFile {
    pub path: PathBuf,
    pub content: String,
}

/// A file that exists but could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextDiagnostic {
    pub path: PathBuf,
    pub message: String,
}

/// Remove every `<!-- ... -->` (non-greedy; an unclosed comment is kept).
pub fn strip_html_comments(content: &str) -> String {
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(start) = rest.find("<!--") {
        let Some(end) = rest[start + 4..].find("-->") else {
            break;
        };
        out.push_str(&rest[..start]);
        rest = &rest[start + 4 + end + 3..];
    }
    out.push_str(rest);
    out
}

fn read_text(path: &Path) -> std::io::Result<String> {
    fs::read(path).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// Load every existing candidate in `dir`, deduplicated by realpath (case-insensitive file
/// systems). With `allowed_root`, candidates whose realpath leaves that canonical root are
/// rejected, re-checked after the read so a swapped symlink cannot slip through.
pub fn load_context_files_from_dir(
    dir: &Path,
    allowed_root: Option<&str>,
    diagnostics: &mut Vec<ContextDiagnostic>,
) -> Vec<ContextFile> {
    let mut results = Vec::new();
    let mut seen = HashSet::new();
    for candidate in CONTEXT_FILE_CANDIDATES {
        let path = dir.join(candidate);
        if !path.exists() {
            continue;
        }
        let real = match allowed_root {
            Some(root) => match strict_realpath(&path) {
                Some(real) if is_within_canonical_root(root, &real) => PathBuf::from(real),
                _ => continue,
            },
            None => fs::canonicalize(&path).unwrap_or_else(|_| path.clone()),
        };
        if !seen.insert(real.clone()) {
            continue;
        }
        match read_text(&path) {
            Ok(content) => {
                if let Some(root) = allowed_root {
                    let after = strict_realpath(&path);
                    if after.as_deref().map(Path::new) != Some(real.as_path())
                        || !after.is_some_and(|a| is_within_canonical_root(root, &a))
                    {
                        continue;
                    }
                }
                results.push(ContextFile {
                    path,
                    content: strip_html_comments(&content),
                });
            }
            Err(err) => diagnostics.push(ContextDiagnostic {
                message: format!("Could not read {}: {err}", path.display()),
                path,
            }),
        }
    }
    results
}

static PATHS_FRONTMATTER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^\s*paths\s*:").expect("valid regex"));

/// Rules with a `paths:` frontmatter key are path-scoped and not loaded at start.
fn is_path_scoped_rule(content: &str) -> bool {
    let Some(after) = content.strip_prefix("---") else {
        return false;
    };
    let Some(end) = after.find("---") else {
        return false;
    };
    PATHS_FRONTMATTER.is_match(&after[..end])
}

fn load_rules_from_dir(
    dir: &Path,
    files: &mut Vec<ContextFile>,
    seen: &mut HashSet<PathBuf>,
    depth: usize,
    diagnostics: &mut Vec<ContextDiagnostic>,
) {
    if depth > MAX_RULES_DEPTH {
        return;
    }
    let mut entries = match fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(Result::ok).collect::<Vec<_>>(),
        Err(err) => {
            diagnostics.push(ContextDiagnostic {
                message: format!("Could not read rules directory {}: {err}", dir.display()),
                path: dir.to_path_buf(),
            });
            return;
        }
    };
    // Byte order, as libuv's scandir returns them to the reference.
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            // file_type() does not follow symlinks, so symlinked directories are skipped.
            load_rules_from_dir(&path, files, seen, depth + 1, diagnostics);
        } else if kind.is_file()
            && path.extension().is_some_and(|e| e == "md")
            && !seen.contains(&path)
        {
            match read_text(&path) {
                Ok(content) if is_path_scoped_rule(&content) => {}
                Ok(content) => {
                    seen.insert(path.clone());
                    files.push(ContextFile {
                        path,
                        content: strip_html_comments(&content),
                    });
                }
                Err(err) => diagnostics.push(ContextDiagnostic {
                    message: format!("Could not read rule {}: {err}", path.display()),
                    path,
                }),
            }
        }
    }
}

/// Session-start context, in prompt order:
/// 1. user level: `<agentDir>/AGENTS.md`, `<agentDir>/CLAUDE.md`, `~/.claude/CLAUDE.md`,
///    `~/.dreb/CONTEXT.md`;
/// 2. every candidate from the filesystem root down to `cwd` (root-most first; a path already
///    loaded is skipped);
/// 3. `*.md` rules under `<cwd>/.dreb/rules` and `<cwd>/.claude/rules`.
pub fn load_project_context_files(
    cwd: &Path,
    agent_dir: &Path,
) -> (Vec<ContextFile>, Vec<ContextDiagnostic>) {
    load_project_context_files_with_home(cwd, agent_dir, &home_dir())
}

/// [`load_project_context_files`] with an explicit home directory.
pub fn load_project_context_files_with_home(
    cwd: &Path,
    agent_dir: &Path,
    home: &Path,
) -> (Vec<ContextFile>, Vec<ContextDiagnostic>) {
    let mut files = Vec::new();
    let mut diagnostics = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();

    let user_level = [
        agent_dir.join("AGENTS.md"),
        agent_dir.join("CLAUDE.md"),
        home.join(".claude").join("CLAUDE.md"),
        home.join(CONFIG_DIR_NAME).join("CONTEXT.md"),
    ];
    for path in user_level {
        if !path.exists() {
            continue;
        }
        match read_text(&path) {
            Ok(content) => {
                if seen.insert(path.clone()) {
                    files.push(ContextFile {
                        path,
                        content: strip_html_comments(&content),
                    });
                }
            }
            Err(err) => diagnostics.push(ContextDiagnostic {
                message: format!("Could not read {}: {err}", path.display()),
                path,
            }),
        }
    }

    let mut per_dir: Vec<Vec<ContextFile>> = Vec::new();
    let mut current = normalize_lexical(cwd);
    loop {
        let found = load_context_files_from_dir(&current, None, &mut diagnostics);
        let fresh: Vec<ContextFile> = found
            .into_iter()
            .filter(|f| seen.insert(f.path.clone()))
            .collect();
        per_dir.push(fresh);
        match current.parent() {
            Some(parent) if parent != current => current = parent.to_path_buf(),
            _ => break,
        }
    }
    files.extend(per_dir.into_iter().rev().flatten());

    let cwd = normalize_lexical(cwd);
    for rules in [
        cwd.join(CONFIG_DIR_NAME).join("rules"),
        cwd.join(".claude").join("rules"),
    ] {
        if rules.exists() {
            load_rules_from_dir(&rules, &mut files, &mut seen, 0, &mut diagnostics);
        }
    }
    (files, diagnostics)
}

/// The system prompt's project-context section (empty when there are no files):
/// `"\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n"` then
/// `"## <path>\n\n<content>\n\n"` per file.
pub fn format_project_context_section(files: &[ContextFile]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n");
    for file in files {
        out.push_str("## ");
        out.push_str(&file.path.to_string_lossy());
        out.push_str("\n\n");
        out.push_str(&file.content);
        out.push_str("\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_comments_non_greedily() {
        assert_eq!(strip_html_comments("a<!-- x -->b<!--y-->c"), "abc");
        assert_eq!(strip_html_comments("a<!--\nmulti\n-->b"), "ab");
        assert_eq!(strip_html_comments("a<!-- open"), "a<!-- open");
        assert_eq!(strip_html_comments("<!-->x-->y"), "y");
    }

    #[test]
    fn path_scoped_rules() {
        assert!(is_path_scoped_rule("---\npaths: [\"src/**\"]\n---\nbody"));
        assert!(is_path_scoped_rule("---\ntitle: x\n  paths : a\n---\n"));
        assert!(!is_path_scoped_rule("---\ntitle: paths\n---\n"));
        assert!(!is_path_scoped_rule("no frontmatter\npaths: x"));
    }
}
