//! Session operations: write rules, fork, navigation, new/switch/import/delete, migrations, deep trees.

mod common;

use std::path::Path;

use common::*;
use dreb_session::entry::CompactionData;
use dreb_session::{
    BranchSummaryInput, DeleteMethod, NavigateOptions, SessionError, SessionManager, Trash,
    delete_session, paths,
};
use serde_json::{Value, json};

fn user(text: &str) -> Value {
    json!({"role":"user","content":[{"type":"text","text":text}],"timestamp":1})
}

fn assistant(text: &str) -> Value {
    json!({"role":"assistant","content":[{"type":"text","text":text}],"api":"openai-completions","provider":"p","model":"m",
           "usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},
           "stopReason":"stop","timestamp":2})
}

fn file_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn nothing_is_written_before_the_first_assistant_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionManager::create("/work/proj", dir.path()).unwrap();
    let file = sm.session_file().unwrap().to_path_buf();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.ends_with(&format!("_{}.jsonl", sm.session_id())),
        "{name}"
    );
    assert_eq!(
        name.len(),
        "2026-12-01T06-28-51-158Z_".len() + 36 + ".jsonl".len()
    );
    sm.append_model_change("p", "m").unwrap();
    sm.append_thinking_level_change("off").unwrap();
    sm.append_message(user("hi")).unwrap();
    assert!(!file.exists());
    assert!(!sm.is_flushed());
    sm.append_message(assistant("hello")).unwrap();
    let lines = file_lines(&file);
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[0]["type"], "session");
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(lines[0]["cwd"], "/work/proj");
    // Parent chain and 8-hex ids.
    let mut parent = Value::Null;
    for l in &lines[1..] {
        assert_eq!(l["parentId"], parent);
        let id = l["id"].as_str().unwrap();
        assert!(id.len() == 8 && id.chars().all(|c| c.is_ascii_hexdigit()));
        parent = l["id"].clone();
    }
    // Later entries are appended one line each.
    sm.append_session_info("  Named  ").unwrap();
    let lines = file_lines(&file);
    assert_eq!(lines.len(), 6);
    assert_eq!(lines[5]["name"], "Named");
    assert_eq!(sm.session_name().as_deref(), Some("Named"));
    // Reload gives the same state.
    let mut again = SessionManager::open(&file, None).unwrap();
    assert_eq!(again.leaf_id(), sm.leaf_id());
    assert_eq!(again.build_session_context(), sm.build_session_context());
    assert_eq!(again.session_name().as_deref(), Some("Named"));
    // A new session has no name until one is set.
    again.new_session(Default::default());
    assert_eq!(again.session_name(), None);
}

#[test]
fn set_session_dir_moves_only_an_unwritten_session_and_applies_to_new_ones() {
    let (a, b, c) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let mut sm = SessionManager::create("/work/proj", a.path()).unwrap();
    sm.append_message(user("hi")).unwrap();
    let name = sm.session_file().unwrap().file_name().unwrap().to_owned();
    sm.set_session_dir(b.path().join("sub"), true).unwrap();
    assert_eq!(sm.session_file().unwrap(), b.path().join("sub").join(&name));
    assert_eq!(sm.session_dir(), b.path().join("sub"));
    sm.append_message(assistant("hello")).unwrap();
    let lines = file_lines(&b.path().join("sub").join(&name));
    assert_eq!(lines.len(), 3, "header, user, assistant: {lines:?}");
    assert_eq!(std::fs::read_dir(a.path()).unwrap().count(), 0);

    // Written: the file stays; the next session goes to the new directory.
    let written = sm.session_file().unwrap().to_path_buf();
    sm.set_session_dir(c.path().to_path_buf(), true).unwrap();
    assert_eq!(sm.session_file().unwrap(), written);
    let next = sm.new_session(Default::default()).unwrap();
    assert_eq!(next.parent().unwrap(), c.path());

    // Without `move_unwritten`, an unwritten session stays where it was chosen.
    let mut sm = SessionManager::create("/work/proj", a.path()).unwrap();
    let file = sm.session_file().unwrap().to_path_buf();
    sm.set_session_dir(b.path().to_path_buf(), false).unwrap();
    assert_eq!(sm.session_file().unwrap(), file);
}

#[test]
fn in_memory_sessions_never_touch_disk() {
    let mut sm = SessionManager::in_memory("/x");
    assert!(sm.session_file().is_none());
    sm.append_message(user("a")).unwrap();
    sm.append_message(assistant("b")).unwrap();
    assert_eq!(sm.build_session_context().messages.len(), 2);
    assert!(!sm.is_persisted());
    // Forking in memory replaces the session in place.
    let leaf = sm.leaf_id().unwrap().to_string();
    let fork = sm.fork(&leaf).unwrap();
    assert_eq!(fork.session_file, None);
    assert_eq!(sm.header().parent_session(), None);
    assert_eq!(sm.build_session_context().messages.len(), 2);
}

#[test]
fn set_session_name_validates() {
    let mut sm = SessionManager::in_memory("/x");
    assert_eq!(
        sm.set_session_name("   ").unwrap_err().to_string(),
        "Session name cannot be empty"
    );
    assert_eq!(sm.set_session_name(" n ").unwrap(), "n");
    sm.append_session_info("").unwrap();
    assert_eq!(sm.session_name(), None, "an empty name clears it");
}

#[test]
fn fork_at_user_entry_reproduces_reference_session_e() {
    let dir = tempfile::tempdir().unwrap();
    let d_path = install(dir.path(), "d-branched-compacted");
    let d_before = std::fs::read(&d_path).unwrap();
    let mut sm = SessionManager::open(&d_path, None).unwrap();
    let result = sm.fork("c66b2919").unwrap();
    assert_eq!(result.text, recorded_response("fork", "fk1")["text"]);
    let new_file = result.session_file.unwrap();
    assert_eq!(new_file.parent(), d_path.parent());
    assert_eq!(
        std::fs::read(&d_path).unwrap(),
        d_before,
        "the source is untouched"
    );

    let ours = file_lines(&new_file);
    let reference: Vec<Value> = fixture_text("e-forked")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Header: new id/timestamp, parentSession = the source file.
    assert_eq!(ours[0]["parentSession"], d_path.to_string_lossy().as_ref());
    assert_eq!(ours[0]["id"], sm.session_id());
    assert_eq!(
        ours[0].as_object().unwrap().keys().collect::<Vec<_>>(),
        reference[0].as_object().unwrap().keys().collect::<Vec<_>>()
    );
    // The kept path is copied verbatim, then the label is re-created after it.
    assert_eq!(ours.len(), 6);
    assert_eq!(&ours[1..5], &reference[1..5]);
    assert_eq!(
        without_id_and_time(ours[5].clone()),
        without_id_and_time(reference[5].clone())
    );
    // The next prompt continues from the label entry, as in the reference.
    assert_eq!(sm.leaf_id(), ours[5]["id"].as_str());
    assert_eq!(sm.build_session_context().messages.len(), 2);
}

#[test]
fn fork_rules() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionManager::open(install(dir.path(), "b-tool-openai"), None).unwrap();
    let e = |r: Result<_, SessionError>| r.unwrap_err().to_string();
    assert_eq!(e(sm.fork("nope")), "Invalid entry ID for forking");
    assert_eq!(
        e(sm.fork("fd2d9b03")),
        "Invalid entry ID for forking",
        "thinking_level_change"
    );
    assert_eq!(
        e(sm.fork("f4b02680")),
        "Invalid entry ID for forking",
        "toolResult"
    );
    assert_eq!(
        e(sm.fork("81ab574a")),
        "Cannot fork at this assistant turn: it was interrupted or is still waiting on tool results"
    );
    // Assistant fork keeps the entry itself.
    let before = sm.session_file().unwrap().to_path_buf();
    let r = sm.fork("ddf65e65").unwrap();
    assert_eq!(r.text, "");
    let lines = file_lines(r.session_file.as_ref().unwrap());
    assert_eq!(lines.len(), 7);
    assert_eq!(lines[6]["id"], "ddf65e65");
    assert_eq!(lines[0]["parentSession"], before.to_string_lossy().as_ref());
}

#[test]
fn fork_at_root_user_entry_starts_a_new_session_with_parent() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionManager::create("/p", dir.path()).unwrap();
    let root = sm.append_message(user("first")).unwrap();
    sm.append_message(assistant("a")).unwrap();
    let old = sm.session_file().unwrap().to_path_buf();
    let r = sm.fork(&root).unwrap();
    assert_eq!(r.text, "first");
    assert_eq!(sm.entries().count(), 0);
    assert_eq!(
        sm.header().parent_session(),
        Some(old.to_string_lossy().as_ref())
    );
    assert!(
        !r.session_file.unwrap().exists(),
        "written with the first reply"
    );
}

#[test]
fn fork_carries_the_session_name_and_defers_the_write_without_assistant() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionManager::create("/p", dir.path()).unwrap();
    sm.append_message(user("q1")).unwrap();
    sm.append_message(assistant("a1")).unwrap();
    let q2 = sm.append_message(user("q2")).unwrap();
    sm.append_message(assistant("a2")).unwrap();
    sm.set_session_name("Kept name").unwrap();
    let r = sm.fork(&q2).unwrap();
    assert_eq!(r.text, "q2");
    let lines = file_lines(r.session_file.as_ref().unwrap());
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "session_info");
    assert_eq!(last["name"], "Kept name");
    assert_eq!(sm.session_name().as_deref(), Some("Kept name"));

    // A branch with no assistant message is not written until one arrives.
    let mut sm = SessionManager::create("/p", dir.path()).unwrap();
    let m = sm.append_model_change("p", "m").unwrap();
    let u = sm.append_message(user("q")).unwrap();
    sm.append_message(assistant("a")).unwrap();
    let _ = u;
    let file = sm.create_branched_session(&m).unwrap().unwrap();
    assert!(!file.exists());
    sm.append_message(user("again")).unwrap();
    assert!(!file.exists());
    sm.append_message(assistant("yes")).unwrap();
    let lines = file_lines(&file);
    assert_eq!(lines.iter().filter(|l| l["type"] == "session").count(), 1);
    assert_eq!(lines.len(), 4);
}

#[test]
fn navigate_to_user_entry_replays_session_d() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_prefix(dir.path(), "d-branched-compacted", 7);
    let mut sm = SessionManager::open(&path, None).unwrap();
    let r = sm
        .navigate(
            "3dcc33a8",
            NavigateOptions {
                summary: None,
                label: Some("first-question".into()),
            },
        )
        .unwrap();
    assert_eq!(
        r.editor_text.as_deref(),
        recorded_response("session_d", "nav1")["editorText"].as_str()
    );
    let lines = file_lines(&path);
    let reference: Value =
        serde_json::from_str(fixture_text("d-branched-compacted").lines().nth(7).unwrap()).unwrap();
    assert_eq!(
        without_id_and_time(lines[7].clone()),
        without_id_and_time(reference)
    );
    assert_eq!(sm.leaf_id(), lines[7]["id"].as_str());
    assert_eq!(sm.label("3dcc33a8"), Some("first-question"));
    // Only the alpha target's ancestors remain in context (no messages: leaf is under thinking_level_change).
    assert!(sm.build_session_context().messages.is_empty());
}

#[test]
fn navigate_to_non_user_entry_replays_session_c() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_prefix(dir.path(), "c-name-bash-label", 7);
    let mut sm = SessionManager::open(&path, None).unwrap();
    let r = sm
        .navigate(
            "b143bdda",
            NavigateOptions {
                summary: None,
                label: Some("after-bash".into()),
            },
        )
        .unwrap();
    assert_eq!(r.editor_text, None);
    assert_eq!(
        recorded_response("session_c", "nav1"),
        json!({"cancelled": false})
    );
    let lines = file_lines(&path);
    let reference: Value =
        serde_json::from_str(fixture_text("c-name-bash-label").lines().nth(7).unwrap()).unwrap();
    assert_eq!(
        without_id_and_time(lines[7].clone()),
        without_id_and_time(reference)
    );
}

#[test]
fn navigate_with_summary_replays_session_f() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_prefix(dir.path(), "f-branch-summary", 7);
    let mut sm = SessionManager::open(&path, None).unwrap();
    let source = sm.entries_for_branch_summary(sm.leaf_id(), "be8243d0");
    assert_eq!(source.common_ancestor_id.as_deref(), Some("be8243d0"));
    assert_eq!(
        source
            .entries
            .iter()
            .map(|e| e.id().unwrap())
            .collect::<Vec<_>>(),
        ["b2fd8c7f"]
    );

    let reference: Vec<Value> = fixture_text("f-branch-summary")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary = reference[7]["summary"].as_str().unwrap().to_string();
    let r = sm
        .navigate(
            "be8243d0",
            NavigateOptions {
                summary: Some(BranchSummaryInput {
                    summary,
                    details: Some(json!({"readFiles": [], "modifiedFiles": []})),
                    from_hook: Some(false),
                }),
                label: Some("summarized-branch".into()),
            },
        )
        .unwrap();
    assert_eq!(r.editor_text.as_deref(), Some("Reply with just: two"));
    let lines = file_lines(&path);
    assert_eq!(lines.len(), 9);
    assert_eq!(
        without_id_and_time(lines[7].clone()),
        without_id_and_time(reference[7].clone())
    );
    // The label targets the new summary entry.
    let mut label = lines[8].clone();
    assert_eq!(label["targetId"], lines[7]["id"]);
    assert_eq!(label["parentId"], lines[7]["id"]);
    label["targetId"] = reference[8]["targetId"].clone();
    label["parentId"] = reference[8]["parentId"].clone();
    assert_eq!(
        without_id_and_time(label),
        without_id_and_time(reference[8].clone())
    );
    assert_eq!(r.summary_entry_id.as_deref(), lines[7]["id"].as_str());
}

#[test]
fn navigate_edge_cases() {
    let mut sm = SessionManager::in_memory("/x");
    let root = sm.append_message(user("root q")).unwrap();
    let a = sm.append_message(assistant("a")).unwrap();
    // Current leaf: no-op.
    assert!(sm.navigate(&a, NavigateOptions::default()).unwrap().no_op);
    assert_eq!(
        sm.navigate("zzzz", NavigateOptions::default())
            .unwrap_err()
            .to_string(),
        "Entry zzzz not found"
    );
    // Root user entry: leaf becomes null, context empty.
    let r = sm.navigate(&root, NavigateOptions::default()).unwrap();
    assert_eq!(r.editor_text.as_deref(), Some("root q"));
    assert_eq!(sm.leaf_id(), None);
    assert!(sm.build_session_context().messages.is_empty());
    assert_eq!(sm.tree_dto().leaf_id, None);
    // A new message is a second root.
    sm.append_message(user("other")).unwrap();
    assert_eq!(sm.tree_dto().roots.len(), 2);
    // custom_message target: editor text is its text; leaf goes to its parent.
    let cm = sm
        .append_custom_message_entry(
            "note",
            json!([{"type":"text","text":"x"},{"type":"text","text":"y"}]),
            true,
            None,
        )
        .unwrap();
    let parent = sm.entry(&cm).unwrap().parent_id().map(str::to_string);
    sm.append_message(assistant("after")).unwrap();
    let r = sm.navigate(&cm, NavigateOptions::default()).unwrap();
    assert_eq!(r.editor_text.as_deref(), Some("xy"));
    assert_eq!(sm.leaf_id(), parent.as_deref());
    // Summary at a null position records fromId "root".
    let r = sm
        .navigate(
            &root,
            NavigateOptions {
                summary: Some(BranchSummaryInput {
                    summary: "S".into(),
                    details: None,
                    from_hook: Some(true),
                }),
                label: None,
            },
        )
        .unwrap();
    let s = sm.entry(r.summary_entry_id.as_deref().unwrap()).unwrap();
    assert_eq!(s.str_field("fromId"), Some("root"));
    assert_eq!(s.get("parentId"), Some(&Value::Null));
    assert_eq!(s.get("fromHook"), Some(&json!(true)));
}

#[test]
fn labels_set_and_clear() {
    let mut sm = SessionManager::in_memory("/x");
    let a = sm.append_message(user("a")).unwrap();
    assert_eq!(
        sm.append_label_change("missing", Some("x"))
            .unwrap_err()
            .to_string(),
        "Entry missing not found"
    );
    sm.append_label_change(&a, Some("one")).unwrap();
    assert_eq!(sm.label(&a), Some("one"));
    let clear = sm.append_label_change(&a, None).unwrap();
    assert_eq!(sm.label(&a), None);
    assert!(sm.entry(&clear).unwrap().get("label").is_none());
    assert_eq!(
        dreb_session::tree::entry_preview(&sm.entry(&clear).unwrap()),
        "[label: (cleared)]"
    );
}

#[test]
fn compaction_and_custom_entries_build_context() {
    let mut sm = SessionManager::in_memory("/x");
    sm.append_message(user("old")).unwrap();
    sm.append_message(assistant("old answer")).unwrap();
    let kept = sm.append_message(user("kept")).unwrap();
    sm.append_custom_entry("ext-state", Some(json!({"k": 1})))
        .unwrap();
    sm.append_message(assistant("kept answer")).unwrap();
    sm.append_compaction(CompactionData {
        summary: "sum".into(),
        first_kept_entry_id: kept,
        tokens_before: 5000,
        details: None,
        from_hook: None,
    })
    .unwrap();
    sm.append_custom_message_entry("note", json!("injected"), false, Some(json!({"d": true})))
        .unwrap();
    sm.append_thinking_level_change("high").unwrap();
    let ctx = sm.build_session_context();
    let roles: Vec<_> = ctx
        .messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["compactionSummary", "user", "assistant", "custom"]);
    assert_eq!(ctx.messages[3]["content"], "injected");
    assert_eq!(ctx.messages[3]["details"], json!({"d": true}));
    assert_eq!(ctx.thinking_level, "high");
    let keys: Vec<_> = ctx.messages[3]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys,
        [
            "role",
            "customType",
            "content",
            "display",
            "details",
            "timestamp"
        ]
    );
}

#[test]
fn five_thousand_deep_chain_builds_serialises_and_drops() {
    let mut sm = SessionManager::in_memory("/x");
    for i in 0..5000 {
        sm.append_message(if i % 2 == 0 {
            user("q")
        } else {
            assistant("a")
        })
        .unwrap();
    }
    let tree = sm.tree_dto();
    let json = tree.to_json_string();
    assert!(json.starts_with("{\"roots\":[{\"id\":"));
    assert_eq!(json.matches("\"children\":[").count(), 5000);
    assert!(json.ends_with(&format!("]}}],\"leafId\":\"{}\"}}", sm.leaf_id().unwrap())));
    assert_eq!(sm.branch(None).len(), 5000);
    // Serialize gives the same text, without recursion.
    assert_eq!(serde_json::to_string(&tree).unwrap(), json);
    drop(tree);
}

#[test]
fn orphans_are_roots_and_unknown_types_survive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let text = concat!(
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/x\"}\n",
        "{\"type\":\"message\",\"id\":\"aaaaaaaa\",\"parentId\":null,\"timestamp\":\"2026-01-01T00:00:01.000Z\",\"message\":{\"role\":\"assistant\",\"content\":[],\"stopReason\":\"stop\"}}\n",
        "{\"type\":\"future_entry\",\"id\":\"bbbbbbbb\",\"parentId\":\"aaaaaaaa\",\"timestamp\":\"2026-01-01T00:00:02.000Z\",\"payload\":{\"z\":1,\"a\":[1.5,-0,1e300]}}\n",
        "{\"type\":\"message\",\"id\":\"cccccccc\",\"parentId\":\"gone0000\",\"timestamp\":\"2026-01-01T00:00:03.000Z\",\"message\":{\"role\":\"user\",\"content\":\"orphan\"}}\n",
    );
    std::fs::write(&path, text).unwrap();
    let mut sm = SessionManager::open(&path, None).unwrap();
    let tree = sm.tree_dto();
    assert_eq!(tree.roots.len(), 2);
    assert_eq!(tree.roots[1].parent_id.as_deref(), Some("gone0000"));
    assert_eq!(tree.roots[0].children[0].preview, "[future_entry]");
    sm.append_message(user("more")).unwrap();
    let after = std::fs::read_to_string(&path).unwrap();
    let expected_unknown = "{\"type\":\"future_entry\",\"id\":\"bbbbbbbb\",\"parentId\":\"aaaaaaaa\",\"timestamp\":\"2026-01-01T00:00:02.000Z\",\"payload\":{\"z\":1,\"a\":[1.5,0,1e+300]}}";
    assert!(
        after.starts_with(&text[..text.len() - 1]),
        "appending never rewrites"
    );
    assert_eq!(
        sm.entry("bbbbbbbb").unwrap().to_json_line(),
        expected_unknown,
        "JSON.stringify form"
    );
}

#[test]
fn v1_and_v2_files_are_migrated_and_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let v1 = dir.path().join("v1.jsonl");
    std::fs::write(
        &v1,
        concat!(
            "{\"type\":\"session\",\"id\":\"old\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/x\"}\n",
            "{\"type\":\"message\",\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"q\",\"timestamp\":1}}\n",
            "{\"type\":\"message\",\"timestamp\":\"2025-01-01T00:00:02.000Z\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}],\"provider\":\"p\",\"model\":\"m\",\"stopReason\":\"stop\",\"timestamp\":2}}\n",
            "{\"type\":\"compaction\",\"timestamp\":\"2025-01-01T00:00:03.000Z\",\"summary\":\"s\",\"firstKeptEntryIndex\":2,\"tokensBefore\":9}\n",
        ),
    )
    .unwrap();
    let sm = SessionManager::open(&v1, None).unwrap();
    let lines = file_lines(&v1);
    assert_eq!(lines[0]["version"], 3);
    assert_eq!(lines[1]["parentId"], Value::Null);
    assert_eq!(lines[2]["parentId"], lines[1]["id"]);
    assert_eq!(lines[3]["firstKeptEntryId"], lines[2]["id"]);
    let roles: Vec<_> = sm
        .build_session_context()
        .messages
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(roles, ["compactionSummary", "assistant"]);

    let v2 = dir.path().join("v2.jsonl");
    std::fs::write(
        &v2,
        concat!(
            "{\"type\":\"session\",\"version\":2,\"id\":\"v2\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/x\"}\n",
            "{\"type\":\"message\",\"id\":\"11111111\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"hookMessage\",\"customType\":\"h\",\"content\":\"x\",\"display\":true,\"timestamp\":1}}\n",
        ),
    )
    .unwrap();
    SessionManager::open(&v2, None).unwrap();
    let text = std::fs::read_to_string(&v2).unwrap();
    assert_eq!(
        text,
        concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"v2\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/x\"}\n",
            "{\"type\":\"message\",\"id\":\"11111111\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"custom\",\"customType\":\"h\",\"content\":\"x\",\"display\":true,\"timestamp\":1}}\n",
        )
    );
}

#[test]
fn switch_to_missing_path_starts_a_session_there_and_corrupt_files_are_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionManager::create("/p", dir.path()).unwrap();
    let target = dir.path().join("sub/new.jsonl");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    sm.set_session_file(&target).unwrap();
    assert_eq!(sm.session_file(), Some(target.as_path()));
    assert!(!target.exists());
    sm.append_message(user("q")).unwrap();
    sm.append_message(assistant("a")).unwrap();
    assert_eq!(file_lines(&target).len(), 3);

    let corrupt = dir.path().join("corrupt.jsonl");
    std::fs::write(&corrupt, "garbage\n{\"type\":\"message\"}\n").unwrap();
    sm.set_session_file(&corrupt).unwrap();
    let lines = file_lines(&corrupt);
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["id"], sm.session_id());
    assert!(dir.path().join("corrupt.jsonl.corrupt").exists());
    // Later entries follow the single header, with no duplicate header at the first reply.
    sm.append_message(user("q")).unwrap();
    sm.append_message(assistant("a")).unwrap();
    let lines = file_lines(&corrupt);
    assert_eq!(lines.iter().filter(|l| l["type"] == "session").count(), 1);
    assert_eq!(lines.len(), 3);
}

#[test]
fn new_session_options_and_header_setters() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = SessionManager::create("/p", dir.path()).unwrap();
    let f = sm.new_session(dreb_session::NewSessionOptions {
        id: Some("fixed-id".into()),
        parent_session: Some("/parent.jsonl".into()),
    });
    assert!(f.unwrap().to_string_lossy().ends_with("_fixed-id.jsonl"));
    sm.append_message(user("q")).unwrap();
    sm.append_message(assistant("a")).unwrap();
    sm.set_agent_type("explore").unwrap();
    let lines = file_lines(sm.session_file().unwrap());
    let keys: Vec<_> = lines[0].as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "type",
            "version",
            "id",
            "timestamp",
            "cwd",
            "parentSession",
            "agentType"
        ]
    );
    assert_eq!(lines.len(), 3);
}

#[test]
fn import_copies_into_session_dir() {
    let src_dir = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let src = install(src_dir.path(), "a-simple");
    let sm = SessionManager::create("/p", sessions.path()).unwrap();
    let dest = sm.import_jsonl(&src).unwrap();
    assert_eq!(dest, sessions.path().join(src.file_name().unwrap()));
    assert_eq!(std::fs::read(&dest).unwrap(), std::fs::read(&src).unwrap());
    // Importing the copy itself is a no-op copy.
    assert_eq!(sm.import_jsonl(&dest).unwrap(), dest);
    let missing = src_dir.path().join("missing.jsonl");
    assert_eq!(
        sm.import_jsonl(&missing).unwrap_err().to_string(),
        format!("File not found: {}", missing.display())
    );
}

#[test]
fn export_branch_jsonl_rechains_parents() {
    let dir = tempfile::tempdir().unwrap();
    let sm = SessionManager::open(install(dir.path(), "d-branched-compacted"), None).unwrap();
    let out = sm
        .export_branch_jsonl(&dir.path().join("out/export.jsonl"))
        .unwrap();
    let lines = file_lines(&out);
    assert_eq!(lines[0]["id"], sm.session_id());
    assert!(lines[0].get("parentSession").is_none());
    let ids: Vec<_> = lines[1..]
        .iter()
        .map(|l| l["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "37322a6a", "867bbc40", "ab613018", "391842cf", "26c7a2e5", "c9367ade", "2a423e29",
            "c11fc5fa", "ce751cbe", "e5e15a27"
        ]
    );
    for w in lines[1..].windows(2) {
        assert_eq!(w[1]["parentId"], w[0]["id"]);
    }
}

#[test]
fn delete_session_rules_and_errors() {
    // The trash itself is covered by tests/trash.rs (its own process, with XDG_DATA_HOME set).
    let dir = tempfile::tempdir().unwrap();
    let active = install(dir.path(), "a-simple");
    let txt = dir.path().join("notes.txt");
    std::fs::write(&txt, "x").unwrap();

    let err = |p: &str| {
        delete_session(p, Some(&active), &Trash::None)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(txt.to_str().unwrap()),
        format!("Not a session file (expected .jsonl): {}", txt.display())
    );
    assert!(txt.exists());
    let dotted = format!(
        "{}/./{}",
        dir.path().display(),
        active.file_name().unwrap().to_string_lossy()
    );
    assert_eq!(err(&dotted), "Cannot delete the currently active session");
    assert!(active.exists());
    let missing = dir.path().join("gone.jsonl");
    assert_eq!(
        err(missing.to_str().unwrap()),
        format!("Session file does not exist: {}", missing.display())
    );

    // Without a trash: unlink.
    let third = install(dir.path(), "stats-tool");
    assert_eq!(
        delete_session(third.to_str().unwrap(), None, &Trash::None).unwrap(),
        DeleteMethod::Unlink
    );
    assert!(!third.exists());
    assert_eq!(
        serde_json::to_string(&DeleteMethod::Unlink).unwrap(),
        "\"unlink\""
    );
}

#[test]
fn continue_recent_picks_newest_valid_file() {
    let agent = tempfile::tempdir().unwrap();
    let dir = paths::default_session_dir("/home/user/project", agent.path());
    std::fs::create_dir_all(&dir).unwrap();
    let set_mtime = |p: &Path, secs: u64| {
        let f = std::fs::OpenOptions::new().write(true).open(p).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
            .unwrap();
    };
    let older = install(&dir, "b-tool-openai");
    let newer = install(&dir, "a-simple");
    let invalid = dir.join("newest-but-invalid.jsonl");
    std::fs::write(&invalid, "nope\n").unwrap();
    set_mtime(&older, 1_000);
    set_mtime(&newer, 2_000);
    set_mtime(&invalid, 3_000);
    let sm = SessionManager::continue_recent("/home/user/project", &dir).unwrap();
    assert_eq!(sm.session_file(), Some(newer.as_path()));
    let empty = tempfile::tempdir().unwrap();
    let sm = SessionManager::continue_recent("/p", empty.path()).unwrap();
    assert!(!sm.is_flushed());
}

#[test]
fn fork_from_copies_into_target_cwd() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let source = install(src.path(), "c-name-bash-label");
    let sm = SessionManager::fork_from(&source, "/new/cwd", dst.path().to_path_buf()).unwrap();
    let lines = file_lines(sm.session_file().unwrap());
    assert_eq!(lines[0]["cwd"], "/new/cwd");
    assert_eq!(lines[0]["parentSession"], source.to_string_lossy().as_ref());
    assert_eq!(
        lines.len(),
        fixture_text("c-name-bash-label").lines().count()
    );
    assert_eq!(sm.session_name().as_deref(), Some("Fixture session C"));
    let bad = src.path().join("bad.jsonl");
    std::fs::write(&bad, "x\n").unwrap();
    assert_eq!(
        SessionManager::fork_from(&bad, "/c", dst.path().to_path_buf())
            .unwrap_err()
            .to_string(),
        format!(
            "Cannot fork: source session file is empty or invalid: {}",
            bad.display()
        )
    );
}
