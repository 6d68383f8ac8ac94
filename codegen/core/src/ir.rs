//! The typed intermediate representation of a spec (`protocol/rpc.yaml`, `protocol/extension.yaml`).
//!
//! Backends read only this IR, never YAML. Everything here has already been validated by
//! [`crate::load_spec`]: every [`TypeRef::Named`] resolves to an entry of [`Ir::types`], union variants name
//! struct types that carry the tag as a `const` field, names are unique, and every example validates against its
//! declared type. Order of every list is the order in the spec file (= documentation and output order).

use serde_json::Value;

/// The whole protocol.
#[derive(Debug, Clone, PartialEq)]
pub struct Ir {
    /// `protocol:` metadata.
    pub protocol: ProtocolMeta,
    /// `envelope:` framing prose, generic error texts and envelope examples.
    pub envelope: Envelope,
    /// Shared types (`types:`), in documentation order.
    pub types: Vec<TypeDef>,
    /// Commands (`commands:`): requests the peer sends and the runtime answers, in documentation order.
    pub commands: Vec<Command>,
    /// Calls (`calls:`): requests the runtime sends and the peer answers, in documentation order. Same shape as
    /// commands; a wire name is never both. Empty for `rpc.yaml`.
    pub calls: Vec<Command>,
    /// Stdout events (`events:`), in documentation order.
    pub events: Vec<Message>,
    /// Stdin messages that are not commands and get no response (`inputs:`), e.g. `extension_ui_response`.
    pub inputs: Vec<Message>,
}

impl Ir {
    /// Looks up a shared type by name.
    pub fn type_def(&self, name: &str) -> Option<&TypeDef> {
        self.types.iter().find(|t| t.name == name)
    }

    /// Looks up a command by wire name.
    pub fn command(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// Looks up a call by wire name.
    pub fn call(&self, name: &str) -> Option<&Command> {
        self.calls.iter().find(|c| c.name == name)
    }

    /// Looks up an event by wire name.
    pub fn event(&self, name: &str) -> Option<&Message> {
        self.events.iter().find(|e| e.name == name)
    }

    /// Looks up an input message by wire name.
    pub fn input(&self, name: &str) -> Option<&Message> {
        self.inputs.iter().find(|e| e.name == name)
    }

    /// For a message with `body: TypeName`: `true` when the body type describes the whole frame, i.e. every struct
    /// it stands for declares the `type` key itself (as `const: <message name>`); `false` when the body describes
    /// the frame's other keys and `type` is added around it. Both spellings are accepted by the loader.
    pub fn body_declares_type(&self, type_name: &str) -> bool {
        let declares = |n: &str| match self.type_def(n).map(|t| &t.kind) {
            Some(TypeKind::Struct(s)) => s.fields.iter().any(|f| f.name == "type"),
            _ => false,
        };
        match self.type_def(type_name).map(|t| &t.kind) {
            Some(TypeKind::Struct(_)) => declares(type_name),
            Some(TypeKind::Union(u)) => {
                !u.variants.is_empty() && u.variants.iter().all(|v| declares(&v.type_name))
            }
            Some(TypeKind::OneOf(o)) => {
                !o.variants.is_empty()
                    && o.variants
                        .iter()
                        .all(|v| matches!(v, TypeRef::Named(n) if declares(n)))
            }
            _ => false,
        }
    }

    /// Follows aliases until a non-alias type expression is reached.
    pub fn resolve_alias<'a>(&'a self, ty: &'a TypeRef) -> &'a TypeRef {
        let mut cur = ty;
        // Validation rejects alias cycles, so this terminates; the bound is belt and braces.
        for _ in 0..64 {
            match cur {
                TypeRef::Named(n) => match self.type_def(n).map(|t| &t.kind) {
                    Some(TypeKind::Alias(inner)) => cur = inner,
                    _ => return cur,
                },
                _ => return cur,
            }
        }
        cur
    }
}

/// `protocol:` metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct ProtocolMeta {
    /// Protocol name, e.g. `dreb-rpc`.
    pub name: String,
    /// Protocol revision (a string, e.g. `"1"`).
    pub version: String,
    /// Overview (Markdown).
    pub doc: Option<String>,
}

/// `envelope:`: framing prose, the generic error texts, and example frames.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Framing and response-wrapper prose (Markdown).
    pub doc: Option<String>,
    /// Generic error texts by key (e.g. `parse` → `Failed to parse JSON: {message}`), in spec order.
    /// `{placeholder}` marks variable parts.
    pub errors: Vec<ErrorTemplate>,
    /// Example frames (parse error, unknown command, ...).
    pub examples: Vec<EnvelopeExample>,
}

impl Envelope {
    /// The error text template stored under `key`, if any.
    pub fn error(&self, key: &str) -> Option<&str> {
        self.errors
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.text.as_str())
    }

    /// The `commandFailed` template (`Command failed: {message}` when the spec has none).
    pub fn command_failed(&self) -> &str {
        self.error("commandFailed")
            .unwrap_or("Command failed: {message}")
    }

    /// For a command error text that is the `commandFailed` template wrapped around a message (a failure the
    /// reference *throws*, e.g. `Command failed: Already compacted`), the message (`Already compacted`); `None`
    /// for a text returned as it is.
    pub fn thrown_message<'t>(&self, text: &'t str) -> Option<&'t str> {
        let template = self.command_failed();
        let (prefix, suffix) = template.split_once("{message}")?;
        if text.len() >= prefix.len() + suffix.len()
            && text.starts_with(prefix)
            && text.ends_with(suffix)
            && !(prefix.is_empty() && suffix.is_empty())
        {
            Some(&text[prefix.len()..text.len() - suffix.len()])
        } else {
            None
        }
    }
}

/// One generic error text of the envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorTemplate {
    /// Key, e.g. `parse`, `unknownCommand`, `commandFailed`.
    pub key: String,
    /// Exact text; `{placeholder}` for variable parts.
    pub text: String,
}

/// An example of the envelope (input line → response frame).
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeExample {
    /// Unique name within the envelope.
    pub name: String,
    /// Free text.
    pub doc: Option<String>,
    /// The raw input line when it is not a JSON value (e.g. `not json` for a parse error).
    pub line: Option<String>,
    /// The input as a JSON value (e.g. `{"type": "bogus"}`), when it is JSON.
    pub request: Option<Value>,
    /// The response frame written for it.
    pub response: Option<Value>,
}

/// A shared type definition (`types:` entry).
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDef {
    /// `PascalCase` name.
    pub name: String,
    /// Markdown doc.
    pub doc: Option<String>,
    /// What kind of type it is.
    pub kind: TypeKind,
    /// Example values, each validated against this type.
    pub examples: Vec<Value>,
    /// Free text: the version that introduced the type.
    pub since: Option<String>,
    /// Free text note.
    pub note: Option<String>,
}

/// The body of a type definition.
#[derive(Debug, Clone, PartialEq)]
pub enum TypeKind {
    /// An object with named fields (`kind: struct`).
    Struct(StructDef),
    /// A set of string literals (`kind: enum`).
    Enum(EnumDef),
    /// A union discriminated by a tag key inside the object (`kind: union`).
    Union(UnionDef),
    /// An untagged union tried in order (`kind: oneOf`).
    OneOf(OneOfDef),
    /// Another name for a type expression (`kind: alias`).
    Alias(TypeRef),
}

/// `kind: struct`.
#[derive(Debug, Clone, PartialEq)]
pub struct StructDef {
    /// Fields in spec order, which is the JSON key order on output.
    pub fields: Vec<Field>,
    /// `true`: an open object; unknown keys are allowed and must be kept.
    pub additional_fields: bool,
}

/// One field of a struct, of command params, or of an event/input body.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Exact wire key (camelCase as on the wire). May be a Rust/TS/Python keyword (`type`, `from`, ...).
    pub name: String,
    /// Value type (never includes nullability).
    pub ty: TypeRef,
    /// The key may be absent. An unset optional field is written by leaving the key out, never as `null`.
    pub optional: bool,
    /// The value may be `null`. A nullable non-optional field is always written (`null` when unset).
    pub nullable: bool,
    /// The field always has this literal value (tags of union variants).
    pub constant: Option<Value>,
    /// Command params only: the server receives the field's raw JSON (absent → none) and validates it itself, so
    /// a handler can answer a bad value with the command's own error text. Clients and docs use [`Field::ty`];
    /// examples are validated against it.
    pub raw: bool,
    /// Markdown doc.
    pub doc: Option<String>,
    /// Free text: the version that introduced the field.
    pub since: Option<String>,
    /// Free text note.
    pub note: Option<String>,
}

impl Field {
    /// `optional && nullable`: absent, `null` and a value are three distinct states.
    pub fn is_tristate(&self) -> bool {
        self.optional && self.nullable
    }
}

/// `kind: enum`: string literals.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumDef {
    /// The allowed values, in spec order.
    pub values: Vec<EnumValue>,
    /// `true`: other strings are accepted and kept.
    pub open: bool,
}

/// One enum literal.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumValue {
    /// The exact wire string.
    pub value: String,
    /// Markdown doc.
    pub doc: Option<String>,
}

/// `kind: union`: internally tagged union.
#[derive(Debug, Clone, PartialEq)]
pub struct UnionDef {
    /// The tag key inside the object (e.g. `type`, `method`, `role`).
    pub tag: String,
    /// Variants in spec order.
    pub variants: Vec<UnionVariant>,
    /// `true`: an unknown tag value is kept as raw JSON, never an error.
    pub open: bool,
}

/// One variant of a tagged union.
#[derive(Debug, Clone, PartialEq)]
pub struct UnionVariant {
    /// The tag value on the wire (e.g. `text`).
    pub tag_value: String,
    /// The struct type of the variant. Validation guarantees it is a `kind: struct` whose field named by
    /// [`UnionDef::tag`] has `const: <tag_value>`.
    pub type_name: String,
}

/// `kind: oneOf`: an untagged union, tried in order.
#[derive(Debug, Clone, PartialEq)]
pub struct OneOfDef {
    /// The alternatives, in the order they are tried.
    pub variants: Vec<TypeRef>,
    /// `PascalCase` names of the alternatives when the spec gives them (`variants:` as a map of name → type), in
    /// the order of [`Self::variants`]; `None` lets backends derive names from the types. Not on the wire.
    pub names: Option<Vec<String>>,
}

/// A type expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeRef {
    /// `string`: JSON string.
    String,
    /// `bool`: JSON boolean.
    Bool,
    /// `int`: JSON integer (i64).
    Int,
    /// `number`: JSON number (f64).
    Number,
    /// `json`: any JSON value.
    Json,
    /// `object`: any JSON object.
    Object,
    /// `list<T>`.
    List(Box<TypeRef>),
    /// `map<T>`: object with string keys and `T` values; key order is kept.
    Map(Box<TypeRef>),
    /// A name defined under `types:`.
    Named(String),
}

impl TypeRef {
    /// Parses a type expression such as `list<map<Model>>`. Returns `None` on a syntax error; does not check that
    /// named types exist.
    pub fn parse(expr: &str) -> Option<TypeRef> {
        let s = expr.trim();
        if let Some(inner) = s.strip_prefix("list<").and_then(|r| r.strip_suffix('>')) {
            return Some(TypeRef::List(Box::new(TypeRef::parse(inner)?)));
        }
        if let Some(inner) = s.strip_prefix("map<").and_then(|r| r.strip_suffix('>')) {
            return Some(TypeRef::Map(Box::new(TypeRef::parse(inner)?)));
        }
        Some(match s {
            "string" => TypeRef::String,
            "bool" => TypeRef::Bool,
            "int" => TypeRef::Int,
            "number" => TypeRef::Number,
            "json" => TypeRef::Json,
            "object" => TypeRef::Object,
            _ => {
                let mut chars = s.chars();
                let first = chars.next()?;
                if !first.is_ascii_uppercase() || !chars.all(|c| c.is_ascii_alphanumeric()) {
                    return None;
                }
                TypeRef::Named(s.to_string())
            }
        })
    }

    /// The spec spelling of this expression (inverse of [`TypeRef::parse`]).
    pub fn to_spec(&self) -> String {
        match self {
            TypeRef::String => "string".into(),
            TypeRef::Bool => "bool".into(),
            TypeRef::Int => "int".into(),
            TypeRef::Number => "number".into(),
            TypeRef::Json => "json".into(),
            TypeRef::Object => "object".into(),
            TypeRef::List(t) => format!("list<{}>", t.to_spec()),
            TypeRef::Map(t) => format!("map<{}>", t.to_spec()),
            TypeRef::Named(n) => n.clone(),
        }
    }
}

impl std::fmt::Display for TypeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_spec())
    }
}

/// A command (`commands:` entry) or a call (`calls:` entry): a request answered by one response.
#[derive(Debug, Clone, PartialEq)]
pub struct Command {
    /// Exact wire `type` string, e.g. `get_state`.
    pub name: String,
    /// Markdown doc.
    pub doc: Option<String>,
    /// Section heading in the docs.
    pub group: Option<String>,
    /// `false` for commands the reference serves but `spec/rpc.md` does not document.
    pub documented: bool,
    /// Request fields besides `id` and `type`, in spec order.
    pub params: Vec<Field>,
    /// What a success response carries.
    pub result: CommandResult,
    /// Every error text this command can return.
    pub errors: Vec<CommandError>,
    /// Request/response examples.
    pub examples: Vec<CommandExample>,
    /// Free text: the version that introduced the command.
    pub since: Option<String>,
    /// Free text note.
    pub note: Option<String>,
}

impl Command {
    /// `PascalCase` form of the wire name (`get_state` → `GetState`), used by backends for derived names.
    pub fn pascal_name(&self) -> String {
        pascal_case(&self.name)
    }
}

/// The `data` of a command's success response.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandResult {
    /// `result: none`: success responses carry no `data` key.
    None,
    /// `data` is always present with this type (`null` allowed when `nullable`).
    Data {
        /// The type of `data`.
        ty: TypeRef,
        /// `data` may be `null`.
        nullable: bool,
    },
}

/// One error text a command can return.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandError {
    /// Exact text; `{placeholder}` for variable parts.
    pub text: String,
    /// `PascalCase` name of the error (`name:`); when absent, backends use [`CommandError::derived_name`].
    pub name: Option<String>,
    /// When it happens (free text).
    pub when: Option<String>,
}

/// The name reserved for the catch-all case backends add to every command's error type (an unexpected failure,
/// answered with the envelope's `commandFailed` text).
pub const UNEXPECTED_ERROR_NAME: &str = "Unexpected";

/// One piece of an error text template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextPart {
    /// Literal text.
    Literal(String),
    /// A `{placeholder}` (its name, without braces).
    Placeholder(String),
}

/// Splits an error text into literal parts and `{placeholder}`s. A placeholder is `{` + ASCII letters, digits or
/// `_` (at least one, starting with a letter) + `}`; any other brace is literal.
pub fn text_parts(text: &str) -> Vec<TextPart> {
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        literal.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        if name_len > 0
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && after[name_len..].starts_with('}')
        {
            if !literal.is_empty() {
                parts.push(TextPart::Literal(std::mem::take(&mut literal)));
            }
            parts.push(TextPart::Placeholder(name.to_string()));
            rest = &after[name_len + 1..];
        } else {
            literal.push('{');
            rest = after;
        }
    }
    literal.push_str(rest);
    if !literal.is_empty() {
        parts.push(TextPart::Literal(literal));
    }
    parts
}

impl CommandError {
    /// The placeholder names of [`Self::text`], each once, in order of first use.
    pub fn placeholders(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for part in text_parts(&self.text) {
            if let TextPart::Placeholder(p) = part
                && !out.contains(&p)
            {
                out.push(p);
            }
        }
        out
    }

    /// The name backends use: `name:` if given, else [`Self::derived_name`] of `inner` (the text without the
    /// envelope's `commandFailed` wrapping, see [`Envelope::thrown_message`]).
    pub fn variant_name(&self, envelope: &Envelope) -> String {
        self.name.clone().unwrap_or_else(|| {
            let inner = envelope.thrown_message(&self.text).unwrap_or(&self.text);
            Self::derived_name(inner)
        })
    }

    /// A `PascalCase` name derived from an error text: the words (ASCII letters and digits) of its first clause
    /// (up to the first `.`, `,`, `:`, `;`, `(`, `!`, `?` or newline), placeholders skipped, at most six; a text
    /// with no such words is named after its placeholders (`{message}` → `Message`), or `Error`.
    pub fn derived_name(text: &str) -> String {
        let mut words: Vec<String> = Vec::new();
        let mut placeholders = Vec::new();
        'parts: for part in text_parts(text) {
            match part {
                TextPart::Placeholder(p) => placeholders.push(pascal_case(&p)),
                TextPart::Literal(l) => {
                    let end = l
                        .find(['.', ',', ':', ';', '(', '!', '?', '\n'])
                        .unwrap_or(l.len());
                    words.extend(
                        l[..end]
                            .split(|c: char| !c.is_ascii_alphanumeric())
                            .filter(|w| !w.is_empty())
                            .map(|w| {
                                let mut c = w.chars();
                                let first = c.next().unwrap().to_ascii_uppercase();
                                std::iter::once(first).chain(c).collect::<String>()
                            }),
                    );
                    if end < l.len() && !words.is_empty() {
                        break 'parts;
                    }
                }
            }
        }
        words.truncate(6);
        let mut name = if words.is_empty() {
            placeholders.concat()
        } else {
            words.concat()
        };
        if name.is_empty() {
            name = "Error".into();
        }
        if name.starts_with(|c: char| c.is_ascii_digit()) {
            name.insert(0, 'E');
        }
        name
    }
}

/// One example of a command.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandExample {
    /// Unique within the command.
    pub name: String,
    /// The request frame (validated against the params plus `id`/`type`).
    pub request: Option<Value>,
    /// The response frame (validated against the response envelope and the result type).
    pub response: Option<Value>,
    /// Events this example causes, in order (each validated as an event frame).
    pub events: Vec<Value>,
    /// Free text, e.g. where `spec/rpc.md` and the reference differ.
    pub note: Option<String>,
}

/// An event (`events:` entry) or an input (`inputs:` entry): a frame tagged by `type` that is not a command or
/// response.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Exact wire `type` string.
    pub name: String,
    /// Markdown doc.
    pub doc: Option<String>,
    /// Section heading in the docs.
    pub group: Option<String>,
    /// `false` when `spec/rpc.md` does not document it.
    pub documented: bool,
    /// The frame's fields besides `type`.
    pub body: MessageBody,
    /// Example frames (each a full frame including `type`).
    pub examples: Vec<Value>,
    /// Free text: the version that introduced it.
    pub since: Option<String>,
    /// Free text note.
    pub note: Option<String>,
}

impl Message {
    /// `PascalCase` form of the wire name (`message_update` → `MessageUpdate`).
    pub fn pascal_name(&self) -> String {
        pascal_case(&self.name)
    }
}

/// The shape of an event or input frame besides its `type` key.
#[derive(Debug, Clone, PartialEq)]
pub enum MessageBody {
    /// `fields:` listed inline (spec order = key order, after `type`).
    Fields(Vec<Field>),
    /// `body: TypeName`: the frame's other keys are described by this named type, a tagged union or `oneOf` of
    /// structs (or a struct). Those structs do not declare the frame's `type` key.
    Type(String),
}

/// `snake_case`/`kebab-case`/`camelCase` → `PascalCase` (`get_state` → `GetState`, `setStatus` → `SetStatus`).
pub fn pascal_case(s: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in s.chars() {
        if c == '_' || c == '-' || c == '.' || c == ' ' || c == '/' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// `camelCase`/`PascalCase`/`kebab-case` → `snake_case` (`fullOutputPath` → `full_output_path`).
pub fn snake_case(s: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '-' || c == ' ' || c == '.' || c == '/' {
            out.push('_');
        } else if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && !out.ends_with('_') && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_expressions_round_trip() {
        for s in ["string", "list<map<Model>>", "map<json>", "object", "Foo2"] {
            assert_eq!(TypeRef::parse(s).unwrap().to_spec(), s);
        }
        assert_eq!(TypeRef::parse("list<>"), None);
        assert_eq!(TypeRef::parse("lowercase"), None);
        assert_eq!(TypeRef::parse("list<string"), None);
    }

    #[test]
    fn case_conversions() {
        assert_eq!(pascal_case("get_state"), "GetState");
        assert_eq!(pascal_case("setStatus"), "SetStatus");
        assert_eq!(snake_case("fullOutputPath"), "full_output_path");
        assert_eq!(snake_case("modelId"), "model_id");
        assert_eq!(snake_case("HTMLExport"), "html_export");
        assert_eq!(snake_case("type"), "type");
    }
}
