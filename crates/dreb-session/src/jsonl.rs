//! Reading and writing session JSONL files.
//!
//! Reading is tolerant, like the reference: blank and malformed lines (including a last line torn by a crash
//! mid-append) are skipped and everything else is kept. Writing appends whole lines with one `write` each, and
//! makes sure a new line never glues onto a torn one. Whole-file rewrites go through a temp file and a rename, so
//! a crash never leaves a half-written session.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::entry::{JsonMap, SessionEntry};

/// The lines of a session file that parsed as JSON objects, in file order.
#[derive(Debug, Default)]
pub struct ParsedLines {
    pub lines: Vec<SessionEntry>,
    /// Non-blank lines that were not JSON objects (corrupt or torn).
    pub skipped: usize,
    /// Whether the data ends in `\n` (false for a torn last line); empty data counts as ending in a newline.
    pub ends_with_newline: bool,
}

/// Above this size the lines are parsed on several threads.
const PARALLEL_THRESHOLD: usize = 8 * 1024 * 1024;

/// Parses JSONL bytes. Invalid UTF-8 is replaced (as Node's `readFileSync(..., "utf8")` does).
pub fn parse_lines(data: &[u8]) -> ParsedLines {
    let data = data.strip_prefix("\u{feff}".as_bytes()).unwrap_or(data);
    let ends_with_newline = data.is_empty() || data.ends_with(b"\n");
    let (lines, skipped) = if data.len() >= PARALLEL_THRESHOLD {
        parse_parallel(data)
    } else {
        parse_chunk(data)
    };
    ParsedLines {
        lines,
        skipped,
        ends_with_newline,
    }
}

/// One line as an entry: `None` when it is not a JSON object (invalid UTF-8 is replaced first).
pub(crate) fn parse_line(line: &[u8]) -> Option<SessionEntry> {
    match serde_json::from_slice::<JsonMap>(line) {
        Ok(map) => Some(SessionEntry::from_map(map)),
        Err(_) => {
            // Invalid UTF-8 inside an otherwise fine line: retry with replacement characters.
            if std::str::from_utf8(line).is_err() {
                let lossy = String::from_utf8_lossy(line);
                serde_json::from_str::<JsonMap>(&lossy)
                    .ok()
                    .map(SessionEntry::from_map)
            } else {
                None
            }
        }
    }
}

fn parse_chunk(data: &[u8]) -> (Vec<SessionEntry>, usize) {
    let mut lines = Vec::new();
    let mut skipped = 0;
    for raw in data.split(|b| *b == b'\n') {
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse_line(raw) {
            Some(e) => lines.push(e),
            None => skipped += 1,
        }
    }
    (lines, skipped)
}

/// `data` cut at line boundaries into one part per thread to use (one part below the parallel threshold), as
/// `(start, end)` offsets.
pub(crate) fn split_for_threads(data: &[u8]) -> Vec<(usize, usize)> {
    let threads = if data.len() >= PARALLEL_THRESHOLD {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, 8)
    } else {
        1
    };
    // Cut at newlines near equal offsets.
    let mut cuts = vec![0usize];
    for i in 1..threads {
        let target = data.len() * i / threads;
        let from = (*cuts.last().unwrap()).max(target);
        match memchr::memchr(b'\n', &data[from..]) {
            Some(p) => cuts.push(from + p + 1),
            None => break,
        }
    }
    cuts.push(data.len());
    cuts.windows(2).map(|w| (w[0], w[1])).collect()
}

fn parse_parallel(data: &[u8]) -> (Vec<SessionEntry>, usize) {
    let parts = split_for_threads(data);
    let results: Vec<(Vec<SessionEntry>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter()
            .map(|&(a, b)| s.spawn(move || parse_chunk(&data[a..b])))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let total = results.iter().map(|r| r.0.len()).sum();
    let mut lines = Vec::with_capacity(total);
    let mut skipped = 0;
    for (chunk, s) in results {
        lines.extend(chunk);
        skipped += s;
    }
    (lines, skipped)
}

/// Reads and parses a session file. A missing file gives `Ok(None)`.
pub fn read_file(path: &Path) -> io::Result<Option<ParsedLines>> {
    match fs::read(path) {
        Ok(data) => Ok(Some(parse_lines(&data))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// True when the first parsed line is a session header with a string id (the reference's validity rule).
pub fn has_valid_header(lines: &[SessionEntry]) -> bool {
    lines
        .first()
        .is_some_and(|h| h.is_header() && h.id().is_some())
}

/// Serialises lines as file content: one `JSON.stringify` line each, every line ending in `\n`.
pub fn to_file_content<E: std::borrow::Borrow<SessionEntry>>(
    lines: impl IntoIterator<Item = E>,
) -> String {
    let mut out = String::new();
    for line in lines {
        line.borrow().write_json(&mut out);
        out.push('\n');
    }
    out
}

/// Appends `text` (whole lines) to `path`, creating it if needed, in a single write. With `fresh_line`, a `\n` is
/// written first so the text cannot join a torn last line.
pub fn append(path: &Path, text: &str, fresh_line: bool) -> io::Result<()> {
    let mut file = OpenOptions::new().append(true).create(true).open(path)?;
    // A file that a failed write never created (or left empty) needs no separating newline.
    if fresh_line && file.metadata()?.len() > 0 {
        let mut buf = String::with_capacity(text.len() + 1);
        buf.push('\n');
        buf.push_str(text);
        file.write_all(buf.as_bytes())
    } else {
        file.write_all(text.as_bytes())
    }
}

/// Replaces `path` with `content` atomically (temp file in the same directory, then rename).
pub fn rewrite(path: &Path, content: &str) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp: PathBuf = dir.join(format!(".{name}.{}.tmp", uuid::Uuid::new_v4().simple()));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(content.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_blank_malformed_and_torn_lines() {
        let data = b"{\"type\":\"session\",\"id\":\"x\"}\n\n  \nnot json\n{\"type\":\"message\",\"id\":\"a\"}\r\n{\"type\":\"mess";
        let p = parse_lines(data);
        assert_eq!(p.lines.len(), 2);
        assert_eq!(p.skipped, 2);
        assert!(!p.ends_with_newline);
        assert!(has_valid_header(&p.lines));
        assert!(parse_lines(b"").ends_with_newline);
    }

    #[test]
    fn parallel_parse_keeps_order() {
        let mut data = String::new();
        let line = format!(
            "{{\"type\":\"custom\",\"id\":\"{{}}\",\"pad\":\"{}\"}}\n",
            "x".repeat(1000)
        );
        let n = PARALLEL_THRESHOLD / 1000 + 100;
        for i in 0..n {
            data.push_str(&line.replace("{}", &i.to_string()));
        }
        let p = parse_lines(data.as_bytes());
        assert_eq!(p.lines.len(), n);
        for (i, l) in p.lines.iter().enumerate() {
            assert_eq!(l.id(), Some(i.to_string().as_str()));
        }
    }

    #[test]
    fn lossy_utf8_lines_are_kept() {
        let p = parse_lines(b"{\"a\":\"\xff\"}\n");
        assert_eq!(p.lines.len(), 1);
        assert_eq!(p.lines[0].str_field("a"), Some("\u{fffd}"));
    }
}
