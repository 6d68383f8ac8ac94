//! Pipelined commands through the real binary: state changes apply (and answer) in arrival order, reads see the
//! changes sent before them, and a long wait in one command holds up neither `abort` nor `get_state`.

mod common;

use common::{Env, is_response};
use serde_json::{Value, json};

/// Sends every line in one write (the host does not wait between them), then reads `n` responses.
fn pipelined(dreb: &mut common::Dreb, lines: &[Value]) -> Vec<Value> {
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend(serde_json::to_vec(line).unwrap());
        bytes.push(b'\n');
    }
    dreb.write_raw(&bytes);
    (0..lines.len()).map(|_| dreb.next_response()).collect()
}

fn ids(responses: &[Value]) -> Vec<String> {
    responses
        .iter()
        .map(|r| r["id"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn two_hundred_pipelined_set_settings_end_at_the_last_value() {
    let env = Env::new();
    let mut dreb = env.spawn(&["--no-session"]);
    let lines: Vec<Value> = (0..200)
        .map(|i| json!({"id": format!("s{i}"), "type": "set_settings", "settings": {"maxConcurrentSubagents": i}}))
        .chain([json!({"id": "read", "type": "get_settings"})])
        .collect();
    let responses = pipelined(&mut dreb, &lines);
    for r in &responses {
        assert_eq!(r["success"], true, "{r}");
    }
    // Answered in the order sent, too.
    let expected: Vec<String> = lines
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids(&responses), expected);
    let read = responses.last().unwrap();
    assert_eq!(read["data"]["maxConcurrentSubagents"], 199, "{read}");
    let file: Value = serde_json::from_str(
        &std::fs::read_to_string(env.agent_dir().join("settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(file["backgroundAgents"]["maxConcurrentSubagents"], 199);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_pipelined_read_sees_the_state_changes_sent_before_it() {
    let env = Env::new();
    let mut dreb = env.spawn(&["--no-session"]);
    let mut lines = Vec::new();
    for i in 0..50 {
        lines.push(
            json!({"id": format!("n{i}"), "type": "set_session_name", "name": format!("name {i}")}),
        );
        lines.push(json!({"id": format!("g{i}"), "type": "get_state"}));
    }
    lines.push(json!({"id": "m", "type": "set_steering_mode", "mode": "all"}));
    lines.push(json!({"id": "last", "type": "get_state"}));
    let responses = pipelined(&mut dreb, &lines);
    for i in 0..50 {
        let state = &responses[2 * i + 1];
        assert_eq!(state["id"], format!("g{i}"));
        assert_eq!(state["data"]["sessionName"], format!("name {i}"), "{state}");
    }
    let last = responses.last().unwrap();
    assert_eq!(last["data"]["steeringMode"], "all", "{last}");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_running_bash_command_holds_up_neither_later_state_changes_nor_abort() {
    let env = Env::new();
    let mut dreb = env.spawn(&["--no-session"]);
    dreb.send(&json!({"id": "b", "type": "bash", "command": "sleep 600"}));
    let responses = pipelined(
        &mut dreb,
        &[
            json!({"id": "n", "type": "set_session_name", "name": "while bash runs"}),
            json!({"id": "g", "type": "get_state"}),
        ],
    );
    assert_eq!(ids(&responses), ["n", "g"]);
    assert_eq!(responses[1]["data"]["sessionName"], "while bash runs");
    // abort_bash ends the process; the bash command then answers (cancelled).
    dreb.send(&json!({"id": "ab", "type": "abort_bash"}));
    let mut rest = vec![dreb.next_response(), dreb.next_response()];
    rest.sort_by_key(|r| r["id"].as_str().unwrap_or_default().to_string());
    assert_eq!(ids(&rest), ["ab", "b"]);
    assert_eq!(rest[1]["data"]["cancelled"], true, "{}", rest[1]);
    let (code, frames, _) = dreb.finish();
    assert_eq!(code, 0);
    assert!(!frames.iter().any(is_response), "{frames:#?}");
}
