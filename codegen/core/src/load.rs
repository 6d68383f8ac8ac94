//! Reading a spec (`rpc.yaml`, `extension.yaml`): strict YAML parsing (serde-saphyr, YAML 1.2 booleans, duplicate
//! keys rejected), then conversion of the raw YAML shape into the [`crate::ir`] types, then [`crate::validate`].

use std::path::Path;

use indexmap::IndexMap;
use serde_saphyr::options::DuplicateKeyPolicy;

use crate::ir::*;
use crate::raw::*;

/// Everything that is wrong with a spec. Loading reports all problems it can find, not only the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The file that was loaded (for messages).
    pub file: String,
    /// One message per problem; YAML-level errors carry line and column.
    pub problems: Vec<String>,
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}: {} problem(s)", self.file, self.problems.len())?;
        for p in &self.problems {
            writeln!(f, "- {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecError {}

/// Loads, converts and validates a spec file.
pub fn load_spec(path: impl AsRef<Path>) -> Result<Ir, SpecError> {
    let path = path.as_ref();
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| SpecError {
        file: file.clone(),
        problems: vec![format!("cannot read: {e}")],
    })?;
    load_spec_str(&text, &file)
}

/// Like [`load_spec`], from a string; `file` names it in messages.
pub fn load_spec_str(text: &str, file: &str) -> Result<Ir, SpecError> {
    let fail = |problems: Vec<String>| SpecError {
        file: file.to_string(),
        problems,
    };
    let options = serde_saphyr::options! {
        strict_booleans: true,
        duplicate_keys: DuplicateKeyPolicy::Error,
    };
    let raw: RawSpec = serde_saphyr::from_str_with_options(text, options)
        .map_err(|e| fail(vec![e.to_string()]))?;
    let mut problems = Vec::new();
    let ir = convert(raw, &mut problems);
    if problems.is_empty() {
        crate::validate::validate(&ir, &mut problems);
    }
    if problems.is_empty() {
        Ok(ir)
    } else {
        Err(fail(problems))
    }
}

fn at(loc: &serde_saphyr::Location) -> String {
    format!("line {} column {}", loc.line(), loc.column())
}

fn convert(raw: RawSpec, problems: &mut Vec<String>) -> Ir {
    let protocol = ProtocolMeta {
        name: raw.protocol.name,
        version: raw.protocol.version,
        doc: raw.protocol.doc,
    };
    let envelope = Envelope {
        doc: raw.envelope.doc,
        errors: raw
            .envelope
            .errors
            .into_iter()
            .map(|(key, text)| ErrorTemplate { key, text })
            .collect(),
        examples: raw
            .envelope
            .examples
            .into_iter()
            .enumerate()
            .map(|(i, v)| convert_envelope_example(i, v, problems))
            .collect(),
    };
    let types = raw
        .types
        .into_iter()
        .map(|(name, t)| convert_type(name, t, problems))
        .collect();
    let commands = raw
        .commands
        .into_iter()
        .map(|(name, c)| convert_command("commands", name, c, problems))
        .collect();
    let calls = raw
        .calls
        .into_iter()
        .map(|(name, c)| convert_command("calls", name, c, problems))
        .collect();
    let events = raw
        .events
        .into_iter()
        .map(|(name, m)| convert_message("events", name, m, problems))
        .collect();
    let inputs = raw
        .inputs
        .into_iter()
        .map(|(name, m)| convert_message("inputs", name, m, problems))
        .collect();
    Ir {
        protocol,
        envelope,
        types,
        commands,
        calls,
        events,
        inputs,
    }
}

/// An envelope example is either a bare response frame (named `#<n>`, 1-based) or a long form
/// `{name, doc?, line? | request?, response?}`, recognised by its `name` key (frames never have one).
fn convert_envelope_example(
    i: usize,
    v: serde_json::Value,
    problems: &mut Vec<String>,
) -> EnvelopeExample {
    if v.get("name").is_some() {
        match serde_json::from_value::<RawEnvelopeExample>(v) {
            Ok(e) => EnvelopeExample {
                name: e.name,
                doc: e.doc,
                line: e.line,
                request: e.request,
                response: e.response,
            },
            Err(e) => {
                problems.push(format!("envelope.examples[{i}]: {e}"));
                EnvelopeExample {
                    name: format!("#{}", i + 1),
                    doc: None,
                    line: None,
                    request: None,
                    response: None,
                }
            }
        }
    } else {
        EnvelopeExample {
            name: format!("#{}", i + 1),
            doc: None,
            line: None,
            request: None,
            response: Some(v),
        }
    }
}

fn type_ref(expr: &str, ctx: &str, problems: &mut Vec<String>) -> TypeRef {
    TypeRef::parse(expr).unwrap_or_else(|| {
        problems.push(format!("{ctx}: `{expr}` is not a type expression (string, bool, int, number, json, object, list<T>, map<T>, or a PascalCase type name)"));
        TypeRef::Json
    })
}

fn convert_fields(
    fields: IndexMap<String, RawField>,
    ctx: &str,
    problems: &mut Vec<String>,
) -> Vec<Field> {
    fields
        .into_iter()
        .map(|(name, f)| {
            let fctx = format!("{ctx}.{name} ({})", at(&f.ty.referenced));
            Field {
                ty: type_ref(&f.ty.value, &fctx, problems),
                name,
                optional: f.optional,
                nullable: f.nullable,
                raw: f.raw,
                constant: f.constant,
                doc: f.doc,
                since: f.since,
                note: f.note,
            }
        })
        .collect()
}

fn convert_type(name: String, t: RawType, problems: &mut Vec<String>) -> TypeDef {
    let ctx = format!("types.{name} ({})", at(&t.kind.referenced));
    let kind_name = t.kind.value.as_str();
    // Which optional keys each kind accepts; anything else present is a mistake.
    let present: Vec<(&str, bool)> = vec![
        ("fields", t.fields.is_some()),
        ("additionalFields", t.additional_fields.is_some()),
        ("values", t.values.is_some()),
        ("open", t.open.is_some()),
        ("tag", t.tag.is_some()),
        ("variants", t.variants.is_some()),
        ("type", t.ty.is_some()),
    ];
    let allowed: &[&str] = match kind_name {
        "struct" => &["fields", "additionalFields"],
        "enum" => &["values", "open"],
        "union" => &["tag", "variants", "open"],
        "oneOf" => &["variants"],
        "alias" => &["type"],
        other => {
            problems.push(format!(
                "{ctx}: unknown kind `{other}` (expected struct, enum, union, oneOf, alias)"
            ));
            &[]
        }
    };
    for (key, is_present) in &present {
        if *is_present && !allowed.contains(key) && !allowed.is_empty() {
            problems.push(format!(
                "{ctx}: key `{key}` is not allowed for kind `{kind_name}`"
            ));
        }
    }
    let kind = match kind_name {
        "struct" => TypeKind::Struct(StructDef {
            fields: convert_fields(
                t.fields.unwrap_or_default(),
                &format!("types.{name}.fields"),
                problems,
            ),
            additional_fields: t.additional_fields.unwrap_or(false),
        }),
        "enum" => {
            let values = t.values.unwrap_or_else(|| {
                problems.push(format!("{ctx}: kind enum needs `values`"));
                Vec::new()
            });
            TypeKind::Enum(EnumDef {
                values: values
                    .into_iter()
                    .map(|v| EnumValue {
                        value: v.value,
                        doc: v.doc,
                    })
                    .collect(),
                open: t.open.unwrap_or(false),
            })
        }
        "union" => {
            let tag = t.tag.unwrap_or_else(|| {
                problems.push(format!("{ctx}: kind union needs `tag`"));
                String::new()
            });
            let variants = match t.variants {
                Some(RawVariants::Tagged(m)) => m
                    .into_iter()
                    .map(|(tag_value, type_name)| UnionVariant {
                        tag_value,
                        type_name,
                    })
                    .collect(),
                Some(RawVariants::List(_)) => {
                    problems.push(format!(
                        "{ctx}: union `variants` must be a map of tag value → struct type name"
                    ));
                    Vec::new()
                }
                None => {
                    problems.push(format!("{ctx}: kind union needs `variants`"));
                    Vec::new()
                }
            };
            TypeKind::Union(UnionDef {
                tag,
                variants,
                open: t.open.unwrap_or(false),
            })
        }
        "oneOf" => {
            let (variants, names) = match t.variants {
                Some(RawVariants::List(l)) => (
                    l.iter().map(|e| type_ref(e, &ctx, problems)).collect(),
                    None,
                ),
                // Named alternatives: `variants: { Text: string, Blocks: list<X> }` (names for generated code).
                Some(RawVariants::Tagged(m)) => (
                    m.values().map(|e| type_ref(e, &ctx, problems)).collect(),
                    Some(m.keys().cloned().collect()),
                ),
                None => {
                    problems.push(format!("{ctx}: kind oneOf needs `variants`"));
                    (Vec::new(), None)
                }
            };
            TypeKind::OneOf(OneOfDef { variants, names })
        }
        "alias" => match t.ty {
            Some(e) => TypeKind::Alias(type_ref(&e, &ctx, problems)),
            None => {
                problems.push(format!("{ctx}: kind alias needs `type`"));
                TypeKind::Alias(TypeRef::Json)
            }
        },
        _ => TypeKind::Alias(TypeRef::Json),
    };
    TypeDef {
        name,
        doc: t.doc,
        kind,
        examples: t.examples,
        since: t.since,
        note: t.note,
    }
}

fn convert_command(
    section: &str,
    name: String,
    c: RawCommand,
    problems: &mut Vec<String>,
) -> Command {
    let ctx = format!("{section}.{name}");
    let result = match c.result {
        RawResult::None => CommandResult::None,
        RawResult::Data { ty, nullable } => CommandResult::Data {
            ty: type_ref(&ty, &format!("{ctx}.result"), problems),
            nullable,
        },
    };
    Command {
        params: convert_fields(c.params, &format!("{ctx}.params"), problems),
        name,
        doc: c.doc,
        group: c.group,
        documented: c.documented,
        result,
        errors: c
            .errors
            .into_iter()
            .map(|e| CommandError {
                text: e.text,
                name: e.name,
                when: e.when,
            })
            .collect(),
        examples: c
            .examples
            .into_iter()
            .map(|e| CommandExample {
                name: e.name,
                request: e.request,
                response: e.response,
                events: e.events,
                note: e.note,
            })
            .collect(),
        since: c.since,
        note: c.note,
    }
}

fn convert_message(
    section: &str,
    name: String,
    m: RawMessage,
    problems: &mut Vec<String>,
) -> Message {
    let ctx = format!("{section}.{name}");
    let body = match (m.fields, m.body) {
        (Some(fields), None) => {
            MessageBody::Fields(convert_fields(fields, &format!("{ctx}.fields"), problems))
        }
        (None, Some(body)) => MessageBody::Type(body),
        (None, None) => MessageBody::Fields(Vec::new()),
        (Some(_), Some(_)) => {
            problems.push(format!("{ctx}: give either `fields` or `body`, not both"));
            MessageBody::Fields(Vec::new())
        }
    };
    Message {
        name,
        doc: m.doc,
        group: m.group,
        documented: m.documented,
        body,
        examples: m.examples,
        since: m.since,
        note: m.note,
    }
}
