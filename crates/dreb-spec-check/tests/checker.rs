//! The checker accepts what the spec allows and rejects what it does not, with a message naming the frame.

use dreb_spec_check::check_frame;
use serde_json::json;

fn rejected(frame: serde_json::Value) -> String {
    match check_frame(&frame) {
        Ok(()) => panic!("accepted a frame the spec does not allow: {frame}"),
        Err(e) => e,
    }
}

#[test]
fn accepts_documented_frames() {
    for frame in [
        json!({"type": "agent_start"}),
        json!({"type": "turn_start"}),
        json!({"id": "v", "type": "response", "command": "get_version", "success": true, "data": {"version": "1.2.3"}}),
        json!({"type": "response", "command": "prompt", "success": true}),
        json!({"id": 7, "type": "response", "command": "bogus", "success": false, "error": "Unknown command: bogus"}),
        json!({"type": "background_agent_event", "agentId": "a1", "event": {"type": "session", "id": "s", "timestamp": "t", "cwd": "/"}}),
        json!({"type": "background_agent_event", "agentId": "a1", "event": {"type": "turn_start"}}),
    ] {
        check_frame(&frame).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn rejects_an_unknown_event_type() {
    let e = rejected(json!({"type": "agent_strat"}));
    assert!(e.contains("`agent_strat` is not an event type"), "{e}");
    assert!(
        e.contains(r#"frame: {"type":"agent_strat"}"#),
        "names the frame: {e}"
    );
}

#[test]
fn rejects_a_known_event_with_the_wrong_shape() {
    let e = rejected(json!({"type": "session_name_changed", "name": 5}));
    assert!(e.contains("not a valid SessionNameChangedEvent"), "{e}");
    assert!(e.contains("/name"), "names the bad field: {e}");
    let e = rejected(json!({"type": "turn_start", "extra": true}));
    assert!(e.contains("extra"), "unknown keys are refused: {e}");
}

#[test]
fn rejects_a_response_whose_data_does_not_fit_its_command() {
    let e = rejected(
        json!({"type": "response", "command": "get_version", "success": true, "data": {"version": 1}}),
    );
    assert!(
        e.contains("response to `get_version` is not a valid GetVersionResponse"),
        "{e}"
    );
    // `prompt` answers without `data`.
    rejected(json!({"type": "response", "command": "prompt", "success": true, "data": null}));
    // A failure carries `error`, never `data`.
    rejected(
        json!({"type": "response", "command": "prompt", "success": false, "error": "x", "data": {}}),
    );
    let e = rejected(json!({"type": "response", "command": "no_such_command", "success": true}));
    assert!(e.contains("no success response is defined"), "{e}");
}

#[test]
fn explains_a_union_mismatch_by_the_closest_variant() {
    // A user message whose content block has a bad `text`: the error points into the user-message variant.
    let e = rejected(
        json!({"type": "message_start", "message": {"role": "user", "content": [{"type": "text", "text": 1}], "timestamp": 1}}),
    );
    assert!(e.contains("/message/content/0/text"), "{e}");
}

#[test]
fn checks_the_child_frame_a_background_event_relays() {
    let e = rejected(
        json!({"type": "background_agent_event", "agentId": "a1", "event": {"type": "no_such_event"}}),
    );
    assert!(e.contains("relayed child frame"), "{e}");
}

#[test]
fn knows_every_event_type_the_spec_lists() {
    // `UnknownEvent` excludes exactly the known types; the checker must know the same set (including events
    // whose body is a union, such as `extension_ui_request`).
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../",
            "protocol/schema/rpc.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let mut listed: Vec<&str> = schema
        .pointer("/$defs/UnknownEvent/properties/type/not/enum")
        .and_then(|v| v.as_array())
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .filter(|t| *t != "response")
        .collect();
    let mut known: Vec<&str> = dreb_spec_check::checker().event_types().collect();
    listed.sort();
    known.sort();
    assert_eq!(known, listed);
    check_frame(
        &json!({"type": "extension_ui_request", "id": "u1", "method": "setTitle", "title": "t"}),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    rejected(json!({"type": "extension_ui_request", "id": "u1", "method": "setTitle"}));
}
