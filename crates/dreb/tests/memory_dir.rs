//! The user's memory directory, as the reference's resource loader makes it: `memory` beside the agent dir (so
//! `DREB_CODING_AGENT_DIR` moves it too), created at start-up and again by `reload`; a failure to create it is
//! logged and the session still serves.

mod common;

use common::Env;
use serde_json::json;

fn spawn_with_agent_dir(env: &Env, agent_dir: &std::path::Path) -> common::Dreb {
    std::fs::create_dir_all(agent_dir).unwrap();
    std::fs::copy(
        env.agent_dir().join("models.json"),
        agent_dir.join("models.json"),
    )
    .unwrap();
    env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-model",
        ],
        &[("DREB_CODING_AGENT_DIR", &agent_dir.to_string_lossy())],
    )
}

#[test]
fn the_memory_dir_follows_the_agent_dir_override_and_reload_makes_it_again() {
    let env = Env::new();
    let agent_dir = env.home.path().join("custom/agentx");
    let memory = env.home.path().join("custom/memory");
    let mut dreb = spawn_with_agent_dir(&env, &agent_dir);
    dreb.exchange(&json!({"id": "v", "type": "get_version"}));
    assert!(memory.is_dir(), "{} exists", memory.display());
    assert!(!env.home.path().join(".dreb/memory").exists());

    std::fs::remove_dir(&memory).unwrap();
    let reload = dreb.exchange(&json!({"id": "r", "type": "reload"}));
    assert_eq!(reload.last().unwrap()["success"], true, "{reload:?}");
    assert!(memory.is_dir(), "reload creates it again");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_memory_dir_that_cannot_be_created_does_not_stop_the_session() {
    let env = Env::new();
    // A file where the directory should be.
    std::fs::write(env.home.path().join(".dreb/memory"), "not a directory").unwrap();
    let mut dreb = env.spawn(&[]);
    let state = dreb.exchange(&json!({"id": "s", "type": "get_state"}));
    assert_eq!(state.last().unwrap()["success"], true, "{state:?}");
    let (code, _, stderr) = dreb.finish();
    assert_eq!(code, 0);
    assert!(
        stderr.contains("Could not create memory directory"),
        "{stderr}"
    );
}
