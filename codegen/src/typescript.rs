//! TypeScript backend: `clients/typescript/src/generated/types.ts` (every protocol type) and
//! `clients/typescript/src/generated/client.ts` (the typed `DrebClient`, one method per command).
//!
//! Mapping: structs → interfaces (optional → `?:`, nullable → `| null`, const → literal type), enums → string
//! literal unions (open → `| (string & {})`), tagged unions → discriminated unions of the variant interfaces
//! (open → plus `UnknownVariant<tag>`), `oneOf` → plain unions, aliases → type aliases. The event union is open:
//! `RpcEvent = KnownEvent | UnknownEvent`, with `isKnownEvent` / `isEvent` guards for narrowing.
//! The generated client only calls into the hand-written runtime (`../connection.js`, `../process-transport.js`).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use crate::ir::{
    Command, CommandResult, Field, Ir, Message, MessageBody, TypeDef, TypeKind, TypeRef,
    pascal_case,
};
use crate::{GeneratedFile, banner_comment};

mod extension;
pub use extension::{OUT_PATH as EXTENSION_OUT_PATH, generate as generate_extension};

/// Where the generated files go, relative to the repository root.
pub const OUT_DIR: &str = "clients/typescript/src/generated";

/// Members of the hand-written `RpcConnection` base class; a command method with one of these names gets a
/// `Command` suffix instead of shadowing it.
const RESERVED_METHODS: &[&str] = &[
    "constructor",
    "start",
    "close",
    "request",
    "call",
    "notify",
    "onEvent",
    "onUnmatchedResponse",
    "onClose",
    "events",
    "isIdle",
    "waitForIdle",
    "promptAndWait",
    "run",
    "transport",
    "isClosed",
    "spawn",
    "pending",
    "eventListeners",
    "unmatchedListeners",
    "closeListeners",
    "idleWaiters",
    "defaultTimeoutMs",
    "onListenerError",
    "nextId",
    "state",
    "closeInfo",
    "frameSeq",
    "lastAgentStartSeq",
    "lastAgentEndSeq",
    "runRequestedAt",
    "runRequestId",
    "handleRecord",
    "handleResponse",
    "settle",
    "checkIdleWaiters",
    "handleClose",
    "closedError",
    "emit",
    "safely",
    "invoke",
];

/// Runs the backend.
pub fn generate(ir: &Ir) -> Vec<GeneratedFile> {
    let names = Names::new(ir);
    vec![
        GeneratedFile {
            path: PathBuf::from(OUT_DIR).join("types.ts"),
            contents: types_file(ir, &names),
        },
        GeneratedFile {
            path: PathBuf::from(OUT_DIR).join("client.ts"),
            contents: client_file(ir, &names),
        },
        GeneratedFile {
            path: PathBuf::from(EXAMPLES_PATH),
            contents: examples_file(ir, &names),
        },
    ]
}

/// Every example of the spec as a typed constant: `tsc` then proves that the generated types accept every
/// documented frame and value (object literals get excess-property checks).
pub const EXAMPLES_PATH: &str = "clients/typescript/test/generated/examples.ts";

fn examples_file(ir: &Ir, names: &Names) -> String {
    let mut out = banner_comment("//");
    out.push_str("// Every example of the spec, typed: this file compiles only if the generated types accept them all.

");
    out.push_str("import type * as T from \"../../src/generated/types.js\";\n\n");
    let mut n = 0usize;
    let mut push = |out: &mut String, ty: String, value: &serde_json::Value| {
        let _ = writeln!(out, "export const example{n}: {ty} = {value};");
        n += 1;
    };
    for t in &ir.types {
        for v in &t.examples {
            push(&mut out, format!("T.{}", t.name), v);
        }
    }
    for c in &ir.commands {
        for e in &c.examples {
            if let Some(request) = &e.request {
                push(&mut out, format!("T.{}", names.command(c)), request);
            }
            if let Some(response) = &e.response {
                let success = response.get("success") == Some(&serde_json::Value::Bool(true));
                let ty = if success {
                    names.response(c)
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
    for m in &ir.events {
        for v in &m.examples {
            push(&mut out, format!("T.{}", names.event(m)), v);
        }
    }
    for m in &ir.inputs {
        for v in &m.examples {
            push(&mut out, format!("T.{}", names.input(m)), v);
        }
    }
    for e in &ir.envelope.examples {
        if let Some(response) = &e.response {
            push(&mut out, "T.RpcResponse".to_string(), response);
        }
    }
    out
}

/// Names derived from wire names (`get_state` → `GetStateCommand`), kept clear of the shared type names.
struct Names {
    shared: HashSet<String>,
}

impl Names {
    fn new(ir: &Ir) -> Self {
        Names {
            shared: ir.types.iter().map(|t| t.name.clone()).collect(),
        }
    }

    /// `{Pascal}{suffix}`, or `{Pascal}{suffix}Frame` when a shared type already has that name.
    fn derived(&self, wire: &str, suffix: &str) -> String {
        let name = format!("{}{suffix}", pascal_case(wire));
        if self.shared.contains(&name) {
            format!("{name}Frame")
        } else {
            name
        }
    }

    fn params(&self, c: &Command) -> String {
        self.derived(&c.name, "Params")
    }
    fn command(&self, c: &Command) -> String {
        self.derived(&c.name, "Command")
    }
    fn response(&self, c: &Command) -> String {
        self.derived(&c.name, "Response")
    }
    fn event(&self, m: &Message) -> String {
        self.derived(&m.name, "Event")
    }
    fn input(&self, m: &Message) -> String {
        self.derived(&m.name, "Input")
    }
}

/// The TypeScript spelling of a type expression; named types get `prefix` (e.g. `T.` in the client file).
fn ts_type(ty: &TypeRef, prefix: &str) -> String {
    match ty {
        TypeRef::String => "string".into(),
        TypeRef::Bool => "boolean".into(),
        TypeRef::Int | TypeRef::Number => "number".into(),
        TypeRef::Json => "unknown".into(),
        TypeRef::Object => "Record<string, unknown>".into(),
        TypeRef::List(inner) => format!("{}[]", ts_type(inner, prefix)),
        TypeRef::Map(inner) => format!("Record<string, {}>", ts_type(inner, prefix)),
        TypeRef::Named(name) => format!("{prefix}{name}"),
    }
}

/// The type of a command's success `data`, or `void` for `result: none`.
fn result_type(result: &CommandResult, prefix: &str) -> String {
    match result {
        CommandResult::None => "void".into(),
        CommandResult::Data { ty, nullable } => {
            let t = ts_type(ty, prefix);
            if *nullable { format!("{t} | null") } else { t }
        }
    }
}

/// A property key: bare when it is an identifier, quoted otherwise.
fn prop_key(name: &str) -> String {
    let mut chars = name.chars();
    let ident = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if ident {
        name.to_string()
    } else {
        json_string(name)
    }
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// `get_state` → `getState`.
fn camel_case(wire: &str) -> String {
    let pascal = pascal_case(wire);
    let mut chars = pascal.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Writes a JSDoc block from paragraphs (empty ones are skipped). `*/` in the text is defused.
fn jsdoc(out: &mut String, indent: &str, paragraphs: &[String]) {
    let text: Vec<&str> = paragraphs
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect();
    if text.is_empty() {
        return;
    }
    let text = text.join("\n\n").replace("*/", "*\\/");
    if !text.contains('\n') && text.len() + indent.len() < 110 {
        let _ = writeln!(out, "{indent}/** {text} */");
        return;
    }
    let _ = writeln!(out, "{indent}/**");
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            let _ = writeln!(out, "{indent} *");
        } else {
            let _ = writeln!(out, "{indent} * {line}");
        }
    }
    let _ = writeln!(out, "{indent} */");
}

/// `doc`, then `Since:` / `Note:` paragraphs.
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

/// One interface member per field, in wire order.
fn write_fields(out: &mut String, fields: &[Field], prefix: &str) {
    for f in fields {
        jsdoc(out, "  ", &doc_paragraphs(&f.doc, &f.since, &f.note));
        let ty = match &f.constant {
            Some(value) => value.to_string(),
            None => ts_type(&f.ty, prefix),
        };
        let null = if f.nullable { " | null" } else { "" };
        let opt = if f.optional { "?" } else { "" };
        let _ = writeln!(out, "  {}{opt}: {ty}{null};", prop_key(&f.name));
    }
}

fn types_file(ir: &Ir, names: &Names) -> String {
    let mut out = banner_comment("//");
    write_preamble(
        &mut out,
        ir,
        "A request id: the client sends strings; the agent echoes whatever it received.",
    );
    write_shared_types(&mut out, ir);
    write_requests(&mut out, names, &RequestSet::commands(ir));
    write_messages(
        &mut out,
        ir,
        names,
        Side::Event {
            title: "Events (stdout frames that are not responses)",
            example: "agent_end",
        },
    );
    write_messages(&mut out, ir, names, Side::Input);
    out
}

/// After the banner: the module doc, `RequestId` (documented by `request_id`) and the helper types.
fn write_preamble(out: &mut String, ir: &Ir, request_id: &str) {
    out.push('\n');
    let mut header = vec![format!(
        "Types of the {} protocol, version {}.",
        ir.protocol.name, ir.protocol.version
    )];
    if let Some(doc) = &ir.protocol.doc {
        header.push(doc.clone());
    }
    jsdoc(out, "", &header);
    out.push_str("\n/* eslint-disable */\n\n");

    let _ = writeln!(out, "/** {request_id} */");
    out.push_str("export type RequestId = string | number;\n\n");
    out.push_str(
        "/**\n * A member of an open tagged union that this version of the protocol does not know. Its tag is typed as the\n * placeholder `\"<unknown variant>\"` so that comparing the tag narrows to the known members; at run time it is the\n * member's own tag: compare it as `value.tag as string`.\n */\n",
    );
    out.push_str("export type UnknownVariant<Tag extends string> = { [K in Tag]: \"<unknown variant>\" } & { [key: string]: unknown };\n\n");
    out.push_str("/** `Omit` applied to each member of a union. */\n");
    out.push_str("export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;\n\n");
}

fn write_section(out: &mut String, title: &str) {
    out.push_str("// ---------------------------------------------------------------------------------------------\n");
    let _ = writeln!(out, "// {title}");
    out.push_str("// ---------------------------------------------------------------------------------------------\n\n");
}

fn write_shared_types(out: &mut String, ir: &Ir) {
    write_section(out, "Shared types");
    for t in &ir.types {
        write_type(out, ir, t);
        out.push('\n');
    }
}

fn write_type(out: &mut String, ir: &Ir, t: &TypeDef) {
    let mut docs = doc_paragraphs(&t.doc, &t.since, &t.note);
    match &t.kind {
        TypeKind::Struct(s) => {
            jsdoc(out, "", &docs);
            let _ = writeln!(out, "export interface {} {{", t.name);
            write_fields(out, &s.fields, "");
            if s.additional_fields {
                out.push_str("  /** Open object: other keys are allowed and kept. */\n");
                out.push_str("  [key: string]: unknown;\n");
            }
            out.push_str("}\n");
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
            if e.open {
                docs.push("Open: other strings are possible and are kept.".into());
            }
            jsdoc(out, "", &docs);
            let mut members: Vec<String> = e.values.iter().map(|v| json_string(&v.value)).collect();
            if e.open {
                // `string & {}` keeps editor completion for the known values while accepting any string.
                members.push("(string & {})".into());
            }
            if members.is_empty() {
                members.push("never".into());
            }
            let _ = writeln!(out, "export type {} ={};", t.name, union_body(&members));
        }
        TypeKind::Union(u) => {
            docs.push(format!("Tagged union on `{}`.", u.tag));
            if u.open {
                docs.push("Open: an unknown tag value is kept as it is.".into());
            }
            jsdoc(out, "", &docs);
            let mut members: Vec<String> = u.variants.iter().map(|v| v.type_name.clone()).collect();
            if u.open {
                members.push(format!("UnknownVariant<{}>", json_string(&u.tag)));
            }
            if members.is_empty() {
                members.push("never".into());
            }
            let _ = writeln!(out, "export type {} ={};", t.name, union_body(&members));
        }
        TypeKind::OneOf(o) => {
            jsdoc(out, "", &docs);
            let members: Vec<String> = o.variants.iter().map(|v| ts_type(v, "")).collect();
            let members = if members.is_empty() {
                vec!["never".to_string()]
            } else {
                members
            };
            let _ = writeln!(out, "export type {} ={};", t.name, union_body(&members));
        }
        TypeKind::Alias(target) => {
            jsdoc(out, "", &docs);
            let _ = writeln!(out, "export type {} = {};", t.name, ts_type(target, ""));
        }
    }
    let _ = ir;
}

/// The right-hand side of a union alias (after `=`): on one line when short, one member per line otherwise.
fn union_body(members: &[String]) -> String {
    let one_line = members.join(" | ");
    if one_line.len() <= 90 {
        format!(" {one_line}")
    } else {
        members.iter().map(|m| format!("\n  | {m}")).collect()
    }
}

/// The doc of a command: its doc, since/note, and every error text it can return.
fn command_docs(c: &Command) -> Vec<String> {
    let mut docs = doc_paragraphs(&c.doc, &c.since, &c.note);
    if !c.documented {
        docs.push("Not documented in spec/rpc.md (served by the reference).".into());
    }
    if !c.errors.is_empty() {
        let mut errors = String::from("Error texts (`{…}` marks variable parts):");
        for e in &c.errors {
            let text = e.text.replace('\n', "\\n");
            let _ = write!(errors, "\n- `{text}`");
            if let Some(when) = &e.when {
                let _ = write!(errors, ": {}", when.trim().replace('\n', " "));
            }
        }
        docs.push(errors);
    }
    docs
}

/// The requests of one direction and how their section is written.
struct RequestSet<'a> {
    requests: &'a [Command],
    title: &'a str,
    /// Suffix of a request frame's interface (`Command`, `Call`).
    frame: &'a str,
    /// `ErrorResponse` is defined in this section, with this doc.
    error_response: Option<&'a str>,
    /// The union of the request frames, and its doc.
    union: (&'a str, &'a str),
    /// The union of the response frames (with `ErrorResponse`), and its doc.
    responses: (&'a str, &'a str),
    /// The array of wire names, and its doc.
    wire_names: (&'a str, &'a str),
    /// The type of one wire name.
    wire_type: &'a str,
    /// The map from wire name to params and result, and its doc.
    map: (&'a str, &'a str),
}

impl<'a> RequestSet<'a> {
    /// The RPC protocol's commands.
    fn commands(ir: &'a Ir) -> Self {
        RequestSet {
            requests: &ir.commands,
            title: "Commands and responses",
            frame: "Command",
            error_response: Some(
                "A failure response to any command (`success: false`); `error` is the exact error text.",
            ),
            union: ("RpcCommand", "Every command a host can send."),
            responses: ("RpcResponse", "Every response frame."),
            wire_names: (
                "COMMAND_TYPES",
                "The wire names of every command, in spec order.",
            ),
            wire_type: "CommandType",
            map: (
                "CommandMap",
                "Per command: its params object and the type of its success `data` (`void`: no `data`).",
            ),
        }
    }
}

/// One section of requests: per request its params, request frame and success response interfaces, then the
/// unions, the wire names and the map of params and results.
fn write_requests(out: &mut String, names: &Names, set: &RequestSet) {
    write_section(out, set.title);
    for c in set.requests {
        if !c.params.is_empty() {
            jsdoc(
                out,
                "",
                &[format!(
                    "Params of `{}` (the request's keys besides `id` and `type`).",
                    c.name
                )],
            );
            let _ = writeln!(out, "export interface {} {{", names.params(c));
            write_fields(out, &c.params, "");
            out.push_str("}\n\n");
        }
        jsdoc(out, "", &command_docs(c));
        let _ = writeln!(
            out,
            "export interface {} {{",
            names.derived(&c.name, set.frame)
        );
        out.push_str("  id?: RequestId;\n");
        let _ = writeln!(out, "  type: {};", json_string(&c.name));
        write_fields(out, &c.params, "");
        out.push_str("}\n\n");

        jsdoc(out, "", &[format!("Success response to `{}`.", c.name)]);
        let _ = writeln!(out, "export interface {} {{", names.response(c));
        out.push_str("  id?: RequestId;\n  type: \"response\";\n");
        let _ = writeln!(out, "  command: {};", json_string(&c.name));
        out.push_str("  success: true;\n");
        if let CommandResult::Data { .. } = c.result {
            let _ = writeln!(out, "  data: {};", result_type(&c.result, ""));
        }
        out.push_str("}\n\n");
    }

    if let Some(doc) = set.error_response {
        let _ = writeln!(out, "/** {doc} */");
        out.push_str(
            "export interface ErrorResponse {\n  id?: RequestId;\n  type: \"response\";\n",
        );
        out.push_str(
            "  /** Absent when the request had no usable `type`. */\n  command?: string;\n",
        );
        out.push_str("  success: false;\n  error: string;\n}\n\n");
    }

    let union = |f: &dyn Fn(&Command) -> String| -> String {
        if set.requests.is_empty() {
            "never".into()
        } else {
            set.requests
                .iter()
                .map(f)
                .collect::<Vec<_>>()
                .join("\n  | ")
        }
    };
    let _ = writeln!(out, "/** {} */", set.union.1);
    let _ = writeln!(
        out,
        "export type {} =\n  | {};\n",
        set.union.0,
        union(&|c| names.derived(&c.name, set.frame))
    );
    let _ = writeln!(out, "/** {} */", set.responses.1);
    let _ = writeln!(
        out,
        "export type {} =\n  | {}\n  | ErrorResponse;\n",
        set.responses.0,
        union(&|c| names.response(c))
    );

    let (wire_names, doc) = set.wire_names;
    let _ = writeln!(out, "/** {doc} */");
    let _ = writeln!(out, "export const {wire_names} = [");
    for c in set.requests {
        let _ = writeln!(out, "  {},", json_string(&c.name));
    }
    out.push_str("] as const;\n\n");
    let _ = writeln!(
        out,
        "export type {} = (typeof {wire_names})[number];\n",
        set.wire_type
    );

    let _ = writeln!(out, "/** {} */", set.map.1);
    let _ = writeln!(out, "export interface {} {{", set.map.0);
    for c in set.requests {
        let params = if c.params.is_empty() {
            "Record<string, never>".to_string()
        } else {
            names.params(c)
        };
        let _ = writeln!(
            out,
            "  {}: {{ params: {params}; result: {} }};",
            prop_key(&c.name),
            result_type(&c.result, "")
        );
    }
    out.push_str("}\n\n");
}

#[derive(Clone, Copy, PartialEq)]
enum Side<'a> {
    /// The events, under `title`; `example` is the event the `RpcEvent` doc narrows to.
    Event {
        title: &'a str,
        example: &'a str,
    },
    Input,
}

fn write_messages(out: &mut String, ir: &Ir, names: &Names, side: Side) {
    let (title, list) = match side {
        Side::Event { title, .. } => (title, &ir.events),
        Side::Input => (
            "Inputs (stdin messages that are not commands and get no response)",
            &ir.inputs,
        ),
    };
    let name_of = |m: &Message| {
        if matches!(side, Side::Event { .. }) {
            names.event(m)
        } else {
            names.input(m)
        }
    };
    write_section(out, title);
    for m in list {
        let mut docs = doc_paragraphs(&m.doc, &m.since, &m.note);
        if !m.documented {
            docs.push("Not documented in spec/rpc.md.".into());
        }
        jsdoc(out, "", &docs);
        let name = name_of(m);
        match &m.body {
            MessageBody::Fields(fields) => {
                let _ = writeln!(out, "export interface {name} {{");
                let _ = writeln!(out, "  type: {};", json_string(&m.name));
                write_fields(out, fields, "");
                out.push_str("}\n\n");
            }
            MessageBody::Type(body) => {
                // Intersect even when the body declares `type` itself: an open union's unknown variant does not.
                let _ = writeln!(
                    out,
                    "export type {name} = {{ type: {} }} & {body};\n",
                    json_string(&m.name)
                );
            }
        }
    }
    let members: Vec<String> = list.iter().map(name_of).collect();
    let members = if members.is_empty() {
        "never".to_string()
    } else {
        members.join("\n  | ")
    };
    match side {
        Side::Event { example, .. } => {
            out.push_str("/** Every event this version of the protocol knows. */\n");
            let _ = writeln!(out, "export type KnownEvent =\n  | {members};\n");
            out.push_str(
                "/** An event of a type this version does not know (the event union is open). */\n",
            );
            out.push_str(
                "/**\n * Stands for the `type` of an event this version does not know. At run time it is that event's own type string;\n * the placeholder keeps `switch (event.type)` narrowing to the known events (a plain `string` would absorb every\n * `case`). Compare it as `event.type as string`.\n */\n",
            );
            out.push_str("export type UnknownEventType = \"<unknown event type>\";\n\n");
            out.push_str("export interface UnknownEvent {\n  type: UnknownEventType;\n  [key: string]: unknown;\n}\n\n");
            let _ = writeln!(
                out,
                "/** Any event frame: `switch (event.type)` narrows it, as do `isEvent(event, {})` and `isKnownEvent`. */",
                json_string(example)
            );
            out.push_str("export type RpcEvent = KnownEvent | UnknownEvent;\n\n");
            out.push_str("/** The wire names of every known event, in spec order. */\n");
            out.push_str("export const EVENT_TYPES: readonly string[] = [\n");
            for m in list {
                let _ = writeln!(out, "  {},", json_string(&m.name));
            }
            out.push_str("];\n\n");
            out.push_str(
                "/** True when `event` is of a type this version of the protocol knows. */\n",
            );
            out.push_str(
                "export function isKnownEvent(event: { type: string }): event is KnownEvent {\n",
            );
            out.push_str("  return EVENT_TYPES.includes(event.type);\n}\n\n");
            out.push_str("/** Narrows an event to the known event type `type`. */\n");
            out.push_str("export function isEvent<K extends KnownEvent[\"type\"]>(\n  event: { type: string },\n  type: K,\n");
            out.push_str("): event is Extract<KnownEvent, { type: K }> {\n  return event.type === type;\n}\n\n");
        }
        Side::Input => {
            out.push_str("/** Every stdin message that is not a command. */\n");
            let _ = writeln!(out, "export type RpcInput =\n  | {members};");
        }
    }
}

fn client_file(ir: &Ir, names: &Names) -> String {
    let mut out = banner_comment("//");
    out.push('\n');
    out.push_str("import {\n  RpcConnection,\n  type ConnectionOptions,\n  type RequestOptions,\n  type WaitForIdleOptions,\n} from \"../connection.js\";\n");
    out.push_str("import { ProcessTransport, type ProcessTransportOptions } from \"../process-transport.js\";\n");
    if ir
        .commands
        .iter()
        .any(|c| c.name == "prompt" && !c.params.is_empty())
    {
        out.push_str("import { summarizeRun, type RunResult } from \"../run.js\";\n");
    }
    out.push_str("import type * as T from \"./types.js\";\n\n");
    jsdoc(
        &mut out,
        "",
        &[
            format!("Typed client of the {} protocol: one method per command.", ir.protocol.name),
            "Each method sends the command, waits for its response (correlated by id) and returns the typed `data`; \
             a `success: false` response rejects with `RpcError` (its `message` is the exact error text)."
                .into(),
        ],
    );
    out.push_str("export class DrebClient extends RpcConnection<T.RpcEvent> {\n");
    jsdoc(
        &mut out,
        "  ",
        &["Spawns the agent (`dreb --mode rpc` by default) and starts a client on it.".into()],
    );
    out.push_str("  static async spawn(options: ProcessTransportOptions & ConnectionOptions = {}): Promise<DrebClient> {\n");
    out.push_str("    const client = new DrebClient(new ProcessTransport(options), options);\n");
    out.push_str("    await client.start();\n    return client;\n  }\n");
    out.push('\n');
    jsdoc(
        &mut out,
        "  ",
        &["Sends any command by wire name, with params and result typed by `CommandMap`.".into()],
    );
    out.push_str("  invoke<K extends T.CommandType>(\n    type: K,\n    params: T.CommandMap[K][\"params\"],\n");
    out.push_str("    options?: RequestOptions,\n  ): Promise<T.CommandMap[K][\"result\"]> {\n");
    out.push_str(
        "    return this.call<T.CommandMap[K][\"result\"]>(type, params, options);\n  }\n",
    );

    // `promptAndWait` with the run command's own params type (the connection's takes any object).
    if let Some(run) = ir
        .commands
        .iter()
        .find(|c| c.name == "prompt" && !c.params.is_empty())
    {
        out.push('\n');
        jsdoc(
            &mut out,
            "  ",
            &["Sends `prompt` with typed params and collects every event up to the end of the run it starts \
               (see `RpcConnection.promptAndWait`)."
                .into()],
        );
        let _ = writeln!(
            out,
            "  override promptAndWait(params: T.{}, options: RequestOptions & WaitForIdleOptions = {{}}): Promise<T.RpcEvent[]> {{",
            names.params(run)
        );
        out.push_str("    return super.promptAndWait(params, options);\n  }\n");
        out.push('\n');
        jsdoc(
            &mut out,
            "  ",
            &["Runs one prompt to completion: its final text, stop reason, usage, messages and events \
               (`summarizeRun` of `promptAndWait`). Rejects like `promptAndWait` when the prompt is refused."
                .into()],
        );
        let _ = writeln!(
            out,
            "  async run(params: T.{}, options: RequestOptions & WaitForIdleOptions = {{}}): Promise<RunResult<T.RpcEvent>> {{",
            names.params(run)
        );
        out.push_str("    return summarizeRun(await this.promptAndWait(params, options));\n  }\n");
    }

    for c in &ir.commands {
        out.push('\n');
        jsdoc(&mut out, "  ", &command_docs(c));
        let mut method = camel_case(&c.name);
        if RESERVED_METHODS.contains(&method.as_str()) {
            method.push_str("Command");
        }
        let ret = result_type(&c.result, "T.");
        let params = if c.params.is_empty() {
            String::new()
        } else if c.params.iter().all(|f| f.optional) {
            format!("params: T.{} = {{}}, ", names.params(c))
        } else {
            format!("params: T.{}, ", names.params(c))
        };
        let arg = if c.params.is_empty() { "{}" } else { "params" };
        let _ = writeln!(
            out,
            "  {method}({params}options?: RequestOptions): Promise<{ret}> {{"
        );
        let _ = writeln!(
            out,
            "    return this.call<{ret}>({}, {arg}, options);",
            json_string(&c.name)
        );
        out.push_str("  }\n");
    }

    for m in &ir.inputs {
        out.push('\n');
        let mut docs = doc_paragraphs(&m.doc, &m.since, &m.note);
        docs.push(format!(
            "Writes the `{}` message (it gets no response).",
            m.name
        ));
        jsdoc(&mut out, "  ", &docs);
        let method = format!("send{}", pascal_case(&m.name));
        let _ = writeln!(
            out,
            "  {method}(message: T.DistributiveOmit<T.{}, \"type\">): void {{",
            names.input(m)
        );
        let _ = writeln!(
            out,
            "    this.notify({{ type: {}, ...message }});",
            json_string(&m.name)
        );
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}
