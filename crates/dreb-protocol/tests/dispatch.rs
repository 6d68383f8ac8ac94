//! `dispatch` end to end on the crate's real generated types, with a real `RpcHandler`: one response per line,
//! the id echoed exactly as sent (any JSON value), handler errors passed through verbatim, panics contained,
//! `extension_ui_response` routed to the caller instead of answered, and the framing writer/reader pair carrying
//! the result.

use std::sync::Mutex;

use dreb_protocol::framing::{JsonlReader, JsonlWriter};
use dreb_protocol::{Dispatched, RequestContext, dispatch, record_error_response, wire};
use serde_json::{Value, json};

/// A minimal real handler: answers `get_version`, records `abort`, fails `get_commands`, panics in `get_messages`;
/// every other command reports that it is not served here.
struct Handler {
    aborted: Mutex<Vec<Option<Value>>>,
}

fn response(d: Dispatched) -> Value {
    match d {
        Dispatched::Response(r) => serde_json::to_value(&r).unwrap(),
        Dispatched::Input(i) => panic!("unexpected input {}", i.name()),
    }
}

impl dreb_protocol::CommandService for Handler {
    async fn call(
        &self,
        ctx: &RequestContext,
        command: dreb_protocol::Command,
    ) -> Result<dreb_protocol::ResponseData, String> {
        use dreb_protocol::{Command, ResponseData};
        match command {
            Command::GetVersion(_) => Ok(ResponseData::GetVersion(
                serde_json::from_value(json!({"version": "9.9.9"})).map_err(|e| e.to_string())?,
            )),
            Command::Abort(_) => {
                self.aborted.lock().unwrap().push(ctx.id.clone());
                Ok(ResponseData::Abort)
            }
            Command::GetCommands(_) => Err("exact handler text: nothing here".into()),
            Command::GetMessages(_) => panic!("handler blew up"),
            other => Err(format!("not served in this test: {}", other.name())),
        }
    }
}

fn handler() -> Handler {
    Handler {
        aborted: Mutex::new(Vec::new()),
    }
}

#[tokio::test]
async fn results_errors_and_ids() {
    let h = handler();
    let v = response(dispatch(&h, r#"{"id": {"nested": [1]}, "type": "get_version"}"#).await);
    assert_eq!(
        serde_json::to_string(&v).unwrap(),
        r#"{"id":{"nested":[1]},"type":"response","command":"get_version","success":true,"data":{"version":"9.9.9"}}"#
    );
    let v = response(dispatch(&h, r#"{"type": "abort"}"#).await);
    assert_eq!(
        serde_json::to_string(&v).unwrap(),
        r#"{"type":"response","command":"abort","success":true}"#
    );
    let v = response(dispatch(&h, r#"{"id": 5, "type": "abort"}"#).await);
    assert_eq!(v["id"], 5);
    assert_eq!(*h.aborted.lock().unwrap(), vec![None, Some(json!(5))]);
    let v = response(dispatch(&h, r#"{"id": "c", "type": "get_commands"}"#).await);
    assert_eq!(
        v,
        json!({"id": "c", "type": "response", "command": "get_commands", "success": false, "error": "exact handler text: nothing here"})
    );
}

#[tokio::test]
async fn a_panicking_handler_still_answers() {
    let h = handler();
    let v = response(dispatch(&h, r#"{"id": "m", "type": "get_messages"}"#).await);
    assert_eq!(
        v,
        json!({"id": "m", "type": "response", "command": "get_messages", "success": false, "error": "Command failed: handler blew up"})
    );
    // And the next command is served normally.
    let v = response(dispatch(&h, r#"{"type": "get_version"}"#).await);
    assert_eq!(v["success"], true);
}

#[tokio::test]
async fn extension_ui_response_is_routed_not_answered() {
    let h = handler();
    let line = r#"{"type": "extension_ui_response", "id": "uuid-1", "value": "Allow"}"#;
    match dispatch(&h, line).await {
        Dispatched::Input(input) => {
            assert_eq!(input.name(), wire::inputs::EXTENSION_UI_RESPONSE);
            let typed: dreb_protocol::ExtensionUiResponse = input.parse().unwrap();
            assert_eq!(
                serde_json::to_value(&typed).unwrap(),
                serde_json::from_str::<Value>(line).unwrap()
            );
        }
        Dispatched::Response(r) => panic!("answered an input message: {r:?}"),
    }
    // A malformed answer is still handed over raw, for the dialog to reject with its own text.
    match dispatch(
        &h,
        r#"{"type": "extension_ui_response", "id": "x", "answers": "nope"}"#,
    )
    .await
    {
        Dispatched::Input(input) => {
            assert_eq!(input.frame()["answers"], "nope");
            assert!(input.parse::<dreb_protocol::ExtensionUiResponse>().is_err());
        }
        Dispatched::Response(r) => panic!("answered an input message: {r:?}"),
    }
}

#[tokio::test]
async fn framed_session_answers_every_line_once() {
    // Lines as a host would write them: CRLF, an empty line, a U+2028 inside a string, an input, no final LF.
    let mut input = "{\"id\":1,\"type\":\"get_version\"}\r\n\n{\"id\":2,\"type\":\"nope\u{2028}\"}\n{\"type\":\"extension_ui_response\",\"id\":\"u\",\"cancelled\":true}\n".as_bytes().to_vec();
    input.extend(b"{\"type\":\"\xff\"}\n"); // invalid UTF-8
    input.extend(b"{\"id\":3,\"type\":\"abort\"}");
    let h = handler();
    let mut reader = JsonlReader::new(&input[..]);
    let mut writer = JsonlWriter::new(Vec::new());
    let mut inputs = 0;
    while let Some(record) = reader.next_record().await.unwrap() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                writer
                    .write_frame(&record_error_response(&e))
                    .await
                    .unwrap();
                continue;
            }
        };
        match dispatch(&h, &record).await {
            Dispatched::Response(r) => writer.write_frame(&r).await.unwrap(),
            Dispatched::Input(_) => inputs += 1,
        }
    }
    let out = String::from_utf8(writer.into_inner()).unwrap();
    let frames: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(inputs, 1);
    assert_eq!(frames.len(), 5, "{out}");
    assert_eq!(frames[0]["id"], 1);
    assert_eq!(frames[1]["command"], "parse");
    assert_eq!(frames[2]["error"], "Unknown command: nope\u{2028}");
    assert!(
        out.contains("nope\\u2028"),
        "U+2028 must be escaped on the wire: {out}"
    );
    assert_eq!(
        frames[3]["error"],
        "Failed to parse JSON: input line is not valid UTF-8 (invalid byte at offset 9)"
    );
    assert_eq!(
        frames[4],
        json!({"id": 3, "type": "response", "command": "abort", "success": true})
    );
}
