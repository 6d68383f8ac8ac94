//! Arbitrary input never panics: settings file bytes, set_settings payloads and trust paths.

mod common;

use common::{Env, FakeCatalog};
use proptest::prelude::*;
use serde_json::{Map, Value};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[ -~]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("all"),
            Just("sse"),
            Just("high"),
            Just("mock/mock-model"),
            Just("/tmp"),
            Just("~")
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("defaultProvider".to_string()),
        Just("defaultModel".to_string()),
        Just("defaultThinkingLevel".to_string()),
        Just("steeringMode".to_string()),
        Just("maxConcurrentSubagents".to_string()),
        Just("agentModels".to_string()),
        Just("enabledModels".to_string()),
        Just("subagentArbiter".to_string()),
        Just("trustedContextFolders".to_string()),
        Just("autoLoadNestedContext".to_string()),
        Just("context".to_string()),
        Just("compaction".to_string()),
        Just("enabled".to_string()),
        Just("model".to_string()),
        Just("thinking".to_string()),
        "[a-z0-9]{0,6}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn any_payload_is_answered(update in json_value(), file in json_value()) {
        let env = Env::new();
        env.write_global(&serde_json::to_string(&file).unwrap());
        let m = env.manager();
        let c = FakeCatalog::reference();
        let _ = m.apply_update(Some(&update), &c);
        let _ = m.get_settings(&c);
        let _ = m.evaluate_context_trust(&update);
        let _ = m.trust_context_folder(&update, &c);
        let _ = m.untrust_context_folder(&update, &c);
        let _ = m.remove_trusted_context_folder(&update, &c);
        let _ = m.global_context_trust_policy();
    }

    #[test]
    fn any_file_bytes_load(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let env = Env::new();
        std::fs::write(env.global_path(), &bytes).unwrap();
        let m = env.manager();
        let _ = m.snapshot(&FakeCatalog::reference());
        let written = m.set_theme("t");
        if m.has_global_settings_load_error() {
            prop_assert!(written.is_err());
            prop_assert_eq!(std::fs::read(env.global_path()).unwrap(), bytes, "never overwritten");
        }
    }
}
