//! `delete_session` over RPC moves the file into the freedesktop.org trash (`$XDG_DATA_HOME/Trash`, else
//! `~/.local/share/Trash`), answering `{method: "trash"}` as the reference does when its `trash` CLI succeeds.

#![cfg(all(unix, not(target_os = "macos")))]

mod common;

use common::Env;
use serde_json::json;

fn delete(env: &Env, envs: &[(&str, &str)], file: &std::path::Path) -> serde_json::Value {
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
        ],
        envs,
    );
    let frames = dreb.exchange(
        &json!({"id": "d", "type": "delete_session", "sessionPath": file.to_string_lossy()}),
    );
    frames.last().expect("a response").clone()
}

#[test]
fn deleted_sessions_go_to_the_trash() {
    let env = Env::new();
    let sessions = env.cwd().join("old");
    std::fs::create_dir_all(&sessions).unwrap();

    // XDG_DATA_HOME names the home trash.
    let data_home = tempfile::tempdir_in(env.home.path()).unwrap();
    let first = sessions.join("2026-01-01_a.jsonl");
    std::fs::write(&first, "{\"type\":\"session\"}\n").unwrap();
    let xdg = data_home.path().to_string_lossy().into_owned();
    let r = delete(&env, &[("XDG_DATA_HOME", &xdg)], &first);
    assert_eq!(
        r,
        json!({"id": "d", "type": "response", "command": "delete_session", "success": true, "data": {"method": "trash"}})
    );
    assert!(!first.exists());
    let trashed = data_home.path().join("Trash/files/2026-01-01_a.jsonl");
    assert_eq!(
        std::fs::read_to_string(trashed).unwrap(),
        "{\"type\":\"session\"}\n"
    );
    assert!(
        data_home
            .path()
            .join("Trash/info/2026-01-01_a.jsonl.trashinfo")
            .exists()
    );

    // Without it, ~/.local/share/Trash.
    let second = sessions.join("2026-01-02_b.jsonl");
    std::fs::write(&second, "{}\n").unwrap();
    let r = delete(&env, &[], &second);
    assert_eq!(r["data"], json!({"method": "trash"}), "{r}");
    assert!(
        env.home
            .path()
            .join(".local/share/Trash/files/2026-01-02_b.jsonl")
            .exists()
    );
}
