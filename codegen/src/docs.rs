//! Docs backend: `docs/protocol.md`, the protocol reference rendered from the IR with every doc string, every
//! error text and every example (frames are shown compact, as they appear on the wire).
//!
//! Layout: overview, framing and envelope (generic error texts, envelope examples), commands by group, events by
//! group, inputs, then shared types. Type names link to their section: headed "`Name` (type)" so the anchor
//! (`#name-type`) cannot clash with a group heading such as "Model".

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;

use crate::ir::{
    Command, CommandResult, Field, Ir, Message, MessageBody, TypeDef, TypeKind, TypeRef,
};
use crate::{BANNER, EXTENSION_BANNER, GeneratedFile};

/// The generated reference, relative to the repository root.
pub const OUT_PATH: &str = "docs/protocol.md";

/// The extension protocol's reference, relative to the repository root.
pub const EXTENSION_OUT_PATH: &str = "docs/extension-protocol.md";

/// Runs the backend.
pub fn generate(ir: &Ir) -> Vec<GeneratedFile> {
    vec![GeneratedFile {
        path: PathBuf::from(OUT_PATH),
        contents: render(ir, &RPC),
    }]
}

/// Runs the backend for `protocol/extension.yaml`: `docs/extension-protocol.md`, with a call reference before the
/// command reference.
pub fn generate_extension(ir: &Ir) -> Vec<GeneratedFile> {
    vec![GeneratedFile {
        path: PathBuf::from(EXTENSION_OUT_PATH),
        contents: render(ir, &EXTENSION),
    }]
}

/// GitHub's anchor for a heading whose text is `text` (in backticks): lowercase, punctuation dropped except
/// `-` and `_`, spaces to `-`.
fn anchor(text: &str) -> String {
    anchor_of(text)
}

/// The anchor of a shared type's section.
fn type_anchor(name: &str) -> String {
    anchor_of(&format!("{name} (type)"))
}

fn anchor_of(text: &str) -> String {
    text.chars()
        .filter_map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c.to_lowercase().next().unwrap_or(c))
            } else if c == ' ' {
                Some('-')
            } else {
                None
            }
        })
        .collect()
}

/// A type expression in Markdown, with named types linked.
fn md_type(ty: &TypeRef) -> String {
    fn has_named(ty: &TypeRef) -> bool {
        match ty {
            TypeRef::Named(_) => true,
            TypeRef::List(i) | TypeRef::Map(i) => has_named(i),
            _ => false,
        }
    }
    if !has_named(ty) {
        return format!("`{}`", ty.to_spec());
    }
    match ty {
        TypeRef::Named(n) => format!("[`{n}`](#{})", type_anchor(n)),
        TypeRef::List(i) => format!("`list<`{}`>`", md_type(i)),
        TypeRef::Map(i) => format!("`map<`{}`>`", md_type(i)),
        other => format!("`{}`", other.to_spec()),
    }
}

/// Text for a table cell: one line, pipes escaped.
fn cell(text: &str) -> String {
    text.trim()
        .replace('|', "\\|")
        .replace("\r\n", " ")
        .replace('\n', " ")
}

/// An error text in a code span (newlines shown as `\n`, backticks handled by a longer fence).
fn code_span(text: &str) -> String {
    let text = text.replace('\n', "\\n").replace('|', "\\|");
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

fn compact(v: &Value) -> String {
    serde_json::to_string(v).expect("a JSON value always serialises")
}

fn json_block(out: &mut String, values: &[&Value]) {
    out.push_str("```json\n");
    for v in values {
        out.push_str(&compact(v));
        out.push('\n');
    }
    out.push_str("```\n\n");
}

/// Writes a doc as its own paragraph(s). Markdown headings inside it are shifted so the shallowest one is at
/// `level`: a doc never opens a section that competes with the reference's own outline.
fn paragraph(out: &mut String, text: &Option<String>, level: usize) {
    if let Some(t) = text {
        let t = t.trim();
        if !t.is_empty() {
            out.push_str(&nest_headings(t, level));
            out.push_str("\n\n");
        }
    }
}

/// The level of an ATX heading line (`## x` → 2), or `None`.
fn heading_level(line: &str) -> Option<usize> {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    let rest = &line[hashes..];
    ((1..=6).contains(&hashes) && (rest.is_empty() || rest.starts_with(' '))).then_some(hashes)
}

fn nest_headings(text: &str, level: usize) -> String {
    let mut in_fence = false;
    let mut min = usize::MAX;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence && let Some(l) = heading_level(line) {
            min = min.min(l);
        }
    }
    if min == usize::MAX || min >= level {
        return text.to_string();
    }
    let shift = level - min;
    let mut out = Vec::new();
    in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            out.push(line.to_string());
        } else if !in_fence && heading_level(line).is_some() {
            // Deeper than `######` stays bold text.
            let l = heading_level(line).unwrap_or(0) + shift;
            let body = line.trim_start_matches('#').trim();
            out.push(if l <= 6 {
                format!("{} {body}", "#".repeat(l))
            } else {
                format!("**{body}**")
            });
        } else {
            out.push(line.to_string());
        }
    }
    out.join("\n")
}

fn since_note(out: &mut String, since: &Option<String>, note: &Option<String>) {
    if let Some(s) = since {
        let _ = writeln!(out, "*Since:* {}\n", s.trim());
    }
    if let Some(n) = note {
        let _ = writeln!(out, "*Note:* {}\n", n.trim());
    }
}

/// A fields table (key, type, presence, description).
fn fields_table(out: &mut String, fields: &[Field]) {
    if fields.is_empty() {
        out.push_str("No fields.\n\n");
        return;
    }
    out.push_str("| key | type | presence | description |\n| --- | --- | --- | --- |\n");
    for f in fields {
        let ty = match &f.constant {
            Some(c) => format!("`{}`", compact(c)),
            None => md_type(&f.ty),
        };
        let presence = match (f.optional, f.nullable) {
            (false, false) => "required",
            (true, false) => "optional (absent when unset)",
            (false, true) => "required, may be `null`",
            (true, true) => "optional, may be `null`",
        };
        let mut desc = f.doc.as_deref().map(cell).unwrap_or_default();
        if let Some(s) = &f.since {
            desc.push_str(&format!(" *Since:* {}", cell(s)));
        }
        if let Some(n) = &f.note {
            desc.push_str(&format!(" *Note:* {}", cell(n)));
        }
        let _ = writeln!(
            out,
            "| `{}` | {ty} | {presence} | {} |",
            f.name,
            desc.trim()
        );
    }
    out.push('\n');
}

/// Items grouped by their `group`, in order of first appearance (items without a group last, under `other`).
fn grouped<'a, T>(
    items: &'a [T],
    group: impl Fn(&'a T) -> Option<&'a str>,
    other: &'a str,
) -> Vec<(&'a str, Vec<&'a T>)> {
    let mut groups: Vec<(&str, Vec<&T>)> = Vec::new();
    for item in items {
        let g = group(item).unwrap_or(other);
        match groups.iter_mut().find(|(name, _)| *name == g) {
            Some((_, list)) => list.push(item),
            None => groups.push((g, vec![item])),
        }
    }
    groups
}

/// What differs between the references of the specs: the banner and the sections' introductions.
struct Texts<'a> {
    banner: &'a str,
    /// Introduces the calls (used when the spec has calls).
    calls: &'a str,
    commands: &'a str,
    events: &'a str,
}

/// The RPC protocol's reference.
const RPC: Texts = Texts {
    banner: BANNER,
    calls: "",
    commands: "Every command is one JSON object with `type` (the command name) and an optional `id`, which the \
               response echoes. Success responses are `{\"id\"?, \"type\": \"response\", \"command\", \"success\": true, \
               \"data\"?}`; failures carry `\"success\": false` and the exact `error` text.",
    events: "Events are the stdout frames that are not responses. The event union is open: clients must ignore \
             event types they do not know.",
};

/// The extension protocol's reference.
const EXTENSION: Texts = Texts {
    banner: EXTENSION_BANNER,
    calls: "Calls are the requests the runtime sends to the extension: one JSON object with `type` (the call name) \
            and an `id`, which the extension's response echoes. Success responses are `{\"id\", \"type\": \
            \"response\", \"command\": <call>, \"success\": true, \"data\"?}`; failures carry `\"success\": false` and \
            the `error` text.",
    commands: "Commands are the requests the extension sends to the runtime, in the same envelope: `type` (the \
               command name) and an optional `id`, which the runtime's response echoes. Success responses are \
               `{\"id\"?, \"type\": \"response\", \"command\", \"success\": true, \"data\"?}`; failures carry \
               `\"success\": false` and the exact `error` text.",
    events: "Events are the notifications the runtime sends to the extension; they get no response. The event \
             union is open: extensions must ignore event types they do not know.",
};

/// The sections whose groups the contents list, by heading.
const GROUPED_SECTIONS: &[&str] = &["Call reference", "Command reference", "Event reference"];

fn render(ir: &Ir, texts: &Texts) -> String {
    let mut head = format!("<!-- {} -->\n\n", texts.banner);
    let _ = writeln!(
        head,
        "# {} protocol reference (version {})\n",
        ir.protocol.name, ir.protocol.version
    );
    paragraph(&mut head, &ir.protocol.doc, 2);
    head.push_str("## Contents\n\n");

    let mut out = String::new();
    out.push_str("## Framing and envelope\n\n");
    paragraph(&mut out, &ir.envelope.doc, 3);
    if !ir.envelope.errors.is_empty() {
        out.push_str(
            "Generic error texts (`{…}` marks variable parts):\n\n| key | text |\n| --- | --- |\n",
        );
        for e in &ir.envelope.errors {
            let _ = writeln!(out, "| `{}` | {} |", e.key, code_span(&e.text));
        }
        out.push('\n');
    }
    if !ir.envelope.examples.is_empty() {
        out.push_str("### Envelope examples\n\n");
        for e in &ir.envelope.examples {
            let _ = writeln!(out, "**{}**\n", e.name);
            paragraph(&mut out, &e.doc, 4);
            if let Some(line) = &e.line {
                let _ = writeln!(out, "Input line:\n\n```text\n{line}\n```\n");
            }
            if let Some(request) = &e.request {
                out.push_str("Input:\n\n");
                json_block(&mut out, &[request]);
            }
            if let Some(response) = &e.response {
                out.push_str("Response:\n\n");
                json_block(&mut out, &[response]);
            }
        }
    }

    if !ir.calls.is_empty() {
        out.push_str("## Call reference\n\n");
        paragraph(&mut out, &Some(texts.calls.into()), 3);
        for (group, calls) in grouped(&ir.calls, |c| c.group.as_deref(), "Other calls") {
            let _ = writeln!(out, "### {group}\n");
            for c in calls {
                command(&mut out, c);
            }
        }
    }

    out.push_str("## Command reference\n\n");
    paragraph(&mut out, &Some(texts.commands.into()), 3);
    for (group, commands) in grouped(&ir.commands, |c| c.group.as_deref(), "Other commands") {
        let _ = writeln!(out, "### {group}\n");
        for c in commands {
            command(&mut out, c);
        }
    }

    out.push_str("## Event reference\n\n");
    paragraph(&mut out, &Some(texts.events.into()), 3);
    for (group, events) in grouped(&ir.events, |m| m.group.as_deref(), "Other events") {
        let _ = writeln!(out, "### {group}\n");
        for m in events {
            message(&mut out, ir, m);
        }
    }

    // A two-way protocol without inputs has no input section; the RPC protocol always lists it.
    if !ir.inputs.is_empty() || ir.calls.is_empty() {
        out.push_str("## Input reference\n\n");
        out.push_str("Stdin messages that are not commands and get no response.\n\n");
        if ir.inputs.is_empty() {
            out.push_str("None.\n\n");
        }
        for m in &ir.inputs {
            message(&mut out, ir, m);
        }
    }

    out.push_str("## Type reference\n\n");
    for t in &ir.types {
        type_def(&mut out, t);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    let contents = contents(&head, &out);
    head + &contents + &out
}

/// The contents: every section of `body` (its `##` headings), and the groups (`###`) of the reference sections,
/// linked by the anchors GitHub gives them in the whole document (`head` then `body`).
fn contents(head: &str, body: &str) -> String {
    let before = headings(head).len();
    let all = headings(&format!("{head}\n{body}"));
    let mut out = String::new();
    let mut section: Option<&str> = None;
    for (level, text, anchor) in &all[before..] {
        match level {
            2 => {
                section = Some(text);
                let _ = writeln!(out, "- [{text}](#{anchor})");
            }
            3 if section.is_some_and(|s| GROUPED_SECTIONS.contains(&s)) => {
                let _ = writeln!(out, "  - [{text}](#{anchor})");
            }
            _ => {}
        }
    }
    out.push('\n');
    out
}

/// The ATX headings of `md` outside code fences, in order: level, text, and GitHub's anchor (repeats of an anchor
/// get `-1`, `-2`, ...).
fn headings(md: &str) -> Vec<(usize, String, String)> {
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut in_fence = false;
    let mut out = Vec::new();
    for line in md.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        let Some(level) = heading_level(line).filter(|_| !in_fence) else {
            continue;
        };
        let text = line[level..].trim().to_string();
        let base = anchor(&text);
        let n = seen.entry(base.clone()).or_insert(0);
        let anchor = if *n == 0 { base } else { format!("{base}-{n}") };
        *n += 1;
        out.push((level, text, anchor));
    }
    out
}

fn command(out: &mut String, c: &Command) {
    let _ = writeln!(out, "#### `{}`\n", c.name);
    if !c.documented {
        out.push_str("*Not documented in spec/rpc.md; served by the reference.*\n\n");
    }
    paragraph(out, &c.doc, 5);
    since_note(out, &c.since, &c.note);
    if c.params.is_empty() {
        out.push_str("**Params:** none.\n\n");
    } else {
        out.push_str("**Params:**\n\n");
        fields_table(out, &c.params);
    }
    match &c.result {
        CommandResult::None => {
            out.push_str("**Result:** none (success responses have no `data` key).\n\n")
        }
        CommandResult::Data { ty, nullable } => {
            let null = if *nullable { ", or `null`" } else { "" };
            let _ = writeln!(out, "**Result:** `data` is {}{null}.\n", md_type(ty));
        }
    }
    if !c.errors.is_empty() {
        out.push_str("**Errors:**\n\n| text | when |\n| --- | --- |\n");
        for e in &c.errors {
            let _ = writeln!(
                out,
                "| {} | {} |",
                code_span(&e.text),
                e.when.as_deref().map(cell).unwrap_or_default()
            );
        }
        out.push('\n');
    }
    for e in &c.examples {
        let _ = writeln!(out, "**Example: {}**\n", e.name);
        paragraph(out, &e.note, 5);
        if let Some(request) = &e.request {
            out.push_str("Request:\n\n");
            json_block(out, &[request]);
        }
        if let Some(response) = &e.response {
            out.push_str("Response:\n\n");
            json_block(out, &[response]);
        }
        if !e.events.is_empty() {
            out.push_str("Events:\n\n");
            json_block(out, &e.events.iter().collect::<Vec<_>>());
        }
    }
}

fn message(out: &mut String, ir: &Ir, m: &Message) {
    let _ = writeln!(out, "#### `{}`\n", m.name);
    if !m.documented {
        out.push_str("*Not documented in spec/rpc.md.*\n\n");
    }
    paragraph(out, &m.doc, 5);
    since_note(out, &m.since, &m.note);
    match &m.body {
        MessageBody::Fields(fields) => {
            out.push_str("**Fields** (besides `type`):\n\n");
            fields_table(out, fields);
        }
        MessageBody::Type(body) => {
            let how = if ir.body_declares_type(body) {
                "the frame is"
            } else {
                "the frame's keys besides `type` are"
            };
            let _ = writeln!(
                out,
                "**Body:** {how} a [`{body}`](#{}).\n",
                type_anchor(body)
            );
        }
    }
    if !m.examples.is_empty() {
        out.push_str("**Examples:**\n\n");
        json_block(out, &m.examples.iter().collect::<Vec<_>>());
    }
}

fn type_def(out: &mut String, t: &TypeDef) {
    let _ = writeln!(out, "### `{}` (type)\n", t.name);
    paragraph(out, &t.doc, 4);
    since_note(out, &t.since, &t.note);
    match &t.kind {
        TypeKind::Struct(s) => {
            out.push_str("Object.");
            if s.additional_fields {
                out.push_str(" Open: other keys are allowed and kept.");
            }
            out.push_str("\n\n");
            fields_table(out, &s.fields);
        }
        TypeKind::Enum(e) => {
            out.push_str("String enum.");
            if e.open {
                out.push_str(" Open: other strings are possible and are kept.");
            }
            out.push_str("\n\n| value | description |\n| --- | --- |\n");
            for v in &e.values {
                let _ = writeln!(
                    out,
                    "| `{}` | {} |",
                    v.value,
                    v.doc.as_deref().map(cell).unwrap_or_default()
                );
            }
            out.push('\n');
        }
        TypeKind::Union(u) => {
            let _ = write!(out, "Tagged union on `{}`.", u.tag);
            if u.open {
                out.push_str(" Open: an unknown tag value is kept as it is.");
            }
            let _ = writeln!(out, "\n\n| `{}` | type |\n| --- | --- |", u.tag);
            for v in &u.variants {
                let _ = writeln!(
                    out,
                    "| `{}` | [`{}`](#{}) |",
                    v.tag_value,
                    v.type_name,
                    type_anchor(&v.type_name)
                );
            }
            out.push('\n');
        }
        TypeKind::OneOf(o) => {
            out.push_str("One of (tried in order):\n\n");
            for v in &o.variants {
                let _ = writeln!(out, "- {}", md_type(v));
            }
            out.push('\n');
        }
        TypeKind::Alias(target) => {
            let _ = writeln!(out, "Alias of {}.\n", md_type(target));
        }
    }
    if !t.examples.is_empty() {
        out.push_str("Examples:\n\n");
        json_block(out, &t.examples.iter().collect::<Vec<_>>());
    }
}
