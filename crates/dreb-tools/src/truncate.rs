//! Shared truncation limits and helpers (head truncation for reads and listings, tail truncation for command
//! output). Two independent limits, lines and bytes; whichever is hit first wins. Byte counts are UTF-8 bytes.

use serde::Serialize;

/// Maximum lines a tool result shows.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Maximum bytes a tool result shows (50 KB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Maximum characters of one grep output line.
pub const GREP_MAX_LINE_LENGTH: usize = 500;

/// Which limit cut the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TruncatedBy {
    Lines,
    Bytes,
}

/// The outcome of a truncation; serialised as the reference's `details.truncation` object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TruncationResult {
    pub content: String,
    pub truncated: bool,
    /// `null` on the wire when not truncated.
    pub truncated_by: Option<TruncatedBy>,
    pub total_lines: usize,
    pub total_bytes: usize,
    pub output_lines: usize,
    pub output_bytes: usize,
    pub last_line_partial: bool,
    pub first_line_exceeds_limit: bool,
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl TruncationResult {
    fn untouched(content: &str, total_lines: usize, max_lines: usize, max_bytes: usize) -> Self {
        TruncationResult {
            content: content.to_string(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines,
            max_bytes,
        }
    }

    /// The object as it goes into a tool result's `details`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// Limits for one truncation call.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_lines: usize,
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl Limits {
    /// Only the byte limit (listings: `ls`, `find`, `grep`).
    pub fn bytes_only() -> Self {
        Limits {
            max_lines: usize::MAX,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// Human-readable size: `512B`, `50.0KB`, `1.5MB`.
pub fn format_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// Keep the first lines that fit. Never returns a partial line; when the first line alone is over the byte
/// limit the content is empty and `first_line_exceeds_limit` is set.
pub fn truncate_head(content: &str, limits: Limits) -> TruncationResult {
    let Limits {
        max_lines,
        max_bytes,
    } = limits;
    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    if total_lines <= max_lines && content.len() <= max_bytes {
        return TruncationResult::untouched(content, total_lines, max_lines, max_bytes);
    }
    if lines[0].len() > max_bytes {
        return TruncationResult {
            content: String::new(),
            truncated: true,
            truncated_by: Some(TruncatedBy::Bytes),
            total_lines,
            total_bytes: content.len(),
            output_lines: 0,
            output_bytes: 0,
            last_line_partial: false,
            first_line_exceeds_limit: true,
            max_lines,
            max_bytes,
        };
    }
    let mut kept = 0usize;
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().enumerate() {
        if i >= max_lines {
            break;
        }
        let cost = line.len() + usize::from(i > 0);
        if bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        kept += 1;
        bytes += cost;
    }
    if kept >= max_lines && bytes <= max_bytes {
        by = TruncatedBy::Lines;
    }
    let out = lines[..kept].join("\n");
    TruncationResult {
        output_bytes: out.len(),
        content: out,
        truncated: true,
        truncated_by: Some(by),
        total_lines,
        total_bytes: content.len(),
        output_lines: kept,
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// Keep the last lines that fit. If the very last line alone is over the byte limit, its tail is kept
/// (`last_line_partial`).
pub fn truncate_tail(content: &str, limits: Limits) -> TruncationResult {
    let Limits {
        max_lines,
        max_bytes,
    } = limits;
    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    if total_lines <= max_lines && content.len() <= max_bytes {
        return TruncationResult::untouched(content, total_lines, max_lines, max_bytes);
    }
    let mut start = lines.len();
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    let mut partial: Option<&str> = None;
    while start > 0 && lines.len() - start < max_lines {
        let line = lines[start - 1];
        let cost = line.len() + usize::from(start < lines.len());
        if bytes + cost > max_bytes {
            by = TruncatedBy::Bytes;
            if start == lines.len() {
                let tail = tail_bytes(line, max_bytes);
                bytes = tail.len();
                partial = Some(tail);
            }
            break;
        }
        bytes += cost;
        start -= 1;
    }
    let (out, kept) = match partial {
        Some(tail) => (tail.to_string(), 1),
        None => (lines[start..].join("\n"), lines.len() - start),
    };
    if kept >= max_lines && bytes <= max_bytes {
        by = TruncatedBy::Lines;
    }
    TruncationResult {
        output_bytes: out.len(),
        content: out,
        truncated: true,
        truncated_by: Some(by),
        total_lines,
        total_bytes: content.len(),
        output_lines: kept,
        last_line_partial: partial.is_some(),
        first_line_exceeds_limit: false,
        max_lines,
        max_bytes,
    }
}

/// The last `max_bytes` bytes of `s`, moved forward to a character boundary.
fn tail_bytes(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut start = s.len() - max_bytes;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Cut one grep line to `max_chars` characters, appending `... [truncated]`.
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    // The reference counts UTF-16 code units; characters are the closest faithful unit here.
    match line.char_indices().nth(max_chars) {
        None => (line.to_string(), false),
        Some((idx, _)) => (format!("{}... [truncated]", &line[..idx]), true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_size_units() {
        assert_eq!(format_size(10), "10B");
        assert_eq!(format_size(51200), "50.0KB");
        assert_eq!(format_size(1536 * 1024), "1.5MB");
    }

    #[test]
    fn head_within_limits_is_untouched() {
        let r = truncate_head("a\nb", Limits::default());
        assert!(!r.truncated);
        assert_eq!(r.truncated_by, None);
        assert_eq!(r.total_lines, 2);
        assert_eq!(r.to_json()["truncatedBy"], serde_json::Value::Null);
    }

    #[test]
    fn head_line_limit() {
        let text: Vec<String> = (1..=2500).map(|i| i.to_string()).collect();
        let r = truncate_head(&text.join("\n"), Limits::default());
        assert!(r.truncated);
        assert_eq!(r.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!(r.output_lines, 2000);
        assert!(r.content.ends_with("\n2000"));
    }

    #[test]
    fn head_byte_limit_and_first_line() {
        let line = "x".repeat(1000);
        let text = vec![line.as_str(); 100].join("\n");
        let r = truncate_head(&text, Limits::default());
        assert_eq!(r.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!(r.output_lines, 51); // 51*1000 + 50 newlines = 51050 <= 51200
        let big = "y".repeat(DEFAULT_MAX_BYTES + 1);
        let r = truncate_head(&big, Limits::default());
        assert!(r.first_line_exceeds_limit);
        assert_eq!(r.content, "");
    }

    #[test]
    fn tail_keeps_end_and_partial_last_line() {
        let text: Vec<String> = (1..=3000).map(|i| i.to_string()).collect();
        let r = truncate_tail(&text.join("\n"), Limits::default());
        assert_eq!(r.output_lines, 2000);
        assert!(r.content.starts_with("1001\n"));
        let big = format!("head\n{}", "é".repeat(DEFAULT_MAX_BYTES));
        let r = truncate_tail(&big, Limits::default());
        assert!(r.last_line_partial);
        assert!(r.output_bytes <= DEFAULT_MAX_BYTES);
        assert!(r.content.chars().all(|c| c == 'é'));
    }

    #[test]
    fn line_cut() {
        let (t, cut) = truncate_line(&"a".repeat(501), GREP_MAX_LINE_LENGTH);
        assert!(cut);
        assert_eq!(t, format!("{}... [truncated]", "a".repeat(500)));
        assert_eq!(truncate_line("short", 500), ("short".to_string(), false));
    }
}
