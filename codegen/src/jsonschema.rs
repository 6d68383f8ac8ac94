//! JSON Schema backend: `protocol/schema/rpc.schema.json`, one draft 2020-12 document with a `$defs` entry per
//! shared type, per command (`<Name>Command`), per success response (`<Name>Response`), per event and per input,
//! plus the unions `RpcCommand`, `RpcResponse`, `RpcEvent`, `RpcInput`, `StdinFrame` and `StdoutFrame`.
//!
//! Unions are `oneOf` with a `const` tag in every variant, so exactly one branch matches. Open unions (and the
//! event union) add a catch-all branch whose tag is `not` one of the known values, which keeps `oneOf`
//! exclusive. Untagged `oneOf` types become `anyOf` (their shapes may overlap; they are tried in order).
//! Structs are closed (`additionalProperties: false`) unless the spec marks them open. The banner is the
//! document's first key, `$comment`.

use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::path::PathBuf;

use crate::ir::{
    Command, CommandResult, Field, Ir, Message, MessageBody, TypeDef, TypeKind, TypeRef,
    pascal_case,
};
use crate::{BANNER, EXTENSION_BANNER, GeneratedFile};

/// The generated schema, relative to the repository root.
pub const OUT_PATH: &str = "protocol/schema/rpc.schema.json";

/// The extension protocol's schema, relative to the repository root.
pub const EXTENSION_OUT_PATH: &str = "protocol/schema/extension.schema.json";

/// Runs the backend.
pub fn generate(ir: &Ir) -> Vec<GeneratedFile> {
    vec![file(OUT_PATH, &document(ir, &RPC))]
}

/// Runs the backend for `protocol/extension.yaml`: `protocol/schema/extension.schema.json`, with the calls
/// (`<Name>Call`, `RpcCall`, `RpcCallResponse`) and the frames of each side (`ExtensionFrame`, `RuntimeFrame`).
pub fn generate_extension(ir: &Ir) -> Vec<GeneratedFile> {
    vec![file(EXTENSION_OUT_PATH, &document(ir, &EXTENSION))]
}

fn file(path: &str, schema: &Value) -> GeneratedFile {
    let mut contents =
        serde_json::to_string_pretty(schema).expect("a JSON value always serialises");
    contents.push('\n');
    GeneratedFile {
        path: PathBuf::from(path),
        contents,
    }
}

/// `{keyword: branches}`, or a schema matching nothing when there are no branches (JSON Schema forbids an empty
/// `oneOf` / `anyOf`).
fn choice(keyword: &str, branches: Vec<Value>) -> Value {
    if branches.is_empty() {
        return json!({"not": {}});
    }
    let mut m = Map::new();
    m.insert(keyword.into(), Value::Array(branches));
    Value::Object(m)
}

fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/$defs/{name}") })
}

fn schema_of(ty: &TypeRef) -> Value {
    match ty {
        TypeRef::String => json!({"type": "string"}),
        TypeRef::Bool => json!({"type": "boolean"}),
        TypeRef::Int => json!({"type": "integer"}),
        TypeRef::Number => json!({"type": "number"}),
        TypeRef::Json => json!({}),
        TypeRef::Object => json!({"type": "object"}),
        TypeRef::List(inner) => json!({"type": "array", "items": schema_of(inner)}),
        TypeRef::Map(inner) => json!({"type": "object", "additionalProperties": schema_of(inner)}),
        TypeRef::Named(name) => reference(name),
    }
}

/// Joins doc paragraphs (doc, since, note, extras) into one `description`.
fn description(parts: &[Option<String>]) -> Option<String> {
    let text: Vec<String> = parts
        .iter()
        .flatten()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect();
    if text.is_empty() {
        None
    } else {
        Some(text.join("\n\n"))
    }
}

fn with_prefix(prefix: &str, value: &Option<String>) -> Option<String> {
    value.as_ref().map(|v| format!("{prefix}{v}"))
}

/// Inserts `description` first, then the rest of `body`.
fn described(desc: Option<String>, body: Value) -> Value {
    let mut out = Map::new();
    if let Some(d) = desc {
        out.insert("description".into(), Value::String(d));
    }
    if let Value::Object(map) = body {
        out.extend(map);
    }
    Value::Object(out)
}

fn field_schema(f: &Field) -> Value {
    let base = match &f.constant {
        Some(c) => {
            let mut m = Map::new();
            if let Value::String(_) = c {
                m.insert("type".into(), json!("string"));
            }
            m.insert("const".into(), c.clone());
            Value::Object(m)
        }
        None => schema_of(&f.ty),
    };
    let schema = if f.nullable {
        json!({"anyOf": [base, {"type": "null"}]})
    } else {
        base
    };
    described(
        description(&[
            f.doc.clone(),
            with_prefix("Since: ", &f.since),
            with_prefix("Note: ", &f.note),
        ]),
        schema,
    )
}

/// An object schema from fields; `leading` properties (e.g. `id`, `type`) come first.
fn object_schema(leading: &[(&str, Value, bool)], fields: &[Field], open: bool) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for (name, schema, is_required) in leading {
        props.insert((*name).into(), schema.clone());
        if *is_required {
            required.push(json!(name));
        }
    }
    for f in fields {
        props.insert(f.name.clone(), field_schema(f));
        if !f.optional {
            required.push(json!(f.name));
        }
    }
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    out.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    out.insert("additionalProperties".into(), json!(open));
    Value::Object(out)
}

/// The catch-all branch of an open union: an object whose `tag` is none of `known`.
fn unknown_branch(tag: &str, known: &[String]) -> Value {
    json!({
        "type": "object",
        "properties": { tag: { "type": "string", "not": { "enum": known } } },
        "required": [tag],
    })
}

fn push_examples(schema: &mut Value, examples: &[Value]) {
    if examples.is_empty() {
        return;
    }
    if let Value::Object(m) = schema {
        m.insert("examples".into(), Value::Array(examples.to_vec()));
    }
}

fn type_schema(ir: &Ir, t: &TypeDef) -> Value {
    let mut extra = Vec::new();
    let body = match &t.kind {
        TypeKind::Struct(s) => object_schema(&[], &s.fields, s.additional_fields),
        TypeKind::Enum(e) => {
            let docs: Vec<String> = e
                .values
                .iter()
                .filter_map(|v| {
                    v.doc
                        .as_ref()
                        .map(|d| format!("- `{}`: {}", v.value, d.trim()))
                })
                .collect();
            if !docs.is_empty() {
                extra.push(Some(docs.join("\n")));
            }
            let values: Vec<Value> = e.values.iter().map(|v| json!(v.value)).collect();
            if e.open {
                extra.push(Some(
                    "Open: other strings are possible and are kept.".into(),
                ));
                json!({"anyOf": [{"type": "string", "enum": values}, {"type": "string"}]})
            } else {
                json!({"type": "string", "enum": values})
            }
        }
        TypeKind::Union(u) => {
            extra.push(Some(format!("Tagged union on `{}`.", u.tag)));
            let mut branches: Vec<Value> =
                u.variants.iter().map(|v| reference(&v.type_name)).collect();
            if u.open {
                extra.push(Some("Open: an unknown tag value is kept.".into()));
                let known: Vec<String> = u.variants.iter().map(|v| v.tag_value.clone()).collect();
                branches.push(unknown_branch(&u.tag, &known));
            }
            choice("oneOf", branches)
        }
        TypeKind::OneOf(o) => choice("anyOf", o.variants.iter().map(schema_of).collect()),
        TypeKind::Alias(target) => schema_of(target),
    };
    let _ = ir;
    let mut parts = vec![
        t.doc.clone(),
        with_prefix("Since: ", &t.since),
        with_prefix("Note: ", &t.note),
    ];
    parts.extend(extra);
    let mut schema = described(description(&parts), body);
    push_examples(&mut schema, &t.examples);
    schema
}

fn command_description(c: &Command) -> Option<String> {
    let mut parts = vec![
        c.doc.clone(),
        with_prefix("Since: ", &c.since),
        with_prefix("Note: ", &c.note),
    ];
    if !c.documented {
        parts.push(Some(
            "Not documented in spec/rpc.md (served by the reference).".into(),
        ));
    }
    if !c.errors.is_empty() {
        let mut text = String::from("Error texts (`{...}` marks variable parts):");
        for e in &c.errors {
            text.push_str(&format!("\n- `{}`", e.text.replace('\n', "\\n")));
            if let Some(when) = &e.when {
                text.push_str(&format!(": {}", when.trim()));
            }
        }
        parts.push(Some(text));
    }
    description(&parts)
}

struct Names {
    shared: HashSet<String>,
}

impl Names {
    fn derived(&self, wire: &str, suffix: &str) -> String {
        let name = format!("{}{suffix}", pascal_case(wire));
        if self.shared.contains(&name) {
            format!("{name}Frame")
        } else {
            name
        }
    }
}

/// The structs a message body stands for, with the frame's `type` added, when the body does not declare it.
fn body_schema(ir: &Ir, m: &Message, body: &str) -> Value {
    let type_const = json!({"type": "string", "const": m.name});
    if ir.body_declares_type(body) {
        // The variants already carry `type`; pin it for an open union's catch-all branch too.
        return json!({
            "allOf": [
                reference(body),
                {"type": "object", "properties": {"type": type_const}, "required": ["type"]},
            ]
        });
    }
    let with_type = |name: &str| -> Value {
        match ir.type_def(name).map(|t| &t.kind) {
            Some(TypeKind::Struct(s)) => {
                let mut schema = object_schema(
                    &[("type", type_const.clone(), true)],
                    &s.fields,
                    s.additional_fields,
                );
                if let Value::Object(m) = &mut schema {
                    m.insert("title".into(), json!(name));
                }
                schema
            }
            _ => reference(name),
        }
    };
    match ir.type_def(body).map(|t| &t.kind) {
        Some(TypeKind::Struct(_)) => with_type(body),
        Some(TypeKind::Union(u)) => {
            let mut branches: Vec<Value> =
                u.variants.iter().map(|v| with_type(&v.type_name)).collect();
            if u.open {
                let known: Vec<String> = u.variants.iter().map(|v| v.tag_value.clone()).collect();
                branches.push(unknown_branch(&u.tag, &known));
            }
            choice("oneOf", branches)
        }
        Some(TypeKind::OneOf(o)) => {
            let branches: Vec<Value> = o
                .variants
                .iter()
                .map(|v| match v {
                    TypeRef::Named(n) => with_type(n),
                    other => schema_of(other),
                })
                .collect();
            choice("anyOf", branches)
        }
        _ => reference(body),
    }
}

fn message_schema(ir: &Ir, m: &Message) -> Value {
    let mut parts = vec![
        m.doc.clone(),
        with_prefix("Since: ", &m.since),
        with_prefix("Note: ", &m.note),
    ];
    if !m.documented {
        parts.push(Some("Not documented in spec/rpc.md.".into()));
    }
    let body = match &m.body {
        MessageBody::Fields(fields) => object_schema(
            &[("type", json!({"type": "string", "const": m.name}), true)],
            fields,
            false,
        ),
        MessageBody::Type(body) => body_schema(ir, m, body),
    };
    let mut schema = described(description(&parts), body);
    push_examples(&mut schema, &m.examples);
    schema
}

/// What differs between the schemas of the specs: the banner, the names and descriptions of the unions.
struct Texts<'a> {
    banner: &'a str,
    /// Requests the peer sends: the request union and the union of their responses (what the runtime writes).
    commands: Requests<'a>,
    /// Requests the runtime sends (used when the spec has calls).
    calls: Requests<'a>,
    error_response: &'a str,
    /// The union of everything the peer writes, and its description.
    peer_frame: (&'a str, &'a str),
    /// The union of everything the runtime writes, and its description.
    runtime_frame: (&'a str, &'a str),
}

/// The unions of one direction's requests.
struct Requests<'a> {
    /// Suffix of a request frame's `$defs` entry (`Command`, `Call`).
    frame: &'a str,
    /// The request union, and its description.
    union: (&'a str, &'a str),
    /// The response union (with `ErrorResponse`), and its description.
    responses: (&'a str, &'a str),
}

const RPC: Texts = Texts {
    banner: BANNER,
    commands: Requests {
        frame: "Command",
        union: ("RpcCommand", "Every command a host can send."),
        responses: ("RpcResponse", "Every response frame."),
    },
    calls: Requests {
        frame: "Call",
        union: ("RpcCall", "Every call the runtime can send."),
        responses: ("RpcCallResponse", "Every response to a call."),
    },
    error_response: "A failure response to any command; `error` is the exact error text.",
    peer_frame: ("StdinFrame", "One line a host writes to the agent's stdin."),
    runtime_frame: ("StdoutFrame", "One line the agent writes to stdout."),
};

const EXTENSION: Texts = Texts {
    banner: EXTENSION_BANNER,
    commands: Requests {
        frame: "Command",
        union: ("RpcCommand", "Every command an extension can send."),
        responses: (
            "RpcResponse",
            "Every response to a command (what the runtime writes).",
        ),
    },
    calls: Requests {
        frame: "Call",
        union: ("RpcCall", "Every call the runtime can send."),
        responses: (
            "RpcCallResponse",
            "Every response to a call (what the extension writes).",
        ),
    },
    error_response: "A failure response to any call or command; `error` is the exact error text.",
    peer_frame: (
        "ExtensionFrame",
        "One line an extension writes to its stdout (read by the runtime).",
    ),
    runtime_frame: (
        "RuntimeFrame",
        "One line the runtime writes to an extension's stdin.",
    ),
};

/// The request frame (`<Name><frame>`) and success response (`<Name>Response`) of every request in `list`; returns
/// the references to both, in spec order.
fn requests(
    defs: &mut Map<String, Value>,
    names: &Names,
    list: &[Command],
    frame: &str,
) -> (Vec<Value>, Vec<Value>) {
    let id = || json!({"$ref": "#/$defs/RequestId"});
    let mut request_refs = Vec::new();
    let mut response_refs = Vec::new();
    for c in list {
        let name = names.derived(&c.name, frame);
        let mut schema = described(
            command_description(c),
            object_schema(
                &[
                    ("id", id(), false),
                    ("type", json!({"type": "string", "const": c.name}), true),
                ],
                &c.params,
                false,
            ),
        );
        let requests: Vec<Value> = c
            .examples
            .iter()
            .filter_map(|e| e.request.clone())
            .collect();
        push_examples(&mut schema, &requests);
        defs.insert(name.clone(), schema);
        request_refs.push(reference(&name));

        let response_name = names.derived(&c.name, "Response");
        let mut leading: Vec<(&str, Value, bool)> = vec![
            ("id", id(), false),
            ("type", json!({"type": "string", "const": "response"}), true),
            ("command", json!({"type": "string", "const": c.name}), true),
            ("success", json!({"type": "boolean", "const": true}), true),
        ];
        if let CommandResult::Data { ty, nullable } = &c.result {
            let data = if *nullable {
                json!({"anyOf": [schema_of(ty), {"type": "null"}]})
            } else {
                schema_of(ty)
            };
            leading.push(("data", data, true));
        }
        let mut schema = described(
            Some(format!("Success response to `{}`.", c.name)),
            object_schema(&leading, &[], false),
        );
        let successes: Vec<Value> = c
            .examples
            .iter()
            .filter_map(|e| e.response.clone())
            .filter(|r| r.get("success") == Some(&Value::Bool(true)))
            .collect();
        push_examples(&mut schema, &successes);
        defs.insert(response_name.clone(), schema);
        response_refs.push(reference(&response_name));
    }
    (request_refs, response_refs)
}

/// The request union and the response union (with `ErrorResponse`) of one direction.
fn request_unions(
    defs: &mut Map<String, Value>,
    texts: &Requests,
    (request_refs, mut response_refs): (Vec<Value>, Vec<Value>),
) {
    response_refs.push(reference("ErrorResponse"));
    let (union, doc) = texts.union;
    defs.insert(
        union.into(),
        described(Some(doc.into()), choice("oneOf", request_refs)),
    );
    let (union, doc) = texts.responses;
    defs.insert(
        union.into(),
        described(Some(doc.into()), choice("oneOf", response_refs)),
    );
}

fn document(ir: &Ir, texts: &Texts) -> Value {
    let names = Names {
        shared: ir.types.iter().map(|t| t.name.clone()).collect(),
    };
    let mut defs = Map::new();
    defs.insert(
        "RequestId".into(),
        // Any JSON value: the reference echoes whatever was sent (`null`, `true`, an object), and so do we.
        json!({
            "description": "A request id: any JSON value, echoed unchanged in the response. Clients send strings.",
        }),
    );
    for t in &ir.types {
        defs.insert(t.name.clone(), type_schema(ir, t));
    }

    let two_way = !ir.calls.is_empty();
    let calls = two_way.then(|| requests(&mut defs, &names, &ir.calls, texts.calls.frame));
    if let Some(refs) = calls {
        request_unions(&mut defs, &texts.calls, refs);
    }
    let commands = requests(&mut defs, &names, &ir.commands, texts.commands.frame);
    let mut error_examples: Vec<Value> = ir
        .calls
        .iter()
        .chain(&ir.commands)
        .flat_map(|c| c.examples.iter().filter_map(|e| e.response.clone()))
        .filter(|r| r.get("success") == Some(&Value::Bool(false)))
        .collect();
    error_examples.extend(
        ir.envelope
            .examples
            .iter()
            .filter_map(|e| e.response.clone())
            // An envelope example can show a command succeeding (`unknown-key-ignored`): not an error example.
            .filter(|r| r.get("success") == Some(&Value::Bool(false))),
    );
    let id = || json!({"$ref": "#/$defs/RequestId"});
    let mut error = described(
        Some(texts.error_response.into()),
        json!({
            "type": "object",
            "properties": {
                "id": id(),
                "type": {"type": "string", "const": "response"},
                "command": {"description": "Absent when the request had no usable `type`.", "type": "string"},
                "success": {"type": "boolean", "const": false},
                "error": {"type": "string"},
            },
            "required": ["type", "success", "error"],
            "additionalProperties": false,
        }),
    );
    push_examples(&mut error, &error_examples);
    defs.insert("ErrorResponse".into(), error);
    request_unions(&mut defs, &texts.commands, commands);

    let mut event_refs = Vec::new();
    for m in &ir.events {
        let name = names.derived(&m.name, "Event");
        defs.insert(name.clone(), message_schema(ir, m));
        event_refs.push(reference(&name));
    }
    // `response` is excluded too, so a response never matches the unknown-event branch of the runtime's frames;
    // so are calls, which the runtime writes beside events.
    let mut excluded: Vec<String> = ir.events.iter().map(|m| m.name.clone()).collect();
    excluded.push("response".into());
    excluded.extend(ir.calls.iter().map(|c| c.name.clone()));
    defs.insert(
        "UnknownEvent".into(),
        described(
            Some("An event of a type this version does not know (the event union is open).".into()),
            unknown_branch("type", &excluded),
        ),
    );
    event_refs.push(reference("UnknownEvent"));
    defs.insert(
        "RpcEvent".into(),
        json!({"description": "Any event frame (open union).", "oneOf": event_refs}),
    );

    let has_inputs = !ir.inputs.is_empty() || !two_way;
    if has_inputs {
        let mut input_refs = Vec::new();
        for m in &ir.inputs {
            let name = names.derived(&m.name, "Input");
            defs.insert(name.clone(), message_schema(ir, m));
            input_refs.push(reference(&name));
        }
        defs.insert(
            "RpcInput".into(),
            described(
                Some("Every stdin message that is not a command.".into()),
                choice("oneOf", input_refs),
            ),
        );
    }
    let mut peer = vec![reference(texts.commands.union.0)];
    let mut runtime = vec![reference(texts.commands.responses.0), reference("RpcEvent")];
    if two_way {
        peer.push(reference(texts.calls.responses.0));
        runtime.push(reference(texts.calls.union.0));
    }
    if has_inputs {
        peer.push(reference("RpcInput"));
    }
    let (peer_frame, peer_doc) = texts.peer_frame;
    let (runtime_frame, runtime_doc) = texts.runtime_frame;
    defs.insert(
        peer_frame.into(),
        json!({"description": peer_doc, "anyOf": peer}),
    );
    defs.insert(
        runtime_frame.into(),
        json!({"description": runtime_doc, "oneOf": runtime}),
    );

    let mut root = Map::new();
    root.insert("$comment".into(), json!(texts.banner));
    root.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    root.insert(
        "title".into(),
        json!(format!(
            "{} protocol, version {}",
            ir.protocol.name, ir.protocol.version
        )),
    );
    if let Some(doc) = &ir.protocol.doc {
        root.insert("description".into(), json!(doc.trim()));
    }
    root.insert(
        "anyOf".into(),
        json!([reference(peer_frame), reference(runtime_frame)]),
    );
    root.insert("$defs".into(), Value::Object(defs));
    Value::Object(root)
}
