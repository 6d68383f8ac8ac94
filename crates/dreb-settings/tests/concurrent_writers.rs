//! Concurrent writers never lose each other's keys: real processes (this test binary
//! re-spawned as a child writer) and threads with separate manager handles.

mod common;

use std::path::Path;
use std::process::Command;

use common::Env;
use dreb_settings::{SettingsEdit, SettingsManager};
use serde_json::{Value, json};

const CHILD_ENV: &str = "DREB_SETTINGS_TEST_CHILD_WRITER";
const KEYS_PER_WRITER: usize = 15;

fn write_keys(manager: &SettingsManager, prefix: &str) {
    for i in 0..KEYS_PER_WRITER {
        let key = format!("{prefix}{i}");
        manager
            .update_global(&[SettingsEdit::Set(vec![key.clone()], json!(i))])
            .unwrap();
        // Nested keys under one shared object exercise the per-key overlay.
        manager
            .update_global(&[SettingsEdit::Set(
                vec!["agentModels".into(), "models".into(), key],
                json!([prefix]),
            )])
            .unwrap();
        manager
            .set_steering_mode(if i % 2 == 0 { "all" } else { "one-at-a-time" })
            .unwrap();
    }
}

fn assert_all_keys(global: &Path, prefixes: &[String]) {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(global).unwrap()).unwrap();
    for prefix in prefixes {
        for i in 0..KEYS_PER_WRITER {
            let key = format!("{prefix}{i}");
            assert_eq!(v[&key], json!(i), "lost {key}");
            assert_eq!(
                v["agentModels"]["models"][&key],
                json!([prefix]),
                "lost nested {key}"
            );
        }
    }
    assert_eq!(
        v.as_object().unwrap().len(),
        prefixes.len() * KEYS_PER_WRITER + 2
    );
}

/// Entry point of the child processes spawned below; without the variable it only checks
/// that it is not mistaken for a real writer run.
#[test]
fn child_writer_process() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        assert!(std::env::var_os(CHILD_ENV).is_none());
        return;
    };
    let parts: Vec<&str> = spec.split('\n').collect();
    let [agent_dir, cwd, prefix] = parts.as_slice() else {
        panic!("bad child spec {spec:?}")
    };
    let manager = SettingsManager::load(Path::new(agent_dir), Path::new(cwd));
    write_keys(&manager, prefix);
}

#[test]
fn processes_writing_different_keys_lose_nothing() {
    let env = Env::new();
    let exe = std::env::current_exe().unwrap();
    let prefixes: Vec<String> = (0..4).map(|n| format!("proc{n}_")).collect();
    let children: Vec<_> = prefixes
        .iter()
        .map(|prefix| {
            Command::new(&exe)
                .args(["--exact", "child_writer_process", "--test-threads=1"])
                .stdout(std::process::Stdio::null())
                .env(
                    CHILD_ENV,
                    format!(
                        "{}\n{}\n{prefix}",
                        env.agent_dir.display(),
                        env.cwd.display()
                    ),
                )
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a child writer failed");
    }
    assert_all_keys(&env.global_path(), &prefixes);
    // Locks are released: no lock directory left behind.
    assert!(!env.agent_dir.join("settings.json.lock").exists());
    #[cfg(unix)]
    assert!(!env.agent_dir.join("settings.json.flock").exists());
}

#[test]
fn threads_with_separate_handles_lose_nothing() {
    let env = Env::new();
    let prefixes: Vec<String> = (0..4).map(|n| format!("thread{n}_")).collect();
    std::thread::scope(|s| {
        for prefix in &prefixes {
            let manager = env.manager();
            s.spawn(move || write_keys(&manager, prefix));
        }
    });
    assert_all_keys(&env.global_path(), &prefixes);
}

#[test]
fn shared_handle_across_threads() {
    let env = Env::new();
    let manager = env.manager();
    let prefixes: Vec<String> = (0..3).map(|n| format!("shared{n}_")).collect();
    std::thread::scope(|s| {
        for prefix in &prefixes {
            let manager = &manager;
            s.spawn(move || write_keys(manager, prefix));
        }
    });
    assert_all_keys(&env.global_path(), &prefixes);
}
