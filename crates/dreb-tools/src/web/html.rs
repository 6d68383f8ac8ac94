//! HTML to readable Markdown for `web_fetch`, on a real HTML parser (html5ever through `htmd`): headings, links,
//! lists, emphasis, code blocks and tables survive; page chrome the reference also drops (scripts, styles,
//! navigation, header, footer, asides, iframes) does not.

use std::rc::Rc;
use std::sync::LazyLock;

use htmd::options::{BulletListMarker, Options};
use htmd::{HtmlToMarkdown, Node};
use markup5ever_rcdom::NodeData;

/// Elements whose content is never part of the readable text.
const SKIPPED: [&str; 12] = [
    "head", "script", "style", "noscript", "template", "iframe", "svg", "nav", "header", "footer",
    "aside", "form",
];

thread_local! {
    // The converter holds `Rc`s; one per thread (conversion runs on blocking threads).
    static CONVERTER: HtmlToMarkdown = HtmlToMarkdown::builder()
        .options(Options {
            bullet_list_marker: BulletListMarker::Dash,
            ul_bullet_spacing: 1,
            ol_number_spacing: 1,
            ..Options::default()
        })
        .skip_tags(SKIPPED.to_vec())
        .build();
}

static BLANK_RUNS: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(r"\n[ \t]*(\n[ \t]*){2,}").expect("regex"));

/// A page as `web_fetch` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readable {
    /// The `<title>`, whitespace collapsed; empty when there is none.
    pub title: String,
    pub markdown: String,
}

fn element_name(node: &Node) -> Option<String> {
    match &node.data {
        NodeData::Element { name, .. } => Some(name.local.to_string()),
        _ => None,
    }
}

fn text_of(node: &Node, out: &mut String) {
    match &node.data {
        NodeData::Text { contents } => out.push_str(&contents.borrow()),
        _ => {
            for child in node.children.borrow().iter() {
                text_of(child, out);
            }
        }
    }
}

fn find_title(node: &Rc<Node>) -> Option<String> {
    // An `<svg>`'s `<title>` is a tooltip, not the page's.
    match element_name(node).as_deref() {
        Some("title") => {
            let mut text = String::new();
            text_of(node, &mut text);
            return Some(text.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        Some("svg") => return None,
        _ => {}
    }
    node.children.borrow().iter().find_map(find_title)
}

/// The DOM of a document (search result pages are read from it).
pub(crate) fn parse(html: &str) -> Rc<Node> {
    CONVERTER
        .with(|c| c.html_to_tree(html))
        .unwrap_or_else(|_| {
            CONVERTER.with(|c| c.html_to_tree("").expect("an empty document parses"))
        })
}

/// Title and Markdown of an HTML document (runs a full parse: call it off the async threads for large pages).
pub fn readable(html: &str) -> Readable {
    CONVERTER.with(|c| {
        let tree = match c.html_to_tree(html) {
            Ok(t) => t,
            Err(_) => {
                return Readable {
                    title: String::new(),
                    markdown: String::new(),
                };
            }
        };
        let title = find_title(&tree).unwrap_or_default();
        let markdown = c.tree_to_markdown(&tree);
        let markdown = BLANK_RUNS.replace_all(&markdown, "\n\n");
        Readable {
            title,
            markdown: markdown.trim().to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_becomes_markdown_without_its_chrome() {
        let page = r#"<!doctype html><html><head><title>  The
            Page &amp; Co </title><style>body{color:red}</style><script>var x = "<p>no</p>";</script></head>
            <body><header>Site header</header><nav><a href="/a">Menu</a></nav>
            <main><h1>Heading</h1><p>Some <b>bold</b> and <a href="https://example.com/x">a link</a>.</p>
            <ul><li>one</li><li>two</li></ul><pre><code>let x = 1;</code></pre>
            <p>5 &lt; 6 &nbsp;ok</p><svg><title>icon</title></svg></main>
            <aside>Related</aside><footer>Copyright</footer></body></html>"#;
        let r = readable(page);
        assert_eq!(r.title, "The Page & Co");
        let md = &r.markdown;
        assert!(md.starts_with("# Heading\n\n"), "{md}");
        assert!(
            md.contains("Some **bold** and [a link](https://example.com/x)."),
            "{md}"
        );
        assert!(md.contains("- one\n- two"), "{md}");
        assert!(md.contains("```\nlet x = 1;\n```"), "{md}");
        assert!(md.contains("5 < 6"), "{md}");
        for chrome in [
            "Site header",
            "Menu",
            "Related",
            "Copyright",
            "color:red",
            "var x",
            "icon",
            "The Page",
        ] {
            assert!(!md.contains(chrome), "{chrome} in {md}");
        }
        assert!(!md.contains("\n\n\n"), "{md}");
    }

    #[test]
    fn a_fragment_without_a_title_still_converts() {
        let r = readable("Hello <i>world</i>");
        assert_eq!(r.title, "");
        assert_eq!(r.markdown, "Hello *world*");
    }
}
