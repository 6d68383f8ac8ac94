//! The export's session-tree sidebar: every entry of the file as a node (a linear run of entries stays at one
//! level, each branch point indents its branches), the current branch marked, and a search box. The page's script
//! (`page.js`) shows the branch of a clicked node and searches every branch.

use super::escape::escape_into;
use crate::entry::EntryKind;
use crate::tree::{SessionTree, entry_preview};

/// Preview length in the sidebar (characters).
const PREVIEW_CHARS: usize = 80;

/// Writes the `<nav>` for `tree`. `visible[i]`: node `i` renders something (empty nodes are skipped, their children
/// kept in place); `on_path[i]`: node `i` is on the current branch; `leaf`: the current leaf node.
pub fn render(
    tree: &SessionTree<'_>,
    visible: &[bool],
    on_path: &[bool],
    leaf: Option<usize>,
    out: &mut String,
) {
    let branches = tree.children.iter().filter(|c| c.len() > 1).count();
    out.push_str("<nav id=\"side\" aria-label=\"Session tree\">");
    out.push_str("<input type=\"search\" id=\"search\" placeholder=\"Search all branches\" autocomplete=\"off\">");
    out.push_str("<div id=\"search-status\" class=\"meta\">");
    out.push_str(&format!(
        "{} entr{}, {} branch point{}",
        visible.iter().filter(|v| **v).count(),
        if visible.iter().filter(|v| **v).count() == 1 {
            "y"
        } else {
            "ies"
        },
        branches,
        if branches == 1 { "" } else { "s" }
    ));
    out.push_str("</div><ul class=\"tree\">");

    enum Work {
        Node(usize),
        Lit(&'static str),
        /// Opens branch `.0` (from 1) of `.1` at a branch point.
        Fork(usize, usize),
    }
    // Iterative (a session can be thousands of entries deep).
    let mut stack: Vec<Work> = Vec::new();
    push_siblings(&tree.roots, &mut stack);
    while let Some(work) = stack.pop() {
        let n = match work {
            Work::Lit(s) => {
                out.push_str(s);
                continue;
            }
            Work::Fork(i, n) => {
                out.push_str(&format!(
                    "<li class=\"fork\"><div class=\"fork-head\">branch {i} of {n}</div><ul>"
                ));
                continue;
            }
            Work::Node(n) => n,
        };
        if visible[n] {
            node_link(tree, n, on_path[n], leaf == Some(n), out);
        }
        push_siblings(&tree.children[n], &mut stack);
    }
    out.push_str("</ul></nav>\n");

    /// One child continues the run; several open one nested list each.
    fn push_siblings(kids: &[usize], stack: &mut Vec<Work>) {
        match kids {
            [] => {}
            [only] => stack.push(Work::Node(*only)),
            many => {
                for (i, &k) in many.iter().enumerate().rev() {
                    stack.push(Work::Lit("</ul></li>"));
                    stack.push(Work::Node(k));
                    stack.push(Work::Fork(i + 1, many.len()));
                }
            }
        }
    }
}

fn node_link(tree: &SessionTree<'_>, n: usize, on_path: bool, current: bool, out: &mut String) {
    let e = &*tree.entries[n];
    let kind = match e.kind() {
        EntryKind::Message => e
            .message()
            .and_then(|m| m.get("role"))
            .and_then(|r| r.as_str())
            .unwrap_or("message")
            .to_string(),
        _ => e.entry_type().to_string(),
    };
    let mut preview = entry_preview(e);
    if preview.chars().count() > PREVIEW_CHARS {
        preview = preview.chars().take(PREVIEW_CHARS - 1).collect::<String>() + "…";
    }
    if preview.is_empty() {
        preview = format!("({kind})");
    }
    out.push_str(&format!("<li><a href=\"#n{n}\" data-n=\"{n}\" class=\"k-"));
    // Entry types and roles are short ASCII names; anything else is escaped like text.
    escape_into(
        &kind.replace(|c: char| !c.is_ascii_alphanumeric(), "-"),
        out,
    );
    if on_path {
        out.push_str(" on-path");
    }
    if current {
        out.push_str(" leaf");
    }
    out.push_str("\">");
    if let Some(label) = tree.labels[n] {
        out.push_str("<span class=\"label\">");
        escape_into(label, out);
        out.push_str("</span> ");
    }
    escape_into(&preview, out);
    out.push_str("</a></li>");
}
