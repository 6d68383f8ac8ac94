//! A session file that stops taking writes is reported to the host (`session_write_error`), the agent keeps
//! serving, and once writes succeed again (`session_write_recovered`) the file holds the whole session.

mod common;

use common::Env;
use serde_json::{Value, json};

fn prompt(dreb: &mut common::Dreb, id: &str, text: &str) -> Vec<Value> {
    let frames = dreb.exchange(&json!({"id": id, "type": "prompt", "message": text}));
    let response = frames.iter().find(|f| common::is_response(f)).unwrap();
    assert_eq!(response["success"], true, "{response}");
    frames
}

/// The first `kind` frame in `frames`, else the next one read.
fn find_or_read(dreb: &mut common::Dreb, frames: &[Value], kind: &str) -> Value {
    match frames.iter().find(|f| f["type"] == kind) {
        Some(f) => f.clone(),
        None => dreb.read_until(|f| f["type"] == kind).pop().unwrap(),
    }
}

#[test]
fn a_failing_session_file_is_reported_and_rewritten_whole_once_it_recovers() {
    let env = Env::new();
    let dir = env.home.path().join("sessions-here");
    let dir_arg = dir.to_string_lossy().into_owned();
    let mut dreb = env.spawn(&["--session-dir", &dir_arg]);

    let frames = prompt(&mut dreb, "p1", "hello");
    assert!(
        !frames.iter().any(|f| f["type"] == "session_write_error"),
        "{frames:#?}"
    );
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("the session file after the first reply");

    // The directory, with the session file, is replaced by a plain file.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, b"in the way").unwrap();
    let frames = prompt(&mut dreb, "p2", "second");
    let error = find_or_read(&mut dreb, &frames, "session_write_error");
    assert_eq!(error["path"], file.to_string_lossy().as_ref(), "{error}");
    assert!(
        error["error"].as_str().unwrap().contains("Not a directory"),
        "{error}"
    );
    assert!(error["unwrittenEntries"].as_i64().unwrap() >= 1, "{error}");

    // Still serving; a third reply fails to land too, and is not reported again.
    let frames = prompt(&mut dreb, "p3", "third");
    let state = dreb.exchange(&json!({"id": "s", "type": "get_state"}));
    assert!(
        !frames
            .iter()
            .chain(&state)
            .any(|f| f["type"] == "session_write_error"),
        "one report per streak"
    );

    std::fs::remove_file(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    let frames = prompt(&mut dreb, "p4", "fourth");
    let recovered = find_or_read(&mut dreb, &frames, "session_write_recovered");
    assert_eq!(recovered["path"], file.to_string_lossy().as_ref());

    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    let lines = common::read_jsonl(&file);
    assert_eq!(lines[0]["type"], "session", "the header is back");
    let users: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "user")
        .map(|l| l["message"]["content"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["hello", "second", "third", "fourth"]);
    let replies = lines
        .iter()
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "assistant")
        .count();
    assert_eq!(replies, 4);
}
