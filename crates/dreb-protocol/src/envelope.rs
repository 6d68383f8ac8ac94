//! The request/response envelope and dispatch: one input line in, exactly one response out (or an input message
//! handed back to the caller). Texts come from the spec's `envelope.errors` (see [`crate::error_text`]); the
//! choices are recorded in `docs/adr/0002-dispatch-and-invalid-params.md`.

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{Command, Input, ResponseData, error_text};

/// A decoded command request: the optional `id` (any JSON value, echoed in the response) and the command.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The request's `id`; `None` when absent.
    pub id: Option<Value>,
    /// The command and its parameters.
    pub command: Command,
}

impl Request {
    /// Parses a request frame; the error says what is wrong (not an object, no/unknown `type`, a bad field).
    pub fn from_value(v: Value) -> Result<Request, String> {
        let Value::Object(mut obj) = v else {
            return Err("a request must be a JSON object".into());
        };
        let id = obj.shift_remove("id");
        let ty = match obj.shift_remove("type") {
            Some(Value::String(t)) => t,
            _ => return Err("a request needs a string `type`".into()),
        };
        match Command::from_wire(&ty, obj)? {
            Some(command) => Ok(Request { id, command }),
            None => Err(format!("unknown command type `{ty}`")),
        }
    }
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.command.serialize_with_id(self.id.as_ref(), s)
    }
}

impl<'de> Deserialize<'de> for Request {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Request::from_value(Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// A response frame: `{"id"?, "type": "response", "command"?, "success", "data"? | "error"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The request's `id`, echoed; `None` writes no `id` key.
    pub id: Option<Value>,
    /// The command name; `None` writes no `command` key (the reference's reply to input without a `type`).
    pub command: Option<String>,
    /// Success data, or the exact error text.
    pub result: Result<ResponseData, String>,
}

impl Response {
    /// A success response.
    pub fn ok(id: Option<Value>, command: impl Into<String>, data: ResponseData) -> Response {
        Response {
            id,
            command: Some(command.into()),
            result: Ok(data),
        }
    }

    /// An error response with exactly `text`.
    pub fn error(id: Option<Value>, command: Option<String>, text: impl Into<String>) -> Response {
        Response {
            id,
            command,
            result: Err(text.into()),
        }
    }

    /// `success` on the wire.
    pub fn is_success(&self) -> bool {
        self.result.is_ok()
    }

    /// Parses a response frame, typing `data` by `command`.
    pub fn from_value(v: Value) -> Result<Response, String> {
        let Value::Object(mut obj) = v else {
            return Err("a response must be a JSON object".into());
        };
        if obj.get("type") != Some(&Value::String("response".into())) {
            return Err("a response has `type: \"response\"`".into());
        }
        let id = obj.shift_remove("id");
        let command = match obj.shift_remove("command") {
            None => None,
            Some(Value::String(c)) => Some(c),
            Some(other) => return Err(format!("`command` must be a string, got {other}")),
        };
        let result = match obj.get("success") {
            Some(Value::Bool(true)) => Ok(ResponseData::from_wire(
                command.as_deref(),
                obj.shift_remove("data"),
            )?),
            Some(Value::Bool(false)) => match obj.shift_remove("error") {
                Some(Value::String(e)) => Err(e),
                _ => return Err("an error response needs a string `error`".into()),
            },
            _ => return Err("`success` must be a boolean".into()),
        };
        Ok(Response {
            id,
            command,
            result,
        })
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(id) = &self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("type", "response")?;
        if let Some(c) = &self.command {
            map.serialize_entry("command", c)?;
        }
        match &self.result {
            Ok(data) => {
                map.serialize_entry("success", &true)?;
                data.serialize_data(&mut map)?;
            }
            Err(e) => {
                map.serialize_entry("success", &false)?;
                map.serialize_entry("error", e)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Response {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Response::from_value(Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// The response to an input record the framing layer could not deliver (invalid UTF-8, over the size limit): a
/// parse error like any other undecodable line, so every input line still gets exactly one response.
pub fn record_error_response(err: &crate::framing::RecordError) -> Response {
    Response::error(
        None,
        Some("parse".into()),
        fill(error_text::PARSE, &[("message", &err.to_string())]),
    )
}

/// What one input line is.
#[allow(clippy::large_enum_variant)] // short-lived, moved once into the handler; boxing buys nothing
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// A valid command request: run it and answer.
    Request(Request),
    /// A stdin message that is not a command (e.g. `extension_ui_response`): route it, never answer it.
    Input(Input),
    /// Not a valid command: answer with this error response.
    Invalid(Response),
}

/// Fills `{name}` placeholders of an envelope error template.
pub fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// How JavaScript's template literal would print a non-string `type` (the reference's `Unknown command: ${type}`).
fn js_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| {
                if i.is_null() {
                    String::new()
                } else {
                    js_text(i)
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
        other => other.to_string(),
    }
}

/// Classifies one input line (without its line terminator). Never fails: every malformed line becomes
/// [`Decoded::Invalid`] carrying the response to write.
pub fn decode(line: &str) -> Decoded {
    if let Some(decoded) = decode_id_and_type(line) {
        return decoded;
    }
    let value: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            // A dreb-rs improvement over the reference: when the line is a well-formed object apart from lone
            // surrogate escapes or out-of-range numbers, the error carries its `id` and names the problem.
            let recovered = crate::lenient::recover(line);
            let message = recovered.message.unwrap_or_else(|| e.to_string());
            let text = fill(error_text::PARSE, &[("message", &message)]);
            return Decoded::Invalid(Response::error(recovered.id, Some("parse".into()), text));
        }
    };
    decode_value(value)
}

/// A request made of `id` and `type` only (how hosts poll: `{"id":7,"type":"get_state"}`), decoded without
/// building the JSON tree of the line. `None` for anything else, or whenever the answer could differ from the
/// general path's (another key, a `type` that is not a plain string, an input message, a command that needs
/// parameters): [`decode`] then takes the general path.
fn decode_id_and_type(line: &str) -> Option<Decoded> {
    let IdAndType { id, ty } = serde_json::from_str(line).ok()?;
    let ty = ty?;
    // The same choices as `decode_value`, with the keys that are neither `id` nor `type` (there are none).
    if Input::from_wire(ty, Map::new()).is_ok() {
        return None;
    }
    match Command::from_wire(ty, Map::new()) {
        Ok(Some(command)) => Some(Decoded::Request(Request { id, command })),
        _ => None,
    }
}

/// A JSON object with no keys besides `id` and `type` (a later duplicate key wins, as in a parsed [`Value`]).
struct IdAndType<'a> {
    id: Option<Value>,
    ty: Option<&'a str>,
}

impl<'de> Deserialize<'de> for IdAndType<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = IdAndType<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object with only `id` and `type`")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = IdAndType { id: None, ty: None };
                // Keys and `type` borrowed from the line: one with escapes is not a plain request (general path).
                while let Some(key) = map.next_key::<&'de str>()? {
                    match key {
                        "id" => out.id = Some(map.next_value()?),
                        "type" => out.ty = Some(map.next_value()?),
                        _ => return Err(serde::de::Error::custom("another key")),
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Like [`decode`], for an already parsed JSON value.
pub fn decode_value(value: Value) -> Decoded {
    let obj: Map<String, Value> = match value {
        Value::Object(obj) => obj,
        // The reference reads `.type` of null and reports the TypeError through its generic wrapper.
        Value::Null => {
            let text = fill(
                error_text::COMMAND_FAILED,
                &[("message", "Cannot read properties of null (reading 'type')")],
            );
            return Decoded::Invalid(Response::error(None, Some("unknown".into()), text));
        }
        _ => {
            return Decoded::Invalid(Response::error(
                None,
                None,
                fill(error_text::UNKNOWN_COMMAND, &[("type", "undefined")]),
            ));
        }
    };
    let id = obj.get("id").cloned();
    let ty = match obj.get("type") {
        Some(Value::String(t)) => t.clone(),
        None => {
            return Decoded::Invalid(Response::error(
                id,
                None,
                fill(error_text::UNKNOWN_COMMAND, &[("type", "undefined")]),
            ));
        }
        Some(other) => {
            let text = js_text(other);
            return Decoded::Invalid(Response::error(
                id,
                Some(text.clone()),
                fill(error_text::UNKNOWN_COMMAND, &[("type", &text)]),
            ));
        }
    };
    let obj = match Input::from_wire(&ty, obj) {
        Ok(input) => return Decoded::Input(input),
        Err(obj) => obj,
    };
    match Command::from_wire(&ty, obj) {
        Ok(Some(command)) => Decoded::Request(Request { id, command }),
        Ok(None) => Decoded::Invalid(Response::error(
            id,
            Some(ty.clone()),
            fill(error_text::UNKNOWN_COMMAND, &[("type", &ty)]),
        )),
        Err(message) => {
            let text = fill(
                error_text::INVALID_PARAMS,
                &[("command", &ty), ("message", &message)],
            );
            Decoded::Invalid(Response::error(id, Some(ty), text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The general path, for comparison with [`decode`]'s shortcut.
    fn decode_general(line: &str) -> Decoded {
        match serde_json::from_str::<Value>(line) {
            Ok(value) => decode_value(value),
            Err(_) => panic!("test lines are JSON: {line}"),
        }
    }

    #[test]
    fn the_id_and_type_shortcut_decodes_as_the_general_path_does() {
        let spec = include_str!("../../../protocol/rpc.yaml");
        let commands = &spec[spec.find("\ncommands:\n").expect("a commands section") + 1..];
        let names: Vec<&str> = commands
            .lines()
            .skip(1)
            .take_while(|l| l.is_empty() || l.starts_with(' ') || l.starts_with('#'))
            .filter_map(|l| l.strip_prefix("  ")?.strip_suffix(':'))
            .filter(|n| !n.starts_with(' ') && !n.is_empty())
            .collect();
        assert!(names.len() > 50, "{names:?}");
        let mut shortcut = 0;
        for name in names
            .iter()
            .copied()
            .chain(["extension_ui_response", "nope"])
        {
            for line in [
                format!(r#"{{"id":1,"type":"{name}"}}"#),
                format!(r#"{{"type":"{name}","id":"x"}}"#),
                format!(r#"{{"type":"{name}"}}"#),
                format!(r#"{{"id":null,"type":"{name}","id":[1,{{"a":2}}]}}"#),
                format!(r#"{{"type":"other","id":1,"type":"{name}"}}"#),
                format!(r#"{{"id":1,"type":"{name}","extra":true}}"#),
                format!(r#" {{ "id" : 2.50 , "type" : "{name}" }} "#),
            ] {
                assert_eq!(decode(&line), decode_general(&line), "{line}");
                shortcut += decode_id_and_type(&line).is_some() as usize;
            }
        }
        assert!(shortcut > 0, "the shortcut was taken for some lines");
        assert!(decode_id_and_type(r#"{"id":1,"type":"get_state"}"#).is_some());
        assert!(decode_id_and_type(r#"{"id":1,"type":"get_st\u0061te"}"#).is_none());
        assert!(decode_id_and_type(r#"{"id":1,"type":7}"#).is_none());
        assert!(decode_id_and_type(r#"[1]"#).is_none());
    }
}
