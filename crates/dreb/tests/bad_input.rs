//! Bad input against the real binary: every malformed class gets exactly one clean response (or none where the
//! protocol says so), stdout carries only JSON frames, and the process keeps serving.

mod common;

use common::{Dreb, Env, is_response, normalise};
use serde_json::{Value, json};

/// Writes `bytes`, then a `get_version` probe with a fresh id, and returns every frame up to the probe's response
/// (which must be the last). The probe proves the process still serves and that nothing else was answered.
/// Writes `bytes`, then a `get_version` probe, and returns the frames other than the probe's response. Commands
/// run concurrently, so the probe may be answered first: keep reading until `expected` other responses arrived.
fn answer(dreb: &mut Dreb, bytes: &[u8], probe: &str, expected: usize) -> Vec<Value> {
    dreb.write_raw(bytes);
    dreb.send(&json!({"id": probe, "type": "get_version"}));
    let mut rest = Vec::new();
    let mut probe_seen = false;
    while !probe_seen || rest.len() < expected {
        let mut frames = dreb.read_until(is_response);
        let f = frames.pop().unwrap();
        rest.extend(frames);
        if f["id"] == probe {
            assert_eq!(f["success"], true, "probe failed: {f}");
            probe_seen = true;
        } else {
            rest.push(f);
        }
    }
    assert!(
        rest.iter().all(is_response),
        "only responses expected: {rest:?}"
    );
    rest
}

#[test]
fn every_malformed_class_gets_one_clean_answer() {
    let env = Env::new();
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
        ],
        &[("DREB_MAX_RECORD_BYTES", "4096")],
    );
    let long = format!(
        "{{\"id\":\"big\",\"type\":\"prompt\",\"message\":\"{}\"}}\n",
        "x".repeat(8192)
    );
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("not_json", b"this is not json\n".to_vec()),
        ("empty_line", b"\n".to_vec()),
        ("json_null", b"null\n".to_vec()),
        ("json_array", b"[1,2,3]\n".to_vec()),
        ("json_string", b"\"get_state\"\n".to_vec()),
        (
            "no_type",
            br#"{"id":"nt","message":"hi"}"#.iter().chain(b"\n").copied().collect(),
        ),
        (
            "unknown_type_with_id",
            b"{\"id\":\"u1\",\"type\":\"no_such_command\"}\n".to_vec(),
        ),
        (
            "unknown_type_without_id",
            b"{\"type\":\"no_such_command\"}\n".to_vec(),
        ),
        (
            "missing_required_field",
            b"{\"id\":\"m1\",\"type\":\"set_session_name\"}\n".to_vec(),
        ),
        (
            "wrong_field_type",
            b"{\"id\":\"w1\",\"type\":\"set_auto_retry\",\"enabled\":\"yes\"}\n".to_vec(),
        ),
        (
            "unknown_enum_value",
            b"{\"id\":\"e1\",\"type\":\"set_steering_mode\",\"mode\":\"sometimes\"}\n".to_vec(),
        ),
        (
            "invalid_utf8",
            b"{\"id\":\"bad\xff\xfe\",\"type\":\"get_state\"}\n".to_vec(),
        ),
        ("over_size_cap", long.into_bytes()),
        (
            "crlf_line",
            b"{\"id\":\"crlf\",\"type\":\"get_version\"}\r\n".to_vec(),
        ),
        (
            "u2028_inside_string",
            "{\"id\":\"ls\u{2028}ps\u{2029}\",\"type\":\"get_version\"}\n"
                .as_bytes()
                .to_vec(),
        ),
        // Answers to dialogs nobody opened are dropped silently (the protocol sends no response to inputs).
        (
            "extension_ui_response_unknown_id",
            b"{\"type\":\"extension_ui_response\",\"id\":\"nope\",\"cancelled\":true}\n".to_vec(),
        ),
    ];
    let mut snapshot = Vec::new();
    for (i, (name, bytes)) in cases.iter().enumerate() {
        let expected = if *name == "extension_ui_response_unknown_id" {
            0
        } else {
            1
        };
        let frames = answer(&mut dreb, bytes, &format!("probe{i}"), expected);
        assert_eq!(frames.len(), expected, "{name}: {frames:#?}");
        if let Some(f) = frames.first() {
            // A clean answer: a response frame with `success` false, except the two valid lines.
            let ok = matches!(*name, "crlf_line" | "u2028_inside_string");
            assert_eq!(f["success"], ok, "{name}: {f}");
            if !ok {
                assert!(
                    f["error"].as_str().is_some_and(|e| !e.is_empty()),
                    "{name}: {f}"
                );
            }
        }
        match *name {
            // The cap comes from DREB_MAX_RECORD_BYTES (the default is far larger than this line).
            "over_size_cap" => assert!(
                frames[0]["error"].as_str().unwrap().contains("4096"),
                "{frames:?}"
            ),
            // JSON line separators inside strings are data, not line breaks: echoed intact.
            "u2028_inside_string" => assert_eq!(frames[0]["id"], "ls\u{2028}ps\u{2029}"),
            _ => {}
        }
        snapshot.push(json!({"case": name, "frames": frames.iter().map(|f| normalise(f, env.home.path())).collect::<Vec<_>>()}));
    }
    let (code, rest, _) = dreb.finish();
    assert_eq!(code, 0);
    assert!(rest.is_empty(), "{rest:?}");
    insta::assert_json_snapshot!(snapshot);
}

#[test]
fn eof_processes_a_final_unterminated_line_and_exits_0() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    dreb.write_raw(b"{\"id\":\"last\",\"type\":\"get_version\"}");
    let (code, frames, _) = dreb.finish();
    assert_eq!(code, 0);
    assert_eq!(frames.len(), 1, "{frames:?}");
    assert_eq!(frames[0]["id"], "last");
    assert_eq!(frames[0]["success"], true);
}

#[test]
fn eof_on_empty_input_exits_0_silently() {
    let env = Env::new();
    let dreb = env.spawn(&[]);
    let (code, frames, _) = dreb.finish();
    assert_eq!(code, 0);
    assert!(frames.is_empty(), "{frames:?}");
}

/// JSON that strict parsing cannot hold (lone UTF-16 surrogate escapes, numbers beyond `f64`) is rejected with the
/// request's `id` whenever the rest of the line is a well-formed object; a broken line gets no `id`; keys a command
/// does not declare are ignored (protocol/rpc.yaml, "Input that is not a valid command").
#[test]
fn json_edge_cases_keep_the_id_or_are_ignored_as_the_spec_says() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    // (line, expected id, expected error fragment; None = success)
    let cases: &[(&str, Option<&str>, Option<&str>)] = &[
        (
            r#"{"id":"s1","type":"prompt","message":"\ud800"}"#,
            Some("s1"),
            Some("lone UTF-16 surrogate escape `\\ud800`"),
        ),
        (
            r#"{"id":"s2","type":"prompt","message":"tail \udfff"}"#,
            Some("s2"),
            Some("lone UTF-16 surrogate escape `\\udfff`"),
        ),
        // The surrogate comes before the id: the id is still found.
        (
            r#"{"message":"\udc00","id":"s3","type":"prompt"}"#,
            Some("s3"),
            Some("lone UTF-16 surrogate escape `\\udc00`"),
        ),
        (
            r#"{"id":"n1","type":"get_state","x":1e400}"#,
            Some("n1"),
            Some("number out of range `1e400`"),
        ),
        (
            r#"{"id":7,"type":"get_state","x":-2E+999}"#,
            None,
            Some("number out of range `-2E+999`"),
        ),
        // Unrecoverable: truncated, so no id even though one is there.
        (
            r#"{"id":"t1","type":"prompt","message":"\ud800"#,
            None,
            Some("Failed to parse JSON: "),
        ),
        (
            r#"{"id":"k1","type":"get_version","bogus":true,"nested":{"x":1}}"#,
            Some("k1"),
            None,
        ),
        (
            r#"{"id":"k2","type":"set_steering_mode","mode":"all","extra":[1,2]}"#,
            Some("k2"),
            None,
        ),
    ];
    for (line, id, error) in cases {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        let frames = answer(&mut dreb, &bytes, "probe", 1);
        assert_eq!(frames.len(), 1, "{line}: {frames:?}");
        let f = &frames[0];
        match id {
            Some(id) => assert_eq!(f["id"], *id, "{line}: {f}"),
            // A numeric id is echoed as it came; a broken line has none.
            None if line.contains(r#""id":7"#) => assert_eq!(f["id"], 7, "{line}: {f}"),
            None => assert!(f.get("id").is_none(), "{line}: {f}"),
        }
        match error {
            Some(fragment) => {
                assert_eq!(f["success"], false, "{line}: {f}");
                assert_eq!(f["command"], "parse", "{line}: {f}");
                let text = f["error"].as_str().unwrap();
                assert!(text.starts_with("Failed to parse JSON: "), "{text}");
                assert!(text.contains(fragment), "{line}: {text}");
            }
            None => assert_eq!(f["success"], true, "{line}: {f}"),
        }
    }
    // A valid surrogate pair is data: it goes through as the character it encodes.
    dreb.write_raw(b"{\"id\":\"s4\",\"type\":\"set_session_name\",\"name\":\"\\ud83d\\ude00\"}\n");
    let set = dreb.read_until(is_response);
    assert_eq!(set.last().unwrap()["success"], true, "{set:?}");
    let state = dreb.exchange(&json!({"id": "st", "type": "get_state"}));
    assert_eq!(state.last().unwrap()["data"]["sessionName"], "\u{1F600}");
    let (code, rest, _) = dreb.finish();
    assert_eq!(code, 0);
    assert!(rest.is_empty(), "{rest:?}");
}
