//! `navigate_tree` with `summarize: true` when the session's model has no credentials: the reference's
//! `No API key for <provider>` (not the no-model text), and the session stays where it was.

mod common;

use common::*;
use serde_json::{Value, json};

fn response(dreb: &mut Dreb, cmd: Value) -> Value {
    dreb.send(&cmd);
    dreb.next_response()
}

/// models.json with the mock plus a `remote` provider (a `.invalid` host, never contacted) keyed by `remote_key`.
fn write_models(env: &Env, remote_key: &str) {
    let mut models: Value = serde_json::from_str(
        &std::fs::read_to_string(env.agent_dir().join("models.json")).unwrap(),
    )
    .unwrap();
    models["providers"]["remote"] = json!({
        "baseUrl": "https://llm.example.invalid/v1",
        "api": "openai-completions",
        "apiKey": remote_key,
        "models": [{"id": "remote-model", "name": "Remote", "reasoning": false, "input": ["text"],
                    "contextWindow": 200000, "maxTokens": 32000,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]
    });
    std::fs::write(
        env.agent_dir().join("models.json"),
        serde_json::to_string_pretty(&models).unwrap(),
    )
    .unwrap();
}

#[test]
fn summarizing_without_an_api_key_names_the_provider_and_moves_nothing() {
    let env = Env::new();
    write_models(&env, "remote-key");
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "Reply with just: alpha"}));
    dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "Reply with just: beta"}));
    let fm = response(&mut dreb, json!({"id": "fm", "type": "get_fork_messages"}));
    let alpha = fm["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["text"] == "Reply with just: alpha")
        .unwrap()["entryId"]
        .as_str()
        .unwrap()
        .to_string();

    // Switch to the remote model while it has a key, then take the key away (a command that prints nothing
    // resolves to no key) and let the registry re-read models.json.
    let set = response(
        &mut dreb,
        json!({"id": "m1", "type": "set_model", "provider": "remote", "modelId": "remote-model"}),
    );
    assert_eq!(set["success"], true, "{set}");
    write_models(&env, "!true");
    let available = response(
        &mut dreb,
        json!({"id": "a1", "type": "get_available_models"}),
    );
    let providers: Vec<&str> = available["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["provider"].as_str().unwrap())
        .collect();
    assert!(!providers.contains(&"remote"), "{available}");

    let before = response(&mut dreb, json!({"id": "t0", "type": "get_tree"}));
    let nav = response(
        &mut dreb,
        json!({"id": "n1", "type": "navigate_tree", "targetId": alpha, "summarize": true}),
    );
    assert_eq!(
        nav,
        json!({"id": "n1", "type": "response", "command": "navigate_tree", "success": false,
               "error": "No API key for remote"})
    );
    let after = response(&mut dreb, json!({"id": "t1", "type": "get_tree"}));
    assert_eq!(after["data"], before["data"], "the leaf did not move");
    let (code, _, stderr) = dreb.finish();
    assert_eq!(code, 0, "{stderr}");
}
