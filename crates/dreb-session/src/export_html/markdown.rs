//! Just enough Markdown for chat messages: fenced code blocks (highlighted), headings, bullet and numbered lists,
//! block quotes, paragraphs, inline code and bold. Everything is escaped; links stay plain text so the page never
//! points anywhere.

use super::escape::escape_into;
use super::highlight::highlight;

/// Renders `text` as HTML.
pub fn render(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let lines: Vec<&str> = text.split('\n').collect();
    let mut i = 0;
    let mut para: Vec<&str> = Vec::new();
    let flush_para = |para: &mut Vec<&str>, out: &mut String| {
        if !para.is_empty() {
            out.push_str("<p>");
            for (n, l) in para.iter().enumerate() {
                if n > 0 {
                    out.push_str("<br>");
                }
                inline(l, out);
            }
            out.push_str("</p>");
            para.clear();
        }
    };
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if let Some(fence) = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(f)) {
            flush_para(&mut para, &mut out);
            let lang = trimmed[fence.len()..].trim();
            let mut code = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with(fence) {
                code.push(lines[i]);
                i += 1;
            }
            i += 1; // closing fence (or end)
            out.push_str("<pre class=\"code\">");
            if !lang.is_empty() {
                out.push_str("<span class=\"code-lang\">");
                escape_into(lang, &mut out);
                out.push_str("</span>");
            }
            out.push_str("<code>");
            out.push_str(&highlight(
                &code.join("\n"),
                (!lang.is_empty()).then_some(lang),
            ));
            out.push_str("</code></pre>");
            continue;
        }
        if trimmed.is_empty() {
            flush_para(&mut para, &mut out);
            i += 1;
            continue;
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            flush_para(&mut para, &mut out);
            let level = (hashes + 2).min(6);
            out.push_str(&format!("<h{level}>"));
            inline(trimmed[hashes..].trim(), &mut out);
            out.push_str(&format!("</h{level}>"));
            i += 1;
            continue;
        }
        if let Some(kind) = list_kind(trimmed) {
            flush_para(&mut para, &mut out);
            out.push_str(if kind == "ol" { "<ol>" } else { "<ul>" });
            while i < lines.len() && list_kind(lines[i].trim_start()) == Some(kind) {
                out.push_str("<li>");
                inline(strip_marker(lines[i].trim_start()), &mut out);
                out.push_str("</li>");
                i += 1;
            }
            out.push_str(if kind == "ol" { "</ol>" } else { "</ul>" });
            continue;
        }
        if let Some(q) = trimmed.strip_prefix('>') {
            flush_para(&mut para, &mut out);
            out.push_str("<blockquote>");
            inline(q.trim_start(), &mut out);
            out.push_str("</blockquote>");
            i += 1;
            continue;
        }
        para.push(line);
        i += 1;
    }
    flush_para(&mut para, &mut out);
    out
}

fn list_kind(line: &str) -> Option<&'static str> {
    if line.starts_with("- ") || line.starts_with("* ") || line.starts_with("+ ") {
        return Some("ul");
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    (digits > 0 && (line[digits..].starts_with(". ") || line[digits..].starts_with(") ")))
        .then_some("ol")
}

fn strip_marker(line: &str) -> &str {
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        &line[digits + 2..]
    } else {
        &line[2..]
    }
}

/// Inline code spans and `**bold**`; everything else escaped.
fn inline(text: &str, out: &mut String) {
    let mut rest = text;
    while !rest.is_empty() {
        let tick = rest.find('`');
        let bold = rest.find("**");
        match (tick, bold) {
            (Some(t), b) if b.is_none_or(|b| t < b) => {
                if let Some(end) = rest[t + 1..].find('`') {
                    escape_into(&rest[..t], out);
                    out.push_str("<code>");
                    escape_into(&rest[t + 1..t + 1 + end], out);
                    out.push_str("</code>");
                    rest = &rest[t + 2 + end..];
                } else {
                    escape_into(rest, out);
                    return;
                }
            }
            (_, Some(b)) => {
                if let Some(end) = rest[b + 2..].find("**").filter(|e| *e > 0) {
                    escape_into(&rest[..b], out);
                    out.push_str("<strong>");
                    escape_into(&rest[b + 2..b + 2 + end], out);
                    out.push_str("</strong>");
                    rest = &rest[b + 4 + end..];
                } else {
                    escape_into(rest, out);
                    return;
                }
            }
            _ => {
                escape_into(rest, out);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn renders_blocks_and_escapes() {
        let html = render(
            "# Title\nHello **bold** and `x<y`\n\n- a\n- b\n\n```rust\nlet a = 1;\n```\n<script>alert(1)</script>",
        );
        assert_eq!(
            html,
            "<h3>Title</h3><p>Hello <strong>bold</strong> and <code>x&lt;y</code></p><ul><li>a</li><li>b</li></ul>\
             <pre class=\"code\"><span class=\"code-lang\">rust</span><code><span class=\"hl-kw\">let</span> a = \
             <span class=\"hl-num\">1</span>;</code></pre><p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"
        );
        assert_eq!(
            render("1. one\n2. two"),
            "<ol><li>one</li><li>two</li></ol>"
        );
        assert_eq!(render("a `unclosed"), "<p>a `unclosed</p>");
    }
}
