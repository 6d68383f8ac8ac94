//! JSON-RPC 2.0 framing: what one input line is (request, notification, response, or a malformed message and the
//! error the spec assigns it), and the encoding of what we write. One message per line, as ACP's stdio transport
//! defines; batches are not part of ACP and are answered as invalid requests.

use agent_client_protocol_schema::v1::{Error as RpcError, RequestId};
use serde_json::{Map, Value, json};

/// A well-formed incoming message.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A call that wants a response.
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
    /// A call without `id`: never answered, not even with an error.
    Notification { method: String, params: Value },
    /// The client's answer to one of our requests.
    Response {
        id: RequestId,
        outcome: Result<Value, RpcError>,
    },
}

/// A line that is not a valid message, and the error response it gets (`id` is `null` when none could be read).
#[derive(Debug, Clone, PartialEq)]
pub struct Malformed {
    pub id: RequestId,
    pub error: RpcError,
}

/// Classifies one input line.
/// Malformed lines are rare; boxing keeps the common `Ok` small.
pub fn classify(line: &[u8]) -> Result<Incoming, Box<Malformed>> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        Box::new(Malformed {
            id: RequestId::Null,
            error: RpcError::parse_error().data(Value::String(e.to_string())),
        })
    })?;
    let Value::Object(mut obj) = value else {
        return Err(invalid(
            RequestId::Null,
            "a message must be a JSON object (batches are not used by ACP)",
        ));
    };
    // The id is read first so that every later error can echo it.
    let id = match obj.remove("id") {
        None => None,
        Some(v) => Some(
            serde_json::from_value::<RequestId>(v)
                .map_err(|_| invalid(RequestId::Null, "id must be a string, an integer or null"))?,
        ),
    };
    let echo = id.clone().unwrap_or(RequestId::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(echo, "jsonrpc must be \"2.0\""));
    }
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = obj.remove("params").unwrap_or(Value::Null);
            if !matches!(params, Value::Object(_) | Value::Array(_) | Value::Null) {
                return Err(invalid(echo, "params must be an object or an array"));
            }
            Ok(match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            })
        }
        Some(_) => Err(invalid(echo, "method must be a string")),
        None => response(id, obj),
    }
}

fn response(
    id: Option<RequestId>,
    mut obj: Map<String, Value>,
) -> Result<Incoming, Box<Malformed>> {
    let Some(id) = id else {
        return Err(invalid(
            RequestId::Null,
            "a message needs a method or an id",
        ));
    };
    let outcome = match (obj.remove("result"), obj.remove("error")) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(serde_json::from_value::<RpcError>(error)
            .map_err(|_| invalid(RequestId::Null, "error must be a JSON-RPC error object"))?),
        _ => {
            return Err(invalid(
                RequestId::Null,
                "a response needs exactly one of result and error",
            ));
        }
    };
    Ok(Incoming::Response { id, outcome })
}

fn invalid(id: RequestId, why: &str) -> Box<Malformed> {
    Box::new(Malformed {
        id,
        error: RpcError::invalid_request().data(Value::String(why.into())),
    })
}

/// The line of a successful response.
pub fn encode_result(id: &RequestId, result: &Value) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// The line of an error response.
pub fn encode_error(id: &RequestId, error: &RpcError) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": id, "error": error}))
}

/// The line of a notification.
pub fn encode_notification(method: &str, params: &Value) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// The line of a notification, from typed params.
pub fn encode_typed_notification(method: &str, params: &impl serde::Serialize) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Notification<'a, P> {
        jsonrpc: &'static str,
        method: &'a str,
        params: &'a P,
    }
    let mut out = serde_json::to_vec(&Notification {
        jsonrpc: "2.0",
        method,
        params,
    })
    .expect("protocol types serialise");
    out.push(b'\n');
    out
}

/// The line of a request we send.
pub fn encode_request(id: &RequestId, method: &str, params: &Value) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

fn line(v: &Value) -> Vec<u8> {
    // serde_json escapes control characters, so the only LF is the terminator.
    let mut out = serde_json::to_vec(v).expect("JSON values always serialise");
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol_schema::v1::ErrorCode;

    fn code(line: &str) -> (RequestId, ErrorCode) {
        let m = classify(line.as_bytes()).unwrap_err();
        (m.id, m.error.code)
    }

    #[test]
    fn requests_notifications_and_responses() {
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#).unwrap(),
            Incoming::Request {
                id: RequestId::Number(1),
                method: "initialize".into(),
                params: json!({})
            }
        );
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#),
            Ok(Incoming::Notification { .. })
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":"a","result":null}"#),
            Ok(Incoming::Response {
                outcome: Ok(Value::Null),
                ..
            })
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":"a","error":{"code":-32603,"message":"x"}}"#),
            Ok(Incoming::Response {
                outcome: Err(_),
                ..
            })
        ));
    }

    #[test]
    fn malformed_lines_get_the_spec_codes() {
        assert_eq!(code("{not json"), (RequestId::Null, ErrorCode::ParseError));
        assert_eq!(code("[1,2]"), (RequestId::Null, ErrorCode::InvalidRequest));
        assert_eq!(code("42"), (RequestId::Null, ErrorCode::InvalidRequest));
        assert_eq!(
            code(r#"{"id":7,"method":"initialize"}"#),
            (RequestId::Number(7), ErrorCode::InvalidRequest)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":7,"method":3}"#),
            (RequestId::Number(7), ErrorCode::InvalidRequest)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"a"}"#),
            (RequestId::Null, ErrorCode::InvalidRequest)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"q","method":"a","params":5}"#),
            (RequestId::Str("q".into()), ErrorCode::InvalidRequest)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0"}"#),
            (RequestId::Null, ErrorCode::InvalidRequest)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#),
            (RequestId::Null, ErrorCode::InvalidRequest)
        );
    }

    #[test]
    fn encoded_lines_end_in_one_lf() {
        let params = json!({"text": "a\nb"});
        let out = encode_notification("session/update", &params);
        assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 1);
        assert_eq!(out.last(), Some(&b'\n'));
        assert_eq!(encode_typed_notification("session/update", &params), out);
    }
}
