//! Matching and diffing for the edit tool: line-ending and BOM handling, the fuzzy normalisation used when the
//! exact text is not found, and the line-numbered diff shown in `details.diff`.

use similar::{Algorithm, DiffOp, TextDiff};
use unicode_normalization::UnicodeNormalization;

/// `\r\n` when the first line break of the file is CRLF, else `\n`.
pub fn detect_line_ending(content: &str) -> &'static str {
    match (content.find("\r\n"), content.find('\n')) {
        (Some(crlf), Some(lf)) if crlf < lf => "\r\n",
        _ => "\n",
    }
}

pub fn normalize_to_lf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

pub fn restore_line_endings(text: &str, ending: &str) -> String {
    if ending == "\r\n" {
        text.replace('\n', "\r\n")
    } else {
        text.to_string()
    }
}

/// Split a leading UTF-8 BOM off.
pub fn strip_bom(content: &str) -> (&'static str, &str) {
    match content.strip_prefix('\u{FEFF}') {
        Some(rest) => ("\u{FEFF}", rest),
        None => ("", content),
    }
}

/// NFKC, trailing whitespace stripped per line, smart quotes / dashes / special spaces folded to ASCII.
pub fn normalize_for_fuzzy_match(text: &str) -> String {
    let nfkc: String = text.nfkc().collect();
    let trimmed: Vec<&str> = nfkc.split('\n').map(|l| l.trim_end()).collect();
    trimmed
        .join("\n")
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' => '\'',
            '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' => '"',
            '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
            '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            other => other,
        })
        .collect()
}

/// Where `old_text` was found.
#[derive(Debug, Clone, PartialEq)]
pub struct FuzzyMatch {
    pub index: usize,
    pub match_length: usize,
    pub used_fuzzy_match: bool,
    /// The content the replacement applies to: the original on an exact match, the normalised form otherwise.
    pub content_for_replacement: String,
}

/// Exact substring first, then the same search over normalised text.
pub fn fuzzy_find_text(content: &str, old_text: &str) -> Option<FuzzyMatch> {
    if let Some(index) = content.find(old_text) {
        return Some(FuzzyMatch {
            index,
            match_length: old_text.len(),
            used_fuzzy_match: false,
            content_for_replacement: content.to_string(),
        });
    }
    let fuzzy_content = normalize_for_fuzzy_match(content);
    let fuzzy_old = normalize_for_fuzzy_match(old_text);
    let index = fuzzy_content.find(&fuzzy_old)?;
    Some(FuzzyMatch {
        index,
        match_length: fuzzy_old.len(),
        used_fuzzy_match: true,
        content_for_replacement: fuzzy_content,
    })
}

/// Non-overlapping occurrences, counted over the normalised forms (as the reference's uniqueness check does).
pub fn count_occurrences(content: &str, old_text: &str) -> usize {
    let fc = normalize_for_fuzzy_match(content);
    let fo = normalize_for_fuzzy_match(old_text);
    if fo.is_empty() {
        // JS `s.split("")` yields one piece per UTF-16 unit.
        return fc.encode_utf16().count().saturating_sub(1);
    }
    fc.matches(fo.as_str()).count()
}

enum Part<'a> {
    Equal(Vec<&'a str>),
    Removed(Vec<&'a str>),
    Added(Vec<&'a str>),
}

fn strip_nl(s: &str) -> &str {
    s.strip_suffix('\n').unwrap_or(s)
}

/// A line-numbered diff (`+N line`, `-N line`, ` N line`, ` ... ` gaps) with `context_lines` of context, and the
/// first changed line in the new file.
pub fn generate_diff_string(old: &str, new: &str, context_lines: usize) -> (String, Option<usize>) {
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .diff_lines(old, new);
    let old_tokens: Vec<&str> = diff.old_slices().iter().map(|s| strip_nl(s)).collect();
    let new_tokens: Vec<&str> = diff.new_slices().iter().map(|s| strip_nl(s)).collect();
    let mut parts: Vec<Part> = Vec::new();
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { old_index, len, .. } => {
                parts.push(Part::Equal(old_tokens[old_index..old_index + len].to_vec()))
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => parts.push(Part::Removed(
                old_tokens[old_index..old_index + old_len].to_vec(),
            )),
            DiffOp::Insert {
                new_index, new_len, ..
            } => parts.push(Part::Added(
                new_tokens[new_index..new_index + new_len].to_vec(),
            )),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                parts.push(Part::Removed(
                    old_tokens[old_index..old_index + old_len].to_vec(),
                ));
                parts.push(Part::Added(
                    new_tokens[new_index..new_index + new_len].to_vec(),
                ));
            }
        }
    }

    let width = old
        .split('\n')
        .count()
        .max(new.split('\n').count())
        .to_string()
        .len();
    let pad = |n: usize| format!("{n:>width$}");
    let gap = format!(" {} ...", " ".repeat(width));
    let mut out: Vec<String> = Vec::new();
    let (mut old_no, mut new_no) = (1usize, 1usize);
    let mut last_was_change = false;
    let mut first_changed: Option<usize> = None;
    for (i, part) in parts.iter().enumerate() {
        match part {
            Part::Added(lines) | Part::Removed(lines) => {
                first_changed.get_or_insert(new_no);
                let added = matches!(part, Part::Added(_));
                for line in lines {
                    if added {
                        out.push(format!("+{} {line}", pad(new_no)));
                        new_no += 1;
                    } else {
                        out.push(format!("-{} {line}", pad(old_no)));
                        old_no += 1;
                    }
                }
                last_was_change = true;
            }
            Part::Equal(lines) => {
                let next_is_change =
                    matches!(parts.get(i + 1), Some(Part::Added(_) | Part::Removed(_)));
                if last_was_change || next_is_change {
                    let mut show: &[&str] = lines;
                    let mut skip_start = 0;
                    let mut skip_end = 0;
                    if !last_was_change {
                        skip_start = lines.len().saturating_sub(context_lines);
                        show = &lines[skip_start..];
                    }
                    if !next_is_change && show.len() > context_lines {
                        skip_end = show.len() - context_lines;
                        show = &show[..context_lines];
                    }
                    if skip_start > 0 {
                        out.push(gap.clone());
                        old_no += skip_start;
                        new_no += skip_start;
                    }
                    for line in show {
                        out.push(format!(" {} {line}", pad(old_no)));
                        old_no += 1;
                        new_no += 1;
                    }
                    if skip_end > 0 {
                        out.push(gap.clone());
                        old_no += skip_end;
                        new_no += skip_end;
                    }
                } else {
                    old_no += lines.len();
                    new_no += lines.len();
                }
                last_was_change = false;
            }
        }
    }
    (out.join("\n"), first_changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_and_bom() {
        assert_eq!(detect_line_ending("a\r\nb\n"), "\r\n");
        assert_eq!(detect_line_ending("a\nb\r\n"), "\n");
        assert_eq!(normalize_to_lf("a\r\nb\rc"), "a\nb\nc");
        assert_eq!(strip_bom("\u{FEFF}x"), ("\u{FEFF}", "x"));
    }

    #[test]
    fn fuzzy_normalisation() {
        assert_eq!(
            normalize_for_fuzzy_match("“hi” — it’s  \nx\u{00A0}y"),
            "\"hi\" - it's\nx y"
        );
        let m = fuzzy_find_text("say “hi”  \nend", "say \"hi\"\nend").unwrap();
        assert!(m.used_fuzzy_match);
        assert_eq!(m.content_for_replacement, "say \"hi\"\nend");
        assert!(fuzzy_find_text("abc", "zzz").is_none());
        assert_eq!(count_occurrences("a a a", "a"), 3);
    }

    #[test]
    fn diff_format_with_context_gaps() {
        let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let new = old.replace("line 10\n", "line ten\n");
        let (diff, first) = generate_diff_string(&old, &new, 4);
        assert_eq!(first, Some(10));
        let expected = [
            "    ...",
            "  6 line 6",
            "  7 line 7",
            "  8 line 8",
            "  9 line 9",
            "-10 line 10",
            "+10 line ten",
            " 11 line 11",
            " 12 line 12",
            " 13 line 13",
            " 14 line 14",
            "    ...",
        ]
        .join("\n");
        assert_eq!(diff, expected);
    }
}
