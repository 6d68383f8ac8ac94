//! Semantic validation of a converted spec: names, references, union tags, and every example against its declared
//! type. Also exposes [`check_value`], the JSON-vs-type checker, for tests and tools.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::ir::*;

/// Names the Rust backend generates itself; a spec type may not use them.
pub const RESERVED_TYPE_NAMES: &[&str] = &[
    "Request",
    "Command",
    "Response",
    "ResponseData",
    "Outcome",
    "Event",
    "Input",
    "Dispatch",
    "RequestContext",
    "RpcHandler",
    "CommandService",
    "CommandSpec",
    "Call",
    "CallResult",
    "CallSpec",
    "DecodeError",
    "Tristate",
    "Value",
    "Map",
    "String",
    "Vec",
    "Option",
    "Result",
    "Box",
    "IndexMap",
];

/// Appends every problem of `ir` to `problems`.
pub fn validate(ir: &Ir, problems: &mut Vec<String>) {
    check_names(ir, problems);
    check_types(ir, problems);
    check_commands(ir, "commands", &ir.commands, problems);
    check_commands(ir, "calls", &ir.calls, problems);
    check_messages(ir, "events", &ir.events, problems);
    check_messages(ir, "inputs", &ir.inputs, problems);
    check_envelope(ir, problems);
}

fn is_pascal(s: &str) -> bool {
    let mut c = s.chars();
    c.next().is_some_and(|f| f.is_ascii_uppercase()) && c.all(|ch| ch.is_ascii_alphanumeric())
}

fn is_wire_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn check_names(ir: &Ir, problems: &mut Vec<String>) {
    // Derived names (params/event structs) share the namespace with spec types in every backend.
    let mut taken: HashMap<String, String> = HashMap::new();
    for t in &ir.types {
        if !is_pascal(&t.name) {
            problems.push(format!("types.{}: type names must be PascalCase", t.name));
        }
        if RESERVED_TYPE_NAMES.contains(&t.name.as_str()) {
            problems.push(format!(
                "types.{}: this name is reserved for generated code",
                t.name
            ));
        }
        taken.insert(t.name.clone(), format!("types.{}", t.name));
    }
    let mut claim = |name: String, by: String, problems: &mut Vec<String>| {
        if let Some(prev) = taken.get(&name) {
            problems.push(format!(
                "{by}: derived type name `{name}` collides with {prev}"
            ));
        } else {
            taken.insert(name, by);
        }
    };
    for (section, list) in [("commands", &ir.commands), ("calls", &ir.calls)] {
        for c in list {
            if !is_wire_name(&c.name) {
                problems.push(format!(
                    "{section}.{}: names must be lower-case wire names ([a-z][a-z0-9_]*)",
                    c.name
                ));
            }
            claim(
                format!("{}Params", c.pascal_name()),
                format!("{section}.{}", c.name),
                problems,
            );
        }
    }
    let mut wire: HashSet<&str> = ir.commands.iter().map(|c| c.name.as_str()).collect();
    // A request is answered by `command: <name>` in either direction, so one name cannot mean both; and calls
    // share the peer's input stream with events, where `type` alone tells them apart.
    for c in &ir.calls {
        if ir.command(&c.name).is_some() {
            problems.push(format!(
                "calls.{}: the same wire name is also a command",
                c.name
            ));
        }
        if ir.event(&c.name).is_some() {
            problems.push(format!(
                "calls.{}: the same wire name is also an event",
                c.name
            ));
        }
    }
    for (section, list) in [("events", &ir.events), ("inputs", &ir.inputs)] {
        for m in list {
            if !is_wire_name(&m.name) {
                problems.push(format!(
                    "{section}.{}: names must be wire names ([a-z][a-z0-9_]*)",
                    m.name
                ));
            }
            if section == "inputs" && !wire.insert(m.name.as_str()) {
                problems.push(format!(
                    "inputs.{}: the same wire type is also a command",
                    m.name
                ));
            }
            if let MessageBody::Fields(_) = m.body {
                let suffix = if section == "events" {
                    "Event"
                } else {
                    "Input"
                };
                claim(
                    format!("{}{suffix}", m.pascal_name()),
                    format!("{section}.{}", m.name),
                    problems,
                );
            }
        }
    }
}

fn check_ref(ir: &Ir, ty: &TypeRef, ctx: &str, problems: &mut Vec<String>) {
    match ty {
        TypeRef::List(t) | TypeRef::Map(t) => check_ref(ir, t, ctx, problems),
        TypeRef::Named(n) if ir.type_def(n).is_none() => {
            problems.push(format!("{ctx}: unknown type `{n}`"));
        }
        _ => {}
    }
}

fn check_fields(ir: &Ir, fields: &[Field], ctx: &str, problems: &mut Vec<String>) {
    for f in fields {
        let fctx = format!("{ctx}.{}", f.name);
        if f.raw && !ctx.starts_with("commands.") {
            problems.push(format!("{fctx}: `raw` is only allowed on command params"));
        }
        check_ref(ir, &f.ty, &fctx, problems);
        if let Some(c) = &f.constant {
            let mut errs = Vec::new();
            check_value(ir, &f.ty, c, &fctx, &mut errs);
            problems.extend(
                errs.into_iter()
                    .map(|e| format!("const does not match the field type: {e}")),
            );
            if f.optional || f.nullable {
                problems.push(format!(
                    "{fctx}: a `const` field cannot be optional or nullable"
                ));
            }
        }
    }
}

fn check_types(ir: &Ir, problems: &mut Vec<String>) {
    for t in &ir.types {
        let ctx = format!("types.{}", t.name);
        match &t.kind {
            TypeKind::Struct(s) => check_fields(ir, &s.fields, &ctx, problems),
            TypeKind::Enum(e) => {
                if e.values.is_empty() {
                    problems.push(format!("{ctx}: an enum needs at least one value"));
                }
                let mut seen = HashSet::new();
                for v in &e.values {
                    if !seen.insert(v.value.as_str()) {
                        problems.push(format!("{ctx}: duplicate enum value `{}`", v.value));
                    }
                }
            }
            TypeKind::Union(u) => check_union(ir, &t.name, u, problems),
            TypeKind::OneOf(o) => {
                if o.variants.is_empty() {
                    problems.push(format!("{ctx}: a oneOf needs at least one variant"));
                }
                for v in &o.variants {
                    check_ref(ir, v, &ctx, problems);
                }
                let mut seen = HashSet::new();
                for n in o.names.iter().flatten() {
                    if !is_pascal(n) {
                        problems.push(format!(
                            "{ctx}: oneOf variant names must be PascalCase (`{n}`)"
                        ));
                    }
                    if !seen.insert(n.as_str()) {
                        problems.push(format!("{ctx}: duplicate oneOf variant name `{n}`"));
                    }
                }
            }
            TypeKind::Alias(a) => {
                check_ref(ir, a, &ctx, problems);
                // Reject alias cycles (A → B → A).
                let mut seen = HashSet::from([t.name.as_str()]);
                let mut cur = a;
                while let TypeRef::Named(n) = cur {
                    if !seen.insert(n.as_str()) {
                        problems.push(format!("{ctx}: alias cycle through `{n}`"));
                        break;
                    }
                    match ir.type_def(n).map(|d| &d.kind) {
                        Some(TypeKind::Alias(next)) => cur = next,
                        _ => break,
                    }
                }
            }
        }
        for (i, ex) in t.examples.iter().enumerate() {
            check_value(
                ir,
                &TypeRef::Named(t.name.clone()),
                ex,
                &format!("{ctx}.examples[{i}]"),
                problems,
            );
        }
    }
}

fn check_union(ir: &Ir, name: &str, u: &UnionDef, problems: &mut Vec<String>) {
    let ctx = format!("types.{name}");
    if u.variants.is_empty() {
        problems.push(format!("{ctx}: a union needs at least one variant"));
    }
    for v in &u.variants {
        let vctx = format!("{ctx}.variants.{}", v.tag_value);
        match ir.type_def(&v.type_name).map(|d| &d.kind) {
            None => problems.push(format!("{vctx}: unknown type `{}`", v.type_name)),
            Some(TypeKind::Struct(s)) => match s.fields.iter().find(|f| f.name == u.tag) {
                None => problems.push(format!(
                    "{vctx}: struct `{}` must declare the tag field `{}` with `type: string` and `const: {}`",
                    v.type_name, u.tag, v.tag_value
                )),
                Some(f) => {
                    if f.ty != TypeRef::String || f.constant != Some(Value::String(v.tag_value.clone())) {
                        problems.push(format!(
                            "{vctx}: field `{}.{}` must be `type: string` with `const: {}`",
                            v.type_name, u.tag, v.tag_value
                        ));
                    }
                }
            },
            Some(_) => problems.push(format!("{vctx}: `{}` must be a struct", v.type_name)),
        }
    }
}

/// Checks the requests of one direction: `commands` (the peer sends them) or `calls` (the runtime sends them).
fn check_commands(ir: &Ir, section: &str, list: &[Command], problems: &mut Vec<String>) {
    for c in list {
        let ctx = format!("{section}.{}", c.name);
        check_fields(ir, &c.params, &format!("{ctx}.params"), problems);
        for f in &c.params {
            if f.name == "id" || f.name == "type" {
                problems.push(format!("{ctx}.params.{}: `id` and `type` are part of every request; do not declare them", f.name));
            }
        }
        if let CommandResult::Data { ty, .. } = &c.result {
            check_ref(ir, ty, &format!("{ctx}.result"), problems);
        }
        check_error_names(ir, c, &ctx, problems);
        let mut names = HashSet::new();
        for ex in &c.examples {
            let ectx = format!("{ctx}.examples[{}]", ex.name);
            if !names.insert(ex.name.as_str()) {
                problems.push(format!("{ectx}: duplicate example name"));
            }
            if ex.request.is_none() && ex.response.is_none() {
                problems.push(format!("{ectx}: needs a `request` or a `response`"));
            }
            if let Some(req) = &ex.request {
                check_request(ir, c, req, &format!("{ectx}.request"), problems);
            }
            if let Some(resp) = &ex.response {
                check_response(ir, Some(c), resp, &format!("{ectx}.response"), problems);
                if let (Some(Value::Object(q)), Value::Object(r)) = (&ex.request, resp)
                    && q.get("id") != r.get("id")
                {
                    problems.push(format!(
                        "{ectx}: the response `id` must echo the request `id`"
                    ));
                }
            }
            for (i, ev) in ex.events.iter().enumerate() {
                check_event_frame(ir, ev, &format!("{ectx}.events[{i}]"), problems);
            }
        }
    }
}

/// Error names (`name:` or derived from the text) are `PascalCase`, unique within the command and not the
/// reserved catch-all name; an explicit name is only allowed once per text.
fn check_error_names(ir: &Ir, c: &Command, ctx: &str, problems: &mut Vec<String>) {
    let mut seen: HashSet<String> = HashSet::new();
    let mut texts: HashSet<&str> = HashSet::new();
    for (i, e) in c.errors.iter().enumerate() {
        let ectx = format!("{ctx}.errors[{i}]");
        if !texts.insert(e.text.as_str()) {
            problems.push(format!("{ectx}: duplicate error text {:?}", e.text));
        }
        if let Some(n) = &e.name
            && !is_pascal(n)
        {
            problems.push(format!(
                "{ectx}.name: `{n}` is not PascalCase (ASCII letters and digits)"
            ));
            continue;
        }
        let name = e.variant_name(&ir.envelope);
        if name == crate::ir::UNEXPECTED_ERROR_NAME {
            problems.push(format!(
                "{ectx}: the error name `{name}` is reserved for the generated catch-all; give it another `name:`"
            ));
        } else if !seen.insert(name.clone()) {
            let how = if e.name.is_some() {
                ""
            } else {
                " (derived from its text)"
            };
            problems.push(format!(
                "{ectx}: error name `{name}`{how} is used twice in this command; give one a distinct `name:`"
            ));
        }
        let mut fields = HashSet::new();
        for p in e.placeholders() {
            if !fields.insert(crate::ir::snake_case(&p)) {
                problems.push(format!(
                    "{ectx}: placeholders that differ only in case (`{p}`) are not allowed"
                ));
            }
        }
    }
}

/// Checks a request frame: `{"id"?: any, "type": <command>, ...params}`.
pub fn check_request(ir: &Ir, c: &Command, v: &Value, ctx: &str, problems: &mut Vec<String>) {
    let Value::Object(obj) = v else {
        problems.push(format!("{ctx}: a request must be an object"));
        return;
    };
    if obj.get("type") != Some(&Value::String(c.name.clone())) {
        problems.push(format!("{ctx}: `type` must be \"{}\"", c.name));
    }
    check_struct_fields(ir, &c.params, false, obj, &["id", "type"], ctx, problems);
}

/// Checks a response frame: `{"id"?, "type": "response", "command", "success", "data"? | "error"}`. With `cmd`,
/// `command` must name it and `data` must match its result.
pub fn check_response(
    ir: &Ir,
    cmd: Option<&Command>,
    v: &Value,
    ctx: &str,
    problems: &mut Vec<String>,
) {
    let Value::Object(obj) = v else {
        problems.push(format!("{ctx}: a response must be an object"));
        return;
    };
    for key in obj.keys() {
        if !["id", "type", "command", "success", "data", "error"].contains(&key.as_str()) {
            problems.push(format!("{ctx}: unexpected key `{key}` in a response"));
        }
    }
    if obj.get("type") != Some(&Value::String("response".into())) {
        problems.push(format!("{ctx}: `type` must be \"response\""));
    }
    if let Some(c) = cmd {
        if obj.get("command") != Some(&Value::String(c.name.clone())) {
            problems.push(format!("{ctx}: `command` must be \"{}\"", c.name));
        }
    } else if let Some(command) = obj.get("command")
        && !command.is_string()
    {
        problems.push(format!("{ctx}: `command` must be a string"));
    }
    match obj.get("success") {
        Some(Value::Bool(true)) => {
            if obj.contains_key("error") {
                problems.push(format!("{ctx}: a success response has no `error`"));
            }
            match cmd.map(|c| &c.result) {
                Some(CommandResult::None) if obj.contains_key("data") => {
                    let name = cmd.map(|c| c.name.as_str()).unwrap_or("");
                    problems.push(format!(
                        "{ctx}: `{name}` has `result: none`, so `data` must be absent"
                    ));
                }
                Some(CommandResult::None) => {}
                Some(CommandResult::Data { ty, nullable }) => match obj.get("data") {
                    None => problems.push(format!("{ctx}: `data` is required")),
                    Some(Value::Null) if *nullable => {}
                    Some(Value::Null) => problems.push(format!(
                        "{ctx}.data: null is not allowed (result is not nullable)"
                    )),
                    Some(d) => check_value(ir, ty, d, &format!("{ctx}.data"), problems),
                },
                None => {}
            }
        }
        Some(Value::Bool(false)) => {
            if !obj.get("error").is_some_and(Value::is_string) {
                problems.push(format!("{ctx}: an error response needs a string `error`"));
            }
            if obj.contains_key("data") {
                problems.push(format!("{ctx}: an error response has no `data`"));
            }
        }
        _ => problems.push(format!("{ctx}: `success` must be a boolean")),
    }
}

/// Checks an event frame against the event named by its `type`.
pub fn check_event_frame(ir: &Ir, v: &Value, ctx: &str, problems: &mut Vec<String>) {
    let name = v.get("type").and_then(Value::as_str).unwrap_or("");
    match ir.event(name) {
        Some(e) => check_message_frame(ir, e, v, ctx, problems),
        None => problems.push(format!("{ctx}: `type` {name:?} is not an event")),
    }
}

/// Checks a frame of a given event or input.
pub fn check_message_frame(ir: &Ir, m: &Message, v: &Value, ctx: &str, problems: &mut Vec<String>) {
    let Value::Object(obj) = v else {
        problems.push(format!("{ctx}: a frame must be an object"));
        return;
    };
    if obj.get("type") != Some(&Value::String(m.name.clone())) {
        problems.push(format!("{ctx}: `type` must be \"{}\"", m.name));
    }
    match &m.body {
        MessageBody::Fields(fields) => {
            check_struct_fields(ir, fields, false, obj, &["type"], ctx, problems)
        }
        MessageBody::Type(t) if ir.body_declares_type(t) => {
            check_value(ir, &TypeRef::Named(t.clone()), v, ctx, problems)
        }
        MessageBody::Type(t) => {
            let mut rest = obj.clone();
            rest.shift_remove("type");
            check_value(
                ir,
                &TypeRef::Named(t.clone()),
                &Value::Object(rest),
                ctx,
                problems,
            );
        }
    }
}

fn check_messages(ir: &Ir, section: &str, list: &[Message], problems: &mut Vec<String>) {
    for m in list {
        let ctx = format!("{section}.{}", m.name);
        match &m.body {
            MessageBody::Fields(fields) => {
                check_fields(ir, fields, &format!("{ctx}.fields"), problems);
                if fields.iter().any(|f| f.name == "type") {
                    problems.push(format!(
                        "{ctx}.fields.type: `type` is implied; do not declare it"
                    ));
                }
            }
            MessageBody::Type(t) => match ir.type_def(t).map(|d| &d.kind) {
                None => problems.push(format!("{ctx}.body: unknown type `{t}`")),
                Some(TypeKind::Struct(_) | TypeKind::Union(_) | TypeKind::OneOf(_)) => {
                    check_body_type_consts(ir, m, t, &ctx, problems)
                }
                Some(_) => problems.push(format!(
                    "{ctx}.body: `{t}` must be a struct, union or oneOf"
                )),
            },
        }
        for (i, ex) in m.examples.iter().enumerate() {
            check_message_frame(ir, m, ex, &format!("{ctx}.examples[{i}]"), problems);
        }
    }
}

/// When a body type declares `type` in some of its structs, all must, each as `const: <message name>`.
fn check_body_type_consts(ir: &Ir, m: &Message, t: &str, ctx: &str, problems: &mut Vec<String>) {
    let structs: Vec<&str> = match ir.type_def(t).map(|d| &d.kind) {
        Some(TypeKind::Struct(_)) => vec![t],
        Some(TypeKind::Union(u)) => u.variants.iter().map(|v| v.type_name.as_str()).collect(),
        Some(TypeKind::OneOf(o)) => o
            .variants
            .iter()
            .filter_map(|v| {
                if let TypeRef::Named(n) = v {
                    Some(n.as_str())
                } else {
                    None
                }
            })
            .collect(),
        _ => vec![],
    };
    let type_field = |n: &str| match ir.type_def(n).map(|d| &d.kind) {
        Some(TypeKind::Struct(s)) => s.fields.iter().find(|f| f.name == "type").cloned(),
        _ => None,
    };
    let declared: Vec<(&str, Option<Field>)> =
        structs.iter().map(|n| (*n, type_field(n))).collect();
    if declared.iter().any(|(_, f)| f.is_some()) {
        for (n, f) in declared {
            match f {
                Some(f) if f.constant == Some(Value::String(m.name.clone())) => {}
                _ => problems.push(format!(
                    "{ctx}.body: `{n}` must declare `type: {{ type: string, const: {} }}` like the other structs of `{t}`",
                    m.name
                )),
            }
        }
    }
}

fn check_envelope(ir: &Ir, problems: &mut Vec<String>) {
    let mut names = HashSet::new();
    for ex in &ir.envelope.examples {
        let ctx = format!("envelope.examples[{}]", ex.name);
        if !names.insert(ex.name.as_str()) {
            problems.push(format!("{ctx}: duplicate example name"));
        }
        if ex.line.is_some() && ex.request.is_some() {
            problems.push(format!(
                "{ctx}: give either `line` (raw text) or `request` (JSON), not both"
            ));
        }
        if let Some(resp) = &ex.response {
            check_response(ir, None, resp, &format!("{ctx}.response"), problems);
        }
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks a JSON value against a type expression (a non-null value is expected: nullability is a field flag).
pub fn check_value(ir: &Ir, ty: &TypeRef, v: &Value, ctx: &str, problems: &mut Vec<String>) {
    let mismatch = |problems: &mut Vec<String>, want: &str| {
        problems.push(format!(
            "{ctx}: expected {want}, got {} ({v})",
            type_name(v)
        ));
    };
    match ty {
        TypeRef::String => {
            if !v.is_string() {
                mismatch(problems, "a string")
            }
        }
        TypeRef::Bool => {
            if !v.is_boolean() {
                mismatch(problems, "a boolean")
            }
        }
        TypeRef::Int => {
            if !(v.is_i64() || v.is_u64()) {
                mismatch(problems, "an integer")
            }
        }
        TypeRef::Number => {
            if !v.is_number() {
                mismatch(problems, "a number")
            }
        }
        TypeRef::Json => {}
        TypeRef::Object => {
            if !v.is_object() {
                mismatch(problems, "an object")
            }
        }
        TypeRef::List(t) => match v {
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    check_value(ir, t, item, &format!("{ctx}[{i}]"), problems);
                }
            }
            _ => mismatch(problems, "an array"),
        },
        TypeRef::Map(t) => match v {
            Value::Object(m) => {
                for (k, item) in m {
                    check_value(ir, t, item, &format!("{ctx}.{k}"), problems);
                }
            }
            _ => mismatch(problems, "an object"),
        },
        TypeRef::Named(n) => {
            let Some(def) = ir.type_def(n) else {
                problems.push(format!("{ctx}: unknown type `{n}`"));
                return;
            };
            match &def.kind {
                TypeKind::Alias(inner) => check_value(ir, inner, v, ctx, problems),
                TypeKind::Struct(s) => match v {
                    Value::Object(obj) => check_struct_fields(
                        ir,
                        &s.fields,
                        s.additional_fields,
                        obj,
                        &[],
                        ctx,
                        problems,
                    ),
                    _ => mismatch(problems, &format!("an object ({n})")),
                },
                TypeKind::Enum(e) => match v {
                    Value::String(s) => {
                        if !e.open && !e.values.iter().any(|x| &x.value == s) {
                            let allowed: Vec<&str> =
                                e.values.iter().map(|x| x.value.as_str()).collect();
                            problems.push(format!(
                                "{ctx}: {s:?} is not a value of {n} (one of {})",
                                allowed.join(", ")
                            ));
                        }
                    }
                    _ => mismatch(problems, &format!("a string ({n})")),
                },
                TypeKind::Union(u) => match v {
                    Value::Object(obj) => match obj.get(&u.tag).and_then(Value::as_str) {
                        Some(tag) => match u.variants.iter().find(|x| x.tag_value == tag) {
                            Some(var) => check_value(
                                ir,
                                &TypeRef::Named(var.type_name.clone()),
                                v,
                                ctx,
                                problems,
                            ),
                            None if u.open => {}
                            None => problems.push(format!(
                                "{ctx}: `{}` {tag:?} is not a variant of {n}",
                                u.tag
                            )),
                        },
                        None => {
                            problems.push(format!("{ctx}: missing string tag `{}` of {n}", u.tag))
                        }
                    },
                    _ => mismatch(problems, &format!("an object ({n})")),
                },
                TypeKind::OneOf(o) => {
                    let mut all = Vec::new();
                    for alt in &o.variants {
                        let mut errs = Vec::new();
                        check_value(ir, alt, v, ctx, &mut errs);
                        if errs.is_empty() {
                            return;
                        }
                        all.push(format!("as {alt}: {}", errs.join("; ")));
                    }
                    problems.push(format!(
                        "{ctx}: matches no variant of {n} ({})",
                        all.join(" | ")
                    ));
                }
            }
        }
    }
}

/// Checks an object against a field list. `skip` names keys handled by the caller (`id`, `type`).
pub fn check_struct_fields(
    ir: &Ir,
    fields: &[Field],
    additional: bool,
    obj: &Map<String, Value>,
    skip: &[&str],
    ctx: &str,
    problems: &mut Vec<String>,
) {
    for f in fields {
        let fctx = format!("{ctx}.{}", f.name);
        match obj.get(&f.name) {
            None if f.optional => {}
            None => problems.push(format!("{ctx}: missing required field `{}`", f.name)),
            Some(Value::Null) if f.nullable => {}
            Some(Value::Null) if f.optional => problems.push(format!(
                "{fctx}: null is not allowed (the field is optional but not nullable: leave the key out)"
            )),
            Some(val) => {
                if let Some(c) = &f.constant
                    && val != c
                {
                    problems.push(format!("{fctx}: must be {c}"));
                }
                check_value(ir, &f.ty, val, &fctx, problems);
            }
        }
    }
    if !additional {
        for key in obj.keys() {
            if !skip.contains(&key.as_str()) && !fields.iter().any(|f| &f.name == key) {
                problems.push(format!("{ctx}: unknown key `{key}`"));
            }
        }
    }
}

/// `true` when `text` matches `template`, where each `{placeholder}` stands for any text (possibly empty).
pub fn matches_template(template: &str, text: &str) -> bool {
    // Split into literal pieces around placeholders.
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        match rest[open..].find('}') {
            Some(close)
                if rest[open + 1..open + close]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                pieces.push(&rest[..open]);
                rest = &rest[open + close + 1..];
            }
            _ => break,
        }
    }
    pieces.push(rest);
    if pieces.len() == 1 {
        return template == text;
    }
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if !text.starts_with(first)
        || !text[first.len()..].ends_with(last)
        || text.len() < first.len() + last.len()
    {
        return false;
    }
    let mut middle = &text[first.len()..text.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match middle.find(piece) {
            Some(i) => middle = &middle[i + piece.len()..],
            None => return false,
        }
    }
    true
}

/// Non-fatal findings for the spec author: error texts in examples that match neither the command's (or call's)
/// `errors` nor an envelope template.
pub fn lint(ir: &Ir) -> Vec<String> {
    let mut out = Vec::new();
    let requests = ir.commands.iter().map(|c| ("commands", c));
    for (section, c) in requests.chain(ir.calls.iter().map(|c| ("calls", c))) {
        for ex in &c.examples {
            let Some(text) = ex
                .response
                .as_ref()
                .and_then(|r| r.get("error"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let known = c.errors.iter().any(|e| matches_template(&e.text, text))
                || ir
                    .envelope
                    .errors
                    .iter()
                    .any(|e| matches_template(&e.text, text));
            if !known {
                out.push(format!(
                    "{section}.{}.examples[{}]: error text {text:?} is not listed under its `errors`",
                    c.name, ex.name
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::matches_template;

    #[test]
    fn templates() {
        assert!(matches_template(
            "Unknown command: {type}",
            "Unknown command: x"
        ));
        assert!(matches_template(
            "Model not found: {provider}/{id}",
            "Model not found: a/b/c"
        ));
        assert!(matches_template("{a}", ""));
        assert!(!matches_template(
            "Model not found: {provider}/{id}",
            "Model not found: ab"
        ));
        assert!(matches_template(
            "literal {not a placeholder}",
            "literal {not a placeholder}"
        ));
        assert!(!matches_template("a{x}b", "ab-"));
    }
}
