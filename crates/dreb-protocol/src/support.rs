//! Small hand-written runtime the generated code relies on. The data side (the tri-state for optional+nullable
//! fields, `JsNumber`, present-but-nullable fields, const tags, JSON conversion with field paths in errors, and the
//! serde boilerplate as generic functions and `macro_rules!`: [`string_enum_serde!`], [`const_tag!`],
//! [`TaggedUnion`] + [`tagged_deserialize!`], [`impl_from!`]) is `dreb_types::support`, re-exported here, so the
//! shared types and the protocol module use the same items; this module adds frame wrappers and response data.
//! Independent of the generated types (except [`RequestContext`], which lives with the reply it carries), so golden
//! fixture outputs can compile against it too.

use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::Value;

pub use dreb_types::support::{
    JsNumber, TaggedUnion, Tristate, deserialize_tagged, expect_const, from_value,
    required_nullable, string_or_list,
};
pub use dreb_types::support::{const_tag, impl_from, string_enum_serde, tagged_deserialize};

/// Per-request information passed to every handler method (defined with the reply handle it carries).
pub use crate::request::RequestContext;

/// A frame tagged by `type`: `id` (when given), `type`, then the body's own keys in order. Used for request and
/// event frames so the tag always comes first without copying through a `Value`.
#[derive(Serialize)]
pub struct Frame<'a, B: Serialize> {
    /// The request id (requests only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a Value>,
    /// The wire `type`.
    #[serde(rename = "type")]
    pub r#type: &'a str,
    /// The fields besides `id` and `type`.
    #[serde(flatten)]
    pub body: &'a B,
}

/// Writes a [`Frame`]: `{"id": ..., "type": <name>, ...body}` (`id` only when given). Request frames, and events
/// whose body does not declare its `type` key.
pub fn serialize_frame<S: Serializer, B: Serialize>(
    s: S,
    id: Option<&Value>,
    name: &str,
    body: &B,
) -> Result<S::Ok, S::Error> {
    Frame {
        id,
        r#type: name,
        body,
    }
    .serialize(s)
}

/// The `data` of a success response to `command` whose result is typed (`data` must be present).
pub fn response_data<T: DeserializeOwned>(command: &str, data: Option<Value>) -> Result<T, String> {
    match data {
        Some(d) => from_value(d).map_err(|e| format!("data: {e}")),
        None => Err(format!("`{command}` responses need `data`")),
    }
}

/// Checks that a success response to `command` (`result: none`) carries no `data`.
pub fn no_response_data(command: &str, data: Option<Value>) -> Result<(), String> {
    match data {
        Some(_) => Err(format!("`{command}` responses carry no `data`")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_put_id_and_type_first() {
        let body = serde_json::json!({"z": 1, "a": 2});
        let id = serde_json::json!(7);
        let f = Frame {
            id: Some(&id),
            r#type: "x",
            body: &body,
        };
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"id":7,"type":"x","z":1,"a":2}"#
        );
    }
}
