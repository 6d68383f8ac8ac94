//! Lazy nested context through the binary and the mock LLM: when a tool touches a trusted folder, that folder's
//! AGENTS.md / CLAUDE.md (not loaded at start-up) is appended to the tool's result as one more text block, once per
//! file per session (symlinks resolved), and the model sees it with the result. The trust commands and
//! `autoLoadNestedContext` decide what is trusted, read afresh before every tool call.

mod common;

use std::path::{Path, PathBuf};

use common::{Dreb, Env, result_text};
use serde_json::{Value, json};

const HEADER: &str = "[dreb] Auto-loaded project context";

/// A mock where the prompt `call-<n>` makes the n-th call of `calls` (a tool name and its arguments), and every
/// tool result is answered with "done".
fn env_calling(calls: &[(&str, Value)]) -> Env {
    let mut turns: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({
                "when": {"lastUserContains": format!("call-{}", i + 1), "afterToolResult": false},
                "toolCalls": [{"name": name, "arguments": args}]
            })
        })
        .collect();
    turns.push(json!({"when": {"afterToolResult": true}, "repeat": true, "text": ["done"]}));
    Env::with_scenario(serde_json::from_value(json!({ "turns": turns })).unwrap())
}

fn reads(paths: &[&str]) -> Env {
    let calls: Vec<(&str, Value)> = paths.iter().map(|p| ("read", json!({"path": p}))).collect();
    env_calling(&calls)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Runs the prompt that makes the n-th scripted call; the frames of the run.
fn call(dreb: &mut Dreb, n: usize) -> Vec<Value> {
    dreb.exchange(&json!({"id": format!("p{n}"), "type": "prompt", "message": format!("call-{n}")}))
}

/// The text blocks of the first `tool_execution_end` in `frames`.
fn result_blocks(frames: &[Value]) -> Vec<String> {
    let end = frames
        .iter()
        .find(|f| f["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool_execution_end in {frames:#?}"));
    end["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str().map(str::to_string))
        .collect()
}

fn command(dreb: &mut Dreb, cmd: Value) -> Value {
    let frames = dreb.exchange(&cmd);
    frames
        .into_iter()
        .rev()
        .find(|f| f["type"] == "response")
        .unwrap()
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap()
}

#[test]
fn nothing_is_added_while_nothing_is_trusted() {
    let env = reads(&["nested/file.txt"]);
    let nested = env.cwd().join("nested");
    write(&nested.join("CLAUDE.md"), "# Default-off context");
    write(&nested.join("file.txt"), "file contents");
    let mut dreb = env.spawn(&[]);
    let frames = call(&mut dreb, 1);
    assert_eq!(result_blocks(&frames), ["file contents"]);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_trusted_folder_s_context_rides_on_the_first_result_and_the_model_sees_it() {
    let env = reads(&["nested/file.txt", "nested/second.txt"]);
    let nested = env.cwd().join("nested");
    write(
        &nested.join("CLAUDE.md"),
        "# Nested instructions\nUse the nested context.\n",
    );
    write(&nested.join("file.txt"), "file contents");
    write(&nested.join("second.txt"), "second contents");
    // A context file of the session's start (the cwd's) is never injected again.
    write(&env.cwd().join("AGENTS.md"), "# Project root rules");
    let mut dreb = env.spawn(&[]);

    let trust = command(
        &mut dreb,
        json!({"id": "t", "type": "trust_context_folder", "path": nested.to_string_lossy()}),
    );
    assert_eq!(trust["success"], true, "{trust}");

    let frames = call(&mut dreb, 1);
    let blocks = result_blocks(&frames);
    assert_eq!(blocks.len(), 2, "{blocks:#?}");
    assert_eq!(blocks[0], "file contents");
    let context_file = canonical(&nested).join("CLAUDE.md");
    assert_eq!(
        blocks[1],
        format!(
            "{HEADER}\n\nA tool just operated in `{}`, whose project context had not been loaded yet. The file(s) \
             below were loaded automatically to prevent missing important project context when working across \
             multiple repos / projects / folders. (Manage folder-specific loading with `context.trustedFolders`, or \
             disable unrestricted loading with `context.autoLoadNested`.)\n\n===== BEGIN project context: {p} \
             =====\n# Nested instructions\nUse the nested context.\n===== END project context: {p} =====",
            nested.display(),
            p = context_file.display()
        )
    );
    assert!(!blocks[1].contains("Project root rules"));

    // The model got the block with the tool result (the request after the tool call).
    let requests = env.mock.requests();
    let last = &requests.last().unwrap().body;
    let tool_message = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .to_string();
    assert!(
        tool_message.contains("# Nested instructions"),
        "{tool_message}"
    );

    // The same folder again: already loaded, nothing added.
    let frames = call(&mut dreb, 2);
    assert_eq!(result_blocks(&frames), ["second contents"]);

    // The session file keeps the result as the model saw it.
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    let session = std::fs::read_dir(env.session_dir())
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(session).unwrap();
    assert_eq!(text.matches(HEADER).count(), 1);
}

#[test]
fn untrusting_stops_it_and_a_folder_outside_the_trusted_root_gets_nothing() {
    let env = reads(&["other/b.txt", "trusted/a.txt", "other/b.txt"]);
    let trusted = env.cwd().join("trusted");
    let other = env.cwd().join("other");
    write(&trusted.join("AGENTS.md"), "trusted rules");
    write(&trusted.join("a.txt"), "a");
    write(&other.join("AGENTS.md"), "other rules");
    write(&other.join("b.txt"), "b");
    let mut dreb = env.spawn(&[]);
    command(
        &mut dreb,
        json!({"id": "t", "type": "trust_context_folder", "path": trusted.to_string_lossy()}),
    );
    let frames = call(&mut dreb, 1);
    assert_eq!(result_blocks(&frames), ["b"], "not under a trusted root");

    let untrust = command(
        &mut dreb,
        json!({"id": "u", "type": "untrust_context_folder", "path": trusted.to_string_lossy()}),
    );
    assert_eq!(untrust["success"], true, "{untrust}");
    let frames = call(&mut dreb, 2);
    assert_eq!(result_blocks(&frames), ["a"], "untrusted again");

    // Trusting `other` now admits it: an untrusted touch did not mark it scanned.
    command(
        &mut dreb,
        json!({"id": "t2", "type": "trust_context_folder", "path": other.to_string_lossy()}),
    );
    let frames = call(&mut dreb, 3);
    let blocks = result_blocks(&frames);
    assert_eq!(blocks.len(), 2, "{blocks:#?}");
    assert!(blocks[1].contains("other rules"));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn auto_load_nested_context_trusts_every_folder_and_symlinks_load_a_file_once() {
    let env = reads(&["../elsewhere/repo/pkg/x.txt", "link/x.txt"]);
    // Outside the cwd, in a git repository: the walk stops at the repository's root.
    let repo = env.home.path().join("elsewhere/repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    write(&repo.join("AGENTS.md"), "repo rules");
    write(&repo.join("pkg/CLAUDE.md"), "pkg rules");
    write(&repo.join("pkg/x.txt"), "x");
    write(
        &env.home.path().join("elsewhere/AGENTS.md"),
        "above the repo",
    );
    let link = env.cwd().join("link");
    std::os::unix::fs::symlink(repo.join("pkg"), &link).unwrap();
    let mut dreb = env.spawn(&[]);
    let set = command(
        &mut dreb,
        json!({"id": "s", "type": "set_settings", "settings": {"autoLoadNestedContext": true}}),
    );
    assert_eq!(set["success"], true, "{set}");

    let frames = call(&mut dreb, 1);
    let blocks = result_blocks(&frames);
    assert_eq!(blocks.len(), 2, "{blocks:#?}");
    let block = &blocks[1];
    // Outermost first: the repository root's file, then the package's.
    let repo_at = block.find("repo rules").unwrap();
    let pkg_at = block.find("pkg rules").unwrap();
    assert!(repo_at < pkg_at, "{block}");
    assert!(!block.contains("above the repo"), "{block}");

    // The same folder through a symlink: the files are already loaded (by their real paths).
    let frames = call(&mut dreb, 2);
    assert_eq!(result_blocks(&frames), ["x"]);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn reading_the_context_file_itself_does_not_repeat_it_and_bash_cd_counts_as_a_touch() {
    let env = env_calling(&[
        ("read", json!({"path": "docs/AGENTS.md"})),
        ("bash", json!({"command": "cd tools && echo hi"})),
    ]);
    let docs = env.cwd().join("docs");
    write(&docs.join("AGENTS.md"), "docs rules");
    let tools = env.cwd().join("tools");
    write(&tools.join("CLAUDE.md"), "tools rules");
    env.write_settings(&json!({"context": {"autoLoadNested": true}}));
    let mut dreb = env.spawn(&[]);

    // A full read of the file delivers it: marked loaded, not appended a second time.
    let frames = call(&mut dreb, 1);
    assert_eq!(result_blocks(&frames), ["docs rules"]);

    // `cd <dir> && ...` in bash touches that directory.
    let frames = call(&mut dreb, 2);
    let end = frames
        .iter()
        .find(|f| f["type"] == "tool_execution_end")
        .unwrap();
    let text = result_text(end);
    assert!(text.starts_with("hi\n"), "{text}");
    assert!(text.contains("tools rules"), "{text}");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}
