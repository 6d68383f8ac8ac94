//! Python backend: `clients/python/src/dreb_rpc/_generated.py`, with a `TypedDict` per struct, command, response
//! and event, `Literal` aliases for enums, union aliases for tagged unions and `oneOf`, and the typed
//! `DrebClient` (one snake_case method per command, keyword-only params, typed return value).
//!
//! Mapping: optional → `NotRequired[...]`, nullable → `... | None`, const → `Literal[...]`; an optional command
//! param defaults to `UNSET` (key left out), so `None` always means JSON `null`. Aliases are written as strings
//! so definitions can refer to types defined further down. Structs with keys that are not Python identifiers
//! (`class`, `from`, ...) use the functional `TypedDict` syntax.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::ir::{
    Command, CommandResult, Field, Ir, Message, MessageBody, TypeDef, TypeKind, TypeRef,
    pascal_case, snake_case,
};
use crate::{GeneratedFile, banner_comment};

mod extension;
pub use extension::{
    EXAMPLES_PATH as EXTENSION_EXAMPLES_PATH, OUT_PATH as EXTENSION_OUT_PATH,
    generate as generate_extension,
};

/// The generated module, relative to the repository root.
pub const OUT_PATH: &str = "clients/python/src/dreb_rpc/_generated.py";

const PY_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Members of the hand-written `RpcConnection`; a command method with one of these names gets `_command`.
const RESERVED_METHODS: &[&str] = &[
    "start",
    "close",
    "request",
    "call",
    "notify",
    "on_event",
    "on_unmatched_response",
    "on_close",
    "flush_listeners",
    "run",
    "events",
    "is_idle",
    "wait_for_idle",
    "prompt_and_wait",
    "transport",
    "default_timeout",
    "command_timeouts",
    "timeout_for",
    "is_closed",
    "close_info",
    "spawn",
];

/// Runs the backend.
pub fn generate(ir: &Ir) -> Vec<GeneratedFile> {
    vec![
        GeneratedFile {
            path: PathBuf::from(OUT_PATH),
            contents: module(ir),
        },
        GeneratedFile {
            path: PathBuf::from(EXAMPLES_PATH),
            contents: examples_module(
                ir,
                &banner_comment("#"),
                "from dreb_rpc import _generated as T",
            ),
        },
    ]
}

/// Every example of the spec as a typed module-level constant: `mypy --strict` then proves that the generated
/// TypedDicts accept every documented frame and value (dict literals are checked key by key).
pub const EXAMPLES_PATH: &str = "clients/python/tests/_generated_examples.py";

/// A JSON value as a Python literal.
fn py_value(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => py_str(s),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", py_str(k), py_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The examples module: `banner` (a comment line), then `import` (which binds the generated module as `T`).
fn examples_module(ir: &Ir, banner: &str, import: &str) -> String {
    let names = Names::new(ir);
    let mut out = banner.to_string();
    out.push_str("\"\"\"Every example of the spec, typed: `mypy --strict` accepts this module only if the generated types accept them all.\"\"\"\n\n");
    let open_structs = ir
        .types
        .iter()
        .any(|t| matches!(&t.kind, TypeKind::Struct(s) if s.additional_fields));
    if open_structs {
        // TypedDict cannot express open objects before PEP 728 (Python 3.13+/typing_extensions); their extra keys
        // are checked by the TypeScript and JSON Schema example tests instead.
        out.push_str("# mypy: disable-error-code=\"typeddict-unknown-key\"\n");
    }
    let _ = writeln!(out, "from __future__ import annotations\n\n{import}\n");
    let mut n = 0usize;
    let mut push = |out: &mut String, ty: String, value: &serde_json::Value| {
        let _ = writeln!(out, "example_{n}: {ty} = {}", py_value(value));
        n += 1;
    };
    for t in &ir.types {
        for v in &t.examples {
            push(&mut out, format!("T.{}", t.name), v);
        }
    }
    let commands = ir.commands.iter().map(|c| (c, "Command"));
    for (c, frame) in commands.chain(ir.calls.iter().map(|c| (c, "Call"))) {
        for e in &c.examples {
            if let Some(request) = &e.request {
                push(
                    &mut out,
                    format!("T.{}", names.derived(&c.name, frame)),
                    request,
                );
            }
            if let Some(response) = &e.response {
                let success = response.get("success") == Some(&serde_json::Value::Bool(true));
                let ty = if success {
                    names.derived(&c.name, "Response")
                } else {
                    "ErrorResponse".to_string()
                };
                push(&mut out, format!("T.{ty}"), response);
            }
            for event in &e.events {
                push(&mut out, "T.KnownEvent".to_string(), event);
            }
        }
    }
    // A message whose body type leaves out `type` has no exact TypedDict (its alias is the body alone).
    let exact =
        |m: &&Message| !matches!(&m.body, MessageBody::Type(b) if !ir.body_declares_type(b));
    for m in ir.events.iter().filter(exact) {
        for v in &m.examples {
            push(
                &mut out,
                format!("T.{}", names.derived(&m.name, "Event")),
                v,
            );
        }
    }
    for m in ir.inputs.iter().filter(exact) {
        for v in &m.examples {
            push(
                &mut out,
                format!("T.{}", names.derived(&m.name, "Input")),
                v,
            );
        }
    }
    for e in &ir.envelope.examples {
        if let Some(response) = &e.response {
            push(&mut out, "T.RpcResponse".to_string(), response);
        }
    }
    let _ = writeln!(out, "\nCOUNT = {n}");
    out
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !PY_KEYWORDS.contains(&name)
}

/// A Python string literal (JSON escaping is valid Python for the characters JSON escapes).
fn py_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// Python spelling of a type expression.
fn py_type(ty: &TypeRef) -> String {
    match ty {
        TypeRef::String => "str".into(),
        TypeRef::Bool => "bool".into(),
        TypeRef::Int => "int".into(),
        TypeRef::Number => "float".into(),
        TypeRef::Json => "Any".into(),
        TypeRef::Object => "dict[str, Any]".into(),
        TypeRef::List(inner) => format!("list[{}]", py_type(inner)),
        TypeRef::Map(inner) => format!("dict[str, {}]", py_type(inner)),
        TypeRef::Named(name) => name.clone(),
    }
}

/// The annotation of a TypedDict field.
fn field_type(f: &Field) -> String {
    let mut t = match &f.constant {
        Some(serde_json::Value::String(s)) => format!("Literal[{}]", py_str(s)),
        Some(other) => format!("Literal[{}]", py_literal(other)),
        None => py_type(&f.ty),
    };
    if f.nullable {
        t.push_str(" | None");
    }
    if f.optional {
        format!("NotRequired[{t}]")
    } else {
        t
    }
}

fn py_literal(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Bool(true) => "True".into(),
        serde_json::Value::Bool(false) => "False".into(),
        serde_json::Value::Null => "None".into(),
        other => other.to_string(),
    }
}

fn result_type(result: &CommandResult) -> String {
    match result {
        CommandResult::None => "None".into(),
        CommandResult::Data { ty, nullable } => {
            let t = py_type(ty);
            if *nullable { format!("{t} | None") } else { t }
        }
    }
}

/// Escapes text for a `"""` docstring.
fn doc_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace("\"\"\"", "\\\"\\\"\\\"")
}

/// Writes a docstring (or nothing when there is no text).
fn docstring(out: &mut String, indent: &str, paragraphs: &[String]) {
    let text: Vec<&str> = paragraphs
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect();
    if text.is_empty() {
        return;
    }
    let text = doc_escape(&text.join("\n\n"));
    if !text.contains('\n') && text.len() + indent.len() < 110 {
        let text = if text.ends_with('"') {
            format!("{text} ")
        } else {
            text
        };
        let _ = writeln!(out, "{indent}\"\"\"{text}\"\"\"");
        return;
    }
    let _ = writeln!(out, "{indent}\"\"\"");
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            out.push('\n');
        } else {
            let _ = writeln!(out, "{indent}{line}");
        }
    }
    let _ = writeln!(out, "{indent}\"\"\"");
}

/// Writes `#` comment lines.
fn comment(out: &mut String, indent: &str, paragraphs: &[String]) {
    let text: Vec<&str> = paragraphs
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect();
    for (i, p) in text.iter().enumerate() {
        if i > 0 {
            let _ = writeln!(out, "{indent}#");
        }
        for line in p.lines() {
            let line = line.trim_end();
            if line.is_empty() {
                let _ = writeln!(out, "{indent}#");
            } else {
                let _ = writeln!(out, "{indent}# {line}");
            }
        }
    }
}

fn doc_paragraphs(
    doc: &Option<String>,
    since: &Option<String>,
    note: &Option<String>,
) -> Vec<String> {
    let mut p = Vec::new();
    if let Some(d) = doc {
        p.push(d.clone());
    }
    if let Some(s) = since {
        p.push(format!("Since: {s}"));
    }
    if let Some(n) = note {
        p.push(format!("Note: {n}"));
    }
    p
}

/// A TypedDict: class syntax when every key is an identifier, the functional syntax otherwise.
fn typed_dict(
    out: &mut String,
    name: &str,
    docs: &[String],
    fields: &[Field],
    extra: &[(&str, String)],
) {
    let all: Vec<(String, String, Vec<String>)> = extra
        .iter()
        .map(|(k, t)| (k.to_string(), t.clone(), Vec::new()))
        .chain(fields.iter().map(|f| {
            (
                f.name.clone(),
                field_type(f),
                doc_paragraphs(&f.doc, &f.since, &f.note),
            )
        }))
        .collect();
    if all.iter().all(|(k, _, _)| is_identifier(k)) {
        let _ = writeln!(out, "class {name}(TypedDict):");
        docstring(out, "    ", docs);
        if all.is_empty() && docs.iter().all(|d| d.trim().is_empty()) {
            out.push_str("    pass\n");
        }
        for (key, ty, field_docs) in &all {
            comment(out, "    ", field_docs);
            let _ = writeln!(out, "    {key}: {ty}");
        }
    } else {
        comment(out, "", docs);
        let _ = writeln!(out, "{name} = TypedDict(");
        let _ = writeln!(out, "    {},", py_str(name));
        out.push_str("    {\n");
        for (key, ty, field_docs) in &all {
            comment(out, "        ", field_docs);
            let _ = writeln!(out, "        {}: {},", py_str(key), py_str(ty));
        }
        out.push_str("    },\n)\n");
    }
}

fn alias(out: &mut String, name: &str, docs: &[String], target: &str) {
    comment(out, "", docs);
    let _ = writeln!(out, "{name}: TypeAlias = {}", py_str(target));
}

struct Names {
    shared: HashSet<String>,
}

impl Names {
    fn new(ir: &Ir) -> Self {
        Names {
            shared: ir.types.iter().map(|t| t.name.clone()).collect(),
        }
    }

    fn derived(&self, wire: &str, suffix: &str) -> String {
        let name = format!("{}{suffix}", pascal_case(wire));
        if self.shared.contains(&name) {
            format!("{name}Frame")
        } else {
            name
        }
    }
}

fn module(ir: &Ir) -> String {
    let names = Names::new(ir);
    let mut out = banner_comment("#");
    let mut header = vec![format!(
        "Types and typed client of the {} protocol, version {}.",
        ir.protocol.name, ir.protocol.version
    )];
    if let Some(doc) = &ir.protocol.doc {
        header.push(doc.clone());
    }
    docstring(&mut out, "", &header);
    out.push_str("\nfrom __future__ import annotations\n\n");
    out.push_str("from collections.abc import Mapping\n");
    out.push_str(
        "from typing import Any, Literal, NotRequired, TypeAlias, TypedDict, TypeGuard, Unpack, cast\n\n",
    );
    out.push_str(
        "from dreb_rpc._async import AsyncRpcConnection, AsyncSubprocessTransport, Starting\n",
    );
    out.push_str("from dreb_rpc._connection import DEFAULT_TIMEOUT, UNSET, RpcConnection, Unset\n");
    out.push_str("from dreb_rpc._run import RunResult, summarize_run\n");

    out.push_str("from dreb_rpc._transport import SubprocessOptions, SubprocessTransport\n\n");
    out.push_str(
        "#: A request id: the client sends strings; the agent echoes whatever it received.\n",
    );
    out.push_str("RequestId: TypeAlias = \"str | int\"\n");

    // `__all__`, so `from dreb_rpc._generated import *` re-exports exactly the protocol names.
    let mut all: Vec<String> = vec!["RequestId".into()];
    all.extend(write_shared_types(&mut out, ir));
    all.extend(write_requests(&mut out, &names, &RequestSet::commands(ir)));
    all.extend(write_events(
        &mut out,
        ir,
        &names,
        "Events (stdout frames that are not responses)",
        "agent_end",
    ));
    all.extend(write_inputs(&mut out, ir, &names));

    section(&mut out, "Client");
    write_client(&mut out, ir, &names, false);
    write_client(&mut out, ir, &names, true);
    all.extend(["DrebClient", "AsyncDrebClient"].map(String::from));
    write_all(&mut out, &all);
    out
}

/// The "Shared types" section; returns the names it defines.
fn write_shared_types(out: &mut String, ir: &Ir) -> Vec<String> {
    section(out, "Shared types");
    let sent_by_host = input_body_structs(ir);
    for t in &ir.types {
        out.push_str("\n\n");
        write_type(out, t, sent_by_host.contains(t.name.as_str()));
    }
    ir.types.iter().map(|t| t.name.clone()).collect()
}

/// The requests of one direction and how their section is written.
struct RequestSet<'a> {
    requests: &'a [Command],
    title: &'a str,
    /// Suffix of a request frame's TypedDict (`Command`, `Call`).
    frame: &'a str,
    /// `XParams` also for requests without params.
    every_params: bool,
    /// `ErrorResponse` is defined in this section, with this docstring.
    error_response: Option<&'a str>,
    /// The union of the request frames, and its doc.
    union: (&'a str, &'a str),
    /// The union of the response frames (with `ErrorResponse`), and its doc.
    responses: (&'a str, &'a str),
    /// The tuple of wire names, and its doc.
    wire_names: (&'a str, &'a str),
}

impl<'a> RequestSet<'a> {
    /// The RPC protocol's commands.
    fn commands(ir: &'a Ir) -> Self {
        RequestSet {
            requests: &ir.commands,
            title: "Commands and responses",
            frame: "Command",
            every_params: false,
            error_response: Some(
                "A failure response to any command (`success: false`); `error` is the exact error text.",
            ),
            union: ("RpcCommand", "Every command a host can send."),
            responses: ("RpcResponse", "Every response frame."),
            wire_names: (
                "COMMAND_TYPES",
                "The wire names of every command, in spec order.",
            ),
        }
    }
}

/// One section of requests: per request its params, request frame and success response TypedDicts, then the
/// unions and the wire names. Returns the names it defines.
fn write_requests(out: &mut String, names: &Names, set: &RequestSet) -> Vec<String> {
    let mut defined = Vec::new();
    section(out, set.title);
    for c in set.requests {
        let pascal_params = names.derived(&c.name, "Params");
        if set.every_params || !c.params.is_empty() {
            out.push_str("\n\n");
            typed_dict(
                out,
                &pascal_params,
                &[format!("Params of `{}`.", c.name)],
                &c.params,
                &[],
            );
            defined.push(pascal_params);
        }
        out.push_str("\n\n");
        let frame = names.derived(&c.name, set.frame);
        typed_dict(
            out,
            &frame,
            &command_docs(c),
            &c.params,
            &[
                ("id", "NotRequired[RequestId]".into()),
                ("type", format!("Literal[{}]", py_str(&c.name))),
            ],
        );
        defined.push(frame);
        out.push_str("\n\n");
        let mut fields: Vec<(&str, String)> = vec![
            ("id", "NotRequired[RequestId]".into()),
            ("type", "Literal[\"response\"]".into()),
            ("command", format!("Literal[{}]", py_str(&c.name))),
            ("success", "Literal[True]".into()),
        ];
        if let CommandResult::Data { .. } = c.result {
            fields.push(("data", result_type(&c.result)));
        }
        let response = names.derived(&c.name, "Response");
        typed_dict(
            out,
            &response,
            &[format!("Success response to `{}`.", c.name)],
            &[],
            &fields,
        );
        defined.push(response);
    }
    if let Some(doc) = set.error_response {
        out.push_str("\n\n");
        typed_dict(
            out,
            "ErrorResponse",
            &[doc.into()],
            &[],
            &[
                ("id", "NotRequired[RequestId]".into()),
                ("type", "Literal[\"response\"]".into()),
                ("command", "NotRequired[str]".into()),
                ("success", "Literal[False]".into()),
                ("error", "str".into()),
            ],
        );
        defined.push("ErrorResponse".into());
    }
    out.push('\n');
    let frames: Vec<String> = set
        .requests
        .iter()
        .map(|c| names.derived(&c.name, set.frame))
        .collect();
    let mut responses: Vec<String> = set
        .requests
        .iter()
        .map(|c| names.derived(&c.name, "Response"))
        .collect();
    responses.push("ErrorResponse".into());
    union_alias(out, set.union.0, set.union.1, &frames);
    union_alias(out, set.responses.0, set.responses.1, &responses);
    let (wire_names, doc) = set.wire_names;
    let _ = writeln!(out, "\n#: {doc}\n{wire_names}: tuple[str, ...] = (");
    for c in set.requests {
        let _ = writeln!(out, "    {},", py_str(&c.name));
    }
    out.push_str(")\n");
    defined.extend([set.union.0, set.responses.0, wire_names].map(String::from));
    defined
}

/// The events section (`title`; `example` is the event the `UnknownEvent` docstring narrows to). Returns the
/// names it defines.
fn write_events(
    out: &mut String,
    ir: &Ir,
    names: &Names,
    title: &str,
    example: &str,
) -> Vec<String> {
    section(out, title);
    let mut defined = write_messages(out, ir, &ir.events, names, "Event");
    out.push_str("\n\nclass UnknownEvent(TypedDict):\n");
    let _ = write!(
        out,
        "    \"\"\"An event of a type this version does not know (the event union is open; such events are delivered).\n\n    Its ``type`` is typed as the placeholder ``\"<unknown event type>\"`` so that ``if event[\"type\"] == \"{example}\"``\n    narrows to the known events; at run time it is the event's own type string: compare it as\n    ``cast(str, event[\"type\"])``. Its other keys are not typed (read them through ``cast(dict[str, Any], event)``).\n    \"\"\"\n\n    type: Literal[\"<unknown event type>\"]\n\n\n",
    );
    union_alias(
        out,
        "KnownEvent",
        "Every event this version of the protocol knows.",
        &defined,
    );
    out.push_str("#: Any event frame.\nRpcEvent: TypeAlias = \"KnownEvent | UnknownEvent\"\n");
    out.push_str("\n#: The wire names of every known event, in spec order.\nEVENT_TYPES: tuple[str, ...] = (\n");
    for m in &ir.events {
        let _ = writeln!(out, "    {},", py_str(&m.name));
    }
    out.push_str(")\n\n\ndef is_known_event(event: RpcEvent) -> TypeGuard[KnownEvent]:\n");
    out.push_str(
        "    \"\"\"True when ``event`` is of a type this version of the protocol knows.\"\"\"\n",
    );
    out.push_str("    return event.get(\"type\") in EVENT_TYPES\n");
    defined.extend(
        [
            "UnknownEvent",
            "KnownEvent",
            "RpcEvent",
            "EVENT_TYPES",
            "is_known_event",
        ]
        .map(String::from),
    );
    defined
}

/// The inputs section; returns the names it defines.
fn write_inputs(out: &mut String, ir: &Ir, names: &Names) -> Vec<String> {
    section(
        out,
        "Inputs (stdin messages that are not commands and get no response)",
    );
    let mut defined = write_messages(out, ir, &ir.inputs, names, "Input");
    out.push('\n');
    union_alias(
        out,
        "RpcInput",
        "Every stdin message that is not a command.",
        &defined,
    );
    defined.push("RpcInput".into());
    defined
}

/// `__all__ = [...]`.
fn write_all(out: &mut String, all: &[String]) {
    out.push_str("\n\n__all__ = [\n");
    for name in all {
        let _ = writeln!(out, "    {},", py_str(name));
    }
    out.push_str("]\n");
}

fn section(out: &mut String, title: &str) {
    out.push_str("\n\n# ---------------------------------------------------------------------------------------------\n");
    let _ = writeln!(out, "# {title}");
    out.push_str("# ---------------------------------------------------------------------------------------------\n");
}

fn union_alias(out: &mut String, name: &str, doc: &str, members: &[String]) {
    let target = if members.is_empty() {
        "Any".to_string()
    } else {
        members.join(" | ")
    };
    let _ = writeln!(out, "\n#: {doc}\n{name}: TypeAlias = {}", py_str(&target));
}

/// The structs an input message's body is made of (the body, or its variants): the host writes them, and the
/// client's `send_*` method sets their `type`, so there it may be left out.
fn input_body_structs(ir: &Ir) -> HashSet<&str> {
    let mut names = HashSet::new();
    for m in &ir.inputs {
        let MessageBody::Type(body) = &m.body else {
            continue;
        };
        match ir.type_def(body).map(|t| &t.kind) {
            Some(TypeKind::Struct(_)) => {
                names.insert(body.as_str());
            }
            Some(TypeKind::Union(u)) => {
                names.extend(u.variants.iter().map(|v| v.type_name.as_str()));
            }
            Some(TypeKind::OneOf(o)) => names.extend(o.variants.iter().filter_map(|v| match v {
                TypeRef::Named(n) => Some(n.as_str()),
                _ => None,
            })),
            _ => {}
        }
    }
    names
}

/// `type_key_optional`: the struct is sent by the host through a `send_*` method that sets `type`.
fn write_type(out: &mut String, t: &TypeDef, type_key_optional: bool) {
    let mut docs = doc_paragraphs(&t.doc, &t.since, &t.note);
    match &t.kind {
        TypeKind::Struct(s) => {
            if s.additional_fields {
                docs.push("Open object: other keys are allowed and kept.".into());
            }
            if type_key_optional && s.fields.iter().any(|f| f.name == "type") {
                let fields: Vec<Field> = s
                    .fields
                    .iter()
                    .map(|f| Field {
                        optional: f.optional || f.name == "type",
                        ..f.clone()
                    })
                    .collect();
                docs.push("`type` may be left out: the client's `send_*` method sets it.".into());
                typed_dict(out, &t.name, &docs, &fields, &[]);
            } else {
                typed_dict(out, &t.name, &docs, &s.fields, &[]);
            }
        }
        TypeKind::Enum(e) => {
            let documented: Vec<String> = e
                .values
                .iter()
                .filter_map(|v| {
                    v.doc
                        .as_ref()
                        .map(|d| format!("- `{}`: {}", v.value, d.trim()))
                })
                .collect();
            if !documented.is_empty() {
                docs.push(documented.join("\n"));
            }
            let literal = if e.values.is_empty() {
                "str".to_string()
            } else {
                format!(
                    "Literal[{}]",
                    e.values
                        .iter()
                        .map(|v| py_str(&v.value))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            let target = if e.open {
                docs.push("Open: other strings are possible and are kept.".into());
                format!("{literal} | str")
            } else {
                literal
            };
            alias(out, &t.name, &docs, &target);
        }
        TypeKind::Union(u) => {
            docs.push(format!("Tagged union on `{}`.", u.tag));
            let mut members: Vec<String> = u.variants.iter().map(|v| v.type_name.clone()).collect();
            if u.open {
                // A placeholder member rather than `dict[str, Any]`, which would block narrowing on the tag.
                let unknown = format!("Unknown{}", t.name);
                docs.push(format!(
                    "Open: an unknown tag value is kept as it is (`{unknown}`: its `{}` is typed as the placeholder \
                     `\"<unknown variant>\"` so that comparing the tag narrows; at run time it is the value's own tag).",
                    u.tag
                ));
                let _ = writeln!(
                    out,
                    "{unknown} = TypedDict({}, {{{}: Literal[\"<unknown variant>\"]}})\n",
                    py_str(&unknown),
                    py_str(&u.tag)
                );
                members.push(unknown);
            }
            let target = if members.is_empty() {
                "Any".to_string()
            } else {
                members.join(" | ")
            };
            alias(out, &t.name, &docs, &target);
        }
        TypeKind::OneOf(o) => {
            let members: Vec<String> = o.variants.iter().map(py_type).collect();
            let target = if members.is_empty() {
                "Any".to_string()
            } else {
                members.join(" | ")
            };
            alias(out, &t.name, &docs, &target);
        }
        TypeKind::Alias(target) => alias(out, &t.name, &docs, &py_type(target)),
    }
}

fn command_docs(c: &Command) -> Vec<String> {
    let mut docs = doc_paragraphs(&c.doc, &c.since, &c.note);
    if !c.documented {
        docs.push("Not documented in spec/rpc.md (served by the reference).".into());
    }
    if !c.errors.is_empty() {
        let mut errors = String::from("Error texts (`{...}` marks variable parts):");
        for e in &c.errors {
            let _ = write!(errors, "\n- `{}`", e.text.replace('\n', "\\n"));
            if let Some(when) = &e.when {
                let _ = write!(errors, ": {}", when.trim().replace('\n', " "));
            }
        }
        docs.push(errors);
    }
    docs
}

/// Writes one TypedDict or alias per message; returns their names.
fn write_messages(
    out: &mut String,
    ir: &Ir,
    list: &[Message],
    names: &Names,
    suffix: &str,
) -> Vec<String> {
    let mut out_names = Vec::new();
    for m in list {
        let name = names.derived(&m.name, suffix);
        let mut docs = doc_paragraphs(&m.doc, &m.since, &m.note);
        if !m.documented {
            docs.push("Not documented in spec/rpc.md.".into());
        }
        out.push_str("\n\n");
        match &m.body {
            MessageBody::Fields(fields) => {
                typed_dict(
                    out,
                    &name,
                    &docs,
                    fields,
                    &[("type", format!("Literal[{}]", py_str(&m.name)))],
                );
            }
            MessageBody::Type(body) => {
                if !ir.body_declares_type(body) {
                    docs.push(format!(
                        "The frame is `{body}` plus `\"type\": {}`.",
                        py_str(&m.name)
                    ));
                }
                alias(out, &name, &docs, body);
            }
        }
        out_names.push(name);
    }
    out_names
}

/// A keyword-argument name for a wire key, unique among `taken`.
fn arg_name(wire: &str, taken: &mut HashSet<String>) -> String {
    let mut name: String = snake_case(wire)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    while !is_identifier(&name) || taken.contains(&name) {
        name.push('_');
    }
    taken.insert(name.clone());
    name
}

/// A command method's Python argument names (clear of `self` and `timeout`), with their fields, in spec order.
fn method_args(c: &Command) -> Vec<(String, &Field)> {
    let mut taken: HashSet<String> = ["self", "timeout"].iter().map(|s| s.to_string()).collect();
    c.params
        .iter()
        .map(|f| (arg_name(&f.name, &mut taken), f))
        .collect()
}

/// The keyword-only parameters of a command method, in spec order (optional ones default to `UNSET`).
fn keyword_params(sig: &mut String, args: &[(String, &Field)]) {
    for (arg, f) in args {
        let mut t = py_type(&f.ty);
        if let Some(serde_json::Value::String(s)) = &f.constant {
            t = format!("Literal[{}]", py_str(s));
        }
        if f.nullable {
            t.push_str(" | None");
        }
        if f.optional {
            let _ = writeln!(sig, "        {arg}: {t} | Unset = UNSET,");
        } else {
            let _ = writeln!(sig, "        {arg}: {t},");
        }
    }
}

/// The `params` dict a command method sends: required keys always, optional ones unless `UNSET`.
fn params_dict(out: &mut String, args: &[(String, &Field)]) {
    out.push_str("        params: dict[str, Any] = {}\n");
    for (arg, f) in args {
        if f.optional {
            let _ = writeln!(
                out,
                "        if not isinstance({arg}, Unset):\n            params[{}] = {arg}",
                py_str(&f.name)
            );
        } else {
            let _ = writeln!(out, "        params[{}] = {arg}", py_str(&f.name));
        }
    }
}

fn write_client(out: &mut String, ir: &Ir, names: &Names, is_async: bool) {
    // The async flavour differs only in its base class, transport, and `async`/`await`.
    let (class, base, transport, def, aw, blocks) = if is_async {
        (
            "AsyncDrebClient",
            "AsyncRpcConnection",
            "AsyncSubprocessTransport",
            "async def",
            "await ",
            "awaits",
        )
    } else {
        (
            "DrebClient",
            "RpcConnection",
            "SubprocessTransport",
            "def",
            "",
            "blocks until",
        )
    };
    let _ = writeln!(out, "\n\nclass {class}({base}[\"RpcEvent\"]):");
    docstring(
        out,
        "    ",
        &[
            format!(
                "Typed {}client of the {} protocol: one method per command.",
                if is_async { "asyncio " } else { "" },
                ir.protocol.name
            ),
            format!(
                "Each method sends the command, {blocks} its response (correlated by id) and returns the typed \
                 ``data``; a ``success: false`` response raises ``RpcError`` (its text is the exact error text). \
                 Optional params default to ``UNSET`` (the key is left out); ``None`` is sent as ``null``."
            ),
        ],
    );
    out.push_str("\n    @classmethod\n");
    // The async spawn returns a `Starting`: awaited it is the started client, and `async with` takes it directly.
    let spawn_returns = if is_async {
        format!("Starting[{class}]")
    } else {
        class.to_string()
    };
    out.push_str("    def spawn(\n        cls,\n        command: str | None = None,\n        *,\n");
    let _ = writeln!(
        out,
        "        default_timeout: float | None = DEFAULT_TIMEOUT,\n        command_timeouts: Mapping[str, float | None] | None = None,\n        **transport_options: Unpack[SubprocessOptions],\n    ) -> {spawn_returns}:"
    );
    let started = if is_async {
        " Await the result for the started client, or use it in ``async with`` directly."
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "        \"\"\"Spawns the agent (``dreb --mode rpc``; options as for ``{transport}``, timeouts as for the\n        connection) and starts a client. Without ``command`` the binary is ``DREB_BIN``, else ``dreb`` on\n        ``PATH`` (``SpawnError`` if neither).{started}\"\"\""
    );
    let _ = writeln!(
        out,
        "        client = cls(\n            {transport}(command, **transport_options),\n            default_timeout=default_timeout,\n            command_timeouts=command_timeouts,\n        )"
    );
    if is_async {
        out.push_str("        return Starting(client)\n");
    } else {
        let _ = writeln!(out, "        {aw}client.start()\n        return client");
    }

    // `run`: the run command (`prompt`) to completion, with its params typed like the command method's.
    if let Some(c) = ir
        .commands
        .iter()
        .find(|c| c.name == "prompt" && !c.params.is_empty())
    {
        let args = method_args(c);
        let mut sig = format!("\n    {def} run(\n        self,\n        *,\n");
        keyword_params(&mut sig, &args);
        sig.push_str("        timeout: float | None = None,\n    ) -> RunResult:\n");
        out.push_str(&sig);
        docstring(
            out,
            "        ",
            &["Runs one prompt to completion: its final text, stop reason, error, usage, messages and events \
               (``summarize_run`` of ``prompt_and_wait``; ``timeout`` as there). Raises ``RpcError`` when the \
               prompt is refused."
                .into()],
        );
        params_dict(out, &args);
        let _ = writeln!(
            out,
            "        return summarize_run({aw}self.prompt_and_wait(params, timeout))"
        );
    }

    for c in &ir.commands {
        let mut method = c.name.clone();
        if !is_identifier(&method) {
            method = arg_name(&c.name, &mut HashSet::new());
        }
        if RESERVED_METHODS.contains(&method.as_str()) {
            method.push_str("_command");
        }
        let args = method_args(c);
        let ret = result_type(&c.result);
        out.push('\n');
        // Keyword-only params (spec order), so required and optional ones can mix freely.
        let mut sig = format!("    {def} {method}(\n        self,\n        *,\n");
        keyword_params(&mut sig, &args);
        let _ = writeln!(
            sig,
            "        timeout: float | None = DEFAULT_TIMEOUT,\n    ) -> {ret}:"
        );
        out.push_str(&sig);
        let mut docs = command_docs(c);
        docs.push(format!("Sends `{}`.", c.name));
        docstring(out, "        ", &docs);
        params_dict(out, &args);
        let call = format!("{aw}self.call({}, params, timeout)", py_str(&c.name));
        match c.result {
            CommandResult::None => {
                let _ = writeln!(out, "        {call}");
            }
            CommandResult::Data { .. } => {
                let _ = writeln!(out, "        return cast({}, {call})", py_str(&ret));
            }
        }
    }

    for m in &ir.inputs {
        let method = format!(
            "send_{}",
            arg_name(&m.name, &mut HashSet::new()).trim_end_matches('_')
        );
        let body = match &m.body {
            MessageBody::Type(body) => body.clone(),
            MessageBody::Fields(_) => names.derived(&m.name, "Input"),
        };
        out.push('\n');
        let _ = writeln!(out, "    {def} {method}(self, message: {body}) -> None:");
        let mut docs = doc_paragraphs(&m.doc, &m.since, &m.note);
        docs.push(format!(
            "Writes the `{}` message (it gets no response); `type` is set here.",
            m.name
        ));
        docstring(out, "        ", &docs);
        let _ = writeln!(
            out,
            "        {aw}self.notify({{\"type\": {}, **message}})",
            py_str(&m.name)
        );
    }
}
