//! Markdown of chat messages as HTML, on pulldown-cmark: CommonMark plus the GFM extensions models write (tables,
//! strikethrough, task lists), italics, nested lists, fenced code (highlighted).
//!
//! The page must stay inert and self-contained: raw HTML in a message is shown as text, links and images are not
//! followed (the text is shown, the URL beside it and in a tooltip), and nothing is loaded. A single newline inside
//! a paragraph is kept as a line break, as chat text is written.

use pulldown_cmark::{
    CodeBlockKind, CowStr, Event, HeadingLevel, Options, Parser, Tag, TagEnd, html,
};

use super::escape::{escape, escape_into};
use super::highlight::highlight;

const OPTIONS: Options = Options::ENABLE_TABLES
    .union(Options::ENABLE_STRIKETHROUGH)
    .union(Options::ENABLE_TASKLISTS);

/// Renders `text` as HTML.
pub fn render(text: &str) -> String {
    let mut events: Vec<Event<'_>> = Vec::new();
    // The fenced or indented code block being collected: (language, text).
    let mut code: Option<(String, String)> = None;
    // Open links and images: (destination, visible text so far).
    let mut links: Vec<(CowStr<'_>, String)> = Vec::new();
    for event in Parser::new_ext(text, OPTIONS) {
        if let Some((lang, buf)) = &mut code {
            match event {
                Event::Text(t) => buf.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    events.push(Event::Html(code_block(lang, buf).into()));
                    code = None;
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
            }
            // Raw HTML is text here; an HTML block becomes a paragraph of its lines.
            Event::Start(Tag::HtmlBlock) => events.push(Event::Start(Tag::Paragraph)),
            Event::End(TagEnd::HtmlBlock) => {
                if matches!(events.last(), Some(Event::HardBreak)) {
                    events.pop();
                }
                events.push(Event::End(TagEnd::Paragraph));
            }
            Event::Html(h) => {
                let line = h.strip_suffix('\n').unwrap_or(&h);
                events.push(Event::Html(escape(line).into()));
                if h.ends_with('\n') {
                    events.push(Event::HardBreak);
                }
            }
            Event::InlineHtml(h) => events.push(Event::Html(escape(&h).into())),
            // Message headings sit below the page's and the card's: `#` is an h3.
            Event::Start(Tag::Heading { level, .. }) => events.push(Event::Start(Tag::Heading {
                level: shifted(level),
                id: None,
                classes: Vec::new(),
                attrs: Vec::new(),
            })),
            Event::End(TagEnd::Heading(level)) => {
                events.push(Event::End(TagEnd::Heading(shifted(level))))
            }
            Event::Start(Tag::Link { dest_url, .. }) => {
                events.push(Event::Html(
                    format!("<span class=\"link\" title=\"{}\">", escape(&dest_url)).into(),
                ));
                links.push((dest_url, String::new()));
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                events.push(Event::Html(
                    format!(
                        "<span class=\"link image\" title=\"{}\">[image: ",
                        escape(&dest_url)
                    )
                    .into(),
                ));
                links.push((dest_url, String::new()));
            }
            Event::End(end @ (TagEnd::Link | TagEnd::Image)) => {
                let (dest, shown) = links.pop().unwrap_or((CowStr::Borrowed(""), String::new()));
                let mut html = String::from(if end == TagEnd::Image {
                    "]</span>"
                } else {
                    "</span>"
                });
                let bare = dest.strip_prefix("mailto:").unwrap_or(&dest);
                if !dest.is_empty() && shown != *dest && shown != bare {
                    html.push_str(" <span class=\"link-url\">(");
                    escape_into(&dest, &mut html);
                    html.push_str(")</span>");
                }
                events.push(Event::Html(html.into()));
            }
            // Text and code spans escaped here, quotes too (pulldown-cmark leaves `"` in text as is), so no text
            // can read as an attribute to `is_self_contained`.
            Event::Text(t) => {
                if let Some((_, shown)) = links.last_mut() {
                    shown.push_str(&t);
                }
                events.push(Event::Html(escape(&t).into()));
            }
            Event::Code(c) => {
                if let Some((_, shown)) = links.last_mut() {
                    shown.push_str(&c);
                }
                events.push(Event::Html(format!("<code>{}</code>", escape(&c)).into()));
            }
            Event::SoftBreak => events.push(Event::HardBreak),
            other => events.push(other),
        }
    }
    if let Some((lang, buf)) = code {
        events.push(Event::Html(code_block(&lang, &buf).into()));
    }
    let mut out = String::with_capacity(text.len() * 2);
    html::push_html(&mut out, events.into_iter());
    out
}

fn shifted(level: HeadingLevel) -> HeadingLevel {
    match level {
        HeadingLevel::H1 => HeadingLevel::H3,
        HeadingLevel::H2 => HeadingLevel::H4,
        HeadingLevel::H3 => HeadingLevel::H5,
        _ => HeadingLevel::H6,
    }
}

fn code_block(lang: &str, code: &str) -> String {
    let code = code.strip_suffix('\n').unwrap_or(code);
    let mut out = String::from("<pre class=\"code\">");
    if !lang.is_empty() {
        out.push_str("<span class=\"code-lang\">");
        escape_into(lang, &mut out);
        out.push_str("</span>");
    }
    out.push_str("<code>");
    out.push_str(&highlight(code, (!lang.is_empty()).then_some(lang)));
    out.push_str("</code></pre>");
    out
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
            "<h3>Title</h3>\n<p>Hello <strong>bold</strong> and <code>x&lt;y</code></p>\n<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n\
             <pre class=\"code\"><span class=\"code-lang\">rust</span><code><span class=\"hl-kw\">let</span> a = \
             <span class=\"hl-num\">1</span>;</code></pre>\n<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n"
        );
        assert_eq!(
            render("1. one\n2. two"),
            "<ol>\n<li>one</li>\n<li>two</li>\n</ol>\n"
        );
        assert_eq!(render("a `unclosed"), "<p>a `unclosed</p>\n");
    }

    #[test]
    fn gfm_tables_strikethrough_task_lists_italics() {
        let html = render("| a | b |\n|---|:-:|\n| *x* | ~~y~~ |");
        assert_eq!(
            html,
            "<table><thead><tr><th>a</th><th style=\"text-align: center\">b</th></tr></thead><tbody>\n\
             <tr><td><em>x</em></td><td style=\"text-align: center\"><del>y</del></td></tr>\n</tbody></table>\n"
        );
        let tasks = render("- [x] done\n- [ ] open");
        assert!(
            tasks.contains("<input disabled=\"\" type=\"checkbox\" checked=\"\"/>\ndone"),
            "{tasks}"
        );
        assert!(
            tasks.contains("<input disabled=\"\" type=\"checkbox\"/>\nopen"),
            "{tasks}"
        );
        assert_eq!(
            render("_it_ and __b__"),
            "<p><em>it</em> and <strong>b</strong></p>\n"
        );
    }

    #[test]
    fn nested_lists_and_line_breaks() {
        assert_eq!(
            render("- a\n  1. one\n  2. two\n- b"),
            "<ul>\n<li>a\n<ol>\n<li>one</li>\n<li>two</li>\n</ol>\n</li>\n<li>b</li>\n</ul>\n"
        );
        assert_eq!(
            render("line one\nline two"),
            "<p>line one<br />\nline two</p>\n"
        );
    }

    #[test]
    fn links_and_images_are_inert() {
        let html = render("see [docs](https://example.com/a?b=1&c=\"2\") and <https://x.test>");
        assert_eq!(
            html,
            "<p>see <span class=\"link\" title=\"https://example.com/a?b=1&amp;c=&quot;2&quot;\">docs</span> \
             <span class=\"link-url\">(https://example.com/a?b=1&amp;c=&quot;2&quot;)</span> and \
             <span class=\"link\" title=\"https://x.test\">https://x.test</span></p>\n"
        );
        let js = render("[click](javascript:alert(1))");
        assert!(!js.contains("href") && !js.contains("<a"), "{js}");
        let img = render("![a cat](http://evil.test/cat.png)");
        assert!(!img.contains("<img") && !img.contains("src="), "{img}");
        assert!(img.contains("[image: a cat]"), "{img}");
    }

    #[test]
    fn raw_html_is_text() {
        assert_eq!(
            render("<div onclick=\"x()\">\nhi\n</div>"),
            "<p>&lt;div onclick=&quot;x()&quot;&gt;<br />\nhi<br />\n&lt;/div&gt;</p>\n"
        );
        assert_eq!(
            render("a <img src=x onerror=alert(1)> b"),
            "<p>a &lt;img src=x onerror=alert(1)&gt; b</p>\n"
        );
        // An indented code block is highlighted text too; an unclosed fence runs to the end.
        assert_eq!(
            render("```\n<b>"),
            "<pre class=\"code\"><code>&lt;b&gt;</code></pre>"
        );
    }
}
