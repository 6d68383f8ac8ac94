//! The hand-written runtime the generated data types rely on: the tri-state for optional+nullable fields, the
//! JavaScript-printed number, present-but-nullable fields, const tags, and the serde boilerplate the generator would
//! otherwise repeat per type, as generic functions and small `macro_rules!` the generated module invokes once per
//! type: [`string_enum_serde!`] (string enums), [`const_tag!`] (const marker types), [`TaggedUnion`] +
//! [`tagged_deserialize!`] (tagged unions), [`impl_from!`] (variant conversions). `dreb-protocol::support`
//! re-exports all of it (and adds what only RPC needs), so the protocol module and the golden fixtures use the
//! same items.

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// A field that is both optional and nullable: absent, `null` and a value are three distinct states.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Tristate<T> {
    /// The key is absent (not written).
    #[default]
    Absent,
    /// The key is present with `null`.
    Null,
    /// The key is present with a value.
    Value(T),
}

impl<T> Tristate<T> {
    /// `true` for [`Tristate::Absent`] (used by `skip_serializing_if`).
    pub fn is_absent(&self) -> bool {
        matches!(self, Tristate::Absent)
    }

    /// The value, if there is one.
    pub fn as_option(&self) -> Option<&T> {
        match self {
            Tristate::Value(v) => Some(v),
            _ => None,
        }
    }
}

impl<T> From<Option<T>> for Tristate<T> {
    /// `None` → `Null`, `Some(v)` → `Value(v)`.
    fn from(v: Option<T>) -> Self {
        match v {
            Some(v) => Tristate::Value(v),
            None => Tristate::Null,
        }
    }
}

impl<T: Serialize> Serialize for Tristate<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            // Absent is skipped by the field attribute; if it is serialised anyway, `null` is the honest fallback.
            Tristate::Absent | Tristate::Null => s.serialize_none(),
            Tristate::Value(v) => v.serialize(s),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Tristate<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Only called when the key is present (`#[serde(default)]` covers absence).
        Ok(Option::<T>::deserialize(d)?.into())
    }
}

/// A JSON `number` written the way JavaScript's `JSON.stringify` writes it: whole values without a fraction
/// (`30`, not `30.0`), other values as the shortest round-tripping decimal; NaN and infinities as `null`. The
/// reference serialises every number this way. Known residual difference: fractions in [1e-6, 1e-5) are written
/// in exponent form (`3e-6`, JavaScript `0.000003`); the value is the same for every JSON reader.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct JsNumber(pub f64);

impl JsNumber {
    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl From<f64> for JsNumber {
    fn from(v: f64) -> Self {
        JsNumber(v)
    }
}

impl From<i64> for JsNumber {
    fn from(v: i64) -> Self {
        JsNumber(v as f64)
    }
}

impl From<JsNumber> for f64 {
    fn from(v: JsNumber) -> f64 {
        v.0
    }
}

impl std::ops::Deref for JsNumber {
    type Target = f64;
    fn deref(&self) -> &f64 {
        &self.0
    }
}

/// Arithmetic as on `f64` (prices, costs and durations are computed in these types), with either operand a
/// `JsNumber` or an `f64`.
macro_rules! js_number_ops {
    ($($op:ident $f:ident $assign:ident $fa:ident),*) => {$(
        impl std::ops::$op for JsNumber {
            type Output = JsNumber;
            fn $f(self, rhs: JsNumber) -> JsNumber {
                JsNumber(std::ops::$op::$f(self.0, rhs.0))
            }
        }
        impl std::ops::$op<f64> for JsNumber {
            type Output = JsNumber;
            fn $f(self, rhs: f64) -> JsNumber {
                JsNumber(std::ops::$op::$f(self.0, rhs))
            }
        }
        impl std::ops::$assign for JsNumber {
            fn $fa(&mut self, rhs: JsNumber) {
                std::ops::$assign::$fa(&mut self.0, rhs.0)
            }
        }
        impl std::ops::$assign<f64> for JsNumber {
            fn $fa(&mut self, rhs: f64) {
                std::ops::$assign::$fa(&mut self.0, rhs)
            }
        }
    )*};
}
js_number_ops!(Add add AddAssign add_assign, Sub sub SubAssign sub_assign, Mul mul MulAssign mul_assign, Div div DivAssign div_assign);

/// Compares with a plain `f64` (`cost.input == 0.0`).
impl PartialEq<f64> for JsNumber {
    fn eq(&self, other: &f64) -> bool {
        self.0 == *other
    }
}

impl PartialOrd<f64> for JsNumber {
    fn partial_cmp(&self, other: &f64) -> Option<std::cmp::Ordering> {
        self.0.partial_cmp(other)
    }
}

/// Sums into a plain `f64` accumulator (`total += usage.cost.total`).
impl std::ops::AddAssign<JsNumber> for f64 {
    fn add_assign(&mut self, rhs: JsNumber) {
        *self += rhs.0
    }
}

impl std::iter::Sum for JsNumber {
    fn sum<I: Iterator<Item = JsNumber>>(iter: I) -> JsNumber {
        JsNumber(iter.map(|n| n.0).sum())
    }
}

/// `String(x)` in JavaScript (`1e+21`, `0.000001`, `NaN`).
impl std::fmt::Display for JsNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&dreb_js::number_to_string(self.0))
    }
}

impl Serialize for JsNumber {
    /// The text `JSON.stringify` writes (`null` for NaN and the infinities).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        dreb_js::serialize_number(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for JsNumber {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        f64::deserialize(d).map(JsNumber)
    }
}

/// `deserialize_with` for nullable, non-optional fields: `null` → `None`, but a missing key is an error (serde
/// would otherwise treat a missing `Option` as `None`).
pub fn required_nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// Accepts exactly the string `expected` (const fields such as union tags), compared in place (no copy of the
/// string: every content block and message carries one). Errors as `String`'s parsing words them.
pub fn expect_const<'de, D: Deserializer<'de>>(
    d: D,
    expected: &'static str,
) -> Result<(), D::Error> {
    struct Literal(&'static str);
    impl serde::de::Visitor<'_> for Literal {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<(), E> {
            if s == self.0 {
                Ok(())
            } else {
                Err(E::invalid_value(
                    serde::de::Unexpected::Str(s),
                    &format!("\"{}\"", self.0).as_str(),
                ))
            }
        }
    }
    d.deserialize_str(Literal(expected))
}

/// Converts a JSON value into `T`; the error names the field path, e.g. ``field `images[0].mimeType`: ...``.
pub fn from_value<T: DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_path_to_error::deserialize::<_, T>(v).map_err(|e| {
        let path = e.path().to_string();
        if path.is_empty() || path == "." {
            e.into_inner().to_string()
        } else {
            format!("field `{path}`: {}", e.into_inner())
        }
    })
}

/// A generated enum whose variants are told apart by a string tag inside the JSON object: a `kind: union` type
/// or `Event`. Serialising is the variant's own business (each variant struct writes its tag); parsing reads the
/// tag first and parses the matching variant straight from the input, or from a [`Value`] when the tag is not the
/// first key ([`deserialize_tagged`]).
pub trait TaggedUnion: Sized {
    /// The tag key (`type`, `method`, `role`, ...).
    const TAG: &'static str;
    /// The type's name, for the missing-tag error.
    const NAME: &'static str;
    /// Every known tag value, in spec order.
    const KNOWN: &'static [&'static str];
    /// Parses `v` as the variant tagged `tag`; `Err(v)` gives the value back when the tag is not known.
    fn parse_variant(tag: &str, v: Value) -> Result<Result<Self, String>, Value>;
    /// Parses the variant tagged `tag` (one of [`Self::KNOWN`]) straight from `d`, which reads the whole object,
    /// the tag included (as its first entry).
    fn deserialize_variant<'de, D: Deserializer<'de>>(tag: &str, d: D) -> Result<Self, D::Error>;
    /// An open union keeps a frame with an unknown or missing tag as raw JSON; a closed one rejects it (`None`).
    fn unknown(v: Value) -> Option<Self> {
        let _ = v;
        None
    }
}

/// `Deserialize` of a [`TaggedUnion`]. Session files and the wire put the tag first, so the first key is read, and
/// when it is the tag with a known value the variant is parsed straight from the rest of the object (the tag handed
/// back to it as the first entry), without building a [`Value`] tree of the object at every nesting level (a
/// message holding content blocks). Anything else (the tag later or missing, an unknown or non-string tag, not an
/// object) is read into a [`Value`] and parsed from it ([`parse_tagged_value`]), as before. The errors of a variant
/// parsed straight from the input are serde's own (without the ``field `path`:`` prefix [`from_value`] adds).
pub fn deserialize_tagged<'de, D: Deserializer<'de>, T: TaggedUnion>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(tag_first::TagVisitor::<T>(std::marker::PhantomData))
}

/// A [`TaggedUnion`] from a parsed value: its tag, then the variant (an open union keeps what it does not know).
pub fn parse_tagged_value<T: TaggedUnion, E: serde::de::Error>(v: Value) -> Result<T, E> {
    let Some(tag) = v.get(T::TAG).and_then(Value::as_str) else {
        return T::unknown(v)
            .ok_or_else(|| E::custom(format!("missing string tag `{}` of {}", T::TAG, T::NAME)));
    };
    let tag = tag.to_string();
    match T::parse_variant(&tag, v) {
        Ok(parsed) => parsed.map_err(E::custom),
        Err(v) => T::unknown(v).ok_or_else(|| E::unknown_variant(&tag, T::KNOWN)),
    }
}

/// `Deserialize` of a generated string-or-list `oneOf` (user content: a string or a list of blocks): the first
/// JSON token picks the variant, so the value is parsed once, straight from the input (serde's untagged parsing
/// copies it into a buffer first and tries each variant in turn).
pub fn string_or_list<'de, D, B, T>(
    d: D,
    name: &'static str,
    string: fn(String) -> T,
    list: fn(Vec<B>) -> T,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    B: Deserialize<'de>,
{
    struct V<B, T> {
        name: &'static str,
        string: fn(String) -> T,
        list: fn(Vec<B>) -> T,
    }
    impl<'de, B: Deserialize<'de>, T> serde::de::Visitor<'de> for V<B, T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "a string or a list ({})", self.name)
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
            Ok((self.string)(v.to_owned()))
        }
        fn visit_string<E: serde::de::Error>(self, v: String) -> Result<T, E> {
            Ok((self.string)(v))
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
            Vec::<B>::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(self.list)
        }
    }
    d.deserialize_any(V { name, string, list })
}

mod tag_first {
    //! The visitor of [`deserialize_tagged`](super::deserialize_tagged), with [`Str`] and [`TagThenRest`].

    use std::borrow::Cow;
    use std::fmt;
    use std::marker::PhantomData;

    use serde::Deserialize;
    use serde::de::value::{BorrowedStrDeserializer, CowStrDeserializer, MapAccessDeserializer};
    use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde_json::{Map, Value};

    use super::{TaggedUnion, parse_tagged_value};

    pub(super) struct TagVisitor<T>(pub(super) PhantomData<T>);

    impl<'de, T: TaggedUnion> Visitor<'de> for TagVisitor<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a {} object", T::NAME)
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
            let Some(first) = map.next_key::<Str<'de>>()? else {
                return parse_tagged_value(Value::Object(Map::new()));
            };
            let mut object = Map::new();
            if first.0 == T::TAG {
                match map.next_value::<Tag<'de>>()? {
                    Tag::Str(tag) if T::KNOWN.contains(&&*tag) => {
                        let name = tag.clone();
                        return T::deserialize_variant(
                            &name,
                            MapAccessDeserializer::new(TagThenRest::new(T::TAG, tag, map)),
                        );
                    }
                    Tag::Str(tag) => {
                        object.insert(first.0.into_owned(), Value::String(tag.into_owned()))
                    }
                    Tag::Other(v) => object.insert(first.0.into_owned(), v),
                };
            } else {
                object.insert(first.0.into_owned(), map.next_value::<Value>()?);
            }
            // Not the fast case: the object as a value, parsed as before.
            while let Some((k, v)) = map.next_entry::<String, Value>()? {
                object.insert(k, v);
            }
            parse_tagged_value(Value::Object(object))
        }

        fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
            let v = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
            parse_tagged_value(v)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            parse_tagged_value(Value::String(v.to_owned()))
        }

        fn visit_string<E: de::Error>(self, v: String) -> Result<T, E> {
            parse_tagged_value(Value::String(v))
        }

        fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
            parse_tagged_value(Value::Bool(v))
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
            parse_tagged_value(Value::from(v))
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
            parse_tagged_value(Value::from(v))
        }

        fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
            parse_tagged_value(Value::from(v))
        }

        fn visit_unit<E: de::Error>(self) -> Result<T, E> {
            parse_tagged_value(Value::Null)
        }

        fn visit_none<E: de::Error>(self) -> Result<T, E> {
            parse_tagged_value(Value::Null)
        }

        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
            parse_tagged_value(Value::deserialize(d)?)
        }
    }

    /// A tag's value: a string (borrowed from the input when it can be), or anything else as a value.
    enum Tag<'de> {
        Str(Cow<'de, str>),
        Other(Value),
    }

    impl<'de> Deserialize<'de> for Tag<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Tag<'de>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("any value")
                }
                fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Tag<'de>, E> {
                    Ok(Tag::Str(Cow::Borrowed(v)))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Tag<'de>, E> {
                    Ok(Tag::Str(Cow::Owned(v.to_owned())))
                }
                fn visit_string<E: de::Error>(self, v: String) -> Result<Tag<'de>, E> {
                    Ok(Tag::Str(Cow::Owned(v)))
                }
                fn visit_bool<E: de::Error>(self, v: bool) -> Result<Tag<'de>, E> {
                    Ok(Tag::Other(Value::Bool(v)))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<Tag<'de>, E> {
                    Ok(Tag::Other(Value::from(v)))
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tag<'de>, E> {
                    Ok(Tag::Other(Value::from(v)))
                }
                fn visit_f64<E: de::Error>(self, v: f64) -> Result<Tag<'de>, E> {
                    Ok(Tag::Other(Value::from(v)))
                }
                fn visit_unit<E: de::Error>(self) -> Result<Tag<'de>, E> {
                    Ok(Tag::Other(Value::Null))
                }
                fn visit_none<E: de::Error>(self) -> Result<Tag<'de>, E> {
                    Ok(Tag::Other(Value::Null))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Tag<'de>, A::Error> {
                    Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Tag::Other)
                }
                fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Tag<'de>, A::Error> {
                    Value::deserialize(MapAccessDeserializer::new(map)).map(Tag::Other)
                }
            }
            d.deserialize_any(V)
        }
    }

    /// A string borrowed from the input when it can be.
    pub struct Str<'de>(pub Cow<'de, str>);

    impl<'de> Deserialize<'de> for Str<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Str<'de>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a string")
                }
                fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                    Ok(Str(Cow::Borrowed(v)))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                    Ok(Str(Cow::Owned(v.to_owned())))
                }
                fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
                    Ok(Str(Cow::Owned(v)))
                }
            }
            d.deserialize_str(V)
        }
    }

    /// The object's entries with the tag (already read) given back first.
    pub struct TagThenRest<'de, A> {
        key: Option<&'static str>,
        tag: Option<Cow<'de, str>>,
        rest: A,
    }

    impl<'de, A> TagThenRest<'de, A> {
        /// `key: tag`, then the rest of the object.
        pub fn new(key: &'static str, tag: Cow<'de, str>, rest: A) -> Self {
            TagThenRest {
                key: Some(key),
                tag: Some(tag),
                rest,
            }
        }
    }

    impl<'de, A: MapAccess<'de>> MapAccess<'de> for TagThenRest<'de, A> {
        type Error = A::Error;

        fn next_key_seed<K: DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, A::Error> {
            if let Some(key) = self.key.take() {
                return seed
                    .deserialize(BorrowedStrDeserializer::new(key))
                    .map(Some);
            }
            self.rest.next_key_seed(seed)
        }

        fn next_value_seed<V: DeserializeSeed<'de>>(
            &mut self,
            seed: V,
        ) -> Result<V::Value, A::Error> {
            match self.tag.take() {
                Some(tag) => seed.deserialize(CowStrDeserializer::new(tag)),
                None => self.rest.next_value_seed(seed),
            }
        }

        fn size_hint(&self) -> Option<usize> {
            self.rest
                .size_hint()
                .map(|n| n + usize::from(self.tag.is_some()))
        }
    }
}

/// Implements `Deserialize` for a generated [`TaggedUnion`] (through [`deserialize_tagged`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __tagged_deserialize {
    ($t:ident) => {
        impl<'de> ::serde::Deserialize<'de> for $t {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                d: D,
            ) -> ::std::result::Result<Self, D::Error> {
                $crate::support::deserialize_tagged(d)
            }
        }
    };
}
pub use crate::__tagged_deserialize as tagged_deserialize;

/// Implements `Display`, `Serialize` and `Deserialize` for a generated string enum, through its inherent
/// `as_str`, `from_wire` and `VALUES` (an unlisted value of a closed enum is an `unknown variant` error).
#[doc(hidden)]
#[macro_export]
macro_rules! __string_enum_serde {
    ($t:ident) => {
        impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl ::serde::Serialize for $t {
            fn serialize<S: ::serde::Serializer>(
                &self,
                s: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
        impl<'de> ::serde::Deserialize<'de> for $t {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                d: D,
            ) -> ::std::result::Result<Self, D::Error> {
                let s = <::std::string::String as ::serde::Deserialize>::deserialize(d)?;
                Self::from_wire(&s).ok_or_else(|| {
                    <D::Error as ::serde::de::Error>::unknown_variant(&s, Self::VALUES)
                })
            }
        }
    };
}
pub use crate::__string_enum_serde as string_enum_serde;

/// Declares the zero-sized marker type of a `const` field (`const_tag!(TextContentType = "text")`): it writes
/// its literal and accepts only that literal.
#[doc(hidden)]
#[macro_export]
macro_rules! __const_tag {
    ($name:ident = $lit:literal) => {
        #[doc = concat!("Always `\"", $lit, "\"`.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name;
        impl $name {
            /// The literal.
            pub const VALUE: &'static str = $lit;
        }
        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(
                &self,
                s: S,
            ) -> ::std::result::Result<S::Ok, S::Error> {
                s.serialize_str(Self::VALUE)
            }
        }
        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                d: D,
            ) -> ::std::result::Result<Self, D::Error> {
                $crate::support::expect_const(d, Self::VALUE).map(|()| Self)
            }
        }
    };
}
pub use crate::__const_tag as const_tag;

/// `impl_from!(Enum::Variant(Payload))`: `From<Payload> for Enum` (the payload is boxed when the variant is).
#[doc(hidden)]
#[macro_export]
macro_rules! __impl_from {
    ($e:ident :: $v:ident ($t:ty)) => {
        impl ::std::convert::From<$t> for $e {
            fn from(v: $t) -> Self {
                Self::$v(::std::convert::From::from(v))
            }
        }
    };
}
pub use crate::__impl_from as impl_from;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct T {
        #[serde(default, skip_serializing_if = "Tristate::is_absent")]
        tri: Tristate<i64>,
        #[serde(deserialize_with = "required_nullable")]
        req: Option<String>,
    }

    #[test]
    fn tristate_and_required_nullable() {
        for text in [
            r#"{"req":null}"#,
            r#"{"tri":null,"req":"a"}"#,
            r#"{"tri":3,"req":null}"#,
        ] {
            let t: T = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&t).unwrap(), text);
        }
        let err = from_value::<T>(serde_json::json!({"tri": 1})).unwrap_err();
        assert!(err.contains("missing field `req`"), "{err}");
        let err = from_value::<T>(serde_json::json!({"tri": "x", "req": null})).unwrap_err();
        assert!(err.starts_with("field `tri`: invalid type"), "{err}");
    }

    #[test]
    fn numbers_print_like_javascript() {
        let out: Vec<String> = [
            30.0,
            0.0,
            -0.0,
            0.051000000000000004,
            1.5e300,
            f64::NAN,
            93.58587999999986,
        ]
        .into_iter()
        .map(|v| serde_json::to_string(&JsNumber(v)).unwrap())
        .collect();
        assert_eq!(
            out,
            [
                "30",
                "0",
                "0",
                "0.051000000000000004",
                "1.5e+300",
                "null",
                "93.58587999999986"
            ]
        );
        assert_eq!(
            serde_json::from_str::<JsNumber>("7").unwrap(),
            JsNumber(7.0)
        );
    }

    #[test]
    fn js_numbers_serialise_and_display_as_javascript_does() {
        let json = |v: f64| serde_json::to_string(&JsNumber(v)).unwrap();
        assert_eq!(json(3.0), "3");
        assert_eq!(json(-0.0), "0");
        assert_eq!(json(1e20), "100000000000000000000");
        assert_eq!(json(1e21), "1e+21");
        assert_eq!(json(2f64.powi(60)), "1152921504606847000");
        assert_eq!(json(0.0000015), "0.0000015");
        assert_eq!(json(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(json(f64::NAN), "null");
        assert_eq!(json(f64::NEG_INFINITY), "null");
        assert_eq!(JsNumber(1e21).to_string(), "1e+21");
        assert_eq!(JsNumber(f64::INFINITY).to_string(), "Infinity");
        assert_eq!(JsNumber(2.5).to_string(), "2.5");
        let mut n = JsNumber(3.0) / 1e6 * JsNumber(2.0);
        n += 1.0;
        assert_eq!(n, JsNumber(1.000006));
        assert_eq!(
            [JsNumber(0.1), JsNumber(0.2)].into_iter().sum::<JsNumber>(),
            JsNumber(0.1 + 0.2)
        );
    }
}
