//! Chunking of text files (Markdown, YAML, JSON, TOML, plain text) at their natural boundaries: headings,
//! top-level keys, sections, paragraphs. Small files stay whole; oversized pieces are split near a size cap.

use std::sync::LazyLock;

use regex::Regex;

use crate::types::{Chunk, ChunkKind, FileType};

/// Below this many characters a file is one chunk.
const MIN_SPLIT_SIZE: usize = 500;
/// Pieces above this many characters are split at blank lines (or line ends).
const MAX_CHUNK_SIZE: usize = 8000;
/// Plain-text paragraphs shorter than this are merged with their neighbours.
const MIN_PARAGRAPH_SIZE: usize = 200;

/// Length as JavaScript counts it (UTF-16 units), so size thresholds fall where the reference's do.
pub(crate) fn js_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// Lines as `split("\n")` gives them (a trailing newline yields a last empty line).
pub(crate) fn split_lines(content: &str) -> Vec<&str> {
    content.split('\n').collect()
}

/// Chunk a text file. Always returns at least one chunk.
pub fn chunk_text(content: &str, file_path: &str, file_type: FileType) -> Vec<Chunk> {
    if js_len(content) < MIN_SPLIT_SIZE {
        return vec![whole_file(content, file_path, file_type)];
    }
    let lines = split_lines(content);
    let chunks = match file_type {
        FileType::Markdown => markdown(&lines, file_path),
        FileType::Yaml => yaml(&lines, file_path),
        FileType::Json => json(content, &lines, file_path),
        FileType::Toml => toml(&lines, file_path),
        _ => plaintext(&lines, file_path, FileType::Plaintext),
    };
    if chunks.is_empty() {
        return vec![whole_file(content, file_path, file_type)];
    }
    chunks.into_iter().flat_map(enforce_max_size).collect()
}

pub(crate) fn whole_file(content: &str, file_path: &str, file_type: FileType) -> Chunk {
    Chunk {
        file_path: file_path.to_string(),
        start_line: 1,
        end_line: content.split('\n').count(),
        kind: ChunkKind::File,
        name: None,
        content: content.to_string(),
        file_type,
    }
}

/// Lines `start..=end` (0-based) joined back.
fn join(lines: &[&str], start: usize, end: usize) -> String {
    lines[start..=end].join("\n")
}

fn chunk(
    file_path: &str,
    file_type: FileType,
    kind: ChunkKind,
    name: Option<String>,
    (start, end): (usize, usize),
    content: String,
) -> Chunk {
    Chunk {
        file_path: file_path.to_string(),
        start_line: start,
        end_line: end,
        kind,
        name,
        content,
        file_type,
    }
}

static HEADING: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^(#{1,6})\s+(.+)$").unwrap());

/// One chunk per heading, reaching to the next heading of the same or a higher level (so sections nest), plus
/// the preamble before the first heading.
fn markdown(lines: &[&str], file_path: &str) -> Vec<Chunk> {
    let headings: Vec<(usize, usize, String)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            HEADING
                .captures(l)
                .map(|c| (i, c[1].len(), c[2].trim().to_string()))
        })
        .collect();
    if headings.is_empty() {
        return plaintext(lines, file_path, FileType::Markdown);
    }
    let mut out = Vec::new();
    let first = headings[0].0;
    if first > 0 {
        let pre = join(lines, 0, first - 1);
        if !pre.trim().is_empty() {
            out.push(chunk(
                file_path,
                FileType::Markdown,
                ChunkKind::HeadingSection,
                None,
                (1, first),
                pre,
            ));
        }
    }
    for (i, (line, level, text)) in headings.iter().enumerate() {
        let end = headings[i + 1..]
            .iter()
            .find(|(_, l, _)| l <= level)
            .map_or(lines.len() - 1, |(next, _, _)| next - 1);
        out.push(chunk(
            file_path,
            FileType::Markdown,
            ChunkKind::HeadingSection,
            Some(text.clone()),
            (line + 1, end + 1),
            join(lines, *line, end),
        ));
    }
    out
}

static YAML_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([a-zA-Z_][a-zA-Z0-9_.-]*)\s*:").unwrap());

/// Walk back from `line` over comment and blank lines above it, not past `floor`; the first line they start at.
fn attached_comments_start(lines: &[&str], line: usize, floor: usize) -> usize {
    let mut scan = line;
    while scan > floor + 1 {
        let t = lines[scan - 1].trim();
        if t.starts_with('#') || t.is_empty() {
            scan -= 1;
        } else {
            break;
        }
    }
    scan
}

/// One chunk per top-level key, with the comments right above it (the first also takes the preamble).
fn yaml(lines: &[&str], file_path: &str) -> Vec<Chunk> {
    let keys: Vec<(usize, String)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            !(l.starts_with('#')
                || l.starts_with("---")
                || l.starts_with("...")
                || l.trim().is_empty())
        })
        .filter_map(|(i, l)| YAML_KEY.captures(l).map(|c| (i, c[1].to_string())))
        .collect();
    keyed_sections(lines, file_path, FileType::Yaml, &keys)
}

fn keyed_sections(
    lines: &[&str],
    file_path: &str,
    file_type: FileType,
    keys: &[(usize, String)],
) -> Vec<Chunk> {
    let mut out = Vec::new();
    for (i, (line, name)) in keys.iter().enumerate() {
        let start = if i == 0 {
            0
        } else {
            attached_comments_start(lines, *line, keys[i - 1].0)
        };
        let end = keys
            .get(i + 1)
            .map_or(lines.len() - 1, |(next, _)| next - 1);
        out.push(chunk(
            file_path,
            file_type,
            ChunkKind::TopLevelKey,
            Some(name.clone()),
            (start + 1, end + 1),
            join(lines, start, end),
        ));
    }
    out
}

/// One chunk per top-level key of an object (found at brace depth 1); arrays, scalars and invalid JSON stay
/// whole. Minified (one-line) objects get each key re-serialised on its own.
fn json(content: &str, lines: &[&str], file_path: &str) -> Vec<Chunk> {
    let Ok(serde_json::Value::Object(obj)) = serde_json::from_str::<serde_json::Value>(content)
    else {
        return Vec::new();
    };
    if obj.is_empty() {
        return Vec::new();
    }
    if lines.len() == 1 {
        return obj
            .iter()
            .map(|(k, v)| {
                let mut one = serde_json::Map::new();
                one.insert(k.clone(), v.clone());
                let text = serde_json::to_string_pretty(&serde_json::Value::Object(one))
                    .unwrap_or_default();
                chunk(
                    file_path,
                    FileType::Json,
                    ChunkKind::TopLevelKey,
                    Some(k.clone()),
                    (1, 1),
                    text,
                )
            })
            .collect();
    }
    let mut positions: Vec<(usize, String)> = Vec::new();
    let mut depth: i32 = 0;
    for (i, line) in lines.iter().enumerate() {
        let bytes = line.as_bytes();
        let mut c = 0;
        while c < bytes.len() {
            match bytes[c] {
                b'"' => {
                    c += 1;
                    while c < bytes.len() && bytes[c] != b'"' {
                        if bytes[c] == b'\\' {
                            c += 1;
                        }
                        c += 1;
                    }
                    if depth == 1
                        && let Some(key) = leading_json_key(line)
                    {
                        if obj.contains_key(&key) && !positions.iter().any(|(_, k)| *k == key) {
                            positions.push((i, key));
                        }
                        break;
                    }
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                _ => {}
            }
            c += 1;
        }
    }
    let mut out = Vec::new();
    for (i, (start, key)) in positions.iter().enumerate() {
        let start = *start;
        let mut end = positions
            .get(i + 1)
            .map_or(lines.len() - 1, |(next, _)| next - 1);
        if i == positions.len() - 1 {
            while end > start && lines[end].trim().is_empty() {
                end -= 1;
            }
            if end > start && lines[end].trim() == "}" {
                end -= 1;
            }
        }
        while end > start && lines[end].trim().is_empty() {
            end -= 1;
        }
        out.push(chunk(
            file_path,
            FileType::Json,
            ChunkKind::TopLevelKey,
            Some(key.clone()),
            (start + 1, end + 1),
            join(lines, start, end),
        ));
    }
    out
}

static JSON_KEY: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^\s*"([^"\\]*(?:\\.[^"\\]*)*)"\s*:"#).unwrap());

fn leading_json_key(line: &str) -> Option<String> {
    JSON_KEY
        .captures(line)
        .map(|c| c[1].replace("\\\"", "\"").replace("\\\\", "\\"))
}

static TOML_SECTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[{1,2}([^\]]+)\]{1,2}\s*$").unwrap());
static TOML_KV: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([a-zA-Z_][a-zA-Z0-9_.-]*)\s*=").unwrap());

/// One chunk per `[section]` / `[[table]]`, and per top-level key before the first section.
fn toml(lines: &[&str], file_path: &str) -> Vec<Chunk> {
    let mut bounds: Vec<(usize, String)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            TOML_SECTION
                .captures(l)
                .map(|c| (i, c[1].trim().to_string()))
        })
        .collect();
    let first_section = bounds.first().map_or(lines.len(), |(l, _)| *l);
    for (i, line) in lines.iter().enumerate().take(first_section) {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if let Some(c) = TOML_KV.captures(line) {
            bounds.push((i, c[1].to_string()));
        }
    }
    bounds.sort_by_key(|(l, _)| *l);
    keyed_sections(lines, file_path, FileType::Toml, &bounds)
}

/// Paragraphs separated by two or more blank lines, small ones merged until they reach a minimum size.
fn plaintext(lines: &[&str], file_path: &str, file_type: FileType) -> Vec<Chunk> {
    let mut paragraphs: Vec<(usize, usize)> = Vec::new();
    let mut start: Option<usize> = None;
    let mut blanks = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            blanks += 1;
            if blanks >= 2
                && let Some(s) = start.take()
            {
                paragraphs.push((s, (i - blanks).max(s)));
            }
        } else {
            start.get_or_insert(i);
            blanks = 0;
        }
    }
    if let Some(s) = start {
        let mut end = lines.len() - 1;
        while end > s && lines[end].trim().is_empty() {
            end -= 1;
        }
        paragraphs.push((s, end));
    }
    let Some(&(first_start, first_end)) = paragraphs.first() else {
        return Vec::new();
    };
    let mut out: Vec<Chunk> = Vec::new();
    let (mut g_start, mut g_end) = (first_start, first_end);
    let mut g_content = join(lines, first_start, first_end);
    let emit = |out: &mut Vec<Chunk>, s: usize, e: usize, content: String| {
        out.push(chunk(
            file_path,
            file_type,
            ChunkKind::Paragraph,
            paragraph_name(&content),
            (s + 1, e + 1),
            content,
        ));
    };
    for &(s, e) in &paragraphs[1..] {
        let text = join(lines, s, e);
        if js_len(&g_content) < MIN_PARAGRAPH_SIZE {
            g_end = e;
            g_content.push_str("\n\n");
            g_content.push_str(&text);
        } else {
            emit(
                &mut out,
                g_start,
                g_end,
                std::mem::replace(&mut g_content, text),
            );
            g_start = s;
            g_end = e;
        }
    }
    if js_len(&g_content) < MIN_PARAGRAPH_SIZE
        && let Some(last) = out.last_mut()
    {
        last.end_line = g_end + 1;
        last.content.push_str("\n\n");
        last.content.push_str(&g_content);
    } else {
        emit(&mut out, g_start, g_end, g_content);
    }
    out
}

/// The first line, cut to 60 characters.
fn paragraph_name(content: &str) -> Option<String> {
    let first = content.split('\n').next().unwrap_or("").trim();
    if first.is_empty() {
        return None;
    }
    let chars: Vec<char> = first.chars().collect();
    Some(if chars.len() <= 60 {
        first.to_string()
    } else {
        format!("{}...", chars[..57].iter().collect::<String>())
    })
}

/// Split a chunk over [`MAX_CHUNK_SIZE`] at the last blank line before the cap (else at the cap's line); later
/// parts are named `<name> (cont.)`.
pub(crate) fn enforce_max_size(c: Chunk) -> Vec<Chunk> {
    if js_len(&c.content) <= MAX_CHUNK_SIZE {
        return vec![c];
    }
    let lines = split_lines(&c.content);
    let mut parts: Vec<Chunk> = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    let mut size = 0;
    let mut part_start = c.start_line;
    let part_name = |n: usize| match (n, &c.name) {
        (0, name) => name.clone(),
        (_, Some(name)) => Some(format!("{name} (cont.)")),
        (_, None) => None,
    };
    for line in lines {
        let line_size = js_len(line) + 1;
        if size + line_size > MAX_CHUNK_SIZE && !current.is_empty() {
            let split_at = (1..current.len())
                .rev()
                .find(|&j| current[j].trim().is_empty())
                .unwrap_or(current.len());
            let end_line = part_start + split_at - 1;
            parts.push(Chunk {
                start_line: part_start,
                end_line,
                name: part_name(parts.len()),
                content: current[..split_at].join("\n"),
                ..c.clone()
            });
            let mut rest: Vec<&str> = current[split_at..].to_vec();
            rest.push(line);
            current = rest;
            part_start = end_line + 1;
            size = js_len(&current.join("\n"));
        } else {
            current.push(line);
            size += line_size;
        }
    }
    if !current.is_empty() {
        parts.push(Chunk {
            start_line: part_start,
            end_line: c.end_line,
            name: part_name(parts.len()),
            content: current.join("\n"),
            ..c.clone()
        });
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn long_para(word: &str) -> String {
        std::iter::repeat_n(word, 60).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn small_files_are_one_chunk() {
        let c = chunk_text("# Title\n\nshort\n", "a.md", FileType::Markdown);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].kind, ChunkKind::File);
        assert_eq!((c[0].start_line, c[0].end_line), (1, 4));
    }

    #[test]
    fn markdown_sections_nest_under_their_heading() {
        let body = long_para("lorem");
        let text = format!("intro\n# One\n{body}\n## One.a\n{body}\n# Two\n{body}");
        let c = chunk_text(&text, "d.md", FileType::Markdown);
        let got: Vec<_> = c
            .iter()
            .map(|c| (c.name.as_deref(), c.start_line, c.end_line))
            .collect();
        assert_eq!(
            got,
            vec![
                (None, 1, 1),
                (Some("One"), 2, 5),
                (Some("One.a"), 4, 5),
                (Some("Two"), 6, 7)
            ]
        );
        assert!(c.iter().all(|c| c.kind == ChunkKind::HeadingSection));
    }

    #[test]
    fn yaml_keys_take_the_comments_above_them() {
        let body = long_para("  - item");
        let text = format!("# preamble\nfirst:\n{body}\n\n# about second\nsecond: 2\n{body}\n");
        let c = chunk_text(&text, "c.yaml", FileType::Yaml);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].name.as_deref(), c[0].start_line), (Some("first"), 1));
        assert_eq!((c[1].name.as_deref(), c[1].start_line), (Some("second"), 4));
        assert!(c[1].content.starts_with("\n# about second\nsecond: 2"));
    }

    #[test]
    fn json_splits_top_level_keys_and_drops_the_closing_brace() {
        let long = long_para("xxxxx");
        let text = format!(
            "{{\n  \"name\": \"{long}\",\n  \"scripts\": {{\n    \"a\": \"{long}\"\n  }}\n}}\n"
        );
        let c = chunk_text(&text, "p.json", FileType::Json);
        let got: Vec<_> = c
            .iter()
            .map(|c| (c.name.as_deref(), c.start_line, c.end_line))
            .collect();
        assert_eq!(got, vec![(Some("name"), 2, 2), (Some("scripts"), 3, 5)]);
    }

    #[test]
    fn toml_sections_and_top_level_keys() {
        let long = long_para("vvvvvv");
        let text = format!(
            "title = \"{long}\"\n\n[package]\nname = \"x\"\n# deps\n[dependencies]\nfoo = \"{long}\"\n"
        );
        let c = chunk_text(&text, "C.toml", FileType::Toml);
        let names: Vec<_> = c.iter().map(|c| c.name.as_deref().unwrap()).collect();
        assert_eq!(names, vec!["title", "package", "dependencies"]);
        assert_eq!(c[2].start_line, 5);
    }

    #[test]
    fn plaintext_merges_small_paragraphs() {
        let long = long_para("word");
        let text = format!("tiny\n\n\nalso tiny\n\n\n{long}\n\n\n{long}\n\n\nend");
        let c = chunk_text(&text, "n.txt", FileType::Plaintext);
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].name.as_deref(), Some("tiny"));
        assert!(c[1].content.ends_with("\n\nend"));
    }

    #[test]
    fn oversized_pieces_are_split_with_cont_names() {
        let para = long_para("abcdefgh");
        let big: Vec<String> = (0..40).map(|_| para.clone()).collect();
        let text = format!("# Big\n{}", big.join("\n\n"));
        let c = chunk_text(&text, "b.md", FileType::Markdown);
        assert!(c.len() > 1);
        assert_eq!(c[0].name.as_deref(), Some("Big"));
        assert_eq!(c[1].name.as_deref(), Some("Big (cont.)"));
        assert!(c.iter().all(|c| js_len(&c.content) <= MAX_CHUNK_SIZE + 600));
        assert_eq!(c[1].start_line, c[0].end_line + 1);
    }
}
