//! Params marked `raw: true` in rpc.yaml (`set_settings.settings`, the context-trust `path`) reach the handler
//! undecoded, so values of the wrong JSON type get the reference's own validation texts, not `Invalid parameters`.

mod common;

use common::Env;
use serde_json::{Value, json};

fn error_of(dreb: &mut common::Dreb, cmd: Value) -> String {
    let frames = dreb.exchange(&cmd);
    let r = frames.last().expect("a response");
    assert_eq!(r["success"], false, "{r}");
    r["error"].as_str().unwrap().to_string()
}

#[test]
fn context_trust_paths_of_any_json_type_get_the_reference_texts() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    let invalid = "Invalid context trust path: expected a non-empty path string";
    for path in [json!(null), json!(123), json!([]), json!({}), json!("")] {
        for command in [
            "evaluate_context_trust",
            "trust_context_folder",
            "untrust_context_folder",
        ] {
            let cmd = json!({"id": "t", "type": command, "path": path});
            assert_eq!(error_of(&mut dreb, cmd), invalid, "{command} {path}");
        }
        let cmd = json!({"id": "r", "type": "remove_trusted_context_folder", "path": path});
        assert_eq!(
            error_of(&mut dreb, cmd),
            "remove_trusted_context_folder requires a non-empty string path",
            "{path}"
        );
    }
    // Absent reads like `null`.
    let cmd = json!({"id": "t", "type": "evaluate_context_trust"});
    assert_eq!(error_of(&mut dreb, cmd), invalid);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn set_settings_payloads_of_the_wrong_type_get_the_reference_texts() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    let cases = [
        (json!(null), "set_settings requires a settings object"),
        (json!([1]), "set_settings requires a settings object"),
        (json!("x"), "set_settings requires a settings object"),
        (
            json!({"transport": "http"}),
            "Invalid transport: \"http\". Valid values: sse, websocket, auto",
        ),
        (
            json!({"maxConcurrentSubagents": 1.5}),
            "Invalid maxConcurrentSubagents: 1.5. Must be a non-negative whole number",
        ),
        (
            json!({"followUpMode": 3}),
            "Invalid followUpMode: 3. Valid values: all, one-at-a-time",
        ),
        (
            json!({"enabledModels": "mock/mock-model"}),
            "Invalid enabledModels: must be a non-empty array of exact model references or null",
        ),
        (
            json!({"subagentArbiter": 1}),
            "subagentArbiter must be an object or null",
        ),
        // Order: the unknown key is reported before the bad value.
        (
            json!({"steeringMode": "x", "bogus": 1}),
            "Unknown settings key(s): bogus. Valid keys: defaultProvider, defaultModel, defaultThinkingLevel, steeringMode, followUpMode, compactionEnabled, retryEnabled, maxConcurrentSubagents, imageAutoResize, blockImages, enableSkillCommands, autoLoadNestedContext, trustedContextFolders, transport, hideThinkingBlock, agentModels, enabledModels, subagentArbiter",
        ),
    ];
    for (settings, expected) in cases {
        let cmd = json!({"id": "s", "type": "set_settings", "settings": settings});
        assert_eq!(error_of(&mut dreb, cmd), expected, "{settings}");
    }
    // Nothing was written.
    assert!(!env.agent_dir().join("settings.json").exists());
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}
