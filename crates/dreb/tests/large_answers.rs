//! Large answers (`get_messages` of a long session; `get_tree` goes the same way) are written to stdout in parts
//! while they are encoded: each still arrives as one whole line, equal to what the session holds, with nothing
//! inside it and the next frame on its own line.

mod common;

use common::Env;
use serde_json::{Value, json};

/// A session file of `turns` user/assistant pairs whose texts are `size` bytes each (line separators included,
/// which the frame escapes), so the answer spans many parts.
fn write_session(env: &Env, turns: usize, size: usize) -> std::path::PathBuf {
    let path = env.cwd().join("long.jsonl");
    let mut lines = vec![json!({
        "type": "session", "version": 3, "id": "6a1e0c1e-0000-4000-8000-000000000001",
        "timestamp": "2026-12-01T06:29:04.331Z", "cwd": env.cwd().to_string_lossy()
    })];
    let mut parent = Value::Null;
    for t in 0..turns {
        let filler: String = format!("turn {t} \u{2028} ").repeat(size / 12);
        let user = json!({"role": "user", "content": [{"type": "text", "text": format!("q{t} {filler}")}],
            "timestamp": 1_764_570_544_331u64 + t as u64});
        let assistant = json!({"role": "assistant", "content": [{"type": "text", "text": format!("a{t} {filler}")}],
            "api": "openai-completions", "provider": "mock", "model": "mock-model",
            "usage": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop", "timestamp": 1_764_570_544_332u64 + t as u64});
        for (i, message) in [user, assistant].into_iter().enumerate() {
            let id = format!("{:08x}", t * 2 + i);
            lines.push(json!({"type": "message", "id": id, "parentId": parent,
                "timestamp": "2026-12-01T06:29:04.331Z", "message": message}));
            parent = Value::String(id);
        }
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn texts(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| {
            m["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

#[test]
fn a_long_sessions_messages_arrive_whole_with_the_next_frame_after_them() {
    let env = Env::new();
    // 40 turns of 2 × 64 KiB: about 5 MiB of answer, twenty parts.
    let path = write_session(&env, 40, 64 * 1024);
    let mut dreb = env.spawn(&[]);
    let switched = dreb.exchange(
        &json!({"id": "s", "type": "switch_session", "sessionPath": path.to_string_lossy()}),
    );
    assert_eq!(switched.last().unwrap()["success"], true, "{switched:?}");

    // Sent together: the answers come in order, each a whole line (the harness fails on a malformed line).
    dreb.write_raw(
        concat!(
            "{\"id\":\"m\",\"type\":\"get_messages\"}\n",
            "{\"id\":\"g\",\"type\":\"get_state\"}\n"
        )
        .as_bytes(),
    );
    let messages = dreb.next_response();
    let state = dreb.next_response();
    assert_eq!((&messages["id"], &state["id"]), (&json!("m"), &json!("g")));
    let got = messages["data"]["messages"].as_array().expect("messages");
    assert_eq!(got.len(), 80);
    let file: Vec<Value> = common::read_jsonl(&path)
        .into_iter()
        .filter(|l| l["type"] == "message")
        .map(|l| l["message"].clone())
        .collect();
    assert_eq!(texts(got), texts(&file));
    assert!(texts(got)[79].contains('\u{2028}'));
    assert_eq!(state["data"]["messageCount"], 80);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}
