//! The result text the model reads: a numbered list with path, line range, kind and name, the metrics that
//! contributed, and the first lines of each chunk.

use crate::types::SearchResult;

/// Characters of a preview line kept before `...`.
const PREVIEW_WIDTH: usize = 120;

pub fn format_results(results: &[SearchResult]) -> String {
    if results.is_empty() {
        return "No results found.".into();
    }
    let mut lines: Vec<String> = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let c = &r.chunk;
        let range = if c.start_line == c.end_line {
            format!("L{}", c.start_line)
        } else {
            format!("L{}-{}", c.start_line, c.end_line)
        };
        let label = match &c.name {
            Some(name) if !name.is_empty() => format!("{} {name}", c.kind),
            _ => c.kind.clone(),
        };
        lines.push(format!("{}. {}:{range} ({label})", i + 1, c.file_path));
        let mut named: Vec<(&str, f64)> = r
            .scores
            .named()
            .into_iter()
            .filter(|(_, v)| *v > 0.01)
            .collect();
        named.sort_by(|a, b| b.1.total_cmp(&a.1));
        if !named.is_empty() {
            let text: Vec<String> = named.iter().map(|(k, v)| format!("{k}={v:.2}")).collect();
            lines.push(format!("   scores: {}", text.join(" ")));
        }
        let normalised = c.content.replace("\r\n", "\n").replace('\r', "\n");
        let content: Vec<&str> = normalised.split('\n').collect();
        for line in content.iter().take(3) {
            let chars: Vec<char> = line.chars().collect();
            if chars.len() > PREVIEW_WIDTH {
                lines.push(format!(
                    "   {}...",
                    chars[..PREVIEW_WIDTH - 3].iter().collect::<String>()
                ));
            } else {
                lines.push(format!("   {line}"));
            }
        }
        if content.len() > 3 {
            lines.push(format!("   ... ({} more lines)", content.len() - 3));
        }
        if i + 1 < results.len() {
            lines.push(String::new());
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{MetricScores, StoredChunk};

    #[test]
    fn numbered_entries_with_scores_and_previews() {
        let chunk = |id, name: Option<&str>, content: &str, lines: (i64, i64)| StoredChunk {
            id,
            file_id: 1,
            file_path: "src/auth.ts".into(),
            start_line: lines.0,
            end_line: lines.1,
            kind: "function".into(),
            name: name.map(String::from),
            content: content.into(),
            file_type: "typescript".into(),
        };
        let results = vec![
            SearchResult {
                chunk: chunk(
                    1,
                    Some("login"),
                    "function login() {\n  a();\n  b();\n  c();\n}",
                    (3, 7),
                ),
                scores: MetricScores {
                    bm25: 1.0,
                    symbol_match: 0.5,
                    git_recency: 0.005,
                    ..Default::default()
                },
                rank: 0,
            },
            SearchResult {
                chunk: chunk(2, None, "x", (9, 9)),
                scores: MetricScores::default(),
                rank: 1,
            },
        ];
        assert_eq!(
            format_results(&results),
            "1. src/auth.ts:L3-7 (function login)\n   scores: bm25=1.00 symbolMatch=0.50\n   function login() {\n     a();\n     b();\n   ... (2 more lines)\n\n2. src/auth.ts:L9 (function)\n   x"
        );
    }
}
