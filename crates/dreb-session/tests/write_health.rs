//! A session file that stops taking writes: the observer hears of it once, nothing held in memory is lost, and
//! it hears again when the unwritten lines reach the file.

use std::sync::{Arc, Mutex};

use dreb_session::{SessionManager, WriteHealth};
use serde_json::{Value, json};

fn user(i: u64) -> Value {
    json!({"role":"user","content":[{"type":"text","text":format!("msg {i}")}],"timestamp":i})
}

fn assistant(i: u64) -> Value {
    json!({"role":"assistant","content":[{"type":"text","text":format!("reply {i}")}],"provider":"p","model":"m","stopReason":"stop","timestamp":i})
}

#[test]
fn a_failing_session_file_is_reported_once_and_recovers_without_losing_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sessions");
    let mut sm = SessionManager::create("/w", &dir).unwrap();
    let seen: Arc<Mutex<Vec<WriteHealth>>> = Arc::default();
    let sink = seen.clone();
    sm.set_write_observer(Arc::new(move |h| sink.lock().unwrap().push(h.clone())));
    let file = sm.session_file().unwrap().to_path_buf();
    sm.append_message(user(0)).unwrap(); // buffered: nothing is written before the first reply
    sm.append_message(assistant(0)).unwrap();
    assert!(file.exists());

    // The directory (and the file in it) is replaced by a plain file: no write can succeed.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, b"in the way").unwrap();
    assert!(sm.append_message(user(1)).is_err());
    assert!(sm.write_failing());
    assert!(sm.append_message(assistant(1)).is_err());
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "one report per streak: {seen:?}");
        let WriteHealth::Failing {
            path,
            error,
            unwritten,
        } = &seen[0]
        else {
            panic!("{seen:?}")
        };
        assert_eq!(path, &file);
        assert!(error.contains("Not a directory"), "{error}");
        // The first exchange reached the file before it went away; the second user message did not.
        assert_eq!(*unwritten, 1);
    }

    std::fs::remove_file(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    sm.append_message(user(2)).unwrap();
    assert!(!sm.write_failing());
    assert_eq!(
        seen.lock().unwrap()[1],
        WriteHealth::Recovered { path: file.clone() }
    );

    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("{\"type\":\"session\""),
        "the header is the first line: {text}"
    );
    let reopened = SessionManager::open(&file, None).unwrap();
    assert_eq!(
        reopened.entries().count(),
        5,
        "every entry reached the file, the ones written before it went away too"
    );
}

#[test]
fn held_writes_reach_the_file_in_order_with_a_flush_or_the_next_write() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("sessions");
    let mut sm = SessionManager::create("/w", &dir).unwrap();
    let file = sm.session_file().unwrap().to_path_buf();
    sm.append_message(user(0)).unwrap();
    sm.append_message(assistant(0)).unwrap();
    let on_disk = |file: &std::path::Path| std::fs::read_to_string(file).unwrap().lines().count();
    assert_eq!(on_disk(&file), 3, "header and the first exchange");

    // Held: in the session at once, not in the file.
    sm.holding_writes(|sm| {
        sm.append_message(user(1)).unwrap();
        sm.append_message(assistant(1)).unwrap();
    });
    assert!(sm.has_held_writes());
    assert_eq!(sm.entries().count(), 4);
    assert_eq!(on_disk(&file), 3);
    sm.flush().unwrap();
    assert!(!sm.has_held_writes());
    assert_eq!(on_disk(&file), 5);
    sm.flush().unwrap();
    assert_eq!(on_disk(&file), 5, "nothing held, nothing written");

    // A write made without holding takes the held lines with it, in order.
    sm.holding_writes(|sm| sm.append_message(user(2)).unwrap());
    sm.append_message(assistant(2)).unwrap();
    assert!(!sm.has_held_writes());
    let texts: Vec<String> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        texts,
        ["msg 0", "reply 0", "msg 1", "reply 1", "msg 2", "reply 2"]
    );

    // Starting another session writes what the one being left held.
    sm.holding_writes(|sm| sm.append_message(user(3)).unwrap());
    sm.new_session(Default::default());
    assert_eq!(on_disk(&file), 8);
}
