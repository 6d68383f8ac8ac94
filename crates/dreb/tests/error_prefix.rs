//! `Command failed: ` goes on exactly the failures the reference throws inside a handler; texts a handler returns on
//! purpose stay clean (protocol-behaviour.md §1.6, §2).

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
fn thrown_failures_are_prefixed_and_returned_ones_are_clean() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    let missing = env.cwd().join("missing.jsonl");
    let missing = missing.to_string_lossy();
    let cases = [
        // Thrown in the reference.
        (
            json!({"id": "a", "type": "fork", "entryId": "deadbeef"}),
            "Command failed: Invalid entry ID for forking".to_string(),
        ),
        (
            json!({"id": "b", "type": "import_jsonl", "inputPath": missing}),
            format!("Command failed: File not found: {missing}"),
        ),
        (
            json!({"id": "d", "type": "export_html"}),
            "Command failed: Nothing to export yet - start a conversation first".to_string(),
        ),
        // Returned on purpose.
        (
            json!({"id": "e", "type": "set_model", "provider": "mock", "modelId": "nope"}),
            "Model not found: mock/nope".to_string(),
        ),
        (
            json!({"id": "f", "type": "set_session_name", "name": "  "}),
            "Session name cannot be empty".to_string(),
        ),
        (
            json!({"id": "g", "type": "steer", "message": "/fork"}),
            "Built-in slash command /fork must be handled by the RPC client; it was not sent to the model."
                .to_string(),
        ),
        (
            json!({"id": "h", "type": "navigate_tree", "targetId": "deadbeef"}),
            "Entry deadbeef not found".to_string(),
        ),
        (
            json!({"id": "i", "type": "delete_session", "sessionPath": "notes.txt"}),
            "Not a session file (expected .jsonl): notes.txt".to_string(),
        ),
    ];
    for (cmd, expected) in cases {
        assert_eq!(error_of(&mut dreb, cmd.clone()), expected, "{cmd}");
    }
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}
