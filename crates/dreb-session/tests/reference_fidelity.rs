//! Our reading and writing of the reference's session files, and our DTOs, against what the reference recorded.

mod common;

use common::*;
use dreb_session::{ListOptions, SessionManager, list_all_sessions, list_sessions, paths};
use serde_json::{Value, json};

#[test]
fn every_fixture_round_trips_byte_identical() {
    for name in FIXTURES {
        let original = fixture_text(name);
        let dir = tempfile::tempdir().unwrap();
        let path = install(dir.path(), name);
        let sm = SessionManager::open(&path, None).unwrap();
        let reserialised = dreb_session::jsonl::to_file_content(sm.file_lines());
        assert_eq!(reserialised, original, "{name}");
        // Opening never rewrites a v3 file.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original, "{name}");
        // Each line individually, too.
        for (line, entry) in original.lines().zip(sm.file_lines()) {
            assert_eq!(entry.to_json_line(), line);
        }
    }
}

#[test]
fn leaf_is_last_entry_and_header_fields_load() {
    let dir = tempfile::tempdir().unwrap();
    let sm = SessionManager::open(install(dir.path(), "e-forked"), None).unwrap();
    assert_eq!(sm.session_id(), "9dd70a75-ffac-4f05-b07a-4b72e36b1154");
    assert_eq!(sm.cwd(), "/home/user/project");
    assert_eq!(sm.leaf_id(), Some("d2870ac9"));
    assert_eq!(
        sm.header().parent_session(),
        Some(
            format!(
                "{REFERENCE_SESSION_DIR}/{}",
                original_file_name("d-branched-compacted")
            )
            .as_str()
        )
    );
    assert_eq!(sm.label("3dcc33a8"), Some("first-question"));
    assert!(sm.is_flushed());
}

#[test]
fn tree_equals_recorded_get_tree() {
    let dir = tempfile::tempdir().unwrap();
    let sm = SessionManager::open(install(dir.path(), "d-branched-compacted"), None).unwrap();
    let tree = sm.tree_dto();
    let recorded = recorded_response_line("get_tree", "t1");
    let ours = format!(
        "{{\"id\":\"t1\",\"type\":\"response\",\"command\":\"get_tree\",\"success\":true,\"data\":{}}}",
        tree.to_json_string()
    );
    assert_eq!(ours, recorded);
    // Serialize produces the same JSON.
    assert_eq!(
        serde_json::to_value(&tree).unwrap(),
        recorded_response("get_tree", "t1")
    );
}

/// The trees the reference returned mid-scenario, rebuilt from a prefix of the final file.
#[test]
fn intermediate_trees_equal_recorded_ones() {
    // (transcript, request id, fixture, lines present when the request ran)
    let cases = [
        ("session_c", "t1", "c-name-bash-label", 7),
        ("session_d", "t1", "d-branched-compacted", 7),
        ("session_d", "t2", "d-branched-compacted", 15),
        ("session_f", "t1", "f-branch-summary", 7),
    ];
    for (transcript, id, fixture, lines) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = write_prefix(dir.path(), fixture, lines);
        let sm = SessionManager::open(&path, None).unwrap();
        assert_eq!(
            serde_json::to_value(sm.tree_dto()).unwrap(),
            recorded_response(transcript, id),
            "{transcript} {id}"
        );
    }
}

#[test]
fn fork_messages_equal_recorded_output() {
    let dir = tempfile::tempdir().unwrap();
    let sm = SessionManager::open(install(dir.path(), "d-branched-compacted"), None).unwrap();
    let ours = json!({ "messages": sm.fork_messages() });
    assert_eq!(ours, recorded_response("get_fork_messages", "fm1"));
    assert_eq!(ours, recorded_response("fork", "fm1"));
}

fn agent_dir_with_all_fixtures() -> tempfile::TempDir {
    let agent = tempfile::tempdir().unwrap();
    let dir = paths::default_session_dir("/home/user/project", agent.path());
    std::fs::create_dir_all(&dir).unwrap();
    for name in FIXTURES {
        install(&dir, name);
    }
    agent
}

fn rpc_list(infos: &[dreb_session::SessionInfo], agent: &std::path::Path) -> Value {
    let prefix = agent.to_string_lossy().into_owned();
    let sessions: Vec<Value> = infos
        .iter()
        .map(|i| {
            let mut v = serde_json::to_value(i.to_rpc()).unwrap();
            let p = v["path"]
                .as_str()
                .unwrap()
                .replacen(&prefix, REFERENCE_AGENT_DIR, 1);
            v["path"] = p.into();
            v
        })
        .collect();
    json!({ "sessions": sessions })
}

#[test]
fn list_sessions_equals_recorded_output() {
    let agent = agent_dir_with_all_fixtures();
    let dir = paths::default_session_dir("/home/user/project", agent.path());
    let infos = list_sessions(&dir, ListOptions::default());
    let ours = rpc_list(&infos, agent.path());
    assert_eq!(ours, recorded_response("list_sessions", "ls1"));
    // Key order too (name between cwd and created).
    let line = serde_json::to_string(&ours).unwrap();
    let recorded = recorded_response_line("list_sessions", "ls1");
    assert!(recorded.contains(&line), "ours: {line}");
}

#[test]
fn list_all_sessions_equals_recorded_output() {
    let agent = agent_dir_with_all_fixtures();
    // A second project dir and a stray file at the top level are handled too.
    let other = paths::default_session_dir("/elsewhere", agent.path());
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(agent.path().join("sessions/stray.jsonl"), "{}\n").unwrap();
    let infos =
        list_all_sessions(&paths::sessions_root(agent.path()), ListOptions::default()).unwrap();
    assert_eq!(
        rpc_list(&infos, agent.path()),
        recorded_response("list_all_sessions", "la1")
    );
    assert!(
        list_all_sessions(&agent.path().join("missing"), ListOptions::default())
            .unwrap()
            .is_empty()
    );
}

#[test]
fn listing_details() {
    let agent = agent_dir_with_all_fixtures();
    let dir = paths::default_session_dir("/home/user/project", agent.path());
    // Invalid files are skipped; a file with only a header lists as "(no messages)".
    std::fs::write(dir.join("garbage.jsonl"), "not json\n").unwrap();
    std::fs::write(
        dir.join("entry-first.jsonl"),
        "{\"type\":\"message\",\"id\":\"x\"}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("header-only.jsonl"),
        "{\"type\":\"session\",\"version\":3,\"id\":\"h\",\"timestamp\":\"2020-01-01T00:00:00.000Z\",\"cwd\":\"/x\"}\n",
    )
    .unwrap();
    std::fs::write(dir.join("notes.txt"), "ignored").unwrap();
    let infos = list_sessions(
        &dir,
        ListOptions {
            all_messages_text: true,
        },
    );
    assert_eq!(infos.len(), FIXTURES.len() + 1);
    let header_only = infos.last().unwrap();
    assert_eq!(header_only.id, "h");
    assert_eq!(header_only.first_message, "(no messages)");
    assert_eq!(header_only.to_rpc().modified, "2020-01-01T00:00:00.000Z");
    let c = infos.iter().find(|i| i.name.is_some()).unwrap();
    assert_eq!(
        c.all_messages_text.as_deref(),
        Some("Reply with just: hi-there hi-there Reply with just: noted noted")
    );
    assert!(list_sessions(&agent.path().join("nope"), ListOptions::default()).is_empty());
}

#[test]
fn context_of_compacted_branch_is_summary_then_kept_then_new() {
    let dir = tempfile::tempdir().unwrap();
    let sm = SessionManager::open(install(dir.path(), "d-branched-compacted"), None).unwrap();
    let ctx = sm.build_session_context();
    let roles: Vec<_> = ctx
        .messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "compactionSummary",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(
        serde_json::to_string(&ctx.messages[0]).unwrap(),
        "{\"role\":\"compactionSummary\",\"summary\":\"## Goal: answer short one-word questions. ## Progress: on the current branch the user asked for gamma and got it. ## Next Steps: answer the follow-up questions.\",\"tokensBefore\":102,\"timestamp\":1796106544331}"
    );
    assert_eq!(
        ctx.messages[1]["content"][0]["text"],
        "Reply with just: delta"
    );
    assert_eq!(ctx.thinking_level, "off");
    let model = ctx.model.unwrap();
    assert_eq!(
        (model.provider.as_str(), model.id.as_str()),
        ("mock", "mock-model")
    );
}

#[test]
fn context_with_branch_summary_bash_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let f = SessionManager::open(install(dir.path(), "f-branch-summary"), None).unwrap();
    let msgs = f.build_session_context().messages;
    let roles: Vec<_> = msgs.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "branchSummary", "user", "assistant"]
    );
    assert_eq!(msgs[2]["fromId"], "ff445428");
    assert_eq!(msgs[2]["timestamp"], 1796106548258u64);

    let c = SessionManager::open(install(dir.path(), "c-name-bash-label"), None).unwrap();
    let roles: Vec<_> = c
        .build_session_context()
        .messages
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "bashExecution", "user", "assistant"]
    );
    // The name applies although session_info is on a sibling branch.
    assert_eq!(c.session_name().as_deref(), Some("Fixture session C"));
}

#[test]
fn session_stats_inputs_match_recorded_stats() {
    let dir = tempfile::tempdir().unwrap();
    let sm = SessionManager::open(install(dir.path(), "stats-tool"), None).unwrap();
    let stats = dreb_session::message::message_stats(&sm.build_session_context().messages);
    assert_eq!(
        serde_json::to_value(&stats).unwrap(),
        json!({"userMessages":1,"assistantMessages":2,"toolCalls":1,"toolResults":1,"totalMessages":4,
               "tokens":{"input":200,"output":7,"cacheRead":0,"cacheWrite":0,"total":207},"cost":0})
    );
    assert_eq!(
        dreb_session::message::last_assistant_text(&sm.build_session_context().messages).as_deref(),
        Some("Tool finished; done.")
    );
}

#[test]
fn session_argument_resolution() {
    use dreb_session::{ResolvedSession, resolve_session_arg};
    let agent = agent_dir_with_all_fixtures();
    let root = paths::sessions_root(agent.path());
    let here = paths::default_session_dir("/home/user/project", agent.path());
    let other = paths::default_session_dir("/elsewhere", agent.path());
    std::fs::create_dir_all(&other).unwrap();
    assert_eq!(
        resolve_session_arg("x/y", &other, &root).unwrap(),
        ResolvedSession::Path("x/y".into())
    );
    assert_eq!(
        resolve_session_arg("abc.jsonl", &other, &root).unwrap(),
        ResolvedSession::Path("abc.jsonl".into())
    );
    let d = here.join(original_file_name("d-branched-compacted"));
    assert_eq!(
        resolve_session_arg("7169", &here, &root).unwrap(),
        ResolvedSession::Local(d.clone())
    );
    assert_eq!(
        resolve_session_arg("7169ba87", &other, &root).unwrap(),
        ResolvedSession::Global {
            path: d,
            cwd: "/home/user/project".into()
        }
    );
    assert_eq!(
        resolve_session_arg("ffff", &here, &root).unwrap(),
        ResolvedSession::NotFound
    );
}
