//! Doc comments: spec Markdown becomes `#[doc]` attributes (printed as `///` lines), untagged code fences become
//! `text` fences so rustdoc never runs spec prose as a doctest.

use proc_macro2::TokenStream;
use quote::{ToTokens, quote};

/// The lines of a doc comment, built paragraph by paragraph.
#[derive(Debug, Clone, Default)]
pub struct Doc {
    lines: Vec<String>,
}

impl Doc {
    /// An empty doc.
    pub fn new() -> Self {
        Self::default()
    }

    /// A doc of one Markdown text.
    pub fn of(md: impl AsRef<str>) -> Self {
        Self::new().md(Some(md.as_ref()))
    }

    /// Appends Markdown lines (no separator).
    pub fn md(mut self, md: Option<&str>) -> Self {
        if let Some(md) = md {
            self.lines.extend(markdown_lines(md));
        }
        self
    }

    /// Appends a paragraph: an empty line first when the doc is not empty.
    pub fn para(self, md: Option<&str>) -> Self {
        match md {
            Some(md) if !self.lines.is_empty() => {
                let mut d = self;
                d.lines.push(String::new());
                d.md(Some(md))
            }
            _ => self.md(md),
        }
    }

    /// `doc`, then `Since:` and `Note:` paragraphs when given.
    pub fn with_notes(doc: Option<&str>, since: Option<&str>, note: Option<&str>) -> Self {
        Self::new()
            .md(doc)
            .para(since.map(|s| format!("Since: {s}")).as_deref())
            .para(note.map(|n| format!("Note: {n}")).as_deref())
    }

    /// `true` when there is no line.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

impl ToTokens for Doc {
    fn to_tokens(&self, out: &mut TokenStream) {
        for line in &self.lines {
            // A leading space so `///` and the text are separated, as a hand-written comment would be.
            let text = if line.is_empty() {
                String::new()
            } else {
                format!(" {line}")
            };
            out.extend(quote!(#[doc = #text]));
        }
    }
}

/// Splits Markdown into doc lines; untagged (and `rust`) code fences become `text` fences.
pub fn markdown_lines(doc: &str) -> Vec<String> {
    let mut in_fence = false;
    doc.trim_end()
        .lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("```") {
                let info = t.trim_start_matches('`').trim();
                let opening = !in_fence;
                in_fence = !in_fence;
                if opening && (info.is_empty() || info == "rust") {
                    return format!("{}```text", &l[..l.len() - t.len()]);
                }
            }
            l.trim_end().to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untagged_fences_become_text() {
        assert_eq!(
            markdown_lines("a\n```\nx\n```\n```json\n{}\n```"),
            ["a", "```text", "x", "```", "```json", "{}", "```"]
        );
    }

    #[test]
    fn notes_are_paragraphs() {
        let d = Doc::with_notes(Some("Doc."), Some("1.2"), None);
        assert_eq!(d.lines, ["Doc.", "", "Since: 1.2"]);
    }
}
