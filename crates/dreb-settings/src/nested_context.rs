//! Lazy nested context: after a tool call, decide which not-yet-loaded AGENTS.md / CLAUDE.md
//! files around the directory it touched should be appended to its result.
//!
//! Pure decision logic for the tools layer: [`compute_nested_context_block`] takes the tool
//! name and arguments plus per-session state and returns the text block to append, if any.
//! The caller should skip it entirely unless [`ContextTrustPolicy::is_active`].

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::context_files::{CONTEXT_FILE_CANDIDATES, ContextFile, load_context_files_from_dir};
use crate::context_trust::{ContextTrustPolicy, is_within_canonical_root, match_context_trust};
use crate::js::js_trim;
use crate::paths::{home_dir, normalize_lexical, resolve_against, safe_realpath};

/// Upper bound on directories visited by one upward walk.
const MAX_WALK_DEPTH: usize = 64;
/// Output limits of `read` / `bash`: a file larger than this is not delivered in full.
pub const DEFAULT_MAX_LINES: usize = 2000;
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;

const PATH_TOOLS: [&str; 6] = ["read", "edit", "write", "grep", "find", "ls"];
const FULL_DUMP_COMMANDS: [&str; 2] = ["cat", "bat"];
const BAT_RANGE_FLAGS: [&str; 2] = ["-r", "--line-range"];

/// Per-session state of lazy loading.
#[derive(Debug, Clone)]
pub struct NestedContextState {
    /// Global-only policy for this decision (re-read before each call).
    pub policy: ContextTrustPolicy,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// Realpaths of context files already loaded (seed with the session-start files).
    pub loaded: HashSet<PathBuf>,
    /// Canonical directories already scanned (negative cache).
    pub scanned_dirs: HashSet<PathBuf>,
}

impl NestedContextState {
    /// State seeded with the files loaded at session start.
    pub fn new(policy: ContextTrustPolicy, cwd: PathBuf, startup_files: &[ContextFile]) -> Self {
        let loaded = startup_files
            .iter()
            .map(|f| safe_realpath(&f.path))
            .collect();
        Self {
            policy,
            cwd,
            loaded,
            scanned_dirs: HashSet::new(),
        }
    }
}

/// Result of one collection pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NestedContextCollection {
    pub files: Vec<ContextFile>,
    /// An existing file could not be read: do not negative-cache the directory.
    pub had_read_error: bool,
}

static CD_PREFIX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*cd\s+").expect("valid regex"));
static CD_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^\s*(?:"([^"]+)"|'([^']+)'|([^\s&;|<>]+))"#).expect("valid regex")
});
static SEGMENT_SPLIT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"&&|\|\||;").expect("valid regex"));
static CD_SEGMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*cd(\s|$)").expect("valid regex"));

fn next_token(rest: &str) -> Option<(String, usize)> {
    let caps = CD_TOKEN.captures(rest)?;
    let token = caps
        .get(1)
        .or_else(|| caps.get(2))
        .or_else(|| caps.get(3))
        .map_or("", |m| m.as_str());
    Some((
        js_trim(token).to_string(),
        caps.get(0).map_or(0, |m| m.end()),
    ))
}

/// Target of a leading `cd <dir>` (raw, `~` kept), or `None` for `cd -`, `$VAR`, no `cd`.
pub fn parse_leading_cd(command: &str) -> Option<String> {
    let prefix = CD_PREFIX.find(command)?;
    let mut rest = &command[prefix.end()..];
    loop {
        let (target, consumed) = next_token(rest)?;
        if target.is_empty() || target == "-" {
            return None;
        }
        if target == "--" {
            let (path, _) = next_token(&rest[consumed..])?;
            if path.is_empty() || path.starts_with('$') {
                return None;
            }
            return Some(path);
        }
        if target.starts_with('-') {
            rest = &rest[consumed..];
            continue;
        }
        if target.starts_with('$') {
            return None;
        }
        return Some(target);
    }
}

/// `~` expansion then resolution against `base`.
fn expand_to_absolute(raw: &str, base: &Path) -> PathBuf {
    let expanded = if raw == "~" {
        home_dir()
    } else if let Some(rest) = raw.strip_prefix("~/") {
        home_dir().join(rest)
    } else {
        PathBuf::from(raw)
    };
    resolve_against(base, &expanded)
}

/// Directory a tool call operates in: the `path` of read/edit/write/grep/find/ls, or a bash
/// command's leading `cd`. An existing directory is used as-is; anything else maps to its parent.
pub fn resolve_target_dir(tool_name: &str, args: &Value, cwd: &Path) -> Option<PathBuf> {
    let raw = if tool_name == "bash" {
        parse_leading_cd(args.get("command").and_then(Value::as_str).unwrap_or(""))?
    } else if PATH_TOOLS.contains(&tool_name) {
        args.get("path")
            .and_then(Value::as_str)
            .filter(|p| !js_trim(p).is_empty())?
            .to_string()
    } else {
        return None;
    };
    let absolute = expand_to_absolute(&raw, cwd);
    if fs::metadata(&absolute).is_ok_and(|m| m.is_dir()) {
        return Some(absolute);
    }
    Some(absolute.parent().map(Path::to_path_buf).unwrap_or(absolute))
}

fn is_within(parent: &Path, child: &Path) -> bool {
    let p = safe_realpath(parent);
    let c = safe_realpath(child);
    c == p || c.starts_with(&p)
}

fn dir_has_context_file(dir: &Path) -> bool {
    CONTEXT_FILE_CANDIDATES.iter().any(|c| dir.join(c).exists())
}

/// Directories to scan, outermost first. Ceiling: the trusted root (or cwd when nearer);
/// unrestricted and inside cwd: cwd; unrestricted and outside cwd: the outermost git root on
/// the chain, else the outermost directory holding a context file, else the filesystem root.
pub fn resolve_walk_dirs(
    target_dir: &Path,
    cwd: &Path,
    trusted_root: Option<&str>,
) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut current = target_dir.to_path_buf();
    if let Some(root) = trusted_root {
        let canonical_cwd = safe_realpath(cwd);
        let cwd_str = canonical_cwd.to_string_lossy();
        let stop_at_cwd = is_within_canonical_root(&cwd_str, &target_dir.to_string_lossy());
        for _ in 0..MAX_WALK_DEPTH {
            dirs.push(current.clone());
            if current.as_os_str() == root || (stop_at_cwd && current == canonical_cwd) {
                break;
            }
            match current.parent() {
                Some(parent) => current = parent.to_path_buf(),
                None => break,
            }
        }
        dirs.reverse();
        return dirs;
    }

    if is_within(cwd, target_dir) {
        let stop = safe_realpath(cwd);
        for _ in 0..MAX_WALK_DEPTH {
            dirs.push(current.clone());
            if safe_realpath(&current) == stop {
                break;
            }
            match current.parent() {
                Some(parent) => current = parent.to_path_buf(),
                None => break,
            }
        }
        dirs.reverse();
        return dirs;
    }

    let mut git_idx = None;
    let mut context_idx = None;
    for _ in 0..MAX_WALK_DEPTH {
        if fs::metadata(&current).is_err() {
            break;
        }
        dirs.push(current.clone());
        let idx = dirs.len() - 1;
        if current.join(".git").exists() {
            git_idx = Some(idx);
        }
        if dir_has_context_file(&current) {
            context_idx = Some(idx);
        }
        match current.parent() {
            Some(parent) => current = parent.to_path_buf(),
            None => break,
        }
    }
    let ceiling = git_idx
        .or(context_idx)
        .unwrap_or(dirs.len().saturating_sub(1));
    dirs.truncate(ceiling + 1);
    dirs.reverse();
    dirs
}

/// Collect not-yet-loaded context files for `target_dir` (canonical). Newly seen realpaths are
/// added to `loaded`; files for which `suppress` is true are marked loaded but not returned.
pub fn collect_nested_context(
    target_dir: &Path,
    cwd: &Path,
    loaded: &mut HashSet<PathBuf>,
    suppress: &dyn Fn(&ContextFile) -> bool,
    trusted_root: Option<&str>,
) -> NestedContextCollection {
    let mut collection = NestedContextCollection::default();
    for dir in resolve_walk_dirs(target_dir, cwd, trusted_root) {
        let mut diagnostics = Vec::new();
        let files = load_context_files_from_dir(&dir, trusted_root, &mut diagnostics);
        for d in &diagnostics {
            collection.had_read_error = true;
            tracing::warn!(path = %d.path.display(), message = %d.message, "nested context file existed but could not be read");
        }
        for file in files {
            let real = safe_realpath(&file.path);
            if !loaded.insert(real) {
                continue;
            }
            if suppress(&file) {
                continue;
            }
            collection.files.push(file);
        }
    }
    collection
}

/// The block appended to the tool result. No size cap on purpose.
pub fn format_nested_context_block(target_dir: &Path, files: &[ContextFile]) -> String {
    let header = format!(
        "[dreb] Auto-loaded project context\n\nA tool just operated in `{}`, whose project context had not been loaded yet. The file(s) below were loaded automatically to prevent missing important project context when working across multiple repos / projects / folders. (Manage folder-specific loading with `context.trustedFolders`, or disable unrestricted loading with `context.autoLoadNested`.)",
        target_dir.display()
    );
    let sections: Vec<String> = files
        .iter()
        .map(|f| {
            let p = f.path.display();
            format!(
                "===== BEGIN project context: {p} =====\n{}\n===== END project context: {p} =====",
                js_trim(&f.content)
            )
        })
        .collect();
    format!("{header}\n\n{}", sections.join("\n\n"))
}

/// The file an un-sliced `read` delivers in full, if this is one.
pub fn resolve_self_read_file(tool_name: &str, args: &Value, cwd: &Path) -> Option<PathBuf> {
    if tool_name != "read" || args.get("offset").is_some() || args.get("limit").is_some() {
        return None;
    }
    let p = args
        .get("path")?
        .as_str()
        .filter(|p| !js_trim(p).is_empty())?;
    Some(expand_to_absolute(p, cwd))
}

fn unquote(token: &str) -> &str {
    let bytes = token.as_bytes();
    if bytes.len() >= 2
        && (bytes[0] == b'"' || bytes[0] == b'\'')
        && bytes[0] == bytes[bytes.len() - 1]
    {
        &token[1..token.len() - 1]
    } else {
        token
    }
}

/// The single file a bash command provably prints in full (`cat|bat <one file>` as the only
/// output segment, no pipes/redirects, at most one `cd`, no bat range flags).
pub fn resolve_bash_delivered_files(command: &str, working_dir: &Path) -> Vec<PathBuf> {
    if js_trim(command).is_empty() {
        return Vec::new();
    }
    let segments: Vec<&str> = SEGMENT_SPLIT.split(command).collect();
    if segments.iter().filter(|s| CD_SEGMENT.is_match(s)).count() > 1 {
        return Vec::new();
    }
    let outputs: Vec<&str> = segments
        .into_iter()
        .filter(|s| !js_trim(s).is_empty() && !CD_SEGMENT.is_match(s))
        .collect();
    let [segment] = outputs.as_slice() else {
        return Vec::new();
    };
    if segment.contains(['|', '>', '<']) {
        return Vec::new();
    }
    let tokens: Vec<&str> = segment.split_whitespace().collect();
    let Some((cmd, args)) = tokens.split_first() else {
        return Vec::new();
    };
    if !FULL_DUMP_COMMANDS.contains(cmd) {
        return Vec::new();
    }
    if *cmd == "bat"
        && args
            .iter()
            .any(|t| BAT_RANGE_FLAGS.iter().any(|f| t.starts_with(f)))
    {
        return Vec::new();
    }
    let operands: Vec<&str> = args
        .iter()
        .filter(|t| !t.starts_with('-'))
        .map(|t| unquote(t))
        .filter(|a| !a.is_empty())
        .collect();
    match operands.as_slice() {
        [one] => vec![expand_to_absolute(one, working_dir)],
        _ => Vec::new(),
    }
}

/// Whether a delivery of `path` fits the tool output limits (so suppression loses nothing).
/// `render` maps raw content to what the tool prints (terminal rendering for bash).
fn delivered_in_full(path: &Path, render: Option<&dyn Fn(&str) -> String>) -> bool {
    let Ok(meta) = fs::metadata(path) else {
        return false;
    };
    if meta.len() > DEFAULT_MAX_BYTES as u64 {
        return false;
    }
    let Ok(bytes) = fs::read(path) else {
        return false;
    };
    let raw = String::from_utf8_lossy(&bytes).into_owned();
    let delivered = match render {
        Some(render) => render(&raw),
        None => raw,
    };
    delivered.len() <= DEFAULT_MAX_BYTES && delivered.split('\n').count() <= DEFAULT_MAX_LINES
}

/// One lazy-loading decision for a finished tool call. Returns the block to append to the
/// tool result, or `None`. `render_bash_output` must mirror how the bash tool renders output
/// (tab expansion, ANSI handling) so suppression is judged on what bash really printed.
pub fn compute_nested_context_block(
    tool_name: &str,
    args: &Value,
    state: &mut NestedContextState,
    render_bash_output: &dyn Fn(&str) -> String,
) -> Option<String> {
    let target_dir = resolve_target_dir(tool_name, args, &state.cwd)?;
    // Trust first: an untrusted touch must not poison the negative cache.
    let grant = match_context_trust(&state.policy, &target_dir)?;
    let real_target = PathBuf::from(&grant.target_dir);
    if state.scanned_dirs.contains(&real_target) {
        return None;
    }

    let self_read = resolve_self_read_file(tool_name, args, &state.cwd).map(|p| safe_realpath(&p));
    let bash_delivered: Option<HashSet<PathBuf>> = (tool_name == "bash")
        .then(|| args.get("command").and_then(Value::as_str))
        .flatten()
        .map(|cmd| {
            resolve_bash_delivered_files(cmd, &target_dir)
                .iter()
                .map(|p| safe_realpath(p))
                .collect()
        });
    let suppress = |file: &ContextFile| {
        let real = safe_realpath(&file.path);
        if self_read.as_ref() == Some(&real) {
            return delivered_in_full(&real, None);
        }
        if bash_delivered
            .as_ref()
            .is_some_and(|set| set.contains(&real))
        {
            return delivered_in_full(&real, Some(render_bash_output));
        }
        false
    };

    let cwd = normalize_lexical(&state.cwd);
    let collection = collect_nested_context(
        &real_target,
        &cwd,
        &mut state.loaded,
        &suppress,
        grant.trusted_root.as_deref(),
    );
    if !collection.had_read_error {
        state.scanned_dirs.insert(real_target);
    }
    if collection.files.is_empty() {
        return None;
    }
    Some(format_nested_context_block(&target_dir, &collection.files))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn leading_cd_parsing() {
        assert_eq!(parse_leading_cd("cd /x && ls").as_deref(), Some("/x"));
        assert_eq!(
            parse_leading_cd("  cd \"/a b\"; ls").as_deref(),
            Some("/a b")
        );
        assert_eq!(parse_leading_cd("cd '/q'").as_deref(), Some("/q"));
        assert_eq!(parse_leading_cd("cd -P /real").as_deref(), Some("/real"));
        assert_eq!(parse_leading_cd("cd -- -dir").as_deref(), Some("-dir"));
        assert_eq!(parse_leading_cd("cd ~/src|x").as_deref(), Some("~/src"));
        assert_eq!(parse_leading_cd("cd -"), None);
        assert_eq!(parse_leading_cd("cd $HOME"), None);
        assert_eq!(parse_leading_cd("ls; cd /x"), None);
        assert_eq!(parse_leading_cd("cdx /x"), None);
    }

    #[test]
    fn bash_delivery_is_conservative() {
        let wd = Path::new("/w");
        assert_eq!(
            resolve_bash_delivered_files("cd /w && cat AGENTS.md", wd),
            vec![PathBuf::from("/w/AGENTS.md")]
        );
        assert_eq!(
            resolve_bash_delivered_files("cat '/abs/CLAUDE.md'", wd),
            vec![PathBuf::from("/abs/CLAUDE.md")]
        );
        assert!(resolve_bash_delivered_files("cat a.md b.md", wd).is_empty());
        assert!(resolve_bash_delivered_files("cat a.md | head", wd).is_empty());
        assert!(resolve_bash_delivered_files("cat a.md > x", wd).is_empty());
        assert!(resolve_bash_delivered_files("cd a && cd b && cat a.md", wd).is_empty());
        assert!(resolve_bash_delivered_files("ls; cat a.md", wd).is_empty());
        assert!(resolve_bash_delivered_files("bat -r10:20 a.md", wd).is_empty());
        assert!(resolve_bash_delivered_files("CAT a.md", wd).is_empty());
        assert_eq!(
            resolve_bash_delivered_files("bat --plain a.md", wd),
            vec![PathBuf::from("/w/a.md")]
        );
    }

    #[test]
    fn self_read_only_for_unsliced_reads() {
        let cwd = Path::new("/w");
        assert_eq!(
            resolve_self_read_file("read", &json!({"path": "x/AGENTS.md"}), cwd),
            Some(PathBuf::from("/w/x/AGENTS.md"))
        );
        assert_eq!(
            resolve_self_read_file("read", &json!({"path": "a", "offset": 1}), cwd),
            None
        );
        assert_eq!(
            resolve_self_read_file("grep", &json!({"path": "a"}), cwd),
            None
        );
    }
}
