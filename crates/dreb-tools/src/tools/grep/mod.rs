//! `grep`: search file contents with a regex (or literal), gitignore-aware, in-process (ripgrep's own crates,
//! no child process). Output `path:line: text`, context lines `path-line- text`, lines cut at 500 chars.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, sinks::Lossy};
use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{as_count, blocking, definition, parse_params, text_output};
use crate::paths::resolve_to_cwd;
use crate::truncate::{
    DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, Limits, format_size, truncate_head, truncate_line,
};
use crate::walk::{Batch, Smallest, dreb_tool_visible_dirs, relative_posix};

mod shared;

pub use shared::SharedWalks;
use shared::{Found, Member};

pub const GREP_DEFAULT_LIMIT: usize = 100;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GrepParams {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    ignore_case: Option<bool>,
    literal: Option<bool>,
    context: Option<f64>,
    limit: Option<f64>,
}

pub struct GrepTool {
    cwd: PathBuf,
    def: ToolDefinition,
    /// The walks of this tool's searches in progress, for searches of the same tree to share.
    walks: std::sync::Arc<SharedWalks>,
}

pub fn grep_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
            "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
            "glob": {"type": "string", "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"},
            "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
            "literal": {"type": "boolean", "description": "Treat pattern as literal string instead of regex (default: false)"},
            "context": {"type": "number", "description": "Number of lines to show before and after each match (default: 0)"},
            "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"}
        },
        "required": ["pattern"]
    })
}

impl GrepTool {
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let description = format!(
            "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to {GREP_DEFAULT_LIMIT} matches or {}KB (whichever is hit first). Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars.",
            DEFAULT_MAX_BYTES / 1024
        );
        GrepTool {
            cwd: cwd.into(),
            def: definition("grep", description, grep_schema()),
            walks: Default::default(),
        }
    }
}

/// What to search for and how.
#[derive(Debug, Clone)]
pub struct GrepQuery {
    pub pattern: String,
    pub glob: Option<String>,
    pub ignore_case: bool,
    pub literal: bool,
    /// Matches to keep, in path order (the tool's `limit`; `usize::MAX` keeps every match).
    pub limit: usize,
}

/// What a search found: the first files in path order holding at least `limit` matches, and the number of
/// matches in all (each file counted up to `limit`).
#[derive(Debug, Clone, Default)]
pub struct SearchOutcome {
    pub files: Vec<FileMatches>,
    pub total_matches: usize,
}

/// The matching lines of one file: (1-based line number, line text without the terminator).
#[derive(Debug, Clone)]
pub struct FileMatches {
    pub path: PathBuf,
    pub lines: Vec<(u64, String)>,
}

pub fn build_matcher(q: &GrepQuery) -> Result<RegexMatcher, String> {
    RegexMatcherBuilder::new()
        .case_insensitive(q.ignore_case)
        .fixed_strings(q.literal)
        .line_terminator(Some(b'\n'))
        .build(&q.pattern)
        .map_err(|e| e.to_string())
}

fn new_searcher() -> Searcher {
    // Like ripgrep's recursive search: stop at the first NUL byte (binary file).
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build()
}

/// How much of a regular file one `read` takes; a file that fills it is searched as a stream.
const WHOLE_READ: usize = 256 * 1024;

/// A search thread's file reader: a [`WHOLE_READ`]-byte buffer and the directory of the file it read last, kept
/// open so that the next file there is opened by its name alone instead of resolving its whole path again (a walk
/// visits a directory's files one after another).
pub(crate) struct FileReader {
    buf: Vec<u8>,
    dir: Option<(PathBuf, std::os::fd::OwnedFd)>,
}

impl FileReader {
    pub(crate) fn new() -> FileReader {
        FileReader {
            buf: vec![0; WHOLE_READ],
            dir: None,
        }
    }

    /// Opens `path` for reading, by name in its directory.
    fn open(&mut self, path: &Path) -> std::io::Result<std::fs::File> {
        use nix::fcntl::{OFlag, open, openat};
        use nix::sys::stat::Mode;
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return std::fs::File::open(path);
        };
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if self
            .dir
            .as_ref()
            .is_none_or(|(p, _)| p.as_os_str() != parent.as_os_str())
        {
            self.dir = None;
            let fd = open(
                parent,
                OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
                Mode::empty(),
            )?;
            self.dir = Some((parent.to_path_buf(), fd));
        }
        let (_, dir) = self.dir.as_ref().expect("opened above");
        let fd = openat(dir, name, OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty())?;
        Ok(std::fs::File::from(fd))
    }
}

/// What one read of a file gave: the whole file in the reader's buffer (a short read of a regular file is its
/// end), its first buffer-full and the file to read on, or nothing (a FIFO or device, searched by path; a file
/// that could not be opened or read).
enum Loaded {
    Whole(usize),
    Large(Option<std::fs::File>),
    ByPath,
    Failed,
}

/// Reads `path` for searching. A regular file is opened and read with one `read` and searched as a slice: three
/// system calls instead of the five a streamed search makes (open, a read to sniff a byte-order mark, a read, a
/// read to see the end, close), which is most of what a search of a large tree costs.
fn load(reader: &mut FileReader, path: &Path, is_regular: bool) -> Loaded {
    use std::io::Read;
    if !is_regular {
        return Loaded::ByPath;
    }
    let mut file = match reader.open(path) {
        Ok(file) => file,
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "grep: skipping unreadable file");
            return Loaded::Failed;
        }
    };
    loop {
        match file.read(&mut reader.buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!(path = %path.display(), error = %e, "grep: skipping unreadable file");
                return Loaded::Failed;
            }
            Ok(n) if n < reader.buf.len() => return Loaded::Whole(n),
            Ok(_) => return Loaded::Large(Some(file)),
        }
    }
}

/// The matching lines of a loaded file, at most `cap`. A file larger than the buffer is searched as a stream:
/// the buffer then the rest of the file the first time, by its path again for any further search of it.
fn search_loaded(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    loaded: &mut Loaded,
    buf: &[u8],
    cap: usize,
) -> Vec<(u64, String)> {
    use std::io::Read;
    let mut lines = Vec::new();
    let sink = Lossy(|lnum, line| {
        let text = line.strip_suffix('\n').unwrap_or(line).replace('\r', "");
        lines.push((lnum, text));
        Ok(lines.len() < cap)
    });
    let res = match loaded {
        Loaded::Whole(n) => searcher.search_slice(matcher, &buf[..*n], sink),
        Loaded::Large(file) => match file.take() {
            Some(file) => {
                searcher.search_reader(matcher, std::io::Cursor::new(buf).chain(file), sink)
            }
            None => searcher.search_path(matcher, path, sink),
        },
        Loaded::ByPath => searcher.search_path(matcher, path, sink),
        Loaded::Failed => return lines,
    };
    if let Err(e) = res {
        tracing::debug!(path = %path.display(), error = %e, "grep: skipping unreadable file");
    }
    lines
}

/// Searches `path` (see [`load`]).
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    is_regular: bool,
    reader: &mut FileReader,
    cap: usize,
) -> Option<FileMatches> {
    let mut loaded = load(reader, path, is_regular);
    let lines = search_loaded(searcher, matcher, path, &mut loaded, &reader.buf, cap);
    (!lines.is_empty()).then(|| FileMatches {
        path: path.to_path_buf(),
        lines,
    })
}

/// Search `roots` (directories walked gitignore-aware, or single files); files come back sorted by path.
pub fn search_paths(
    q: &GrepQuery,
    roots: &[PathBuf],
    cancel: &CancellationToken,
) -> Result<SearchOutcome, String> {
    search(q, roots, cancel, None)
}

/// [`search_paths`], sharing the walk of its directories with searches of the same ones running at the same time
/// (see [`shared`]).
pub fn search_paths_shared(
    q: &GrepQuery,
    roots: &[PathBuf],
    cancel: &CancellationToken,
    walks: &SharedWalks,
) -> Result<SearchOutcome, String> {
    search(q, roots, cancel, Some(walks))
}

fn search(
    q: &GrepQuery,
    roots: &[PathBuf],
    cancel: &CancellationToken,
    walks: Option<&SharedWalks>,
) -> Result<SearchOutcome, String> {
    let matcher = build_matcher(q)?;
    let cap = q.limit.max(1);
    let found: Found = Smallest::new(cap);
    let (files, dirs): (Vec<&PathBuf>, Vec<&PathBuf>) = roots.iter().partition(|p| p.is_file());
    {
        let mut searcher = new_searcher();
        let mut reader = FileReader::new();
        let mut batch = Batch::new(found.clone());
        for f in files {
            let is_regular = std::fs::metadata(f).is_ok_and(|m| m.is_file());
            if let Some(m) = search_file(&mut searcher, &matcher, f, is_regular, &mut reader, cap) {
                let n = m.lines.len();
                batch.push(m.path, m.lines, n);
            }
        }
    }
    let dirs: Vec<PathBuf> = dirs.into_iter().cloned().collect();
    if !dirs.is_empty() {
        let overrides = match &q.glob {
            Some(g) => {
                let mut b = OverrideBuilder::new(&dirs[0]);
                b.add(g).map_err(|e| e.to_string())?;
                Some(b.build().map_err(|e| e.to_string())?)
            }
            None => None,
        };
        let member = Member {
            matcher,
            cap,
            found: found.clone(),
            cancel: cancel.clone(),
        };
        match walks {
            Some(walks) => walks.walk(dirs, q.glob.clone(), overrides, member),
            None => shared::walk_alone(&dirs, overrides, member),
        }
    }
    let (kept, total_matches) = found.finish();
    Ok(SearchOutcome {
        files: kept
            .into_iter()
            .map(|(path, lines)| FileMatches { path, lines })
            .collect(),
        total_matches,
    })
}

fn read_lines(path: &Path) -> Option<Vec<String>> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes)
        .replace("\r\n", "\n")
        .replace('\r', "\n");
    Some(text.split('\n').map(str::to_string).collect())
}

fn run_grep(
    cwd: PathBuf,
    p: GrepParams,
    cancel: CancellationToken,
    walks: &SharedWalks,
) -> Result<ToolOutput, ToolError> {
    let search = resolve_to_cwd(
        p.path.as_deref().filter(|s| !s.is_empty()).unwrap_or("."),
        &cwd,
    );
    let is_dir = match std::fs::metadata(&search) {
        Ok(m) => m.is_dir(),
        Err(_) => {
            return Err(ToolError::new(format!(
                "Path not found: {}",
                search.display()
            )));
        }
    };
    let context = as_count(p.context).filter(|c| *c > 0).unwrap_or(0) as usize;
    let limit = as_count(p.limit)
        .map(|l| l.max(1) as usize)
        .unwrap_or(GREP_DEFAULT_LIMIT);
    let mut roots = vec![search.clone()];
    if p.path.as_deref().is_none_or(str::is_empty) {
        roots.extend(dreb_tool_visible_dirs(&cwd));
    }
    let query = GrepQuery {
        pattern: p.pattern,
        glob: p.glob.filter(|g| !g.is_empty()),
        ignore_case: p.ignore_case.unwrap_or(false),
        literal: p.literal.unwrap_or(false),
        limit,
    };
    let outcome = search_paths_shared(&query, &roots, &cancel, walks).map_err(ToolError::new)?;
    let files = outcome.files;

    let format_path = |path: &Path| -> String {
        if is_dir {
            let rel = relative_posix(path, &search);
            if !rel.is_empty() && !rel.starts_with("..") {
                return rel;
            }
        }
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };

    let mut match_count = 0usize;
    let mut lines_truncated = false;
    let mut out_lines: Vec<String> = Vec::new();
    let mut failed: Vec<String> = Vec::new();
    let mut file_cache: HashMap<PathBuf, Option<Vec<String>>> = HashMap::new();
    'files: for fm in &files {
        let rel = format_path(&fm.path);
        for (lnum, text) in &fm.lines {
            if match_count >= limit {
                break 'files;
            }
            match_count += 1;
            let lnum = *lnum as usize;
            if context == 0 {
                let (t, cut) = truncate_line(text, GREP_MAX_LINE_LENGTH);
                lines_truncated |= cut;
                out_lines.push(format!("{rel}:{lnum}: {t}"));
                continue;
            }
            let lines = file_cache
                .entry(fm.path.clone())
                .or_insert_with(|| read_lines(&fm.path));
            let Some(lines) = lines.as_ref() else {
                if !failed.contains(&fm.path.display().to_string()) {
                    failed.push(fm.path.display().to_string());
                }
                out_lines.push(format!("{rel}:{lnum}: (unable to read file)"));
                continue;
            };
            let start = lnum.saturating_sub(context).max(1);
            let end = (lnum + context).min(lines.len());
            for cur in start..=end {
                let raw = lines
                    .get(cur - 1)
                    .map(|s| s.replace('\r', ""))
                    .unwrap_or_default();
                let (t, cut) = truncate_line(&raw, GREP_MAX_LINE_LENGTH);
                lines_truncated |= cut;
                if cur == lnum {
                    out_lines.push(format!("{rel}:{cur}: {t}"));
                } else {
                    out_lines.push(format!("{rel}-{cur}- {t}"));
                }
            }
        }
    }
    if match_count == 0 {
        return Ok(text_output("No matches found", None));
    }
    let limit_reached = outcome.total_matches >= limit;

    let trunc = truncate_head(&out_lines.join("\n"), Limits::bytes_only());
    let mut output = trunc.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if limit_reached {
        notices.push(format!(
            "{limit} matches limit reached. Use limit={} for more, or refine pattern",
            limit * 2
        ));
        details.insert("matchLimitReached".into(), json!(limit));
    }
    if trunc.truncated {
        notices.push(format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)));
        details.insert("truncation".into(), trunc.to_json());
    }
    if lines_truncated {
        notices.push(format!(
            "Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        ));
        details.insert("linesTruncated".into(), json!(true));
    }
    if !notices.is_empty() {
        output.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    if !failed.is_empty() {
        output.push_str(&format!(
            "\n\nWarning: Failed to read {} file(s): {}",
            failed.len(),
            failed.join(", ")
        ));
    }
    Ok(text_output(
        output,
        (!details.is_empty()).then_some(Value::Object(details)),
    ))
}

#[async_trait]
impl Tool for GrepTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let p: GrepParams = parse_params("grep", params)?;
        let cwd = self.cwd.clone();
        let walk_cancel = cancel.clone();
        let walks = self.walks.clone();
        blocking(&cancel, move || run_grep(cwd, p, walk_cancel, &walks)).await
    }
}

#[cfg(test)]
mod read_tests {
    use super::*;

    /// A file read whole and searched as a slice gives what a streamed search of it gives: byte-order marks,
    /// binary files, CRLF lines, a missing last newline, and files larger than one read (matches on both sides
    /// of the boundary).
    #[test]
    fn one_read_searches_like_a_stream() {
        let dir = tempfile::tempdir().unwrap();
        let big_line = "filler line without the word\n";
        let mut big = String::new();
        while big.len() < WHOLE_READ - 10 {
            big.push_str(big_line);
        }
        big.push_str("needle across the boundary\n");
        big.push_str(&big_line.repeat(1000));
        big.push_str("needle at the end");
        let mut utf16 = vec![0xFF, 0xFE];
        for u in "a needle here\nno\n".encode_utf16() {
            utf16.extend_from_slice(&u.to_le_bytes());
        }
        let files: Vec<(&str, Vec<u8>)> = vec![
            ("plain.txt", b"one needle\ntwo\nneedle three".to_vec()),
            (
                "bom8.txt",
                b"\xEF\xBB\xBFneedle first\r\nsecond needle\r\n".to_vec(),
            ),
            ("utf16.txt", utf16),
            ("binary.bin", b"needle\nmore\x00needle\n".to_vec()),
            ("empty.txt", Vec::new()),
            ("exact.txt", {
                let mut v = b"needle\n".to_vec();
                v.resize(WHOLE_READ, b'x');
                v
            }),
            ("big.txt", big.into_bytes()),
        ];
        let matcher = build_matcher(&GrepQuery {
            pattern: "needle".into(),
            glob: None,
            ignore_case: false,
            literal: false,
            limit: usize::MAX,
        })
        .unwrap();
        let mut reader = FileReader::new();
        for (name, bytes) in files {
            let path = dir.path().join(name);
            std::fs::write(&path, &bytes).unwrap();
            let mut searcher = new_searcher();
            let read = search_file(&mut searcher, &matcher, &path, true, &mut reader, 10_000);
            let streamed = search_file(&mut searcher, &matcher, &path, false, &mut reader, 10_000);
            assert_eq!(
                read.as_ref().map(|m| &m.lines),
                streamed.as_ref().map(|m| &m.lines),
                "{name}"
            );
            if name == "big.txt" {
                assert_eq!(read.unwrap().lines.len(), 2);
            }
        }
        // Files of two directories in turn: each is opened in its own directory.
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/plain.txt"), "sub needle\n").unwrap();
        for name in ["sub/plain.txt", "plain.txt", "sub/plain.txt"] {
            let mut searcher = new_searcher();
            let found = search_file(
                &mut searcher,
                &matcher,
                &dir.path().join(name),
                true,
                &mut reader,
                10,
            );
            let first = &found.unwrap().lines[0].1;
            assert_eq!(first.starts_with("sub"), name.starts_with("sub"), "{name}");
        }
        // Gone between the walk and the read: nothing, as before.
        let mut searcher = new_searcher();
        assert!(
            search_file(
                &mut searcher,
                &matcher,
                &dir.path().join("gone"),
                true,
                &mut reader,
                10
            )
            .is_none()
        );
    }
}
