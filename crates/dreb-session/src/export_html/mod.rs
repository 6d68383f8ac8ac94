//! `export_html`: the whole session as one self-contained HTML page (inline CSS and JS, no external URLs): a
//! session-tree sidebar with search over every branch, the current branch shown (a click on a tree node shows that
//! node's branch), highlighted code and collapsible (`<details>`) tool output. Every text is HTML-escaped.

mod escape;
pub mod highlight;
pub mod markdown;
mod sidebar;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::entry::{EntryKind, SessionEntry};
use crate::error::{Result, SessionError};
use crate::jsjson::js_string;
use crate::manager::SessionManager;
use crate::message::{self, content_text};
use crate::time::iso_from_ms;
pub use escape::escape;
use escape::escape_into;
use highlight::{highlight, lang_from_path};

const CSS: &str = include_str!("page.css");

/// Branch switching, search, expand/collapse all (loads nothing).
const SCRIPT: &str = include_str!("page.js");

/// A tool the agent had, listed in the page header.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
}

/// Extra context for the page.
#[derive(Debug, Clone, Default)]
pub struct HtmlExportOptions {
    /// Where to write; default `dreb-session-<session file name without .jsonl>.html` in the process cwd.
    pub output_path: Option<PathBuf>,
    pub system_prompt: Option<String>,
    pub tools: Vec<ToolInfo>,
}

impl SessionManager {
    /// Writes the HTML export and returns its path. Errors like the reference for in-memory sessions and before the
    /// session file exists.
    pub fn export_html(&self, options: &HtmlExportOptions) -> Result<PathBuf> {
        let file = self
            .session_file()
            .filter(|_| self.is_persisted())
            .ok_or(SessionError::ExportInMemory)?;
        if !file.exists() {
            return Err(SessionError::NothingToExport);
        }
        let out = match &options.output_path {
            Some(p) => p.clone(),
            None => {
                let stem = file
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let stem = stem.strip_suffix(".jsonl").unwrap_or(&stem).to_string();
                PathBuf::from(format!("dreb-session-{stem}.html"))
            }
        };
        let html = render_html(self, options);
        std::fs::write(&out, html).map_err(|e| SessionError::io(&out, e))?;
        Ok(out)
    }
}

/// Renders `sm` as an HTML page: every entry, the current branch visible.
pub fn render_html(sm: &SessionManager, options: &HtmlExportOptions) -> String {
    let tree = sm.tree();
    let count = tree.entries.len();
    let mut out = String::with_capacity(64 * 1024);
    let title = sm
        .session_name()
        .unwrap_or_else(|| "dreb session".to_string());

    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    // No network: forbid every fetch, allow only the inline style/script and data: images.
    out.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n");
    out.push_str("<title>");
    escape_into(&title, &mut out);
    out.push_str("</title>\n<style>\n");
    out.push_str(CSS);
    out.push_str("</style>\n</head>\n<body>\n");

    // Tree links: each node's parent and newest child (children are sorted oldest first).
    let mut parent = vec![None; count];
    for (n, kids) in tree.children.iter().enumerate() {
        for &k in kids {
            parent[k] = Some(n);
        }
    }
    let on_branch: HashSet<usize> = sm.branch_lines(None).into_iter().collect();
    let on_path: Vec<bool> = tree.lines.iter().map(|l| on_branch.contains(l)).collect();
    let leaf = sm
        .leaf_line()
        .and_then(|l| tree.lines.iter().position(|&t| t == l));

    // Every entry in file order (a tool result follows its call there), so calls are known when results render.
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    let mut visible = Vec::with_capacity(count);
    let mut body = String::with_capacity(64 * 1024);
    let mut html = String::new();
    for (n, e) in tree.entries.iter().enumerate() {
        html.clear();
        render_entry(sm, e, &mut calls, &mut html);
        visible.push(!html.is_empty());
        let id = |v: Option<usize>| v.map_or_else(|| "-1".to_string(), |v| v.to_string());
        body.push_str(&format!(
            "<div class=\"node\" id=\"n{n}\" data-n=\"{n}\" data-p=\"{}\" data-next=\"{}\"{}>",
            id(parent[n]),
            id(tree.children[n].last().copied()),
            if on_path[n] { "" } else { " hidden" }
        ));
        body.push_str(&html);
        body.push_str("</div>\n");
    }

    sidebar::render(&tree, &visible, &on_path, leaf, &mut out);
    out.push_str("<main>\n");
    render_header(sm, options, &title, &mut out);
    out.push_str("<div id=\"entries\">\n");
    out.push_str(&body);
    out.push_str("</div>\n<footer>Exported from dreb · ");
    escape_into(&crate::time::now_iso(), &mut out);
    out.push_str("</footer>\n</main>\n<script>\n");
    out.push_str(SCRIPT);
    out.push_str("</script>\n</body>\n</html>\n");
    out
}

fn render_header(sm: &SessionManager, options: &HtmlExportOptions, title: &str, out: &mut String) {
    let h = sm.header();
    out.push_str("<header class=\"session\"><h1>");
    escape_into(title, out);
    out.push_str("</h1><div class=\"meta\">Session <code>");
    escape_into(sm.session_id(), out);
    out.push_str("</code> · cwd <code>");
    escape_into(sm.cwd(), out);
    out.push_str("</code> · started ");
    escape_into(h.timestamp(), out);
    if let Some(p) = h.parent_session() {
        out.push_str(" · forked from <code>");
        escape_into(p, out);
        out.push_str("</code>");
    }
    out.push_str("</div>");
    if let Some(sp) = options.system_prompt.as_deref().filter(|s| !s.is_empty()) {
        out.push_str("<details class=\"system-prompt\"><summary>System prompt</summary><pre>");
        escape_into(sp, out);
        out.push_str("</pre></details>");
    }
    if !options.tools.is_empty() {
        out.push_str("<details class=\"tools\"><summary>Tools (");
        out.push_str(&options.tools.len().to_string());
        out.push_str(")</summary><ul>");
        for t in &options.tools {
            out.push_str("<li><code>");
            escape_into(&t.name, out);
            out.push_str("</code> — ");
            escape_into(&t.description, out);
            out.push_str("</li>");
        }
        out.push_str("</ul></details>");
    }
    out.push_str("<div class=\"toolbar\"><button type=\"button\" onclick=\"setAll(true)\">Expand all</button>");
    out.push_str(
        "<button type=\"button\" onclick=\"setAll(false)\">Collapse all</button></div></header>\n",
    );
}

fn open_card(out: &mut String, class: &str, role: &str, when: Option<String>, label: Option<&str>) {
    out.push_str("<section class=\"entry ");
    out.push_str(class);
    out.push_str("\"><div class=\"role\">");
    escape_into(role, out);
    if let Some(l) = label {
        out.push_str("<span class=\"label\">");
        escape_into(l, out);
        out.push_str("</span>");
    }
    if let Some(w) = when {
        out.push_str("<span class=\"when\">");
        escape_into(&w, out);
        out.push_str("</span>");
    }
    out.push_str("</div>");
}

fn close_card(out: &mut String) {
    out.push_str("</section>\n");
}

fn meta_line(out: &mut String, text: &str) {
    out.push_str("<div class=\"entry meta-entry\">");
    escape_into(text, out);
    out.push_str("</div>\n");
}

fn message_time(msg: &Value) -> Option<String> {
    msg.get("timestamp")
        .and_then(Value::as_i64)
        .and_then(iso_from_ms)
}

fn render_entry(
    sm: &SessionManager,
    e: &SessionEntry,
    calls: &mut HashMap<String, (String, Value)>,
    out: &mut String,
) {
    let label = e.id().and_then(|id| sm.label(id));
    match e.kind() {
        EntryKind::Message => {
            let Some(msg) = e.message() else { return };
            render_message(msg, label, calls, out);
        }
        EntryKind::CustomMessage => {
            if e.get("display") == Some(&Value::Bool(false)) {
                return;
            }
            open_card(
                out,
                "custom",
                &format!("Note · {}", js_string(e.get("customType"))),
                Some(e.timestamp().to_string()),
                label,
            );
            render_content(e.get("content"), out);
            close_card(out);
        }
        EntryKind::Compaction => {
            let tokens = e
                .get("tokensBefore")
                .map(|t| js_string(Some(t)))
                .unwrap_or_default();
            open_card(
                out,
                "summary",
                "Compaction summary",
                Some(e.timestamp().to_string()),
                label,
            );
            out.push_str("<div class=\"meta\">Earlier conversation (");
            escape_into(&tokens, out);
            out.push_str(" tokens) was compacted into this summary.</div>");
            out.push_str(&markdown::render(
                e.str_field("summary").unwrap_or_default(),
            ));
            close_card(out);
        }
        EntryKind::BranchSummary => {
            open_card(
                out,
                "summary",
                "Branch summary",
                Some(e.timestamp().to_string()),
                label,
            );
            out.push_str(&markdown::render(
                e.str_field("summary").unwrap_or_default(),
            ));
            close_card(out);
        }
        EntryKind::ModelChange => meta_line(
            out,
            &format!(
                "Model: {}/{}",
                js_string(e.get("provider")),
                js_string(e.get("modelId"))
            ),
        ),
        EntryKind::ThinkingLevelChange => meta_line(
            out,
            &format!("Thinking level: {}", js_string(e.get("thinkingLevel"))),
        ),
        EntryKind::SessionInfo => {
            meta_line(out, &format!("Session named: {}", js_string(e.get("name"))))
        }
        // Labels are shown on their targets; extension state is not conversation.
        EntryKind::Label | EntryKind::Custom | EntryKind::Session => {}
        EntryKind::Unknown => meta_line(out, &format!("[{}]", e.entry_type())),
    }
}

fn render_message(
    msg: &Value,
    label: Option<&str>,
    calls: &mut HashMap<String, (String, Value)>,
    out: &mut String,
) {
    let when = message_time(msg);
    match message::role(msg).unwrap_or("") {
        "user" => {
            open_card(out, "user", "User", when, label);
            render_content(msg.get("content"), out);
            close_card(out);
        }
        "assistant" => {
            let error = matches!(message::stop_reason(msg), Some("error") | Some("aborted"));
            open_card(
                out,
                if error {
                    "assistant error"
                } else {
                    "assistant"
                },
                "Assistant",
                when,
                label,
            );
            for block in msg
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => out.push_str(&markdown::render(
                        block.get("text").and_then(Value::as_str).unwrap_or(""),
                    )),
                    Some("thinking") => {
                        let t = block.get("thinking").and_then(Value::as_str).unwrap_or("");
                        if !t.is_empty() {
                            out.push_str(
                                "<details class=\"thinking\"><summary>Thinking</summary><div>",
                            );
                            out.push_str(&markdown::render(t));
                            out.push_str("</div></details>");
                        }
                    }
                    Some("toolCall") => render_tool_call(block, calls, out),
                    _ => {}
                }
            }
            if let Some(err) = message::str_field(msg, "errorMessage") {
                out.push_str("<div class=\"exit bad\">");
                escape_into(err, out);
                out.push_str("</div>");
            } else if message::stop_reason(msg) == Some("aborted") {
                out.push_str("<div class=\"exit bad\">(aborted)</div>");
            }
            render_usage(msg, out);
            close_card(out);
        }
        "toolResult" => {
            let name = message::str_field(msg, "toolName").unwrap_or("tool");
            let is_error = msg.get("isError") == Some(&Value::Bool(true));
            let call = message::str_field(msg, "toolCallId").and_then(|id| calls.get(id));
            let lang = call
                .filter(|(n, _)| n == "read")
                .and_then(|(_, args)| args.get("path").and_then(Value::as_str))
                .and_then(lang_from_path);
            open_card(
                out,
                if is_error {
                    "tool-result error"
                } else {
                    "tool-result"
                },
                &format!("Result · {name}"),
                when,
                label,
            );
            let text = content_text(msg.get("content"), "\n");
            collapsible_output(&text, lang, is_error, out);
            render_images(msg.get("content"), out);
            close_card(out);
        }
        "bashExecution" => {
            open_card(out, "bash", "Bash", when, label);
            out.push_str("<pre class=\"code\"><code>$ ");
            out.push_str(&highlight(
                message::str_field(msg, "command").unwrap_or(""),
                Some("sh"),
            ));
            out.push_str("</code></pre>");
            collapsible_output(
                message::str_field(msg, "output").unwrap_or(""),
                None,
                false,
                out,
            );
            let cancelled = msg.get("cancelled") == Some(&Value::Bool(true));
            let code = msg.get("exitCode").and_then(Value::as_i64);
            let (class, text) = match (cancelled, code) {
                (true, _) => ("exit bad", "cancelled".to_string()),
                (false, Some(0)) => ("exit", "exit code 0".to_string()),
                (false, Some(c)) => ("exit bad", format!("exit code {c}")),
                (false, None) => ("exit", String::new()),
            };
            if !text.is_empty() {
                out.push_str(&format!("<div class=\"{class}\">"));
                escape_into(&text, out);
                out.push_str("</div>");
            }
            close_card(out);
        }
        "custom" => {
            if msg.get("display") == Some(&Value::Bool(false)) {
                return;
            }
            open_card(
                out,
                "custom",
                &format!("Note · {}", js_string(msg.get("customType"))),
                when,
                label,
            );
            render_content(msg.get("content"), out);
            close_card(out);
        }
        "compactionSummary" | "branchSummary" => {
            let title = if message::role(msg) == Some("compactionSummary") {
                "Compaction summary"
            } else {
                "Branch summary"
            };
            open_card(out, "summary", title, when, label);
            out.push_str(&markdown::render(
                message::str_field(msg, "summary").unwrap_or(""),
            ));
            close_card(out);
        }
        other => {
            open_card(out, "custom", other, when, label);
            render_content(msg.get("content"), out);
            close_card(out);
        }
    }
}

/// Text (as Markdown) and images of a user/custom content value.
fn render_content(content: Option<&Value>, out: &mut String) {
    match content {
        Some(Value::String(s)) => out.push_str(&markdown::render(s)),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                if b.get("type").and_then(Value::as_str) == Some("text") {
                    out.push_str(&markdown::render(
                        b.get("text").and_then(Value::as_str).unwrap_or(""),
                    ));
                }
            }
            render_images(content, out);
        }
        _ => {}
    }
}

fn render_images(content: Option<&Value>, out: &mut String) {
    for b in content.and_then(Value::as_array).into_iter().flatten() {
        if b.get("type").and_then(Value::as_str) != Some("image") {
            continue;
        }
        let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("");
        let data = b.get("data").and_then(Value::as_str).unwrap_or("");
        // Only inline image data (data: URIs) with a sane MIME type and base64 alphabet.
        let mime_ok = mime.starts_with("image/")
            && mime[6..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
        let data_ok = data
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c));
        if mime_ok && data_ok && !data.is_empty() {
            out.push_str(&format!(
                "<img class=\"attached\" alt=\"attached image\" src=\"data:{mime};base64,{data}\">"
            ));
        } else {
            out.push_str("<div class=\"meta\">[image]</div>");
        }
    }
}

fn collapsible_output(text: &str, lang: Option<&str>, is_error: bool, out: &mut String) {
    let lines = if text.is_empty() {
        0
    } else {
        text.trim_end_matches('\n').split('\n').count()
    };
    out.push_str("<details class=\"tool-output\"><summary>");
    out.push_str(if is_error { "Error output" } else { "Output" });
    out.push_str(&format!(
        " · {lines} line{}",
        if lines == 1 { "" } else { "s" }
    ));
    out.push_str("</summary><pre class=\"code\"><code>");
    if text.is_empty() {
        out.push_str("(no output)");
    } else {
        out.push_str(&highlight(text, lang));
    }
    out.push_str("</code></pre></details>");
}

fn render_tool_call(block: &Value, calls: &mut HashMap<String, (String, Value)>, out: &mut String) {
    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
    let args = block.get("arguments").cloned().unwrap_or(Value::Null);
    if let Some(id) = block.get("id").and_then(Value::as_str) {
        calls.insert(id.to_string(), (name.to_string(), args.clone()));
    }
    let path = args.get("path").and_then(Value::as_str);
    out.push_str("<div class=\"tool-call\"><div><span class=\"tool-name\">");
    escape_into(name, out);
    out.push_str("</span>");
    if let Some(p) = path {
        out.push_str("<span class=\"tool-path\">");
        escape_into(p, out);
        out.push_str("</span>");
    }
    out.push_str("</div>");
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    match (name, s("command"), s("content"), s("oldText"), s("newText")) {
        ("bash", Some(cmd), ..) => code_block(&highlight(cmd, Some("sh")), Some("sh"), out),
        ("write", _, Some(content), ..) => {
            let lang = path.and_then(lang_from_path);
            out.push_str("<details class=\"tool-args\"><summary>File content</summary>");
            code_block(&highlight(content, lang), lang, out);
            out.push_str("</details>");
        }
        ("edit", _, _, Some(old), Some(new)) => {
            let diff: String = old
                .split('\n')
                .map(|l| format!("-{l}\n"))
                .chain(new.split('\n').map(|l| format!("+{l}\n")))
                .collect();
            code_block(
                &highlight(diff.trim_end_matches('\n'), Some("diff")),
                Some("diff"),
                out,
            );
        }
        ("read", ..)
            if args
                .as_object()
                .is_some_and(|m| m.keys().all(|k| k == "path")) => {}
        _ => {
            let pretty = serde_json::to_string_pretty(&args).unwrap_or_default();
            code_block(&highlight(&pretty, Some("json")), Some("json"), out);
        }
    }
    out.push_str("</div>");
}

fn code_block(highlighted: &str, lang: Option<&str>, out: &mut String) {
    out.push_str("<pre class=\"code\">");
    if let Some(l) = lang {
        out.push_str("<span class=\"code-lang\">");
        escape_into(l, out);
        out.push_str("</span>");
    }
    out.push_str("<code>");
    out.push_str(highlighted);
    out.push_str("</code></pre>");
}

fn render_usage(msg: &Value, out: &mut String) {
    let model = message::str_field(msg, "model");
    let usage = msg.get("usage");
    let num = |k: &str| usage.and_then(|u| u.get(k)).and_then(Value::as_f64);
    let mut parts = Vec::new();
    if let Some(m) = model {
        parts.push(m.to_string());
    }
    if let (Some(i), Some(o)) = (num("input"), num("output")) {
        parts.push(format!("{} in / {} out tokens", i as i64, o as i64));
    }
    if let Some(c) = usage
        .and_then(|u| u.get("cost"))
        .and_then(|c| c.get("total"))
        .and_then(Value::as_f64)
        && c > 0.0
    {
        parts.push(format!("${c:.4}"));
    }
    if !parts.is_empty() {
        out.push_str("<div class=\"usage\">");
        escape_into(&parts.join(" · "), out);
        out.push_str("</div>");
    }
}

/// True when `html` references nothing outside itself (no `http(s)://`, `//host` or `src`/`href` to non-data URLs).
pub fn is_self_contained(html: &str) -> bool {
    let lower = html.to_ascii_lowercase();
    for attr in ["src=\"", "href=\"", "url("] {
        let mut rest = lower.as_str();
        while let Some(i) = rest.find(attr) {
            rest = &rest[i + attr.len()..];
            if !rest.starts_with("data:") && !rest.starts_with('#') {
                return false;
            }
        }
    }
    true
}

/// Writes an export of a session file without a live session (CLI `--export <file> [out]`).
pub fn export_file(input: &Path, output: Option<PathBuf>) -> Result<PathBuf> {
    if !input.exists() {
        return Err(SessionError::FileNotFound(
            input.to_string_lossy().into_owned(),
        ));
    }
    let sm = SessionManager::open(input, None)?;
    sm.export_html(&HtmlExportOptions {
        output_path: output,
        ..Default::default()
    })
}
