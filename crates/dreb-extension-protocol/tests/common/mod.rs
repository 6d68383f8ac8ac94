//! The example tests every generated two-way protocol module must pass, against the spec it was generated from.
//! The including test crate provides both at its root: `proto` (the generated module) and `SPEC` (the spec's
//! path).
//!
//! Requests of calls and commands parse into `Call` / `Command` and are written back as the same frame; success
//! responses parse into `CallResult` / `ResponseData` and are written back as the same frame; events and type
//! examples round-trip through `Event` and their types. Frames are compared as JSON values (key order ignored,
//! numbers by value).

use crate::proto::{Call, CallResult, Command, Event, ResponseData, conformance, wire};
use dreb_codegen_core::Ir;
use dreb_codegen_core::ir::Command as SpecRequest;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

pub fn spec() -> Ir {
    dreb_codegen_core::load_spec(crate::SPEC).unwrap_or_else(|e| panic!("{e}"))
}

/// JSON equality as a JSON reader sees it: object key order is ignored and numbers compare by value.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Writes a request frame through `write` (a `serialize_with_id`) into a JSON value.
fn request_frame(
    write: impl FnOnce(serde_json::value::Serializer) -> Result<Value, serde_json::Error>,
) -> Value {
    write(serde_json::value::Serializer).expect("a request frame serialises")
}

/// The typed `data` of a success response, in either direction.
trait Data {
    fn write<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error>;
}

impl Data for CallResult {
    fn write<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        self.serialize_data(map)
    }
}

impl Data for ResponseData {
    fn write<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        self.serialize_data(map)
    }
}

/// A success response frame around typed `data` (the shape both directions share).
struct Success<'a, D> {
    id: Option<&'a Value>,
    request: &'a str,
    data: D,
}

impl<D: Data> Serialize for Success<'_, D> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some(id) = self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("type", "response")?;
        map.serialize_entry("command", self.request)?;
        map.serialize_entry("success", &true)?;
        self.data.write(&mut map)?;
        map.end()
    }
}

fn object(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().expect("a frame is an object")
}

/// Round-trips every example of one direction's requests; returns the failures and how many frames were checked.
fn requests(
    list: &[SpecRequest],
    request: impl Fn(&str, &Value) -> Result<Option<Value>, String>,
    response: impl Fn(&Value) -> Result<Value, String>,
) -> (Vec<String>, usize) {
    let (mut failures, mut checked) = (Vec::new(), 0);
    for c in list {
        for ex in &c.examples {
            let id = format!("{}/{}", c.name, ex.name);
            if let Some(req) = &ex.request {
                checked += 1;
                match request(&c.name, req) {
                    Ok(Some(back)) if same_json(&back, req) => {}
                    Ok(Some(back)) => failures.push(format!("{id}: wrote {back}, spec has {req}")),
                    Ok(None) => failures.push(format!("{id}: `{}` is not known", c.name)),
                    Err(e) => failures.push(format!("{id} request: {e}")),
                }
            }
            let Some(resp) = &ex.response else { continue };
            if resp.get("success") != Some(&Value::Bool(true)) {
                continue;
            }
            checked += 1;
            match response(resp) {
                Ok(back) if same_json(&back, resp) => {}
                Ok(back) => failures.push(format!("{id}: wrote {back}, spec has {resp}")),
                Err(e) => failures.push(format!("{id} response: {e}")),
            }
        }
    }
    (failures, checked)
}

#[test]
fn call_examples_round_trip() {
    let ir = spec();
    let (failures, checked) = requests(
        &ir.calls,
        |name, req| {
            let call = Call::from_wire(name, object(req))?;
            Ok(call.map(|c| {
                assert_eq!(c.name(), name);
                request_frame(|s| c.serialize_with_id(req.get("id"), s))
            }))
        },
        |resp| {
            let call = resp.get("command").and_then(Value::as_str);
            let data = CallResult::from_wire(call, resp.get("data").cloned())?;
            assert!(!matches!(data, CallResult::Unknown(_)), "{resp}");
            let frame = Success {
                id: resp.get("id"),
                request: call.unwrap_or_default(),
                data,
            };
            serde_json::to_value(&frame).map_err(|e| e.to_string())
        },
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 0, "the spec has no call examples");
}

#[test]
fn command_examples_round_trip() {
    let ir = spec();
    let (failures, checked) = requests(
        &ir.commands,
        |name, req| {
            let command = Command::from_wire(name, object(req))?;
            Ok(command.map(|c| {
                assert_eq!(c.name(), name);
                request_frame(|s| c.serialize_with_id(req.get("id"), s))
            }))
        },
        |resp| {
            let command = resp.get("command").and_then(Value::as_str);
            let data = ResponseData::from_wire(command, resp.get("data").cloned())?;
            assert!(!matches!(data, ResponseData::Unknown(_)), "{resp}");
            let frame = Success {
                id: resp.get("id"),
                request: command.unwrap_or_default(),
                data,
            };
            serde_json::to_value(&frame).map_err(|e| e.to_string())
        },
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked > 0, "the spec has no command examples");
}

#[test]
fn event_examples_round_trip() {
    let ir = spec();
    let mut failures = Vec::new();
    let listed = ir
        .calls
        .iter()
        .chain(&ir.commands)
        .flat_map(|c| c.examples.iter().flat_map(|e| e.events.iter()));
    let frames: Vec<&Value> = ir
        .events
        .iter()
        .flat_map(|e| e.examples.iter())
        .chain(listed)
        .collect();
    assert!(!frames.is_empty(), "the spec has no event examples");
    for frame in frames {
        match serde_json::from_value::<Event>(frame.clone()) {
            Ok(Event::Unknown(_)) => failures.push(format!("not a known event: {frame}")),
            Ok(e) => {
                let back = serde_json::to_value(&e).unwrap();
                if !same_json(&back, frame) {
                    failures.push(format!("wrote {back}, spec has {frame}"));
                }
            }
            Err(e) => failures.push(format!("{frame}: {e}")),
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
            match conformance::reserialize_type(&t.name, ex.clone()) {
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
fn unknown_requests_are_not_calls_or_commands() {
    assert_eq!(Call::from_wire("bogus", Map::new()), Ok(None));
    assert_eq!(Command::from_wire("bogus", Map::new()), Ok(None));
    // The directions do not mix: a call name is not a command and vice versa.
    for name in wire::calls::ALL {
        assert_eq!(Command::from_wire(name, Map::new()), Ok(None), "{name}");
    }
    for name in wire::commands::ALL {
        assert_eq!(Call::from_wire(name, Map::new()), Ok(None), "{name}");
    }
    let ir = spec();
    let names = |list: &[SpecRequest]| list.iter().map(|c| c.name.clone()).collect::<Vec<_>>();
    assert_eq!(wire::calls::ALL, names(&ir.calls));
    assert_eq!(wire::commands::ALL, names(&ir.commands));
}
