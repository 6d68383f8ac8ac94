//! Replays the reference's recorded settings transcripts and compares the answers and the
//! files written with what the reference produced.

mod common;

use common::{Env, FakeCatalog, fixture, fixture_text, to_json};
use dreb_settings::SettingsManager;
use dreb_settings::settings_file::{read_settings_file, to_reference_json};
use serde_json::{Value, json};

fn lines(name: &str) -> Vec<Value> {
    fixture_text(name)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Answer one recorded command the way the RPC layer will, as a response frame.
fn respond(manager: &SettingsManager, catalog: &FakeCatalog, command: &Value) -> Value {
    let kind = command["type"].as_str().unwrap();
    let result = match kind {
        "get_settings" => manager
            .get_settings(catalog)
            .map(|s| to_json(&s))
            .map_err(|e| e.wire_text()),
        "set_settings" => manager
            .apply_update(command.get("settings"), catalog)
            .map(|s| to_json(&s))
            .map_err(|e| e.wire_text()),
        other => panic!("unexpected command {other}"),
    };
    let mut frame = json!({"id": command["id"], "type": "response", "command": kind});
    match result {
        Ok(data) => {
            frame["success"] = json!(true);
            frame["data"] = data;
        }
        Err(err) => {
            frame["success"] = json!(false);
            frame["error"] = json!(err);
        }
    }
    frame
}

fn replay(transcript: &str) -> Env {
    let env = Env::new();
    let manager = env.manager();
    let catalog = FakeCatalog::reference();
    let inputs = lines(&format!("{transcript}.in.jsonl"));
    let outputs = lines(&format!("{transcript}.out.jsonl"));
    assert_eq!(inputs.len(), outputs.len());
    for (input, expected) in inputs.iter().zip(&outputs) {
        let actual = respond(&manager, &catalog, input);
        assert_eq!(actual, *expected, "response to {input}");
        // Same key order as the reference, not just the same values.
        assert_eq!(
            serde_json::to_string(&actual).unwrap(),
            serde_json::to_string(expected).unwrap()
        );
    }
    env
}

#[test]
fn get_settings_defaults_match_reference() {
    let env = replay("get_settings");
    assert!(
        !env.global_path().exists(),
        "reading must not create the settings file"
    );
}

#[test]
fn set_settings_transcript_matches_reference() {
    let env = replay("set_settings");
    // Byte-for-byte the file the reference wrote (2-space indent, key order, no newline).
    assert_eq!(env.global_text(), fixture_text("after-set_settings.json"));
}

#[test]
fn runtime_setters_persist_like_reference() {
    let env = Env::new();
    let m = env.manager();
    m.set_steering_mode("all").unwrap();
    m.set_follow_up_mode("all").unwrap();
    m.set_compaction_enabled(false).unwrap();
    m.set_retry_enabled(false).unwrap();
    m.set_default_model_and_provider("mock-anthropic", "mock-claude")
        .unwrap(); // cycle_model
    assert_eq!(
        env.global_text(),
        fixture_text("after-runtime-setters.json")
    );
}

#[test]
fn set_model_persists_like_reference() {
    let env = Env::new();
    let m = env.manager();
    m.set_default_model_and_provider("mock-anthropic", "mock-claude")
        .unwrap();
    // set_thinking_level on a non-reasoning model persists nothing (runtime decides).
    assert_eq!(
        env.global_text(),
        fixture_text("after-set_model-set_thinking_level.json")
    );
}

#[test]
fn set_model_and_thinking_persist_like_reference() {
    let env = Env::new();
    let m = env.manager();
    m.set_default_model_and_provider("mock", "mock-reasoner")
        .unwrap();
    m.set_default_thinking_level("high").unwrap();
    assert_eq!(
        env.global_text(),
        fixture_text("after-set_model-set_thinking_level-reasoning-model.json")
    );
}

#[test]
fn reference_files_load_and_round_trip() {
    for name in [
        "after-set_settings.json",
        "after-runtime-setters.json",
        "after-set_model-set_thinking_level.json",
        "after-set_model-set_thinking_level-reasoning-model.json",
    ] {
        let map = read_settings_file(&fixture(name)).unwrap().unwrap();
        assert_eq!(to_reference_json(&map), fixture_text(name), "{name}");

        // A file the reference wrote is read by ours and survives an unrelated write intact.
        let env = Env::new();
        env.write_global(&fixture_text(name));
        let m = env.manager();
        assert!(m.load_errors().is_empty());
        m.set_hide_thinking_block(true).unwrap();
        let mut expected: Value = serde_json::from_str(&fixture_text(name)).unwrap();
        expected["hideThinkingBlock"] = json!(true);
        assert_eq!(env.global_json(), expected, "{name}");
    }
}

#[test]
fn reference_file_values_show_in_snapshot() {
    let env = Env::new();
    env.write_global(&fixture_text("after-set_settings.json"));
    let snap = env
        .manager()
        .get_settings(&FakeCatalog::reference())
        .unwrap();
    let expected = lines("set_settings.out.jsonl").last().unwrap()["data"].clone();
    assert_eq!(to_json(&snap), expected);
}

#[test]
fn thinking_level_persistence_rule_matches_recordings() {
    // Non-reasoning model: set_thinking_level "high" clamps to "off" (unchanged): nothing written.
    let env = Env::new();
    let m = env.manager();
    m.set_default_model_and_provider("mock-anthropic", "mock-claude")
        .unwrap();
    assert!(
        !m.persist_thinking_level_change("off", "off", false)
            .unwrap()
    );
    assert_eq!(
        env.global_text(),
        fixture_text("after-set_model-set_thinking_level.json")
    );

    // Reasoning model: cycle_thinking_level then set_thinking_level "high".
    let env = Env::new();
    let m = env.manager();
    m.set_default_model_and_provider("mock", "mock-reasoner")
        .unwrap();
    assert!(
        m.persist_thinking_level_change("off", "minimal", true)
            .unwrap()
    );
    assert!(
        m.persist_thinking_level_change("minimal", "high", true)
            .unwrap()
    );
    assert!(
        !m.persist_thinking_level_change("high", "high", true)
            .unwrap()
    );
    assert_eq!(
        env.global_text(),
        fixture_text("after-set_model-set_thinking_level-reasoning-model.json")
    );
}
