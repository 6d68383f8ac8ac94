//! The YAML shape of a spec (`protocol/rpc.yaml`, `protocol/extension.yaml`), as deserialised by serde-saphyr.
//! Every struct denies unknown keys so a typo is an error with line and column; duplicate keys are rejected by the
//! parser. Converted into [`crate::ir`] by `load.rs`; nothing outside the loader sees these types.

use indexmap::IndexMap;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpec {
    pub protocol: RawProtocol,
    pub envelope: RawEnvelope,
    #[serde(default)]
    pub types: IndexMap<String, RawType>,
    #[serde(default)]
    pub commands: IndexMap<String, RawCommand>,
    /// Requests the other way (runtime → peer): the same shape as `commands`.
    #[serde(default)]
    pub calls: IndexMap<String, RawCommand>,
    #[serde(default)]
    pub events: IndexMap<String, RawMessage>,
    #[serde(default)]
    pub inputs: IndexMap<String, RawMessage>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawProtocol {
    pub name: String,
    pub version: String,
    pub doc: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEnvelope {
    pub doc: Option<String>,
    #[serde(default)]
    pub errors: IndexMap<String, String>,
    /// Either plain response frames, or [`RawEnvelopeExample`] maps (told apart by their `name` key).
    #[serde(default)]
    pub examples: Vec<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawEnvelopeExample {
    pub name: String,
    #[serde(alias = "note")]
    pub doc: Option<String>,
    pub line: Option<String>,
    pub request: Option<Value>,
    pub response: Option<Value>,
}

/// One `types:` entry. Flat on purpose (rather than a serde enum tagged by `kind`): serde's internal tagging
/// buffers the content and would lose line/column information in errors. Keys that do not belong to the `kind`
/// are rejected by the loader.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawType {
    pub kind: Spanned<String>,
    pub doc: Option<String>,
    #[serde(default)]
    pub examples: Vec<Value>,
    pub note: Option<String>,
    pub since: Option<String>,
    // struct
    pub fields: Option<IndexMap<String, RawField>>,
    #[serde(rename = "additionalFields")]
    pub additional_fields: Option<bool>,
    // enum
    pub values: Option<Vec<RawEnumValue>>,
    // enum, union
    pub open: Option<bool>,
    // union
    pub tag: Option<String>,
    // union (map tag → type) or oneOf (list of type expressions, or a map of variant name → type expression)
    pub variants: Option<RawVariants>,
    // alias
    #[serde(rename = "type")]
    pub ty: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawField {
    #[serde(rename = "type")]
    pub ty: Spanned<String>,
    #[serde(default)]
    pub optional: bool,
    #[serde(default)]
    pub nullable: bool,
    #[serde(default)]
    pub raw: bool,
    #[serde(rename = "const")]
    pub constant: Option<Value>,
    pub doc: Option<String>,
    pub since: Option<String>,
    pub note: Option<String>,
}

/// Enum value: `off` or `{ value: off, doc: ... }`. Scalars other than strings (a bare `true`, `1`) are read as
/// their text so a YAML reading of a literal never changes the wire value silently.
#[derive(Debug)]
pub struct RawEnumValue {
    pub value: String,
    pub doc: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEnumValueLong {
    value: Value,
    doc: Option<String>,
}

fn scalar_text<E: de::Error>(v: &Value) -> Result<String, E> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        other => Err(E::custom(format!(
            "enum value must be a string, got {other}"
        ))),
    }
}

impl<'de> Deserialize<'de> for RawEnumValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawEnumValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an enum value: a string, or a map with `value` and `doc`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawEnumValue, E> {
                Ok(RawEnumValue {
                    value: v.to_string(),
                    doc: None,
                })
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<RawEnumValue, E> {
                Ok(RawEnumValue {
                    value: v.to_string(),
                    doc: None,
                })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawEnumValue, E> {
                Ok(RawEnumValue {
                    value: v.to_string(),
                    doc: None,
                })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawEnumValue, E> {
                Ok(RawEnumValue {
                    value: v.to_string(),
                    doc: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawEnumValue, A::Error> {
                let long =
                    RawEnumValueLong::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawEnumValue {
                    value: scalar_text(&long.value)?,
                    doc: long.doc,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// `variants:` of a union (map tag value → type name) or of a oneOf (list of type expressions, or a map of
/// variant name → type expression).
#[derive(Debug)]
pub enum RawVariants {
    Tagged(IndexMap<String, String>),
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for RawVariants {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawVariants;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a map of tag value → type name (union), or a list of type expressions or a map of name → type expression (oneOf)",
                )
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawVariants, A::Error> {
                IndexMap::<String, String>::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawVariants::Tagged)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<RawVariants, A::Error> {
                Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(RawVariants::List)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCommand {
    pub doc: Option<String>,
    pub group: Option<String>,
    #[serde(default = "yes")]
    pub documented: bool,
    #[serde(default)]
    pub params: IndexMap<String, RawField>,
    pub result: RawResult,
    #[serde(default)]
    pub errors: Vec<RawCommandError>,
    #[serde(default)]
    pub examples: Vec<RawCommandExample>,
    pub since: Option<String>,
    pub note: Option<String>,
}

fn yes() -> bool {
    true
}

/// `result: none` or `result: { type: T, nullable: bool }`.
#[derive(Debug)]
pub enum RawResult {
    None,
    Data { ty: String, nullable: bool },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResultData {
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    nullable: bool,
    #[allow(dead_code)]
    doc: Option<String>,
}

impl<'de> Deserialize<'de> for RawResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawResult;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("`none` or a map with `type` (and optional `nullable`)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawResult, E> {
                if v == "none" {
                    Ok(RawResult::None)
                } else {
                    Err(E::custom(format!(
                        "result must be `none` or `{{ type: ... }}`, got `{v}`"
                    )))
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawResult, A::Error> {
                let r = RawResultData::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawResult::Data {
                    ty: r.ty,
                    nullable: r.nullable,
                })
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCommandError {
    pub text: String,
    pub name: Option<String>,
    pub when: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCommandExample {
    pub name: String,
    pub request: Option<Value>,
    pub response: Option<Value>,
    #[serde(default)]
    pub events: Vec<Value>,
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMessage {
    pub doc: Option<String>,
    pub group: Option<String>,
    #[serde(default = "yes")]
    pub documented: bool,
    pub fields: Option<IndexMap<String, RawField>>,
    pub body: Option<String>,
    #[serde(default)]
    pub examples: Vec<Value>,
    pub since: Option<String>,
    pub note: Option<String>,
}
