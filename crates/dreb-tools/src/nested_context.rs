//! The tool-side half of lazy nested context loading: which directory a tool call touched (so the runtime can
//! scan it for context files) and which files the call already delivers in full (so they are not injected a
//! second time). Trust decisions and context-file loading belong to the runtime/settings.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bash::terminal::render_terminal_output;
use crate::paths::normalize_lexically;
use crate::truncate::{DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES};

/// Tools whose `path` argument names the touched location.
const PATH_TOOLS: [&str; 6] = ["read", "edit", "write", "grep", "find", "ls"];

use dreb_paths::home_dir as home;

fn expand_to_absolute(raw: &str, base: &Path) -> PathBuf {
    let p = if raw == "~" {
        home()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home().join(rest)
    } else {
        PathBuf::from(raw)
    };
    if p.is_absolute() {
        normalize_lexically(&p)
    } else {
        normalize_lexically(&base.join(p))
    }
}

fn leading_token(rest: &str) -> Option<(String, usize)> {
    let trimmed = rest.trim_start();
    let skipped = rest.len() - trimmed.len();
    let mut chars = trimmed.char_indices();
    let (_, first) = chars.next()?;
    if first == '"' || first == '\'' {
        let end = trimmed[1..].find(first)? + 1;
        if end == 1 {
            return None;
        }
        return Some((trimmed[1..end].to_string(), skipped + end + 1));
    }
    let end = trimmed
        .find(|c: char| c.is_whitespace() || "&;|<>".contains(c))
        .unwrap_or(trimmed.len());
    if end == 0 {
        return None;
    }
    Some((trimmed[..end].to_string(), skipped + end))
}

/// The target of a leading `cd <dir>` (quoted or bare; options skipped; `cd -` and `$VAR` ignored).
pub fn parse_leading_cd(command: &str) -> Option<String> {
    let trimmed = command.trim_start();
    let rest = trimmed.strip_prefix("cd")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let mut rest = rest;
    loop {
        let (target, used) = leading_token(rest)?;
        let target = target.trim().to_string();
        if target.is_empty() || target == "-" {
            return None;
        }
        if target == "--" {
            let (path, _) = leading_token(&rest[used..])?;
            let path = path.trim().to_string();
            return (!path.is_empty() && !path.starts_with('$')).then_some(path);
        }
        if target.starts_with('-') {
            rest = &rest[used..];
            continue;
        }
        if target.starts_with('$') {
            return None;
        }
        return Some(target);
    }
}

/// The directory a tool call touched: the `path` argument of read/edit/write/grep/find/ls, or the target of a
/// bash command's leading `cd`. An existing directory is returned as is, anything else as its parent.
pub fn resolve_target_dir(tool_name: &str, args: &Value, cwd: &Path) -> Option<PathBuf> {
    let raw = if tool_name == "bash" {
        parse_leading_cd(args.get("command")?.as_str()?)?
    } else if PATH_TOOLS.contains(&tool_name) {
        let p = args.get("path")?.as_str()?;
        if p.trim().is_empty() {
            return None;
        }
        p.to_string()
    } else {
        return None;
    };
    let abs = expand_to_absolute(&raw, cwd);
    if abs.is_dir() {
        Some(abs)
    } else {
        abs.parent().map(Path::to_path_buf).or(Some(abs))
    }
}

/// The file an un-sliced `read` delivers.
pub fn resolve_self_read_file(tool_name: &str, args: &Value, cwd: &Path) -> Option<PathBuf> {
    if tool_name != "read" || args.get("offset").is_some() || args.get("limit").is_some() {
        return None;
    }
    let p = args.get("path")?.as_str()?;
    (!p.trim().is_empty()).then(|| expand_to_absolute(p, cwd))
}

/// The file a bash command prints in full: one `cat|bat <file>` segment (no pipes or redirects, at most one
/// `cd`, no bat range flags). `working_dir` is the target of the leading `cd` (or the cwd).
pub fn resolve_bash_delivered_files(command: &str, working_dir: &Path) -> Vec<PathBuf> {
    if command.trim().is_empty() {
        return Vec::new();
    }
    let segments: Vec<&str> = regex_split(command);
    let is_cd = |s: &str| {
        let t = s.trim_start();
        t == "cd" || (t.starts_with("cd") && t[2..].starts_with(char::is_whitespace))
    };
    if segments.iter().filter(|s| is_cd(s)).count() > 1 {
        return Vec::new();
    }
    let outputs: Vec<&&str> = segments
        .iter()
        .filter(|s| !s.trim().is_empty() && !is_cd(s))
        .collect();
    if outputs.len() != 1 {
        return Vec::new();
    }
    let seg = outputs[0];
    if seg.contains(['|', '>', '<']) {
        return Vec::new();
    }
    let tokens: Vec<&str> = seg.split_whitespace().collect();
    let Some(&cmd) = tokens.first() else {
        return Vec::new();
    };
    if cmd != "cat" && cmd != "bat" {
        return Vec::new();
    }
    if cmd == "bat"
        && tokens[1..]
            .iter()
            .any(|t| t.starts_with("-r") || t.starts_with("--line-range"))
    {
        return Vec::new();
    }
    let operands: Vec<String> = tokens[1..]
        .iter()
        .filter(|t| !t.starts_with('-'))
        .map(|t| {
            let b = t.as_bytes();
            if t.len() >= 2 && (b[0] == b'"' || b[0] == b'\'') && b[0] == b[t.len() - 1] {
                t[1..t.len() - 1].to_string()
            } else {
                t.to_string()
            }
        })
        .filter(|t| !t.is_empty())
        .collect();
    if operands.len() != 1 {
        return Vec::new();
    }
    vec![expand_to_absolute(&operands[0], working_dir)]
}

fn regex_split(command: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let b = command.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let two = i + 1 < b.len()
            && ((b[i] == b'&' && b[i + 1] == b'&') || (b[i] == b'|' && b[i + 1] == b'|'));
        if two || b[i] == b';' {
            out.push(&command[start..i]);
            i += if two { 2 } else { 1 };
            start = i;
        } else {
            i += 1;
        }
    }
    out.push(&command[start..]);
    out
}

/// Whether the file fits the read/bash limits as delivered (terminal-rendered for bash), i.e. the model has
/// really seen all of it.
pub fn delivered_in_full(path: &Path, rendered: bool) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if meta.len() as usize > DEFAULT_MAX_BYTES {
        return false;
    }
    let Ok(raw) = std::fs::read_to_string(path) else {
        return false;
    };
    let delivered = if rendered {
        render_terminal_output(&raw)
    } else {
        raw
    };
    delivered.len() <= DEFAULT_MAX_BYTES && delivered.split('\n').count() <= DEFAULT_MAX_LINES
}

/// Files a tool call already delivered in full; a context file among them is marked loaded but not injected.
#[derive(Debug, Default, Clone)]
pub struct DeliveredFiles {
    read: Option<PathBuf>,
    bash: Vec<PathBuf>,
}

impl DeliveredFiles {
    /// Work out what the call delivered. `target_dir` is [`resolve_target_dir`]'s answer.
    pub fn for_call(tool_name: &str, args: &Value, cwd: &Path, target_dir: &Path) -> Self {
        let canon = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p);
        let read = resolve_self_read_file(tool_name, args, cwd).map(canon);
        let bash = match (tool_name, args.get("command").and_then(Value::as_str)) {
            ("bash", Some(cmd)) => resolve_bash_delivered_files(cmd, target_dir)
                .into_iter()
                .map(canon)
                .collect(),
            _ => Vec::new(),
        };
        DeliveredFiles { read, bash }
    }

    /// Whether `file` (a context file about to be injected) was already shown in full by the call.
    pub fn suppresses(&self, file: &Path) -> bool {
        let real = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        if self.read.as_ref() == Some(&real) {
            return delivered_in_full(&real, false);
        }
        if self.bash.contains(&real) {
            return delivered_in_full(&real, true);
        }
        false
    }
}

/// Most directories one walk visits.
pub const MAX_WALK_DEPTH: usize = 64;

fn real(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn parent_of(p: &Path) -> Option<PathBuf> {
    p.parent()
        .map(Path::to_path_buf)
        .filter(|q| q.as_path() != p)
}

/// The directories to scan for context files after a call touched `target_dir`, outermost first (so the most
/// specific context comes last). Ceiling: the trusted root (or the cwd, when nearer) with a trusted root; else
/// the cwd when the target is inside it; else the outermost git root on the way up, else the outermost
/// directory holding a context file (`has_context_file`), else the filesystem root. At most 64 levels.
pub fn resolve_walk_dirs(
    target_dir: &Path,
    cwd: &Path,
    trusted_root: Option<&Path>,
    has_context_file: impl Fn(&Path) -> bool,
) -> Vec<PathBuf> {
    let walk_until = |stop: &dyn Fn(&Path) -> bool| {
        let mut dirs = Vec::new();
        let mut current = target_dir.to_path_buf();
        for _ in 0..MAX_WALK_DEPTH {
            dirs.push(current.clone());
            if stop(&current) {
                break;
            }
            match parent_of(&current) {
                Some(p) => current = p,
                None => break,
            }
        }
        dirs.reverse();
        dirs
    };
    let real_cwd = real(cwd);
    if let Some(root) = trusted_root {
        let stop_at_cwd = target_dir.starts_with(&real_cwd);
        return walk_until(&|d: &Path| d == root || (stop_at_cwd && d == real_cwd));
    }
    if real(target_dir).starts_with(&real_cwd) {
        return walk_until(&|d: &Path| real(d) == real_cwd);
    }
    let mut chain: Vec<PathBuf> = Vec::new();
    let (mut git_idx, mut ctx_idx) = (None, None);
    let mut current = target_dir.to_path_buf();
    for _ in 0..MAX_WALK_DEPTH {
        if std::fs::metadata(&current).is_err() {
            break;
        }
        chain.push(current.clone());
        let idx = chain.len() - 1;
        if current.join(".git").exists() {
            git_idx = Some(idx);
        }
        if has_context_file(&current) {
            ctx_idx = Some(idx);
        }
        match parent_of(&current) {
            Some(p) => current = p,
            None => break,
        }
    }
    let ceiling = git_idx.or(ctx_idx).unwrap_or(chain.len().saturating_sub(1));
    let mut dirs: Vec<PathBuf> = chain.into_iter().take(ceiling + 1).collect();
    dirs.reverse();
    dirs
}

/// The text block appended to the tool result: why the files were loaded, then each file between markers.
pub fn format_nested_context_block(target_dir: &Path, files: &[(PathBuf, String)]) -> String {
    let header = format!(
        "[dreb] Auto-loaded project context\n\nA tool just operated in `{}`, whose project context had not been loaded yet. The file(s) below were loaded automatically to prevent missing important project context when working across multiple repos / projects / folders. (Manage folder-specific loading with `context.trustedFolders`, or disable unrestricted loading with `context.autoLoadNested`.)",
        target_dir.display()
    );
    let sections: Vec<String> = files
        .iter()
        .map(|(path, content)| {
            let p = path.display();
            format!(
                "===== BEGIN project context: {p} =====\n{}\n===== END project context: {p} =====",
                content.trim()
            )
        })
        .collect();
    format!("{header}\n\n{}", sections.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leading_cd_forms() {
        assert_eq!(parse_leading_cd("cd src && ls").as_deref(), Some("src"));
        assert_eq!(
            parse_leading_cd("  cd \"my dir\"; ls").as_deref(),
            Some("my dir")
        );
        assert_eq!(parse_leading_cd("cd -P 'a b'").as_deref(), Some("a b"));
        assert_eq!(parse_leading_cd("cd -- x").as_deref(), Some("x"));
        assert_eq!(parse_leading_cd("cd -"), None);
        assert_eq!(parse_leading_cd("cd $HOME"), None);
        assert_eq!(parse_leading_cd("ls && cd x"), None);
        assert_eq!(parse_leading_cd("cdx y"), None);
    }

    #[test]
    fn target_dirs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        let cwd = dir.path();
        assert_eq!(
            resolve_target_dir("read", &json!({"path": "pkg/a.rs"}), cwd),
            Some(cwd.join("pkg"))
        );
        assert_eq!(
            resolve_target_dir("ls", &json!({"path": "pkg"}), cwd),
            Some(cwd.join("pkg"))
        );
        assert_eq!(
            resolve_target_dir("bash", &json!({"command": "cd pkg && make"}), cwd),
            Some(cwd.join("pkg"))
        );
        assert_eq!(
            resolve_target_dir("bash", &json!({"command": "make"}), cwd),
            None
        );
        assert_eq!(
            resolve_target_dir("grep", &json!({"pattern": "x"}), cwd),
            None
        );
        assert_eq!(
            resolve_target_dir("web_fetch", &json!({"path": "pkg"}), cwd),
            None
        );
    }

    #[test]
    fn walk_dirs_respect_ceilings() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let cwd = base.join("work");
        let repo = base.join("other/repo");
        std::fs::create_dir_all(cwd.join("a/b")).unwrap();
        std::fs::create_dir_all(repo.join("pkg/sub")).unwrap();
        std::fs::create_dir(repo.join(".git")).unwrap();
        let none = |_: &Path| false;
        // Inside the cwd: never above it.
        assert_eq!(
            resolve_walk_dirs(&cwd.join("a/b"), &cwd, None, none),
            vec![cwd.clone(), cwd.join("a"), cwd.join("a/b")]
        );
        // Outside: up to the outermost git root.
        assert_eq!(
            resolve_walk_dirs(&repo.join("pkg/sub"), &cwd, None, none),
            vec![repo.clone(), repo.join("pkg"), repo.join("pkg/sub")]
        );
        // A trusted root is a hard ceiling.
        assert_eq!(
            resolve_walk_dirs(&repo.join("pkg/sub"), &cwd, Some(&repo.join("pkg")), none),
            vec![repo.join("pkg"), repo.join("pkg/sub")]
        );
        // No git root: the outermost directory with a context file.
        let plain = base.join("plain/x");
        std::fs::create_dir_all(&plain).unwrap();
        let marker = base.join("plain");
        let has = |d: &Path| d == marker.as_path();
        assert_eq!(
            resolve_walk_dirs(&plain, &cwd, None, has),
            vec![base.join("plain"), plain.clone()]
        );
    }

    #[test]
    fn block_format() {
        let block = format_nested_context_block(
            Path::new("/p/pkg"),
            &[(
                PathBuf::from("/p/pkg/AGENTS.md"),
                "\nUse tabs.\n".to_string(),
            )],
        );
        assert!(block.starts_with(
            "[dreb] Auto-loaded project context\n\nA tool just operated in `/p/pkg`, whose"
        ));
        assert!(block.ends_with(
            "\n\n===== BEGIN project context: /p/pkg/AGENTS.md =====\nUse tabs.\n===== END project context: /p/pkg/AGENTS.md ====="
        ));
    }

    #[test]
    fn delivered_files_suppress_only_full_deliveries() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::write(cwd.join("AGENTS.md"), "rules\n").unwrap();
        let agents = cwd.join("AGENTS.md");
        let d = DeliveredFiles::for_call("read", &json!({"path": "AGENTS.md"}), cwd, cwd);
        assert!(d.suppresses(&agents));
        let sliced =
            DeliveredFiles::for_call("read", &json!({"path": "AGENTS.md", "limit": 1}), cwd, cwd);
        assert!(!sliced.suppresses(&agents));
        let cat = DeliveredFiles::for_call("bash", &json!({"command": "cat AGENTS.md"}), cwd, cwd);
        assert!(cat.suppresses(&agents));
        let piped = DeliveredFiles::for_call(
            "bash",
            &json!({"command": "cat AGENTS.md | head"}),
            cwd,
            cwd,
        );
        assert!(!piped.suppresses(&agents));
        assert_eq!(
            resolve_bash_delivered_files("bat -r 1:3 x", cwd),
            Vec::<PathBuf>::new()
        );
        assert_eq!(
            resolve_bash_delivered_files("cd a && cat 'bc'", &cwd.join("a")),
            vec![cwd.join("a/bc")]
        );
        std::fs::write(cwd.join("big.md"), "x\n".repeat(3000)).unwrap();
        let big = DeliveredFiles::for_call("read", &json!({"path": "big.md"}), cwd, cwd);
        assert!(!big.suppresses(&cwd.join("big.md")));
    }
}
