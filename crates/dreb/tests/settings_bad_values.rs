//! A value in settings.json outside the protocol's range (a misspelled thinking level, an unknown queue mode or
//! transport, a disabled arbiter's stale field) never breaks `get_settings` or `set_settings`: the snapshot reports
//! what the runtime uses instead, the write goes through and reports success, and the file keeps everything else
//! as it was.

mod common;

use common::Env;
use serde_json::{Value, json};

fn data(dreb: &mut common::Dreb, cmd: Value) -> Value {
    let frames = dreb.exchange(&cmd);
    let response = frames.last().unwrap().clone();
    assert_eq!(response["success"], true, "{response}");
    response["data"].clone()
}

#[test]
fn out_of_range_values_on_disk_are_reported_as_the_values_in_effect() {
    let env = Env::new();
    env.write_settings(&json!({
        "defaultThinkingLevel": "hihg",
        "steeringMode": "sometimes",
        "followUpMode": 3,
        "transport": "pigeon",
        "retry": {"enabled": false}
    }));
    let mut dreb = env.spawn(&[]);

    let snapshot = data(&mut dreb, json!({"id": "g", "type": "get_settings"}));
    assert!(snapshot.get("defaultThinkingLevel").is_none(), "{snapshot}");
    assert!(snapshot.get("transport").is_none(), "{snapshot}");
    assert_eq!(snapshot["steeringMode"], "one-at-a-time");
    assert_eq!(snapshot["followUpMode"], "one-at-a-time");
    // The valid values around the bad ones are read as usual.
    assert_eq!(snapshot["retryEnabled"], false);
    dreb_spec_check::assert_frame(
        &json!({"type": "response", "command": "get_settings", "success": true, "data": snapshot}),
    );

    let result = data(
        &mut dreb,
        json!({"id": "s", "type": "set_settings", "settings": {"steeringMode": "all", "compactionEnabled": false}}),
    );
    // The result is the snapshot itself (plus `warnings` when a project value shadows a change).
    let snapshot = &result;
    assert_eq!(snapshot["steeringMode"], "all");
    assert_eq!(snapshot["compactionEnabled"], false);
    assert!(snapshot.get("defaultThinkingLevel").is_none(), "{snapshot}");

    // The session still runs with the effective values.
    let state = data(&mut dreb, json!({"id": "st", "type": "get_state"}));
    assert_eq!(state["followUpMode"], "one-at-a-time");

    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    let on_disk: Value = serde_json::from_str(
        &std::fs::read_to_string(env.agent_dir().join("settings.json")).unwrap(),
    )
    .unwrap();
    // Written: the two changes; kept: every other value, the bad ones included (the host may fix them by hand).
    assert_eq!(on_disk["steeringMode"], "all");
    assert_eq!(on_disk["compaction"]["enabled"], false);
    assert_eq!(on_disk["defaultThinkingLevel"], "hihg");
    assert_eq!(on_disk["transport"], "pigeon");
    assert_eq!(on_disk["followUpMode"], 3);
    assert_eq!(on_disk["retry"]["enabled"], false);
}

#[test]
fn a_disabled_arbiter_with_a_stale_field_is_reported_without_it() {
    // Disabling is the recovery path for a broken policy, so set_settings leaves the other fields unvalidated and a
    // stale `thinking` can stay on disk; get_settings reports the policy with each field that fits the spec's type.
    let env = Env::new();
    env.write_settings(&json!({
        "subagentArbiter": {"enabled": false, "thinking": "bogus", "model": "a/b", "guidePath": 7}
    }));
    let mut dreb = env.spawn(&[]);
    let snapshot = data(&mut dreb, json!({"id": "g", "type": "get_settings"}));
    assert_eq!(
        snapshot["subagentArbiter"],
        json!({"enabled": false, "model": "a/b"}),
        "{snapshot}"
    );
    dreb_spec_check::assert_frame(
        &json!({"type": "response", "command": "get_settings", "success": true, "data": snapshot}),
    );
    let result = data(
        &mut dreb,
        json!({"id": "s", "type": "set_settings", "settings": {"retryEnabled": false}}),
    );
    assert_eq!(
        result["subagentArbiter"],
        json!({"enabled": false, "model": "a/b"})
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    let on_disk: Value = serde_json::from_str(
        &std::fs::read_to_string(env.agent_dir().join("settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        on_disk["subagentArbiter"]["thinking"], "bogus",
        "the file keeps it"
    );
}
