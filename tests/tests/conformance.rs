//! Conformance of the generated Rust protocol code with every example in `protocol/rpc.yaml`.
//!
//! - Requests parse into `Command` and serialise back to the same JSON; replaying them through `dispatch` on the
//!   spec-replaying service reproduces the documented response (id echo, absent vs null `data`, error texts).
//! - Responses, events, envelope frames and type examples parse into their types and serialise back to the same
//!   JSON (compared as parsed JSON values).
//! - Malformed input lines each get exactly one response, whose shape is snapshotted.
//!
//! Snapshots (insta): one per command group (the re-serialised examples) and one for the negative fixtures.
//! Create/update with `INSTA_UPDATE=always cargo test -p dreb-tests --test conformance`, then review the `.snap`s.

use std::collections::BTreeMap;

use dreb_protocol::{Decoded, decode};
use dreb_tests::conformance::*;
use serde_json::{Value, json};

fn line(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

#[test]
fn spec_has_examples_for_every_command_kind() {
    let ir = spec();
    let cases = command_cases(ir);
    assert!(!cases.is_empty(), "the spec has no command examples");
    assert!(cases.iter().any(|c| c.request.is_some()));
}

#[test]
fn requests_round_trip_through_command() {
    let ir = spec();
    let mut failures = Vec::new();
    for case in command_cases(ir) {
        let Some(req) = &case.request else { continue };
        match decode(&line(req)) {
            Decoded::Request(r) => {
                assert_eq!(r.command.name(), case.command, "{}", case.id());
                let back = serde_json::to_value(&r).unwrap();
                if !same_json(&back, req) {
                    failures.push(format!("{}: wrote {back}, spec has {req}", case.id()));
                }
            }
            other => failures.push(format!(
                "{}: did not decode as a request: {other:?}",
                case.id()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn responses_and_events_round_trip() {
    let ir = spec();
    let mut failures = Vec::new();
    let mut check =
        |id: String, frame: &Value, f: fn(&Value) -> Result<Value, String>| match f(frame) {
            Ok(back) if same_json(&back, frame) => {}
            Ok(back) => failures.push(format!("{id}: wrote {back}, spec has {frame}")),
            Err(e) => failures.push(format!("{id}: {e}")),
        };
    for case in command_cases(ir) {
        if let Some(resp) = &case.response {
            check(
                format!("{} response", case.id()),
                resp,
                reserialize_response,
            );
        }
        for (i, ev) in case.events.iter().enumerate() {
            check(format!("{} event {i}", case.id()), ev, reserialize_event);
        }
    }
    for e in &ir.events {
        for (i, ex) in e.examples.iter().enumerate() {
            check(
                format!("event {} example {i}", e.name),
                ex,
                reserialize_event,
            );
        }
    }
    for ex in &ir.envelope.examples {
        if let Some(resp) = &ex.response {
            check(format!("envelope {}", ex.name), resp, reserialize_response);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn type_examples_round_trip() {
    let ir = spec();
    let mut failures = Vec::new();
    for t in &ir.types {
        for (i, ex) in t.examples.iter().enumerate() {
            match dreb_protocol::conformance::reserialize_type(&t.name, ex.clone()) {
                Some(Ok(back)) if same_json(&back, ex) => {}
                Some(Ok(back)) => failures.push(format!(
                    "{} example {i}: wrote {back}, spec has {ex}",
                    t.name
                )),
                Some(Err(e)) => failures.push(format!("{} example {i}: {e}", t.name)),
                None => failures.push(format!("{}: not a generated type", t.name)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn input_examples_are_routed_not_answered() {
    let ir = spec();
    for input in &ir.inputs {
        for ex in &input.examples {
            match decode(&line(ex)) {
                Decoded::Input(i) => {
                    assert_eq!(i.name(), input.name);
                    assert!(same_json(&Value::Object(i.frame().clone()), ex));
                }
                other => panic!("{} example decoded as {other:?}", input.name),
            }
        }
    }
}

#[tokio::test]
async fn replaying_requests_reproduces_documented_responses() {
    let ir = spec();
    let service = SpecReplay::new(ir);
    let report = replay_examples(&service, ir).await;
    assert!(report.replayed > 0);
    assert_eq!(
        service.calls.lock().unwrap().len(),
        report.valid_requests,
        "every valid request reaches the service exactly once"
    );
    assert!(report.failures.is_empty(), "{}", report.failures.join("\n"));
}

#[test]
fn examples_snapshot_per_group() {
    let ir = spec();
    let mut groups: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for case in command_cases(ir) {
        let req = case.request.as_ref().map(|r| match decode(&line(r)) {
            Decoded::Request(r) => serde_json::to_value(&r).unwrap(),
            other => json!(format!("{other:?}")),
        });
        let resp = case
            .response
            .as_ref()
            .map(|r| reserialize_response(r).unwrap_or_else(|e| json!(e)));
        let events: Vec<Value> = case
            .events
            .iter()
            .map(|e| reserialize_event(e).unwrap_or_else(|e| json!(e)))
            .collect();
        groups.entry(case.group.clone()).or_default().push(json!({
            "example": case.id(),
            "request": req,
            "response": resp,
            "events": events,
        }));
    }
    for (group, cases) in groups {
        let name = format!(
            "examples__{}",
            group
                .to_lowercase()
                .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        );
        insta::assert_json_snapshot!(name, cases);
    }
}

#[tokio::test]
async fn malformed_input_gets_exactly_one_response_each() {
    let ir = spec();
    let service = SpecReplay::new(ir);
    let mut shapes = serde_json::Map::new();
    for (name, input) in NEGATIVE_LINES {
        let resp = replay(&service, input).await;
        assert_eq!(resp["type"], "response", "{name}");
        assert_eq!(resp["success"], false, "{name}");
        assert!(resp.get("data").is_none(), "{name}");
        shapes.insert(name.to_string(), json!({"input": input, "response": resp}));
    }
    assert!(
        service.calls.lock().unwrap().is_empty(),
        "malformed input must never reach the handler"
    );
    insta::assert_json_snapshot!("negative_fixtures", shapes);
}

#[test]
fn envelope_examples_are_reproduced_by_decode() {
    let ir = spec();
    let mut checked = 0;
    for ex in &ir.envelope.examples {
        let Some(resp) = &ex.response else { continue };
        let input = match (&ex.line, &ex.request) {
            (Some(l), _) => l.clone(),
            (None, Some(r)) => line(r),
            (None, None) => continue,
        };
        match decode(&input) {
            Decoded::Invalid(got) => {
                let mut got = serde_json::to_value(&got).unwrap();
                // The parse message is the JSON parser's own wording; only the prefix is part of the contract.
                if resp["command"] == "parse" {
                    let prefix = dreb_protocol::error_text::PARSE.replace("{message}", "");
                    assert!(
                        got["error"].as_str().unwrap().starts_with(&prefix),
                        "{}",
                        ex.name
                    );
                    got["error"] = resp["error"].clone();
                }
                assert!(
                    same_json(&got, resp),
                    "envelope {}: got {got}, spec has {resp}",
                    ex.name
                );
                checked += 1;
            }
            // A valid request: its documented answer comes from a handler (e.g. `Command failed: ...`).
            Decoded::Request(r) => {
                assert_eq!(resp.get("id"), r.id.as_ref(), "envelope {}", ex.name)
            }
            Decoded::Input(_) => panic!("envelope {} is an input message", ex.name),
        }
    }
    assert!(checked > 0 || ir.envelope.examples.is_empty());
}

#[test]
fn event_examples_snapshot() {
    let ir = spec();
    let events: Vec<Value> = ir
        .events
        .iter()
        .flat_map(|e| {
            e.examples
                .iter()
                .map(|ex| reserialize_event(ex).unwrap_or_else(|err| json!(err)))
        })
        .collect();
    insta::assert_json_snapshot!("events", events);
}
