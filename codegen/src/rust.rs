//! Rust backend: emits the protocol module that `crates/dreb-protocol/build.rs` writes to `OUT_DIR` and the crate
//! `include!`s. See `docs/adr/0001-rust-codegen-shape.md` for the shape and `0002` for dispatch texts.
//!
//! The output refers to `crate::support` (hand-written runtime helpers in dreb-protocol: `Tristate`, const-tag
//! checks, the frame wrappers) and to the crates `serde`, `serde_json`, `indexmap`, `futures` by absolute path.
//! Code is built as text; a small writer keeps the indentation readable.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;

use crate::ir::*;

/// Emits the Rust protocol module for `ir` (one file's contents, starting with the banner).
pub fn generate(ir: &Ir) -> String {
    let mut g = Gen {
        ir,
        out: String::new(),
        consts: Vec::new(),
    };
    g.file();
    g.out
}

struct Gen<'a> {
    ir: &'a Ir,
    out: String,
    /// `(marker ident, literal)` of every string `const` field, emitted in the `consts` module.
    consts: Vec<(String, String)>,
}

const KEYWORDS: &[&str] = &[
    "as", "break", "const", "continue", "crate", "else", "enum", "extern", "false", "fn", "for",
    "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return",
    "self", "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where",
    "while", "async", "await", "dyn", "abstract", "become", "box", "do", "final", "macro",
    "override", "priv", "typeof", "unsized", "virtual", "yield", "try", "gen",
];

/// A Rust identifier for a wire name in snake case: keywords become raw identifiers (`r#type`), except those
/// that cannot be raw (`self`, `super`, `crate`, `Self`), which get a trailing underscore.
pub fn field_ident(wire: &str) -> String {
    let mut s = snake_case(wire);
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s = format!("f_{s}");
    }
    escape_keyword(s)
}

fn escape_keyword(s: String) -> String {
    if ["self", "super", "crate", "Self", "_"].contains(&s.as_str()) {
        format!("{s}_")
    } else if KEYWORDS.contains(&s.as_str()) {
        format!("r#{s}")
    } else {
        s
    }
}

/// A `PascalCase` Rust identifier for a wire value (enum values, tags).
pub fn variant_ident(wire: &str) -> String {
    let mut s = pascal_case(wire);
    s.retain(|c| c.is_ascii_alphanumeric() || c == '_');
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s = format!("V{s}");
    }
    if s == "Self" { "Self_".into() } else { s }
}

/// Makes names unique by appending `2`, `3`, ... to repeats (order kept).
fn dedupe(names: Vec<String>, reserved: &[&str]) -> Vec<String> {
    let mut seen: HashSet<String> = reserved.iter().map(|s| s.to_string()).collect();
    names
        .into_iter()
        .map(|n| {
            let mut cand = n.clone();
            let mut i = 2;
            while !seen.insert(cand.clone()) {
                cand = format!("{n}{i}");
                i += 1;
            }
            cand
        })
        .collect()
}

fn str_lit(s: &str) -> String {
    // Debug formatting of a str is a valid Rust string literal.
    format!("{s:?}")
}

/// Rewrites Markdown so rustdoc treats it well: untagged code fences become `text` (never doctests).
fn doc_lines(doc: &str) -> Vec<String> {
    let mut in_fence = false;
    doc.trim_end()
        .lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("```") {
                let info = t.trim_start_matches('`').trim();
                let opening = !in_fence;
                in_fence = !in_fence;
                if opening && (info.is_empty() || info == "rust") {
                    return format!("{}```text", &l[..l.len() - t.len()]);
                }
            }
            l.trim_end().to_string()
        })
        .collect()
}

impl<'a> Gen<'a> {
    fn w(&mut self, indent: usize, line: &str) {
        if !line.is_empty() {
            for _ in 0..indent {
                self.out.push_str("    ");
            }
            self.out.push_str(line);
        }
        self.out.push('\n');
    }

    fn doc(&mut self, indent: usize, doc: Option<&str>) {
        if let Some(d) = doc {
            for l in doc_lines(d) {
                if l.is_empty() {
                    self.w(indent, "///");
                } else {
                    self.w(indent, &format!("/// {l}"));
                }
            }
        }
    }

    fn doc_with_notes(
        &mut self,
        indent: usize,
        doc: Option<&str>,
        since: Option<&str>,
        note: Option<&str>,
    ) {
        self.doc(indent, doc);
        if let Some(s) = since {
            if doc.is_some() {
                self.w(indent, "///");
            }
            self.w(indent, &format!("/// Since: {s}"));
        }
        if let Some(n) = note {
            if doc.is_some() || since.is_some() {
                self.w(indent, "///");
            }
            self.doc(indent, Some(&format!("Note: {n}")));
        }
    }

    fn file(&mut self) {
        self.out.push_str(&crate::banner_comment("//"));
        self.out.push_str(&format!(
            "//\n// Protocol {} version {}. Types, wire names, the RpcHandler trait and dispatch.\n\n",
            self.ir.protocol.name, self.ir.protocol.version
        ));
        self.w(
            0,
            &format!(
                "/// Protocol name (`protocol.name`).\npub const PROTOCOL_NAME: &str = {};",
                str_lit(&self.ir.protocol.name)
            ),
        );
        self.w(0, &format!("/// Protocol revision (`protocol.version`).\npub const PROTOCOL_VERSION: &str = {};", str_lit(&self.ir.protocol.version)));
        self.w(0, "");
        self.wire_names();
        self.error_texts();
        for t in &self.ir.types {
            self.type_def(t);
        }
        for c in &self.ir.commands {
            let fields = c.params.clone();
            let name = format!("{}Params", c.pascal_name());
            let doc = format!(
                "Parameters of the `{}` command (the request's fields besides `id` and `type`).",
                c.name
            );
            self.struct_def(&name, Some(&doc), &fields, false, false);
        }
        for e in &self.ir.events {
            if let MessageBody::Fields(fields) = &e.body {
                let doc = format!("Fields of the `{}` event besides `type`.", e.name);
                self.struct_def(
                    &format!("{}Event", e.pascal_name()),
                    Some(&doc),
                    fields,
                    false,
                    false,
                );
            }
        }
        self.command_enum();
        self.response();
        self.event_enum();
        self.input_enum();
        self.handler_trait();
        self.conformance();
        self.consts_module();
    }

    // ---------------------------------------------------------------------------------------------------------
    // Wire names and texts

    fn wire_names(&mut self) {
        self.w(
            0,
            "/// Exact wire `type` strings of every command, event and input message.",
        );
        self.w(0, "pub mod wire {");
        let sections: [(&str, &str, Vec<String>); 3] = [
            (
                "commands",
                "Command `type` strings.",
                self.ir.commands.iter().map(|c| c.name.clone()).collect(),
            ),
            (
                "events",
                "Event `type` strings.",
                self.ir.events.iter().map(|c| c.name.clone()).collect(),
            ),
            (
                "inputs",
                "Input message `type` strings (stdin messages that are not commands).",
                self.ir.inputs.iter().map(|c| c.name.clone()).collect(),
            ),
        ];
        for (module, doc, names) in sections {
            self.w(1, &format!("/// {doc}"));
            self.w(1, &format!("pub mod {module} {{"));
            let idents = dedupe(
                names.iter().map(|n| snake_case(n).to_uppercase()).collect(),
                &["ALL"],
            );
            for (n, id) in names.iter().zip(&idents) {
                self.w(2, &format!("/// `{n}`"));
                self.w(2, &format!("pub const {id}: &str = {};", str_lit(n)));
            }
            self.w(2, "/// All of them, in spec order.");
            self.w(
                2,
                &format!("pub const ALL: &[&str] = &[{}];", idents.join(", ")),
            );
            self.w(1, "}");
        }
        self.w(0, "}");
        self.w(0, "");
    }

    fn error_texts(&mut self) {
        let env = &self.ir.envelope;
        let get = |k: &str, default: &str| env.error(k).unwrap_or(default).to_string();
        let texts = [
            (
                "PARSE",
                get("parse", "Failed to parse JSON: {message}"),
                "Parse error (`{message}`). Written with `command: \"parse\"` and no `id`.",
            ),
            (
                "UNKNOWN_COMMAND",
                get("unknownCommand", "Unknown command: {type}"),
                "Unknown command `type` (`{type}`).",
            ),
            (
                "COMMAND_FAILED",
                get("commandFailed", "Command failed: {message}"),
                "An unexpected failure inside a handler (`{message}`).",
            ),
            (
                "INVALID_PARAMS",
                get(
                    "invalidParams",
                    "Invalid parameters for {command}: {message}",
                ),
                "A known command whose fields do not match the spec (`{command}`, `{message}` names the field).",
            ),
            (
                "SHUTTING_DOWN",
                get("shuttingDown", "Shutting down: {command} was not run"),
                "A command read after shutdown began (`{command}`); it was not run.",
            ),
        ];
        self.w(
            0,
            "/// Envelope error templates from `envelope.errors`; `{name}` marks a variable part.",
        );
        self.w(0, "pub mod error_text {");
        for (id, text, doc) in texts {
            self.w(1, &format!("/// {doc}"));
            self.w(1, &format!("pub const {id}: &str = {};", str_lit(&text)));
        }
        self.w(0, "}");
        self.w(0, "");
    }

    // ---------------------------------------------------------------------------------------------------------
    // Types

    fn rust_type(&self, ty: &TypeRef, boxed: bool) -> String {
        let t = match ty {
            TypeRef::String => "::std::string::String".to_string(),
            TypeRef::Bool => "bool".to_string(),
            TypeRef::Int => "i64".to_string(),
            TypeRef::Number => "crate::support::JsNumber".to_string(),
            TypeRef::Json => "::serde_json::Value".to_string(),
            TypeRef::Object => {
                "::serde_json::Map<::std::string::String, ::serde_json::Value>".to_string()
            }
            TypeRef::List(t) => format!("::std::vec::Vec<{}>", self.rust_type(t, false)),
            TypeRef::Map(t) => format!(
                "::indexmap::IndexMap<::std::string::String, {}>",
                self.rust_type(t, false)
            ),
            TypeRef::Named(n) => n.clone(),
        };
        if boxed {
            format!("::std::boxed::Box<{t}>")
        } else {
            t
        }
    }

    /// `true` when a field of type `ty` inside `owner` would make `owner` infinitely sized (reaches `owner` again
    /// without passing through a list or map), so the field must be boxed.
    fn needs_box(&self, owner: &str, ty: &TypeRef) -> bool {
        let mut seen = HashSet::new();
        self.reaches(ty, owner, &mut seen)
    }

    fn reaches(&self, ty: &TypeRef, target: &str, seen: &mut HashSet<String>) -> bool {
        let TypeRef::Named(n) = ty else { return false };
        if n == target {
            return true;
        }
        if !seen.insert(n.clone()) {
            return false;
        }
        match self.ir.type_def(n).map(|t| &t.kind) {
            Some(TypeKind::Struct(s)) => s.fields.iter().any(|f| self.reaches(&f.ty, target, seen)),
            Some(TypeKind::Union(u)) => u
                .variants
                .iter()
                .any(|v| self.reaches(&TypeRef::Named(v.type_name.clone()), target, seen)),
            Some(TypeKind::OneOf(o)) => o.variants.iter().any(|v| self.reaches(v, target, seen)),
            Some(TypeKind::Alias(a)) => self.reaches(a, target, seen),
            _ => false,
        }
    }

    fn type_def(&mut self, t: &TypeDef) {
        match &t.kind {
            TypeKind::Struct(s) => {
                let doc = self.type_doc(t);
                self.struct_def(
                    &t.name,
                    doc.as_deref(),
                    &s.fields,
                    s.additional_fields,
                    true,
                );
            }
            TypeKind::Enum(e) => self.enum_def(t, e),
            TypeKind::Union(u) => self.union_def(t, u),
            TypeKind::OneOf(o) => self.one_of_def(t, o),
            TypeKind::Alias(a) => {
                let doc = self.type_doc(t);
                self.doc(0, doc.as_deref());
                let ty = self.rust_type(a, false);
                self.w(0, &format!("pub type {} = {ty};", t.name));
                self.w(0, "");
            }
        }
    }

    fn type_doc(&self, t: &TypeDef) -> Option<String> {
        let mut d = t.doc.clone().unwrap_or_default();
        for (label, v) in [("Since", &t.since), ("Note", &t.note)] {
            if let Some(v) = v {
                if !d.is_empty() {
                    d.push_str("\n\n");
                }
                let _ = write!(d, "{label}: {v}");
            }
        }
        if d.is_empty() { None } else { Some(d) }
    }

    fn struct_def(
        &mut self,
        name: &str,
        doc: Option<&str>,
        fields: &[Field],
        additional: bool,
        is_shared: bool,
    ) {
        self.doc(0, doc);
        self.w(
            0,
            "#[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]",
        );
        if fields.is_empty() && !additional {
            self.w(0, &format!("pub struct {name} {{}}"));
            self.w(0, "");
            return;
        }
        self.w(0, &format!("pub struct {name} {{"));
        let mut idents: Vec<String> = fields.iter().map(|f| field_ident(&f.name)).collect();
        if additional {
            idents.push("other_fields".into());
        }
        let idents = dedupe(idents, &[]);
        for (f, ident) in fields.iter().zip(&idents) {
            self.doc_with_notes(1, f.doc.as_deref(), f.since.as_deref(), f.note.as_deref());
            if f.raw {
                if f.doc.is_some() || f.since.is_some() || f.note.is_some() {
                    self.w(1, "///");
                }
                self.w(
                    1,
                    &format!(
                        "/// Raw JSON (`raw: true`): the handler validates it as `{}`.",
                        f.ty
                    ),
                );
            }
            let plain_ident = ident.trim_start_matches("r#");
            let mut attrs: Vec<String> = Vec::new();
            if plain_ident != f.name {
                attrs.push(format!("rename = {}", str_lit(&f.name)));
            }
            let boxed = is_shared && self.needs_box(name, &f.ty);
            let inner = self.rust_type(&f.ty, boxed);
            let ty = if f.raw {
                // Validated by the handler, not by decoding: any JSON, absent → None.
                attrs.push("default".into());
                attrs.push("skip_serializing_if = \"::std::option::Option::is_none\"".into());
                "::std::option::Option<::serde_json::Value>".to_string()
            } else if let Some(Value::String(lit)) = &f.constant {
                let marker = format!("{name}{}", variant_ident(&f.name));
                self.consts.push((marker.clone(), lit.clone()));
                format!("consts::{marker}")
            } else if f.is_tristate() {
                attrs.push("default".into());
                attrs.push("skip_serializing_if = \"crate::support::Tristate::is_absent\"".into());
                format!("crate::support::Tristate<{inner}>")
            } else if f.optional {
                attrs.push("default".into());
                attrs.push("skip_serializing_if = \"::std::option::Option::is_none\"".into());
                format!("::std::option::Option<{inner}>")
            } else if f.nullable {
                // Present-but-null is required: a missing key is an error, unlike serde's default for Option.
                attrs.push("deserialize_with = \"crate::support::required_nullable\"".into());
                format!("::std::option::Option<{inner}>")
            } else {
                inner
            };
            if !attrs.is_empty() {
                self.w(1, &format!("#[serde({})]", attrs.join(", ")));
            }
            self.w(1, &format!("pub {ident}: {ty},"));
        }
        if additional {
            let ident = idents.last().cloned().unwrap_or_default();
            self.w(1, "/// Keys not described by the spec (this is an open object); kept in order and written back.");
            self.w(1, "#[serde(flatten)]");
            self.w(
                1,
                &format!(
                    "pub {ident}: ::serde_json::Map<::std::string::String, ::serde_json::Value>,"
                ),
            );
        }
        self.w(0, "}");
        self.w(0, "");
    }

    fn enum_def(&mut self, t: &TypeDef, e: &EnumDef) {
        let name = &t.name;
        let variants = dedupe(
            e.values.iter().map(|v| variant_ident(&v.value)).collect(),
            &["Other"],
        );
        let doc = self.type_doc(t);
        self.doc(0, doc.as_deref());
        if e.open {
            self.w(0, "///");
            self.w(
                0,
                "/// Open: values not listed in the spec are kept in [`Self::Other`].",
            );
            self.w(0, "#[derive(Debug, Clone, PartialEq, Eq, Hash)]");
        } else {
            self.w(0, "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]");
        }
        self.w(0, &format!("pub enum {name} {{"));
        for (v, ident) in e.values.iter().zip(&variants) {
            self.doc(1, v.doc.as_deref());
            self.w(1, &format!("/// Wire value `{}`.", v.value));
            self.w(1, &format!("{ident},"));
        }
        if e.open {
            self.w(1, "/// A value the spec does not list, kept as sent.");
            self.w(1, "Other(::std::string::String),");
        }
        self.w(0, "}");
        self.w(0, "");
        self.w(0, &format!("impl {name} {{"));
        self.w(1, "/// Every listed wire value, in spec order.");
        let values: Vec<String> = e.values.iter().map(|v| str_lit(&v.value)).collect();
        self.w(
            1,
            &format!(
                "pub const VALUES: &'static [&'static str] = &[{}];",
                values.join(", ")
            ),
        );
        self.w(1, "/// The wire value.");
        self.w(1, "pub fn as_str(&self) -> &str {");
        self.w(2, "match self {");
        for (v, ident) in e.values.iter().zip(&variants) {
            self.w(3, &format!("Self::{ident} => {},", str_lit(&v.value)));
        }
        if e.open {
            self.w(3, "Self::Other(s) => s,");
        }
        self.w(2, "}");
        self.w(1, "}");
        self.w(
            1,
            "/// Parses a wire value; `None` for an unlisted value of a closed enum.",
        );
        self.w(
            1,
            "pub fn from_wire(s: &str) -> ::std::option::Option<Self> {",
        );
        self.w(2, "match s {");
        for (v, ident) in e.values.iter().zip(&variants) {
            self.w(
                3,
                &format!(
                    "{} => ::std::option::Option::Some(Self::{ident}),",
                    str_lit(&v.value)
                ),
            );
        }
        if e.open {
            self.w(
                3,
                "other => ::std::option::Option::Some(Self::Other(other.to_string())),",
            );
        } else {
            self.w(3, "_ => ::std::option::Option::None,");
        }
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
        self.w(0, &format!("impl ::std::fmt::Display for {name} {{"));
        self.w(
            1,
            "fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {",
        );
        self.w(2, "f.write_str(self.as_str())");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
        self.w(0, &format!("impl ::serde::Serialize for {name} {{"));
        self.w(1, "fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {");
        self.w(2, "s.serialize_str(self.as_str())");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
        self.w(
            0,
            &format!("impl<'de> ::serde::Deserialize<'de> for {name} {{"),
        );
        self.w(1, "fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {");
        self.w(
            2,
            "let s = <::std::string::String as ::serde::Deserialize>::deserialize(d)?;",
        );
        self.w(2, "Self::from_wire(&s).ok_or_else(|| <D::Error as ::serde::de::Error>::unknown_variant(&s, Self::VALUES))");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
    }

    fn union_def(&mut self, t: &TypeDef, u: &UnionDef) {
        let name = &t.name;
        let catch_all = if u
            .variants
            .iter()
            .any(|v| variant_ident(&v.tag_value) == "Unknown")
        {
            "UnknownTag"
        } else {
            "Unknown"
        };
        let variants = dedupe(
            u.variants
                .iter()
                .map(|v| variant_ident(&v.tag_value))
                .collect(),
            &[catch_all],
        );
        let doc = self.type_doc(t);
        self.doc(0, doc.as_deref());
        if doc.is_some() {
            self.w(0, "///");
        }
        self.w(
            0,
            &format!(
                "/// Tagged by `{}`; each variant struct carries the tag itself.",
                u.tag
            ),
        );
        if u.open {
            self.w(
                0,
                &format!(
                    "/// Open: an unknown `{}` is kept as raw JSON in [`Self::{catch_all}`].",
                    u.tag
                ),
            );
        }
        self.w(0, "#[derive(Debug, Clone, PartialEq)]");
        self.w(0, &format!("pub enum {name} {{"));
        for (v, ident) in u.variants.iter().zip(&variants) {
            self.w(1, &format!("/// `{}: \"{}\"`", u.tag, v.tag_value));
            let boxed = self.needs_box(name, &TypeRef::Named(v.type_name.clone()));
            let ty = self.rust_type(&TypeRef::Named(v.type_name.clone()), boxed);
            self.w(1, &format!("{ident}({ty}),"));
        }
        if u.open {
            self.w(1, "/// A variant this version does not know, kept as sent.");
            self.w(1, &format!("{catch_all}(::serde_json::Value),"));
        }
        self.w(0, "}");
        self.w(0, "");
        self.w(0, &format!("impl {name} {{"));
        self.w(
            1,
            &format!("/// Every known `{}` value, in spec order.", u.tag),
        );
        let tags: Vec<String> = u.variants.iter().map(|v| str_lit(&v.tag_value)).collect();
        self.w(
            1,
            &format!(
                "pub const TAGS: &'static [&'static str] = &[{}];",
                tags.join(", ")
            ),
        );
        self.w(0, "}");
        self.w(0, "");
        self.w(0, &format!("impl ::serde::Serialize for {name} {{"));
        self.w(1, "fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {");
        self.w(2, "match self {");
        for ident in &variants {
            self.w(
                3,
                &format!("Self::{ident}(v) => ::serde::Serialize::serialize(v, s),"),
            );
        }
        if u.open {
            self.w(
                3,
                &format!("Self::{catch_all}(v) => ::serde::Serialize::serialize(v, s),"),
            );
        }
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
        self.w(
            0,
            &format!("impl<'de> ::serde::Deserialize<'de> for {name} {{"),
        );
        self.w(1, "fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {");
        self.w(
            2,
            "let v = <::serde_json::Value as ::serde::Deserialize>::deserialize(d)?;",
        );
        self.w(
            2,
            &format!(
                "let tag = match v.get({}).and_then(::serde_json::Value::as_str) {{",
                str_lit(&u.tag)
            ),
        );
        self.w(3, "::std::option::Option::Some(tag) => tag.to_string(),");
        if u.open {
            self.w(3, &format!("::std::option::Option::None => return ::std::result::Result::Ok(Self::{catch_all}(v)),"));
        } else {
            self.w(3, &format!(
                "::std::option::Option::None => return ::std::result::Result::Err(<D::Error as ::serde::de::Error>::custom({})),",
                str_lit(&format!("missing string tag `{}` of {name}", u.tag))
            ));
        }
        self.w(2, "};");
        self.w(2, "match tag.as_str() {");
        for (v, ident) in u.variants.iter().zip(&variants) {
            let boxed = self.needs_box(name, &TypeRef::Named(v.type_name.clone()));
            let wrap = if boxed {
                format!("|x| Self::{ident}(::std::boxed::Box::new(x))")
            } else {
                format!("Self::{ident}")
            };
            self.w(3, &format!(
                "{} => crate::support::from_value::<{}>(v).map({wrap}).map_err(<D::Error as ::serde::de::Error>::custom),",
                str_lit(&v.tag_value),
                v.type_name
            ));
        }
        if u.open {
            self.w(
                3,
                &format!("_ => ::std::result::Result::Ok(Self::{catch_all}(v)),"),
            );
        } else {
            self.w(3, "other => ::std::result::Result::Err(<D::Error as ::serde::de::Error>::unknown_variant(other, Self::TAGS)),");
        }
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
        // `From` each variant struct, unless a struct appears twice (conflicting impls).
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for v in &u.variants {
            *counts.entry(v.type_name.as_str()).or_default() += 1;
        }
        for (v, ident) in u.variants.iter().zip(&variants) {
            if counts[v.type_name.as_str()] != 1 {
                continue;
            }
            let boxed = self.needs_box(name, &TypeRef::Named(v.type_name.clone()));
            let value = if boxed {
                "::std::boxed::Box::new(v)"
            } else {
                "v"
            };
            self.w(
                0,
                &format!("impl ::std::convert::From<{}> for {name} {{", v.type_name),
            );
            self.w(1, &format!("fn from(v: {}) -> Self {{", v.type_name));
            self.w(2, &format!("Self::{ident}({value})"));
            self.w(1, "}");
            self.w(0, "}");
            self.w(0, "");
        }
    }

    fn one_of_def(&mut self, t: &TypeDef, o: &OneOfDef) {
        let name = &t.name;
        let idents = dedupe(
            o.variants
                .iter()
                .map(|v| match v {
                    TypeRef::Named(n) => n.clone(),
                    other => variant_ident(&other.to_spec().replace(['<', '>'], "_")),
                })
                .collect(),
            &[],
        );
        let doc = self.type_doc(t);
        self.doc(0, doc.as_deref());
        if doc.is_some() {
            self.w(0, "///");
        }
        self.w(0, "/// Untagged: the variants are tried in order.");
        self.w(
            0,
            "#[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]",
        );
        self.w(0, "#[serde(untagged)]");
        self.w(0, &format!("pub enum {name} {{"));
        for (v, ident) in o.variants.iter().zip(&idents) {
            self.w(1, &format!("/// `{v}`"));
            let boxed = self.needs_box(name, v);
            self.w(1, &format!("{ident}({}),", self.rust_type(v, boxed)));
        }
        self.w(0, "}");
        self.w(0, "");
    }

    // ---------------------------------------------------------------------------------------------------------
    // Commands and responses

    fn command_idents(&self) -> Vec<String> {
        dedupe(
            self.ir
                .commands
                .iter()
                .map(|c| variant_ident(&c.name))
                .collect(),
            &["Unknown"],
        )
    }

    fn command_enum(&mut self) {
        let idents = self.command_idents();
        self.w(0, "/// A command: the request's `type` with its parameters. The request `id` is kept in `Request`.");
        self.w(0, "#[derive(Debug, Clone, PartialEq)]");
        self.w(0, "pub enum Command {");
        for (c, ident) in self.ir.commands.clone().iter().zip(&idents) {
            self.doc(1, c.doc.as_deref());
            if c.doc.is_some() {
                self.w(1, "///");
            }
            self.w(1, &format!("/// Wire `type`: `{}`.", c.name));
            self.w(1, &format!("{ident}({}Params),", c.pascal_name()));
        }
        self.w(0, "}");
        self.w(0, "");
        self.w(0, "impl Command {");
        self.w(1, "/// The wire `type` of this command.");
        self.w(1, "pub fn name(&self) -> &'static str {");
        self.w(2, "match self {");
        for (c, ident) in self.ir.commands.iter().zip(&idents) {
            self.w(3, &format!("Self::{ident}(_) => {},", str_lit(&c.name)));
        }
        if self.ir.commands.is_empty() {
            self.w(3, "_ => unreachable!(),");
        }
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "");
        self.w(1, "/// Builds a command from its wire `type` and the request's other keys (`id`/`type` may be present and");
        self.w(1, "/// are ignored). `Ok(None)` when `type` is not a command; `Err` names the offending field.");
        self.w(1, "pub fn from_wire(");
        self.w(2, "command_type: &str,");
        self.w(
            2,
            "fields: ::serde_json::Map<::std::string::String, ::serde_json::Value>,",
        );
        self.w(
            1,
            ") -> ::std::result::Result<::std::option::Option<Self>, ::std::string::String> {",
        );
        self.w(2, "let fields = ::serde_json::Value::Object(fields);");
        self.w(
            2,
            "::std::result::Result::Ok(::std::option::Option::Some(match command_type {",
        );
        for (c, ident) in self.ir.commands.iter().zip(&idents) {
            self.w(
                3,
                &format!(
                    "{} => Self::{ident}(crate::support::from_value::<{}Params>(fields)?),",
                    str_lit(&c.name),
                    c.pascal_name()
                ),
            );
        }
        self.w(
            3,
            "_ => return ::std::result::Result::Ok(::std::option::Option::None),",
        );
        self.w(2, "}))");
        self.w(1, "}");
        self.w(0, "");
        self.w(1, "/// Writes the request frame (`id` when given, `type`, then the parameters in spec order).");
        self.w(1, "pub fn serialize_with_id<S: ::serde::Serializer>(");
        self.w(2, "&self,");
        self.w(2, "id: ::std::option::Option<&::serde_json::Value>,");
        self.w(2, "s: S,");
        self.w(1, ") -> ::std::result::Result<S::Ok, S::Error> {");
        self.w(2, "match self {");
        for (c, ident) in self.ir.commands.iter().zip(&idents) {
            self.w(3, &format!(
                "Self::{ident}(p) => ::serde::Serialize::serialize(&crate::support::Frame {{ id, r#type: {}, body: p }}, s),",
                str_lit(&c.name)
            ));
        }
        if self.ir.commands.is_empty() {
            self.w(3, "_ => { let _ = (id, s); unreachable!() }");
        }
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
    }

    fn response(&mut self) {
        let idents = self.command_idents();
        self.w(0, "/// The `data` of a success response, typed by command.");
        self.w(0, "#[derive(Debug, Clone, PartialEq)]");
        self.w(0, "pub enum ResponseData {");
        for (c, ident) in self.ir.commands.iter().zip(&idents) {
            match &c.result {
                CommandResult::None => {
                    self.w(
                        1,
                        &format!(
                            "/// `{}` succeeded; the response has no `data` key.",
                            c.name
                        ),
                    );
                    self.w(1, &format!("{ident},"));
                }
                CommandResult::Data { ty, nullable } => {
                    let inner = self.rust_type(ty, false);
                    if *nullable {
                        self.w(
                            1,
                            &format!(
                                "/// `{}` result; `None` is written as `data: null`.",
                                c.name
                            ),
                        );
                        self.w(1, &format!("{ident}(::std::option::Option<{inner}>),"));
                    } else {
                        self.w(1, &format!("/// `{}` result.", c.name));
                        self.w(1, &format!("{ident}({inner}),"));
                    }
                }
            }
        }
        self.w(
            1,
            "/// A success response for a command this version does not know (raw `data`, if any).",
        );
        self.w(1, "Unknown(::std::option::Option<::serde_json::Value>),");
        self.w(0, "}");
        self.w(0, "");
        self.w(0, "impl ResponseData {");
        self.w(1, "/// Writes the `data` entry, if this result has one.");
        self.w(1, "pub fn serialize_data<M: ::serde::ser::SerializeMap>(&self, map: &mut M) -> ::std::result::Result<(), M::Error> {");
        self.w(2, "match self {");
        for (c, ident) in self.ir.commands.iter().zip(&idents) {
            match c.result {
                CommandResult::None => self.w(
                    3,
                    &format!("Self::{ident} => ::std::result::Result::Ok(()),"),
                ),
                CommandResult::Data { .. } => self.w(
                    3,
                    &format!("Self::{ident}(d) => map.serialize_entry(\"data\", d),"),
                ),
            }
        }
        self.w(
            3,
            "Self::Unknown(::std::option::Option::Some(d)) => map.serialize_entry(\"data\", d),",
        );
        self.w(
            3,
            "Self::Unknown(::std::option::Option::None) => ::std::result::Result::Ok(()),",
        );
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "");
        self.w(1, "/// Parses the `data` of a success response to `command` (`None` = the key is absent).");
        self.w(1, "pub fn from_wire(");
        self.w(2, "command: ::std::option::Option<&str>,");
        self.w(2, "data: ::std::option::Option<::serde_json::Value>,");
        self.w(
            1,
            ") -> ::std::result::Result<Self, ::std::string::String> {",
        );
        self.w(2, "match (command, data) {");
        for (c, ident) in self.ir.commands.iter().zip(&idents) {
            let n = str_lit(&c.name);
            match &c.result {
                CommandResult::None => {
                    self.w(3, &format!("(::std::option::Option::Some({n}), ::std::option::Option::None) => ::std::result::Result::Ok(Self::{ident}),"));
                    self.w(3, &format!(
                        "(::std::option::Option::Some({n}), ::std::option::Option::Some(_)) => ::std::result::Result::Err({}.to_string()),",
                        str_lit(&format!("`{}` responses carry no `data`", c.name))
                    ));
                }
                CommandResult::Data { ty, nullable } => {
                    let inner = self.rust_type(ty, false);
                    let target = if *nullable {
                        format!("::std::option::Option<{inner}>")
                    } else {
                        inner
                    };
                    self.w(3, &format!(
                        "(::std::option::Option::Some({n}), ::std::option::Option::Some(d)) => crate::support::from_value::<{target}>(d).map(Self::{ident}).map_err(|e| format!(\"data: {{e}}\")),"
                    ));
                    self.w(3, &format!(
                        "(::std::option::Option::Some({n}), ::std::option::Option::None) => ::std::result::Result::Err({}.to_string()),",
                        str_lit(&format!("`{}` responses need `data`", c.name))
                    ));
                }
            }
        }
        self.w(3, "(_, d) => ::std::result::Result::Ok(Self::Unknown(d)),");
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
    }

    // ---------------------------------------------------------------------------------------------------------
    // Events and inputs

    fn message_payload_type(&self, m: &Message, suffix: &str) -> String {
        match &m.body {
            MessageBody::Fields(_) => format!("{}{suffix}", m.pascal_name()),
            MessageBody::Type(t) => t.clone(),
        }
    }

    fn event_enum(&mut self) {
        let events = self.ir.events.clone();
        let idents = dedupe(
            events.iter().map(|e| variant_ident(&e.name)).collect(),
            &["Unknown"],
        );
        self.w(0, "/// A stdout frame that is not a response. **Open**: an unknown `type` is kept as raw JSON in");
        self.w(
            0,
            "/// [`Event::Unknown`], never an error, so adding events stays compatible.",
        );
        self.w(0, "#[derive(Debug, Clone, PartialEq)]");
        self.w(0, "pub enum Event {");
        for (e, ident) in events.iter().zip(&idents) {
            self.doc(1, e.doc.as_deref());
            if e.doc.is_some() {
                self.w(1, "///");
            }
            self.w(1, &format!("/// Wire `type`: `{}`.", e.name));
            self.w(
                1,
                &format!("{ident}({}),", self.message_payload_type(e, "Event")),
            );
        }
        self.w(1, "/// An event this version does not know, kept as sent.");
        self.w(1, "Unknown(::serde_json::Value),");
        self.w(0, "}");
        self.w(0, "");
        self.w(0, "impl Event {");
        self.w(
            1,
            "/// The wire `type` (`None` for an unknown frame without a string `type`).",
        );
        self.w(1, "pub fn name(&self) -> ::std::option::Option<&str> {");
        self.w(2, "match self {");
        for (e, ident) in events.iter().zip(&idents) {
            self.w(
                3,
                &format!(
                    "Self::{ident}(_) => ::std::option::Option::Some({}),",
                    str_lit(&e.name)
                ),
            );
        }
        self.w(
            3,
            "Self::Unknown(v) => v.get(\"type\").and_then(::serde_json::Value::as_str),",
        );
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
        self.w(0, "impl ::serde::Serialize for Event {");
        self.w(1, "fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {");
        self.w(2, "match self {");
        for (e, ident) in events.iter().zip(&idents) {
            if matches!(&e.body, MessageBody::Type(t) if self.ir.body_declares_type(t)) {
                self.w(
                    3,
                    &format!("Self::{ident}(v) => ::serde::Serialize::serialize(v, s),"),
                );
            } else {
                self.w(3, &format!(
                    "Self::{ident}(v) => ::serde::Serialize::serialize(&crate::support::Frame {{ id: ::std::option::Option::None, r#type: {}, body: v }}, s),",
                    str_lit(&e.name)
                ));
            }
        }
        self.w(
            3,
            "Self::Unknown(v) => ::serde::Serialize::serialize(v, s),",
        );
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
        self.w(0, "impl<'de> ::serde::Deserialize<'de> for Event {");
        self.w(1, "fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {");
        self.w(
            2,
            "let v = <::serde_json::Value as ::serde::Deserialize>::deserialize(d)?;",
        );
        self.w(
            2,
            "let name = match v.get(\"type\").and_then(::serde_json::Value::as_str) {",
        );
        self.w(3, "::std::option::Option::Some(n) => n.to_string(),");
        self.w(
            3,
            "::std::option::Option::None => return ::std::result::Result::Ok(Self::Unknown(v)),",
        );
        self.w(2, "};");
        self.w(2, "match name.as_str() {");
        for (e, ident) in events.iter().zip(&idents) {
            self.w(3, &format!(
                "{} => crate::support::from_value::<{}>(v).map(Self::{ident}).map_err(<D::Error as ::serde::de::Error>::custom),",
                str_lit(&e.name),
                self.message_payload_type(e, "Event")
            ));
        }
        self.w(3, "_ => ::std::result::Result::Ok(Self::Unknown(v)),");
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
        for (e, ident) in events.iter().zip(&idents) {
            let ty = self.message_payload_type(e, "Event");
            if events
                .iter()
                .filter(|o| self.message_payload_type(o, "Event") == ty)
                .count()
                == 1
            {
                self.w(0, &format!("impl ::std::convert::From<{ty}> for Event {{"));
                self.w(1, &format!("fn from(v: {ty}) -> Self {{"));
                self.w(2, &format!("Self::{ident}(v)"));
                self.w(1, "}");
                self.w(0, "}");
                self.w(0, "");
            }
        }
    }

    fn input_enum(&mut self) {
        let inputs = self.ir.inputs.clone();
        let idents = dedupe(inputs.iter().map(|e| variant_ident(&e.name)).collect(), &[]);
        self.w(0, "/// A stdin message that is not a command and never gets a response. Carries the raw frame so the");
        self.w(0, "/// receiver can apply its own validation (and report malformed answers); parse it with");
        self.w(0, "/// [`Input::parse`].");
        self.w(0, "#[derive(Debug, Clone, PartialEq)]");
        self.w(0, "pub enum Input {");
        for (m, ident) in inputs.iter().zip(&idents) {
            self.doc(1, m.doc.as_deref());
            if m.doc.is_some() {
                self.w(1, "///");
            }
            self.w(
                1,
                &format!(
                    "/// Wire `type`: `{}`; typed form [`{}`].",
                    m.name,
                    self.message_payload_type(m, "Input")
                ),
            );
            self.w(
                1,
                &format!("{ident}(::serde_json::Map<::std::string::String, ::serde_json::Value>),"),
            );
        }
        self.w(0, "}");
        self.w(0, "");
        for m in &inputs {
            if let MessageBody::Fields(fields) = &m.body {
                let doc = format!("Fields of the `{}` input message besides `type`.", m.name);
                self.struct_def(
                    &format!("{}Input", m.pascal_name()),
                    Some(&doc),
                    fields,
                    false,
                    false,
                );
            }
        }
        self.w(0, "impl Input {");
        self.w(1, "/// Recognises an input message by its `type`; gives the frame back when it is not one.");
        self.w(1, "pub fn from_wire(");
        self.w(2, "message_type: &str,");
        self.w(
            2,
            "frame: ::serde_json::Map<::std::string::String, ::serde_json::Value>,",
        );
        self.w(1, ") -> ::std::result::Result<Self, ::serde_json::Map<::std::string::String, ::serde_json::Value>> {");
        self.w(2, "match message_type {");
        for (m, ident) in inputs.iter().zip(&idents) {
            self.w(
                3,
                &format!(
                    "{} => ::std::result::Result::Ok(Self::{ident}(frame)),",
                    str_lit(&m.name)
                ),
            );
        }
        self.w(
            3,
            "_ => { let _ = message_type; ::std::result::Result::Err(frame) }",
        );
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "");
        self.w(1, "/// The wire `type`.");
        self.w(1, "pub fn name(&self) -> &'static str {");
        if inputs.is_empty() {
            self.w(2, "match *self {}");
        } else {
            self.w(2, "match self {");
            for (m, ident) in inputs.iter().zip(&idents) {
                self.w(3, &format!("Self::{ident}(_) => {},", str_lit(&m.name)));
            }
            self.w(2, "}");
        }
        self.w(1, "}");
        self.w(0, "");
        self.w(1, "/// The raw frame, including `type`.");
        self.w(1, "pub fn frame(&self) -> &::serde_json::Map<::std::string::String, ::serde_json::Value> {");
        if inputs.is_empty() {
            self.w(2, "match *self {}");
        } else {
            self.w(2, "match self {");
            for ident in &idents {
                self.w(3, &format!("Self::{ident}(f) => f,"));
            }
            self.w(2, "}");
        }
        self.w(1, "}");
        self.w(0, "");
        self.w(
            1,
            "/// Parses the frame as its typed form (the error names the offending field).",
        );
        self.w(1, "pub fn parse<T: ::serde::de::DeserializeOwned>(&self) -> ::std::result::Result<T, ::std::string::String> {");
        self.w(
            2,
            "crate::support::from_value(::serde_json::Value::Object(self.frame().clone()))",
        );
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
    }

    // ---------------------------------------------------------------------------------------------------------
    // Handler trait and dispatch

    fn result_type(&self, c: &Command) -> String {
        match &c.result {
            CommandResult::None => "()".into(),
            CommandResult::Data {
                ty,
                nullable: false,
            } => self.rust_type(ty, false),
            CommandResult::Data { ty, nullable: true } => {
                format!("::std::option::Option<{}>", self.rust_type(ty, false))
            }
        }
    }

    fn handler_trait(&mut self) {
        let commands = self.ir.commands.clone();
        self.w(0, "/// One async method per command. Implement it and pass it to `dispatch`: every method returns the");
        self.w(0, "/// command's result or an error text, written as `success: false` with exactly that text.");
        self.w(0, "///");
        self.w(0, "/// Methods are `fn ... -> impl Future + Send` (native async in traits, generic dispatch); implement them");
        self.w(
            0,
            "/// with `async fn`. See `docs/adr/0001-rust-codegen-shape.md`.",
        );
        self.w(
            0,
            "pub trait RpcHandler: ::std::marker::Send + ::std::marker::Sync {",
        );
        for c in &commands {
            self.doc(1, c.doc.as_deref());
            if !c.errors.is_empty() {
                if c.doc.is_some() {
                    self.w(1, "///");
                }
                self.w(1, "/// Error texts:");
                for e in &c.errors {
                    let item = match &e.when {
                        Some(w) => format!("- `{}`: {}", e.text.trim(), w.trim()),
                        None => format!("- `{}`", e.text.trim()),
                    };
                    self.doc(1, Some(&item));
                }
            }
            self.w(1, &format!(
                "fn {}(&self, ctx: &crate::support::RequestContext, params: {}Params) -> impl ::std::future::Future<Output = ::std::result::Result<{}, ::std::string::String>> + ::std::marker::Send;",
                field_ident(&c.name),
                c.pascal_name(),
                self.result_type(c)
            ));
            self.w(0, "");
        }
        self.w(0, "}");
        self.w(0, "");
        let idents = self.command_idents();
        self.w(0, "/// The lower-level service `dispatch` drives: one call per decoded command. Every [`RpcHandler`] is one;");
        self.w(0, "/// implement it directly to serve commands generically (proxies, recorders, replaying test doubles).");
        self.w(
            0,
            "pub trait CommandService: ::std::marker::Send + ::std::marker::Sync {",
        );
        self.w(1, "/// Runs one command.");
        self.w(1, "fn call(&self, ctx: &crate::support::RequestContext, command: Command) -> impl ::std::future::Future<Output = ::std::result::Result<ResponseData, ::std::string::String>> + ::std::marker::Send;");
        self.w(0, "}");
        self.w(0, "");
        self.w(0, "impl<H: RpcHandler> CommandService for H {");
        self.w(1, "async fn call(&self, ctx: &crate::support::RequestContext, command: Command) -> ::std::result::Result<ResponseData, ::std::string::String> {");
        self.w(2, "match command {");
        for (c, ident) in commands.iter().zip(&idents) {
            let call = format!("self.{}(ctx, p).await", field_ident(&c.name));
            match c.result {
                CommandResult::None => self.w(
                    3,
                    &format!("Command::{ident}(p) => {call}.map(|()| ResponseData::{ident}),"),
                ),
                CommandResult::Data { .. } => self.w(
                    3,
                    &format!("Command::{ident}(p) => {call}.map(ResponseData::{ident}),"),
                ),
            }
        }
        if commands.is_empty() {
            self.w(3, "_ => { let _ = ctx; unreachable!() }");
        }
        self.w(2, "}");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
    }

    fn conformance(&mut self) {
        self.w(0, "/// Spec-driven helpers for conformance tests.");
        self.w(0, "#[doc(hidden)]");
        self.w(0, "pub mod conformance {");
        self.w(1, "/// Parses `value` as the spec type `name` and serialises it back; `None` for an unknown name.");
        self.w(1, "pub fn reserialize_type(name: &str, value: ::serde_json::Value) -> ::std::option::Option<::std::result::Result<::serde_json::Value, ::std::string::String>> {");
        self.w(2, "fn go<T: ::serde::de::DeserializeOwned + ::serde::Serialize>(value: ::serde_json::Value) -> ::std::result::Result<::serde_json::Value, ::std::string::String> {");
        self.w(3, "let typed: T = crate::support::from_value(value)?;");
        self.w(
            3,
            "::serde_json::to_value(&typed).map_err(|e| e.to_string())",
        );
        self.w(2, "}");
        self.w(2, "::std::option::Option::Some(match name {");
        let names: Vec<String> = self.ir.types.iter().map(|t| t.name.clone()).collect();
        for n in names {
            self.w(3, &format!("{} => go::<super::{n}>(value),", str_lit(&n)));
        }
        self.w(3, "_ => return ::std::option::Option::None,");
        self.w(2, "})");
        self.w(1, "}");
        self.w(0, "}");
        self.w(0, "");
    }

    fn consts_module(&mut self) {
        self.w(0, "/// Marker types of `const` fields (union tags): each writes its literal and accepts only that literal.");
        self.w(0, "pub mod consts {");
        let mut seen = BTreeSet::new();
        let consts = std::mem::take(&mut self.consts);
        for (marker, lit) in consts {
            if !seen.insert(marker.clone()) {
                continue;
            }
            self.w(1, &format!("/// Always `{lit:?}`."));
            self.w(
                1,
                "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]",
            );
            self.w(1, &format!("pub struct {marker};"));
            self.w(1, &format!("impl {marker} {{"));
            self.w(2, "/// The literal.");
            self.w(
                2,
                &format!("pub const VALUE: &'static str = {};", str_lit(&lit)),
            );
            self.w(1, "}");
            self.w(1, &format!("impl ::serde::Serialize for {marker} {{"));
            self.w(2, "fn serialize<S: ::serde::Serializer>(&self, s: S) -> ::std::result::Result<S::Ok, S::Error> {");
            self.w(3, "s.serialize_str(Self::VALUE)");
            self.w(2, "}");
            self.w(1, "}");
            self.w(
                1,
                &format!("impl<'de> ::serde::Deserialize<'de> for {marker} {{"),
            );
            self.w(2, "fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {");
            self.w(
                3,
                "crate::support::expect_const(d, Self::VALUE).map(|()| Self)",
            );
            self.w(2, "}");
            self.w(1, "}");
        }
        self.w(0, "}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idents() {
        assert_eq!(field_ident("type"), "r#type");
        assert_eq!(field_ident("self"), "self_");
        assert_eq!(field_ident("fullOutputPath"), "full_output_path");
        assert_eq!(variant_ident("anthropic-messages"), "AnthropicMessages");
        assert_eq!(variant_ident("set_editor_text"), "SetEditorText");
        assert_eq!(variant_ident("5m"), "V5m");
        assert_eq!(dedupe(vec!["A".into(), "A".into()], &[]), ["A", "A2"]);
    }

    #[test]
    fn untagged_fences_become_text() {
        assert_eq!(
            doc_lines("a\n```\nx\n```\n```json\n{}\n```"),
            ["a", "```text", "x", "```", "```json", "{}", "```"]
        );
    }
}
