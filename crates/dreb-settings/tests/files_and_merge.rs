//! Settings files: defaults, merge rules, key-level writes, corrupt and unreadable files.

mod common;

use common::{Env, FakeCatalog, to_json};
use dreb_settings::manager::ResourceListKey;
use dreb_settings::{SettingsError, SettingsScope};
use serde_json::json;

const CANNOT_WRITE: &str = "Cannot write settings: the global settings file failed to load (fix or remove the corrupt settings.json first)";

#[test]
fn defaults_without_files() {
    let env = Env::new();
    let m = env.manager();
    assert!(m.load_errors().is_empty());
    assert_eq!(m.steering_mode(), "one-at-a-time");
    assert_eq!(m.follow_up_mode(), "one-at-a-time");
    assert_eq!(m.transport(), "sse");
    let c = m.compaction_settings();
    assert_eq!(
        (c.enabled, c.reserve_tokens, c.keep_recent_tokens),
        (true, 16384, 20000)
    );
    let r = m.retry_settings();
    assert_eq!(
        (r.enabled, r.max_retries, r.base_delay_ms, r.max_delay_ms),
        (true, 3, 2000, 60000)
    );
    let b = m.branch_summary_settings();
    assert_eq!((b.reserve_tokens, b.skip_prompt), (16384, false));
    let g = m.background_agent_guardrail();
    assert_eq!((g.enabled, g.turn_limit), (true, 3));
    assert_eq!(m.max_concurrent_subagents(), 4);
    assert!(
        m.image_auto_resize() && !m.block_images() && m.enable_skill_commands() && m.show_images()
    );
    assert!(!m.hide_thinking_block() && !m.quiet_startup());
    assert_eq!(m.double_escape_action(), "tree");
    assert_eq!(m.tree_filter_mode(), "default");
    assert_eq!((m.editor_padding_x(), m.autocomplete_max_visible()), (0, 5));
    assert_eq!(m.code_block_indent(), "  ");
    let t = m.tab_title_settings();
    assert_eq!(
        (t.enabled, t.trigger_after, t.max_title_length),
        (true, 9, 60)
    );
    assert_eq!(m.default_thinking_level(), None);
    assert_eq!(m.enabled_models(), None);
    assert!(!m.global_context_trust_policy().is_active());
}

#[test]
fn project_overrides_global_one_level_deep() {
    let env = Env::new();
    env.write_global(
        r#"{"steeringMode": "all", "compaction": {"enabled": false, "reserveTokens": 1000}, "enabledModels": ["a/b", "c/d"],
            "retry": {"maxRetries": 9}, "agentModels": {"models": {"Explore": ["g/1"], "Plan": ["g/2"]}},
            "modelSettings": {"p/m": {"thinkingDisplay": "omitted", "appendSystemPrompt": "G"}}}"#,
    );
    env.write_project(
        r#"{"steeringMode": "one-at-a-time", "compaction": {"keepRecentTokens": 8}, "enabledModels": ["x/y"],
            "retry": 5, "agentModels": {"models": {"Plan": ["p/2"], "Review": ["p/3"]}},
            "modelSettings": {"p/m": {"thinkingDisplay": "summarized"}}}"#,
    );
    let m = env.manager();
    assert_eq!(m.steering_mode(), "one-at-a-time");
    let c = m.compaction_settings();
    assert_eq!(
        (c.enabled, c.reserve_tokens, c.keep_recent_tokens),
        (false, 1000, 8)
    );
    assert_eq!(m.enabled_models(), Some(vec!["x/y".to_string()]));
    // A non-object project value replaces the whole global object.
    assert_eq!(m.retry_settings().max_retries, 3);
    let agents = m.agent_models();
    assert_eq!(
        serde_json::to_value(&agents).unwrap(),
        json!({"Explore": ["g/1"], "Plan": ["p/2"], "Review": ["p/3"]})
    );
    assert!(
        m.has_project_agent_model_override("Plan")
            && !m.has_project_agent_model_override("Explore")
    );
    assert_eq!(
        m.model_thinking_display("p/m").as_deref(),
        Some("summarized")
    );
    assert_eq!(
        m.model_prompt_settings("p", "m").unwrap(),
        Some(dreb_settings::manager::ModelPromptSettings::AppendSystemPrompt("G".into()))
    );
}

#[test]
fn model_prompt_settings_errors() {
    let env = Env::new();
    env.write_global(r#"{"modelSettings": {"p/a": {"systemPrompt": "S", "appendSystemPrompt": "A"}, "p/b": {"systemPrompt": " "}}}"#);
    let m = env.manager();
    assert_eq!(
        m.model_prompt_settings("p", "a").unwrap_err(),
        "modelSettings.p/a cannot define both systemPrompt and appendSystemPrompt"
    );
    assert_eq!(
        m.model_prompt_settings("p", "b").unwrap_err(),
        "modelSettings.p/b.systemPrompt must be a non-empty string"
    );
    assert_eq!(m.model_prompt_settings("p", "c").unwrap(), None);
}

#[test]
fn trust_and_arbiter_are_global_only() {
    let env = Env::new();
    let trusted = env.mkdir("trusted");
    env.write_project(&format!(
        r#"{{"context": {{"autoLoadNested": true, "trustedFolders": ["{trusted}"]}}, "subagentArbiter": {{"enabled": true, "model": "mock/mock-model"}}}}"#
    ));
    let m = env.manager();
    let policy = m.global_context_trust_policy();
    assert!(!policy.unrestricted && policy.trusted_folders.is_empty());
    let snap = to_json(&m.get_settings(&FakeCatalog::reference()).unwrap());
    assert_eq!(snap["autoLoadNestedContext"], false);
    assert_eq!(snap["trustedContextFolders"], json!([]));
    assert!(snap.get("subagentArbiter").is_none());
}

#[test]
fn global_only_slices_are_reread_from_disk() {
    let env = Env::new();
    let m = env.manager();
    let dir = env.mkdir("d");
    // Another process edits the global file after we loaded it.
    env.write_global(&format!(
        r#"{{"context": {{"trustedFolders": ["{dir}"]}}, "subagentArbiter": {{"enabled": false}}}}"#
    ));
    assert_eq!(
        m.global_context_trust_policy().trusted_folders,
        vec![dir.clone()]
    );
    assert_eq!(
        m.global_subagent_arbiter().unwrap(),
        Some(json!({"enabled": false}))
    );
    // Malformed policy fails closed.
    env.write_global(&format!(
        r#"{{"context": {{"autoLoadNested": "yes", "trustedFolders": ["{dir}"]}}}}"#
    ));
    assert!(!m.global_context_trust_policy().is_active());
    env.write_global("{ not json");
    assert!(!m.global_context_trust_policy().is_active());
    assert!(m.configured_trusted_context_folders().is_empty());
}

#[test]
fn writes_touch_only_changed_keys() {
    let env = Env::new();
    let original = "{\n  \"theme\": \"dark\",\n  \"compaction\": {\n    \"keepRecentTokens\": 8,\n    \"enabled\": true\n  },\n  \"custom\": {\"x\": [1, 2.5]},\n  \"queueMode\": \"all\"\n}";
    env.write_global(original);
    let m = env.manager();
    // An external writer changes another key after we loaded.
    env.write_global(&original.replace("dark", "light"));
    m.set_compaction_enabled(false).unwrap();
    assert_eq!(
        env.global_text(),
        "{\n  \"theme\": \"light\",\n  \"compaction\": {\n    \"keepRecentTokens\": 8,\n    \"enabled\": false\n  },\n  \"custom\": {\n    \"x\": [\n      1,\n      2.5\n    ]\n  },\n  \"steeringMode\": \"all\"\n}"
    );
    // The in-memory view follows what is on disk now.
    assert_eq!(m.theme().as_deref(), Some("light"));
    assert!(!m.compaction_enabled());
}

#[test]
fn removing_keys_and_resource_lists() {
    let env = Env::new();
    let m = env.manager();
    m.set_enabled_models(Some(&["a/b".to_string()])).unwrap();
    m.set_theme("t").unwrap();
    m.set_enabled_models(None).unwrap();
    assert_eq!(env.global_text(), "{\n  \"theme\": \"t\"\n}");
    m.set_resource_list(
        SettingsScope::Project,
        ResourceListKey::Skills,
        vec![json!("./skills")],
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(env.project_path()).unwrap(),
        "{\n  \"skills\": [\n    \"./skills\"\n  ]\n}"
    );
    assert_eq!(m.skill_paths(), vec!["./skills".to_string()]);
    m.set_model_thinking_display("m1", Some("omitted")).unwrap();
    m.set_model_thinking_display("m1", None).unwrap();
    // Like the reference, the emptied container stays.
    assert_eq!(
        env.global_json(),
        json!({"theme": "t", "modelSettings": {}})
    );
}

#[test]
fn corrupt_global_file_is_never_overwritten() {
    let env = Env::new();
    let corrupt = "{\"steeringMode\": \"all\",, }";
    env.write_global(corrupt);
    let m = env.manager();
    let errors = m.load_errors();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].scope, SettingsScope::Global);
    assert!(errors[0].to_string().starts_with(&format!(
        "global: Invalid JSON in settings file {}",
        env.global_path().display()
    )));

    // Runtime setters: a clear error naming the file.
    match m.set_steering_mode("one-at-a-time").unwrap_err() {
        SettingsError::GlobalLoadFailed { path, .. } => assert_eq!(path, env.global_path()),
        other => panic!("unexpected {other:?}"),
    }
    let text = m.set_retry_enabled(false).unwrap_err().to_string();
    assert!(
        text.contains(&env.global_path().display().to_string()),
        "{text}"
    );

    // RPC writers: the reference's text.
    let c = FakeCatalog::reference();
    let dir = env.mkdir("d");
    assert_eq!(
        m.apply_update(Some(&json!({"retryEnabled": false})), &c)
            .unwrap_err()
            .to_string(),
        CANNOT_WRITE
    );
    assert_eq!(
        m.trust_context_folder(&json!(dir), &c)
            .unwrap_err()
            .to_string(),
        CANNOT_WRITE
    );
    assert_eq!(
        m.remove_trusted_context_folder(&json!("/x"), &c)
            .unwrap_err()
            .to_string(),
        CANNOT_WRITE
    );
    assert!(
        m.get_settings(&c)
            .unwrap_err()
            .to_string()
            .starts_with("Failed to reload settings: global: Invalid JSON in settings file")
    );
    assert_eq!(env.global_text(), corrupt, "the corrupt file is untouched");
}

#[test]
fn file_corrupted_after_load_is_not_overwritten() {
    let env = Env::new();
    let m = env.manager();
    env.write_global("[1, 2]");
    let err = m.set_hide_thinking_block(true).unwrap_err().to_string();
    assert_eq!(
        err,
        format!(
            "global: Settings file {} must contain a JSON object",
            env.global_path().display()
        )
    );
    let err = m
        .apply_update(
            Some(&json!({"hideThinkingBlock": true})),
            &FakeCatalog::reference(),
        )
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "Failed to persist settings: global: Settings file {} must contain a JSON object",
            env.global_path().display()
        )
    );
    assert_eq!(env.global_text(), "[1, 2]");
}

#[test]
fn unreadable_files_give_clear_errors() {
    let env = Env::new();
    // A directory where the file should be: unreadable for every user, including root.
    std::fs::create_dir_all(env.project_path()).unwrap();
    let m = env.manager();
    let errors = m.load_errors();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].scope, SettingsScope::Project);
    let err = m
        .get_settings(&FakeCatalog::reference())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "Failed to reload settings: project: Could not read settings file {}:",
            env.project_path().display()
        )),
        "{err}"
    );
    // The global file is fine, so global writes still work.
    m.set_theme("x").unwrap();
}

#[test]
fn get_settings_sees_external_edits_and_recovers() {
    let env = Env::new();
    env.write_global("oops");
    let m = env.manager();
    let c = FakeCatalog::reference();
    assert!(m.get_settings(&c).is_err());
    env.write_global(r#"{"retry": {"enabled": false}}"#);
    let snap = m.get_settings(&c).unwrap();
    assert!(!snap.retry_enabled);
    // After a successful reload, writes are allowed again.
    m.apply_update(Some(&json!({"retryEnabled": true})), &c)
        .unwrap();
    assert_eq!(env.global_json(), json!({"retry": {"enabled": true}}));
}

#[test]
fn invalid_stored_values_fall_back_to_defaults() {
    let env = Env::new();
    env.write_global(r#"{"backgroundAgents": {"maxConcurrentSubagents": -3, "parentTurnLimit": 0}, "compaction": {"enabled": "no"}, "treeFilterMode": "bogus"}"#);
    let m = env.manager();
    assert_eq!(m.max_concurrent_subagents(), 4);
    assert_eq!(m.background_agent_guardrail().turn_limit, 3);
    assert!(m.compaction_enabled());
    assert_eq!(m.tree_filter_mode(), "default");
}

#[test]
fn empty_file_reads_as_empty_settings() {
    let env = Env::new();
    env.write_global("");
    let m = env.manager();
    assert!(m.load_errors().is_empty());
    m.set_transport("websocket").unwrap();
    assert_eq!(env.global_text(), "{\n  \"transport\": \"websocket\"\n}");
}

#[cfg(unix)]
#[test]
fn permissions_and_symlinks_are_preserved() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let m = env.manager();
    m.set_theme("a").unwrap();
    assert_eq!(
        std::fs::metadata(env.global_path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o644
    );
    std::fs::set_permissions(env.global_path(), std::fs::Permissions::from_mode(0o600)).unwrap();
    m.set_theme("b").unwrap();
    assert_eq!(
        std::fs::metadata(env.global_path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );

    // A symlinked settings.json (dotfiles repos) is updated at its target.
    let env = Env::new();
    let real = env.root().join("dotfiles/settings.json");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::fs::write(&real, "{}").unwrap();
    std::os::unix::fs::symlink(&real, env.global_path()).unwrap();
    env.manager().set_theme("c").unwrap();
    assert!(
        std::fs::symlink_metadata(env.global_path())
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(&real).unwrap(),
        "{\n  \"theme\": \"c\"\n}"
    );
}

#[test]
fn write_failures_change_nothing_and_are_reported() {
    let env = Env::new();
    let dir = env.mkdir("d");
    env.write_global("{\"theme\": \"t\"}");
    let m = env.manager();
    // Block the lock file: every write now fails before touching settings.json.
    std::fs::create_dir_all(env.agent_dir.join("settings.json.flock")).unwrap();
    let c = FakeCatalog::reference();
    let err = m
        .apply_update(
            Some(&json!({"retryEnabled": false, "trustedContextFolders": [dir.clone()]})),
            &c,
        )
        .unwrap_err()
        .to_string();
    let prefix = format!(
        "Failed to persist settings: global: Could not lock settings file {}:",
        env.global_path().display()
    );
    assert!(err.starts_with(&prefix), "{err}");
    assert!(
        m.trust_context_folder(&json!(dir), &c)
            .unwrap_err()
            .to_string()
            .starts_with(&prefix)
    );
    assert!(
        m.remove_trusted_context_folder(&json!("/x"), &c)
            .unwrap_err()
            .to_string()
            .starts_with(&prefix)
    );
    assert!(matches!(m.set_theme("u"), Err(SettingsError::Write(_))));
    assert_eq!(env.global_text(), "{\"theme\": \"t\"}");
    // The in-memory view and the policy are unchanged.
    assert!(m.retry_enabled());
    assert!(!m.global_context_trust_policy().is_active());
}

#[test]
fn torn_read_during_a_locked_foreign_write_is_retried_under_the_lock() {
    let env = Env::new();
    env.write_global("{\"theme\": \"x\"}");
    let m = env.manager();
    // A writer that rewrites in place (the TypeScript dreb) holds its proper-lockfile lock
    // while the file is half written.
    let lock_dir = env.agent_dir.join("settings.json.lock");
    std::fs::create_dir(&lock_dir).unwrap();
    env.write_global("{\"theme\": ");
    std::thread::scope(|s| {
        let reader = s.spawn(|| m.reload());
        std::thread::sleep(std::time::Duration::from_millis(200));
        env.write_global("{\"theme\": \"y\"}");
        std::fs::remove_dir(&lock_dir).unwrap();
        let errors = reader.join().unwrap();
        assert!(
            errors.is_empty(),
            "the reader waited for the writer: {errors:?}"
        );
    });
    assert_eq!(m.theme().as_deref(), Some("y"));
    assert!(!m.has_global_settings_load_error());
}
