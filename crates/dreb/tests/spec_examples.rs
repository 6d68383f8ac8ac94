//! Every request example of `protocol/rpc.yaml`, sent to the real binary (one fresh process and agent dir per
//! command group, examples in spec order, each with a fixed id). Snapshots hold the response and the events it
//! caused, volatile values redacted; every success response must parse as the command's typed result.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{Dreb, Env, is_response, normalise};
use serde_json::{Value, json};

/// Commands that still answer `<command> is not implemented yet in dreb-rs`. The test fails when this list is
/// stale in either direction (a command landed, or one regressed), so update it as commands are implemented.
const NOT_IMPLEMENTED: &[&str] = &[];

fn spec() -> dreb_codegen::Ir {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../protocol/rpc.yaml");
    dreb_codegen::load_spec(&path).unwrap_or_else(|e| panic!("{e:?}"))
}

/// `bash` examples that block until released (e.g. `sleep 60`): abort them with `abort_bash` until they answer.
/// Repeats because the abort may land before the command started; each round is a real round trip.
fn release_bash(dreb: &mut Dreb, id: &str) -> Vec<Value> {
    let mut frames = Vec::new();
    for round in 0.. {
        let rid = format!("release-{round}");
        dreb.send(&json!({"id": rid, "type": "abort_bash"}));
        let got = dreb.read_until(|f| f["id"] == rid.as_str());
        let done = got.iter().any(|f| f["id"] == id);
        frames.extend(got.into_iter().filter(|f| f["id"] != rid.as_str()));
        if done {
            break;
        }
        if let Some(f) = dreb.frame_within(Duration::from_millis(200)) {
            let done = f["id"] == id;
            frames.push(f);
            if done {
                break;
            }
        }
    }
    frames
}

/// Sends one example and returns the frames up to its response (and `agent_end` after a prompt that ran).
fn run_example(dreb: &mut Dreb, request: &Value, id: &str) -> Vec<Value> {
    dreb.send(request);
    let blocking = request["type"] == "bash"
        && request["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("sleep"));
    let mut frames = if blocking {
        release_bash(dreb, id)
    } else {
        dreb.read_until(|f| f["id"] == id && is_response(f))
    };
    let ok = frames.last().is_some_and(|r| r["success"] == true);
    if request["type"] == "prompt" && ok && !frames.iter().any(|f| f["type"] == "agent_end") {
        frames.extend(dreb.read_until(|f| f["type"] == "agent_end"));
    }
    frames
}

/// Values that differ per run beyond what `normalise` knows: `ls -la` listings, and the mock's random port.
fn redact(example: &Value, f: &mut Value) {
    if example["type"] == "bash"
        && example["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("ls"))
        && let Some(data) = f.get_mut("data").and_then(Value::as_object_mut)
        && data.contains_key("output")
    {
        data.insert("output".into(), json!("[ls output]"));
    }
}

/// Reduces a frame for the snapshot: `message_update` without its partial copy of the message.
fn summarise(f: &Value) -> Value {
    if f["type"] == "message_update" {
        let mut e = f["assistantMessageEvent"].clone();
        if let Some(m) = e.as_object_mut() {
            m.remove("partial");
        }
        json!({"type": "message_update", "assistantMessageEvent": e})
    } else {
        f.clone()
    }
}

#[test]
fn every_spec_example_against_the_binary() {
    let ir = spec();
    let mut groups: BTreeMap<String, Vec<&dreb_codegen::ir::Command>> = BTreeMap::new();
    for c in &ir.commands {
        groups
            .entry(c.group.clone().unwrap_or_else(|| "Other".into()))
            .or_default()
            .push(c);
    }
    let mut invalid = Vec::new();
    let mut not_implemented = std::collections::BTreeSet::new();
    let mut sent = 0;
    for (group, commands) in groups {
        let env = Env::new();
        let mut dreb = env.spawn(&[]);
        let mut snapshot = Vec::new();
        for command in commands {
            for example in &command.examples {
                let Some(request) = &example.request else {
                    continue;
                };
                let id = format!("{}:{}", command.name, example.name);
                let mut request = request.clone();
                request["id"] = json!(id);
                let mut frames = run_example(&mut dreb, &request, &id);
                sent += 1;
                for f in frames.iter_mut() {
                    redact(&request, f);
                }
                let response = frames
                    .iter()
                    .find(|f| f["id"] == id.as_str() && is_response(f))
                    .cloned()
                    .unwrap();
                if response["error"]
                    .as_str()
                    .is_some_and(|e| e.ends_with(" is not implemented yet in dreb-rs"))
                {
                    not_implemented.insert(command.name.clone());
                }
                if response["success"] == true
                    && let Err(e) = dreb_protocol::Response::from_value(response.clone())
                {
                    invalid.push(format!("{id}: {e}\n  {response}"));
                }
                let frames: Vec<Value> = frames
                    .iter()
                    .map(|f| normalise(&summarise(f), env.home.path()))
                    .collect();
                snapshot.push(json!({"example": id, "frames": frames}));
            }
        }
        let (code, rest, stderr) = dreb.finish();
        assert_eq!(code, 0, "group {group}: exit {code}; stderr: {stderr}");
        snapshot.push(json!({"after_eof": rest.iter().map(|f| normalise(&summarise(f), env.home.path())).collect::<Vec<_>>()}));
        let name = group.to_lowercase().replace(' ', "_");
        insta::assert_json_snapshot!(format!("examples__{name}"), snapshot);
    }
    let expected: std::collections::BTreeSet<String> =
        NOT_IMPLEMENTED.iter().map(|s| s.to_string()).collect();
    assert_eq!(not_implemented, expected, "NOT_IMPLEMENTED is stale");
    assert!(sent > 100, "only {sent} examples sent");
    assert!(
        invalid.is_empty(),
        "success responses that do not parse as their result type:\n{}",
        invalid.join("\n")
    );
}
