//! Parsing internally tagged enums (`{"role": "user", ...}`, `{"type": "text", ...}`) without buffering the object.
//!
//! serde's derived `#[serde(tag = "...")]` parsing first copies the whole object into an intermediate tree (every
//! string allocated once more), then parses the variant from that copy; nested tagged enums (a message holding
//! tagged content blocks) copy the inner objects once per level. Session files and the wire put the tag first, so
//! [`deserialize`] reads the first key, and when it is the tag parses the variant straight from the rest of the
//! object (the tag handed back to it as the first entry). An object whose tag comes later is buffered as a JSON
//! value, as before. Error texts are serde's own for a missing tag, an unknown tag and a wrong type.
//!
//! Measured on the 19,888 messages of a 100 MB session: 95-109 ms with the derived parsing, 69-77 ms this way
//! (`docs/benchmarks.md`). The derived `Serialize` is kept; only parsing is ours.

use std::fmt;
use std::marker::PhantomData;

use dreb_types::support::tag_first::{Str, TagThenRest};
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;

/// An enum told apart by a string tag inside its JSON object; see [`tag_first!`](crate::tag_first).
pub trait TagFirst: Sized {
    /// The tag key.
    const TAG: &'static str;
    /// The enum's name (for the wrong-type error, as serde words it).
    const NAME: &'static str;
    /// Every tag value, for the unknown-variant error.
    const VARIANTS: &'static [&'static str];
    /// Parses the variant tagged `tag` from `d`, which reads the whole object (the tag included).
    fn variant<'de, D: Deserializer<'de>>(tag: &str, d: D) -> Result<Self, D::Error>;
}

/// `Deserialize` of a [`TagFirst`] enum.
pub fn deserialize<'de, D: Deserializer<'de>, T: TagFirst>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(TagVisitor(PhantomData))
}

struct TagVisitor<T>(PhantomData<T>);

impl<'de, T: TagFirst> Visitor<'de> for TagVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "internally tagged enum {}", T::NAME)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let Some(first) = map.next_key::<Str<'de>>()? else {
            return Err(de::Error::missing_field(T::TAG));
        };
        if first.0 == T::TAG {
            let tag: Str<'de> = map.next_value()?;
            let name = tag.0.clone();
            return T::variant(
                &name,
                MapAccessDeserializer::new(TagThenRest::new(T::TAG, tag.0, map)),
            );
        }
        // The tag comes later: buffer the object, then parse the variant from it.
        let mut object = serde_json::Map::new();
        object.insert(first.0.into_owned(), map.next_value::<Value>()?);
        while let Some((k, v)) = map.next_entry::<String, Value>()? {
            object.insert(k, v);
        }
        let tag = match object.get(T::TAG) {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(de::Error::invalid_type(unexpected(other), &"a string tag"));
            }
            None => return Err(de::Error::missing_field(T::TAG)),
        };
        T::variant(&tag, Value::Object(object)).map_err(de::Error::custom)
    }
}

fn unexpected(v: &Value) -> de::Unexpected<'_> {
    match v {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(_) => de::Unexpected::Other("number"),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

/// The unknown-variant error of a [`TagFirst`] enum.
pub fn unknown<E: de::Error, T: TagFirst>(tag: &str) -> E {
    E::unknown_variant(tag, T::VARIANTS)
}

/// Implements [`TagFirst`] and `Deserialize` for an enum of newtype variants told apart by `tag`:
/// `tag_first!(Message, "role", { "user" => User, "assistant" => Assistant })`. Serialising stays derived
/// (`#[derive(Serialize)] #[serde(tag = "...")]`).
#[macro_export]
macro_rules! tag_first {
    ($enum:ident, $tag:literal, { $($value:literal => $variant:ident),+ $(,)? }) => {
        impl $crate::tag_first::TagFirst for $enum {
            const TAG: &'static str = $tag;
            const NAME: &'static str = stringify!($enum);
            const VARIANTS: &'static [&'static str] = &[$($value),+];
            fn variant<'de, D: ::serde::Deserializer<'de>>(
                tag: &str,
                d: D,
            ) -> ::std::result::Result<Self, D::Error> {
                match tag {
                    $($value => ::serde::Deserialize::deserialize(d).map($enum::$variant),)+
                    other => ::std::result::Result::Err($crate::tag_first::unknown::<D::Error, Self>(other)),
                }
            }
        }
        impl<'de> ::serde::Deserialize<'de> for $enum {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> ::std::result::Result<Self, D::Error> {
                $crate::tag_first::deserialize(d)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::types::{AssistantBlock, Message, UserBlock, UserContent};
    use serde_json::json;

    #[test]
    fn tag_first_tag_later_and_from_a_value_parse_the_same() {
        let first = r#"{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}"#;
        let later = r#"{"content":[{"text":"hi","type":"text"}],"timestamp":1,"role":"user"}"#;
        let a: Message = serde_json::from_str(first).unwrap();
        let b: Message = serde_json::from_str(later).unwrap();
        let c: Message = serde_json::from_value(serde_json::from_str(first).unwrap()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, c);
        assert!(matches!(a, Message::User(_)));
        // The tag is seen by the variant too (an escaped tag key or value still parses).
        let escaped = r#"{"r\u006fle":"t\u006folResult","toolCallId":"c","toolName":"t","content":[],"isError":false,"timestamp":2}"#;
        assert!(matches!(
            serde_json::from_str::<Message>(escaped).unwrap(),
            Message::ToolResult(_)
        ));
    }

    #[test]
    fn errors_read_as_serde_words_them() {
        let e = serde_json::from_str::<Message>(r#"{"role":"system","content":"x"}"#).unwrap_err();
        assert!(
            e.to_string().starts_with(
                "unknown variant `system`, expected one of `user`, `assistant`, `toolResult`"
            ),
            "{e}"
        );
        let e = serde_json::from_str::<Message>(r#"{"content":"x"}"#).unwrap_err();
        assert!(e.to_string().starts_with("missing field `role`"), "{e}");
        let e = serde_json::from_str::<Message>(r#"{"role":"user","timestamp":1}"#).unwrap_err();
        assert!(e.to_string().starts_with("missing field `content`"), "{e}");
        let e = serde_json::from_str::<Message>("3").unwrap_err();
        assert!(
            e.to_string()
                .contains("expected internally tagged enum Message"),
            "{e}"
        );
        let e = serde_json::from_value::<Message>(json!({"content": "x", "role": 5})).unwrap_err();
        assert!(e.to_string().contains("expected a string tag"), "{e}");
        // The content blocks are the spec's unions (`dreb_types::support::deserialize_tagged`, also tag first):
        // the same texts where serde words them, the spec's own where a tag is missing.
        let e = serde_json::from_str::<UserBlock>(r#"{"type":"video","url":"x"}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown variant `video`, expected `text` or `image`"),
            "{e}"
        );
        let e = serde_json::from_str::<AssistantBlock>(r#"{"type":"text"}"#).unwrap_err();
        assert!(e.to_string().starts_with("missing field `text`"), "{e}");
        let e = serde_json::from_str::<UserBlock>(r#"{"text":"x"}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("missing string tag `type` of UserContentBlock"),
            "{e}"
        );
    }

    #[test]
    fn user_content_is_a_string_or_blocks() {
        let t: UserContent = serde_json::from_str(r#""plain""#).unwrap();
        assert_eq!(t, UserContent::Text("plain".into()));
        let b: UserContent =
            serde_json::from_str(r#"[{"type":"image","data":"AA==","mimeType":"image/png"}]"#)
                .unwrap();
        assert!(matches!(b, UserContent::Blocks(ref v) if matches!(v[0], UserBlock::Image(_))));
        assert!(serde_json::from_str::<UserContent>("{}").is_err());
    }
}
