//! `set_settings`: every validation text in the reference's order, atomicity, warnings and
//! value normalisation.

mod common;

use common::{Env, FakeCatalog, to_json};
use serde_json::{Value, json};

const VALID_KEYS: &str = "defaultProvider, defaultModel, defaultThinkingLevel, steeringMode, followUpMode, compactionEnabled, retryEnabled, maxConcurrentSubagents, imageAutoResize, blockImages, enableSkillCommands, autoLoadNestedContext, trustedContextFolders, transport, hideThinkingBlock, agentModels, enabledModels, subagentArbiter";

fn catalog() -> FakeCatalog {
    FakeCatalog::reference()
        .with("r", "think", true, false, false)
        .with("r", "xhigh", true, true, false)
        .with("r", "max", true, true, true)
}

fn error_for(env: &Env, update: Option<Value>) -> String {
    let m = env.manager();
    m.apply_update(update.as_ref(), &catalog())
        .expect_err("update must be rejected")
        .wire_text()
}

#[test]
fn every_error_text() {
    let env = Env::new();
    let dir = env.mkdir("trusted");
    let file = format!("{dir}/file.txt");
    std::fs::write(&file, "x").unwrap();
    let cases: Vec<(Option<Value>, String)> = vec![
        (None, "set_settings requires a settings object".into()),
        (Some(json!(null)), "set_settings requires a settings object".into()),
        (Some(json!([])), "set_settings requires a settings object".into()),
        (Some(json!("x")), "set_settings requires a settings object".into()),
        (Some(json!({"b": 1, "defaultModel": "x", "a": 2})), format!("Unknown settings key(s): b, a. Valid keys: {VALID_KEYS}")),
        (Some(json!({})), "set_settings requires at least one setting to change".into()),
        (Some(json!({"defaultThinkingLevel": "extreme"})), "Invalid defaultThinkingLevel: \"extreme\". Valid values: off, minimal, low, medium, high, xhigh, max".into()),
        (Some(json!({"defaultThinkingLevel": null})), "Invalid defaultThinkingLevel: null. Valid values: off, minimal, low, medium, high, xhigh, max".into()),
        (Some(json!({"steeringMode": "sometimes"})), "Invalid steeringMode: \"sometimes\". Valid values: all, one-at-a-time".into()),
        (Some(json!({"followUpMode": 3})), "Invalid followUpMode: 3. Valid values: all, one-at-a-time".into()),
        (Some(json!({"compactionEnabled": "yes"})), "Invalid compactionEnabled: \"yes\". Must be a boolean".into()),
        (Some(json!({"retryEnabled": 1})), "Invalid retryEnabled: 1. Must be a boolean".into()),
        (Some(json!({"imageAutoResize": null})), "Invalid imageAutoResize: null. Must be a boolean".into()),
        (Some(json!({"blockImages": []})), "Invalid blockImages: []. Must be a boolean".into()),
        (Some(json!({"enableSkillCommands": {}})), "Invalid enableSkillCommands: {}. Must be a boolean".into()),
        (Some(json!({"autoLoadNestedContext": "true"})), "Invalid autoLoadNestedContext: \"true\". Must be a boolean".into()),
        (Some(json!({"hideThinkingBlock": 0})), "Invalid hideThinkingBlock: 0. Must be a boolean".into()),
        (Some(json!({"maxConcurrentSubagents": -1})), "Invalid maxConcurrentSubagents: -1. Must be a non-negative whole number".into()),
        (Some(json!({"maxConcurrentSubagents": 1.5})), "Invalid maxConcurrentSubagents: 1.5. Must be a non-negative whole number".into()),
        (Some(json!({"maxConcurrentSubagents": "2"})), "Invalid maxConcurrentSubagents: \"2\". Must be a non-negative whole number".into()),
        (Some(json!({"maxConcurrentSubagents": 9007199254740992u64})), "Invalid maxConcurrentSubagents: 9007199254740992. Must be a non-negative whole number".into()),
        (Some(json!({"transport": "http"})), "Invalid transport: \"http\". Valid values: sse, websocket, auto".into()),
        (Some(json!({"agentModels": []})), "Invalid agentModels: must be a plain object mapping agent names to model fallback arrays".into()),
        (Some(json!({"agentModels": null})), "Invalid agentModels: must be a plain object mapping agent names to model fallback arrays".into()),
        (Some(json!({"agentModels": {"Explore": "a/b"}})), "Invalid agentModels[\"Explore\"]: expected an array of non-empty strings".into()),
        (Some(json!({"agentModels": {"ok": [], "Plan \"x\"": ["a", " "]}})), "Invalid agentModels[\"Plan \\\"x\\\"\"]: expected an array of non-empty strings".into()),
        (Some(json!({"enabledModels": "mock/mock-model"})), "Invalid enabledModels: must be a non-empty array of exact model references or null".into()),
        (Some(json!({"enabledModels": []})), "Invalid enabledModels: at least one model must remain enabled; use null to enable all".into()),
        (Some(json!({"enabledModels": [" mock/mock-model"]})), "Invalid enabledModels: every entry must be a non-empty exact model reference".into()),
        (Some(json!({"enabledModels": [""]})), "Invalid enabledModels: every entry must be a non-empty exact model reference".into()),
        (Some(json!({"enabledModels": [1]})), "Invalid enabledModels: every entry must be a non-empty exact model reference".into()),
        (Some(json!({"enabledModels": ["mock-model"]})), "Invalid enabledModels entry \"mock-model\": expected an available exact provider/model reference".into()),
        (Some(json!({"enabledModels": ["mock/mock-model", "MOCK/Mock-Model"]})), "Invalid enabledModels: duplicate model \"mock/mock-model\"".into()),
        (Some(json!({"subagentArbiter": "on"})), "subagentArbiter must be an object or null".into()),
        (Some(json!({"subagentArbiter": {"enabled": true, "x": 1, "y": 2}})), "Unknown subagentArbiter key(s): x, y".into()),
        (Some(json!({"subagentArbiter": {"enabled": "yes"}})), "subagentArbiter.enabled must be a boolean".into()),
        (Some(json!({"subagentArbiter": {"model": " "}})), "subagentArbiter.model must be a non-empty exact provider/model string".into()),
        (Some(json!({"subagentArbiter": {"model": 5}})), "subagentArbiter.model must be a non-empty exact provider/model string".into()),
        (Some(json!({"subagentArbiter": {"thinking": "huge"}})), "Invalid subagentArbiter.thinking: \"huge\". Valid values: off, minimal, low, medium, high, xhigh, max".into()),
        (Some(json!({"subagentArbiter": {"guidePath": ""}})), "subagentArbiter.guidePath must be a non-empty string".into()),
        (Some(json!({"subagentArbiter": {"enabled": true}})), "Enabling subagentArbiter requires an exact provider/model".into()),
        (Some(json!({"subagentArbiter": {"model": "mock-model"}})), "subagentArbiter.model must be an exact provider/model".into()),
        (Some(json!({"subagentArbiter": {"model": "/x"}})), "subagentArbiter.model must be an exact provider/model".into()),
        (Some(json!({"subagentArbiter": {"model": "mock/"}})), "subagentArbiter.model must be an exact provider/model".into()),
        (Some(json!({"subagentArbiter": {"model": "mock/a b"}})), "subagentArbiter.model must be an exact provider/model".into()),
        (Some(json!({"subagentArbiter": {"enabled": true, "model": "mock/nope"}})), "Arbiter model not found: mock/nope".into()),
        (Some(json!({"subagentArbiter": {"model": "MOCK/mock-model"}})), "Arbiter model not found: MOCK/mock-model".into()),
        (Some(json!({"subagentArbiter": {"model": "mock/mock-model", "thinking": "low"}})), "Thinking level \"low\" is not supported by non-reasoning model \"mock/mock-model\". Use \"off\" or choose a reasoning model.".into()),
        (Some(json!({"subagentArbiter": {"model": "r/think", "thinking": "xhigh"}})), "Thinking level \"xhigh\" is not supported by model \"r/think\". Use \"high\" or choose an xhigh-capable model.".into()),
        (Some(json!({"subagentArbiter": {"model": "r/xhigh", "thinking": "max"}})), "Thinking level \"max\" is not supported by model \"r/xhigh\". Use \"xhigh\" or choose a max-capable model.".into()),
        (Some(json!({"trustedContextFolders": dir.clone()})), "trustedContextFolders must be an array of non-empty path strings".into()),
        (Some(json!({"trustedContextFolders": null})), "trustedContextFolders must be an array of non-empty path strings".into()),
        (Some(json!({"trustedContextFolders": [dir.clone(), "  "]})), "Invalid trustedContextFolders[1]: expected a non-empty path string".into()),
        (Some(json!({"trustedContextFolders": [7]})), "Invalid trustedContextFolders[0]: expected a non-empty path string".into()),
        (Some(json!({"trustedContextFolders": ["relative/dir"]})), "Invalid trustedContextFolders[0]: path must be absolute after ~ expansion".into()),
        (Some(json!({"trustedContextFolders": [format!("{dir}/missing")]})), "Invalid trustedContextFolders[0]: path must be an existing directory".into()),
        (Some(json!({"trustedContextFolders": [file.clone()]})), "Invalid trustedContextFolders[0]: path must be an existing directory".into()),
        (Some(json!({"defaultProvider": "mock"})), "defaultProvider and defaultModel must be set together".into()),
        (Some(json!({"defaultModel": "mock-model"})), "defaultProvider and defaultModel must be set together".into()),
        (Some(json!({"defaultProvider": null, "defaultModel": "x"})), "defaultProvider and defaultModel must be strings".into()),
        (Some(json!({"defaultProvider": "mock", "defaultModel": "nope"})), "Model not found: mock/nope".into()),
        (Some(json!({"defaultProvider": "Mock", "defaultModel": "mock-model"})), "Model not found: Mock/mock-model".into()),
    ];
    for (update, expected) in cases {
        assert_eq!(
            error_for(&env, update.clone()),
            expected,
            "payload {update:?}"
        );
    }
    assert!(
        !env.global_path().exists(),
        "no rejected payload may create the settings file"
    );
}

#[test]
fn validation_order_follows_reference() {
    let env = Env::new();
    // Unknown keys win over everything else.
    assert!(
        error_for(&env, Some(json!({"steeringMode": "x", "zzz": 1})))
            .starts_with("Unknown settings key(s): zzz.")
    );
    // Thinking level is checked before queue modes, booleans, ... provider pair last.
    let all_bad = json!({
        "defaultProvider": "mock", "transport": "x", "compactionEnabled": "x",
        "steeringMode": "x", "defaultThinkingLevel": "x", "maxConcurrentSubagents": -1,
        "agentModels": 1, "enabledModels": 1, "subagentArbiter": 1, "trustedContextFolders": 1
    });
    let expected_sequence = [
        ("defaultThinkingLevel", "Invalid defaultThinkingLevel"),
        ("steeringMode", "Invalid steeringMode"),
        ("compactionEnabled", "Invalid compactionEnabled"),
        ("maxConcurrentSubagents", "Invalid maxConcurrentSubagents"),
        ("transport", "Invalid transport"),
        ("agentModels", "Invalid agentModels"),
        ("enabledModels", "Invalid enabledModels"),
        ("subagentArbiter", "subagentArbiter must be"),
        ("trustedContextFolders", "trustedContextFolders must be"),
        (
            "defaultProvider",
            "defaultProvider and defaultModel must be set together",
        ),
    ];
    let mut payload = all_bad.as_object().unwrap().clone();
    for (key, prefix) in expected_sequence {
        let err = error_for(&env, Some(Value::Object(payload.clone())));
        assert!(err.starts_with(prefix), "expected {prefix}…, got {err}");
        payload.remove(key);
    }
}

#[test]
fn invalid_field_changes_nothing() {
    let env = Env::new();
    let m = env.manager();
    let c = catalog();
    m.apply_update(
        Some(&json!({"steeringMode": "all", "compactionEnabled": false})),
        &c,
    )
    .unwrap();
    let before = env.global_text();
    let dir = env.mkdir("t");
    let err = m
        .apply_update(
            Some(&json!({
                "defaultThinkingLevel": "low", "retryEnabled": false, "trustedContextFolders": [dir],
                "agentModels": {"Explore": ["a/b"]}, "defaultProvider": "mock", "defaultModel": "missing"
            })),
            &c,
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "Model not found: mock/missing");
    assert_eq!(env.global_text(), before, "file untouched");
    let snap = m.snapshot(&c).unwrap();
    assert_eq!(snap.default_thinking_level, None);
    assert!(snap.retry_enabled);
    assert!(snap.trusted_context_folders.is_empty());
    assert_eq!(snap.agent_models, Some(Default::default()));
}

#[test]
fn null_enabled_models_and_arbiter_count_as_set_and_clear() {
    let env = Env::new();
    let m = env.manager();
    let c = catalog();
    m.apply_update(Some(&json!({"enabledModels": ["mock/mock-model"], "subagentArbiter": {"enabled": false, "model": 1}})), &c)
        .unwrap();
    assert_eq!(
        env.global_json(),
        json!({"enabledModels": ["mock/mock-model"], "subagentArbiter": {"enabled": false, "model": 1}})
    );
    let result = m
        .apply_update(
            Some(&json!({"enabledModels": null, "subagentArbiter": null})),
            &c,
        )
        .unwrap();
    assert_eq!(env.global_text(), "{}");
    let data = to_json(&result);
    assert!(data.get("enabledModels").is_none() && data.get("subagentArbiter").is_none());
    assert_eq!(data["enabledModelsSource"], "default");
}

#[test]
fn enabled_models_are_canonicalised_and_all_collapses_to_unset() {
    let env = Env::new();
    let m = env.manager();
    let c = FakeCatalog::reference();
    let r = m
        .apply_update(
            Some(&json!({"enabledModels": ["MOCK-ANTHROPIC/Mock-Claude"]})),
            &c,
        )
        .unwrap();
    assert_eq!(
        r.enabled_models,
        Some(vec!["mock-anthropic/mock-claude".to_string()])
    );
    assert_eq!(
        env.global_json(),
        json!({"enabledModels": ["mock-anthropic/mock-claude"]})
    );
    let r = m
        .apply_update(
            Some(&json!({"enabledModels": ["mock-anthropic/mock-claude", "mock/mock-model"]})),
            &c,
        )
        .unwrap();
    assert_eq!(r.enabled_models, None);
    assert_eq!(env.global_text(), "{}");
}

#[test]
fn arbiter_policies_store_whole_objects() {
    let env = Env::new();
    let m = env.manager();
    let c = catalog();
    let policy = json!({"guidePath": "~/.dreb/agent/guide.md", "enabled": true, "model": "r/max", "thinking": "max"});
    let r = m
        .apply_update(Some(&json!({"subagentArbiter": policy})), &c)
        .unwrap();
    assert_eq!(to_json(&r)["subagentArbiter"], policy);
    assert_eq!(
        serde_json::to_string(&env.global_json()["subagentArbiter"]).unwrap(),
        serde_json::to_string(&policy).unwrap()
    );
    // Omitted thinking and a disabled policy with a stale model are both fine.
    m.apply_update(
        Some(&json!({"subagentArbiter": {"model": "mock/mock-model"}})),
        &c,
    )
    .unwrap();
    m.apply_update(Some(&json!({"subagentArbiter": {"enabled": false, "model": "gone/model", "thinking": "bogus"}})), &c)
        .unwrap();
    assert_eq!(
        env.global_json()["subagentArbiter"],
        json!({"enabled": false, "model": "gone/model", "thinking": "bogus"})
    );
}

#[test]
fn project_shadow_warnings() {
    let env = Env::new();
    env.write_project(r#"{"enabledModels": ["mock/mock-model"], "agentModels": {"models": {"Explore": ["project/model"]}}}"#);
    let m = env.manager();
    let c = FakeCatalog::reference();
    let r = m
        .apply_update(
            Some(&json!({"enabledModels": ["mock-anthropic/mock-claude"], "agentModels": {"Explore": ["a/b"], "Plan": ["c/d"]}})),
            &c,
        )
        .unwrap();
    assert_eq!(
        r.warnings.clone().unwrap(),
        vec![
            "A project-level enabledModels value (.dreb/settings.json) takes precedence — this change to global settings will have no effect. Edit the project settings file to change it.".to_string(),
            "A project-level agentModels override for \"Explore\" (.dreb/settings.json) takes precedence — this change to global settings will have no effect. Edit the project settings file to change it.".to_string(),
        ]
    );
    // The global write still lands; the merged view keeps the project value.
    assert_eq!(
        env.global_json(),
        json!({"enabledModels": ["mock-anthropic/mock-claude"], "agentModels": {"models": {"Explore": ["a/b"], "Plan": ["c/d"]}}})
    );
    let data = to_json(&r);
    assert_eq!(
        data["agentModels"],
        json!({"Explore": ["project/model"], "Plan": ["c/d"]})
    );
    assert_eq!(data["enabledModels"], json!(["mock/mock-model"]));
    assert_eq!(data["enabledModelsSource"], "project");
    assert_eq!(data["hasProjectEnabledModelsOverride"], true);
    // Warnings come last in the wire object.
    let keys: Vec<String> = to_json(&r).as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys.last().unwrap(), "warnings");
}

#[test]
fn empty_agent_models_list_removes_global_entry() {
    let env = Env::new();
    let m = env.manager();
    let c = FakeCatalog::reference();
    m.apply_update(
        Some(&json!({"agentModels": {"Explore": ["a/b"], "Plan": ["c/d"]}})),
        &c,
    )
    .unwrap();
    let r = m
        .apply_update(Some(&json!({"agentModels": {"Explore": []}})), &c)
        .unwrap();
    assert_eq!(to_json(&r)["agentModels"], json!({"Plan": ["c/d"]}));
    assert_eq!(
        env.global_json(),
        json!({"agentModels": {"models": {"Plan": ["c/d"]}}})
    );
}

#[test]
fn trust_fields_are_written_canonical_and_last() {
    let env = Env::new();
    let m = env.manager();
    let parent = env.mkdir("code");
    let child = env.mkdir("code/pkg");
    let other = env.mkdir("other");
    let r = m
        .apply_update(
            Some(&json!({
                "trustedContextFolders": [format!("{child}/../pkg"), other.clone(), parent.clone(), other.clone()],
                "autoLoadNestedContext": false,
                "hideThinkingBlock": true
            })),
            &FakeCatalog::reference(),
        )
        .unwrap();
    assert_eq!(
        r.trusted_context_folders,
        vec![other.clone(), parent.clone()]
    );
    assert_eq!(
        r.effective_trusted_context_roots,
        vec![other.clone(), parent.clone()]
    );
    assert_eq!(
        env.global_text(),
        serde_json::to_string_pretty(&json!({"hideThinkingBlock": true, "context": {"autoLoadNested": false, "trustedFolders": [other, parent]}}))
            .unwrap()
    );
}

#[test]
fn catalog_failure_is_reported() {
    let env = Env::new();
    let m = env.manager();
    let failing = FakeCatalog {
        fail: Some("models.json is invalid".into()),
        ..FakeCatalog::reference()
    };
    assert_eq!(
        m.apply_update(
            Some(&json!({"enabledModels": ["mock/mock-model"]})),
            &failing
        )
        .unwrap_err()
        .to_string(),
        "Failed to load available models: models.json is invalid"
    );
    assert_eq!(
        m.get_settings(&failing).unwrap_err().to_string(),
        "Failed to load available models: models.json is invalid"
    );
    assert!(!env.global_path().exists());
}

#[test]
fn whole_number_floats_are_accepted_and_stored_as_integers() {
    let env = Env::new();
    let m = env.manager();
    let update: Value = serde_json::from_str(r#"{"maxConcurrentSubagents": 2.0}"#).unwrap();
    let r = m
        .apply_update(Some(&update), &FakeCatalog::reference())
        .unwrap();
    assert_eq!(r.max_concurrent_subagents, 2);
    assert_eq!(
        env.global_text(),
        "{\n  \"backgroundAgents\": {\n    \"maxConcurrentSubagents\": 2\n  }\n}"
    );
}

#[test]
fn empty_agent_models_object_writes_nothing() {
    let env = Env::new();
    let m = env.manager();
    let r = m
        .apply_update(Some(&json!({"agentModels": {}})), &FakeCatalog::reference())
        .unwrap();
    assert!(r.warnings.is_none());
    assert!(!env.global_path().exists());
}

#[test]
fn snapshot_resolves_stored_scope_patterns_with_warnings() {
    let env = Env::new();
    env.write_global(r#"{"enabledModels": ["mock-claude:high", "mock/*", "nope"]}"#);
    let snap = to_json(
        &env.manager()
            .get_settings(&FakeCatalog::reference())
            .unwrap(),
    );
    assert_eq!(
        snap["resolvedScopedModels"],
        json!([
            {"provider": "mock-anthropic", "id": "mock-claude", "name": "Mock (Anthropic wire)", "reasoning": false, "thinkingLevel": "high"},
            {"provider": "mock", "id": "mock-model", "name": "Mock (OpenAI wire)", "reasoning": false}
        ])
    );
    assert_eq!(
        snap["scopeWarnings"],
        json!([{"pattern": "nope", "message": "No models match pattern \"nope\""}])
    );
    assert_eq!(snap["enabledModelsSource"], "global");
}
