//! The `search` tool through the real binary: the mock model calls it on a fixture tree in the session's cwd, and
//! the ranked chunks reach the model. Without an embedding model it ranks by full text and says so; with the test
//! model (scripts/fetch-search-model.sh) natural-language queries find code by meaning. The index lives in
//! `<cwd>/.dreb/index` and follows the files between calls.

mod common;

use std::path::{Path, PathBuf};

use common::{Env, Frame, result_text};
use dreb_mock_llm::Scenario;
use serde_json::{Value, json};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn fixture(root: &Path) {
    write(
        root,
        "src/auth/rate_limit.ts",
        "import { now } from \"../util/clock.js\";\n\nexport class RateLimiter {\n  private tokens = new Map<string, number>();\n\n  allow(clientId: string): boolean {\n    const left = this.tokens.get(clientId) ?? 10;\n    if (left <= 0) return false;\n    this.tokens.set(clientId, left - 1);\n    return true;\n  }\n}\n",
    );
    write(
        root,
        "src/util/clock.ts",
        "export function now(): number {\n  return Date.now();\n}\n",
    );
    write(
        root,
        "src/db/store.py",
        "import sqlite3\n\n\ndef open_database(path):\n    return sqlite3.connect(path)\n",
    );
    write(
        root,
        "src/render.rs",
        "pub fn render_chart(points: &[f64]) -> String {\n    let mut svg = String::from(\"<svg>\");\n    for p in points {\n        svg.push_str(&format!(\"<circle r='{p}'/>\"));\n    }\n    svg\n}\n",
    );
    write(
        root,
        "docs/deploy.md",
        "# Deploying\n\nShip the service with docker compose.\n",
    );
}

/// A mock that, for each `(prompt word, arguments)`, calls `search` with those arguments when the prompt holds the
/// word, and answers "Done" after a tool result.
fn env_searching(calls: &[(&str, Value)]) -> Env {
    let mut turns: Vec<Value> = calls
        .iter()
        .map(|(word, args)| {
            json!({"when": {"lastUserContains": word, "afterToolResult": false}, "repeat": true,
                   "toolCalls": [{"name": "search", "arguments": args}]})
        })
        .collect();
    turns.push(json!({"when": {"afterToolResult": true}, "repeat": true, "text": ["Done"]}));
    let scenario: Scenario = serde_json::from_value(json!({ "turns": turns })).unwrap();
    let env = Env::with_scenario(scenario);
    fixture(&env.cwd());
    env
}

fn spawn(env: &Env, model: &Path) -> common::Dreb {
    env.spawn_with_env(
        &["--no-session"],
        &[("DREB_SEARCH_MODEL", &model.to_string_lossy())],
    )
}

/// Prompt and return the `search` call's frames (its updates and its end).
fn ask(dreb: &mut common::Dreb, id: &str, message: &str) -> Vec<Frame> {
    dreb.send(&json!({"id": id, "type": "prompt", "message": message}));
    dreb.wait_reply(true)
}

fn search_end(frames: &[Frame]) -> Value {
    frames
        .iter()
        .find(|f| f["type"] == "tool_execution_end" && f["toolName"] == "search")
        .cloned()
        .unwrap_or_else(|| panic!("no search result in {frames:#?}"))
}

/// The numbered entries' headers (`1. path:L1-5 (kind name)`).
fn headers(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect()
}

fn last_request_text(env: &Env) -> String {
    env.mock.requests().last().unwrap().body["messages"].to_string()
}

/// The test model, or `None` when not installed and not required (see crates/dreb-search/tests/common.rs).
fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("DREB_SEARCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.models/all-MiniLM-L6-v2")
        });
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("DREB_REQUIRE_SEARCH_MODEL").is_none_or(|v| v != "1"),
        "the search test model is missing at {} (run scripts/fetch-search-model.sh)",
        dir.display()
    );
    eprintln!("skipping: no search test model at {}", dir.display());
    None
}

#[test]
fn without_a_model_search_ranks_by_full_text_and_says_so() {
    let env = env_searching(&[("limiter", json!({"query": "RateLimiter"}))]);
    let missing = env.cwd().join("no-model");
    let mut dreb = spawn(&env, &missing);
    let frames = ask(&mut dreb, "p1", "find the limiter");
    let end = search_end(&frames);
    assert_eq!(end["isError"], false, "{end}");
    let text = result_text(&end);
    let first = headers(&text)[0];
    assert!(
        first.starts_with("1. src/auth/rate_limit.ts:L3-12 (export RateLimiter)"),
        "{text}"
    );
    assert!(text.contains("   scores: bm25=1.00"), "{text}");
    assert!(!text.contains("cosine="), "{text}");
    let note = format!(
        "[Note: semantic ranking is unavailable: no usable embedding model at {}",
        missing.display()
    );
    assert!(text.contains(&note), "{text}");
    let details = &end["result"]["details"];
    assert_eq!(details["indexBuilt"], true);
    assert_eq!(details["indexStats"]["files"], 5);
    assert_eq!(details["resultCount"], headers(&text).len());
    // Progress went out as partial results.
    let updates: Vec<String> = frames
        .iter()
        .filter(|f| f["type"] == "tool_execution_update" && f["toolName"] == "search")
        .map(|f| result_text(&json!({"result": f["partialResult"]})))
        .collect();
    assert_eq!(
        updates.first().map(String::as_str),
        Some("scanning: 0/1"),
        "{updates:?}"
    );
    assert!(updates.iter().any(|u| u == "indexing: 5/5"), "{updates:?}");
    assert!(last_request_text(&env).contains("rate_limit.ts:L3-12"));
    assert!(env.cwd().join(".dreb/index/search.db").is_file());
    let (code, _, stderr) = dreb.finish();
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn the_index_follows_edits_between_calls_and_rebuild_starts_over() {
    let env = env_searching(&[
        ("first", json!({"query": "zebracorn"})),
        ("second", json!({"query": "zebracorn", "limit": 1})),
        (
            "third",
            json!({"query": "open_database", "rebuild": true, "restrictToDir": "src/db"}),
        ),
    ]);
    let mut dreb = spawn(&env, Path::new("/nonexistent"));
    let text = result_text(&search_end(&ask(&mut dreb, "p1", "first")));
    assert!(!text.contains("bm25="), "nothing matches yet: {text}");
    // A file changes (later mtime) and one is added between the calls.
    let render = env.cwd().join("src/render.rs");
    write(
        &env.cwd(),
        "src/render.rs",
        "pub fn draw_zebracorn() -> u32 {\n    7\n}\n",
    );
    std::fs::File::options()
        .write(true)
        .open(&render)
        .unwrap()
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
    write(
        &env.cwd(),
        "notes/zebracorn.md",
        "# Zebracorn\n\nA striped unicorn.\n",
    );
    let end = search_end(&ask(&mut dreb, "p2", "second"));
    let text = result_text(&end);
    assert_eq!(headers(&text).len(), 1, "{text}");
    assert!(text.contains("zebracorn"), "{text}");
    assert!(text.contains("bm25=1.00"), "{text}");
    assert_eq!(end["result"]["details"]["indexStats"]["files"], 6);
    // rebuild + restrictToDir: only src/db, from a fresh index.
    let end = search_end(&ask(&mut dreb, "p3", "third"));
    let text = result_text(&end);
    let hs = headers(&text);
    assert!(
        hs[0].starts_with("1. src/db/store.py:L4-5 (function open_database)"),
        "{text}"
    );
    assert!(hs.iter().all(|h| h.contains(" src/db/")), "{text}");
    assert_eq!(end["result"]["details"]["indexStats"]["files"], 6);
    let (code, _, stderr) = dreb.finish();
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn bad_arguments_get_the_reference_texts() {
    let env = env_searching(&[
        ("empty", json!({"query": "  "})),
        ("nowhere", json!({"query": "x", "searchDir": "missing/dir"})),
    ]);
    let mut dreb = spawn(&env, Path::new("/nonexistent"));
    let end = search_end(&ask(&mut dreb, "p1", "empty"));
    assert_eq!(end["isError"], false);
    assert_eq!(result_text(&end), "Search query cannot be empty.");
    assert_eq!(
        end["result"]["details"],
        json!({"resultCount": 0, "indexBuilt": false})
    );
    let end = search_end(&ask(&mut dreb, "p2", "nowhere"));
    assert_eq!(
        result_text(&end),
        format!(
            "searchDir does not exist or is not a directory: {}",
            env.cwd().join("missing/dir").display()
        )
    );
    assert_eq!(
        end["result"]["details"],
        json!({"resultCount": 0, "indexBuilt": false})
    );
    assert!(
        !env.cwd().join(".dreb/index").exists(),
        "nothing was indexed"
    );
    let (code, _, stderr) = dreb.finish();
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn with_the_model_natural_language_finds_code_by_meaning() {
    let Some(model) = model_dir() else { return };
    let env = env_searching(&[(
        "throttle",
        json!({"query": "which code throttles callers that send too many requests", "searchDir": "."}),
    )]);
    let mut dreb = spawn(&env, &model);
    let frames = ask(&mut dreb, "p1", "throttle");
    let end = search_end(&frames);
    let text = result_text(&end);
    assert!(!text.contains("[Note:"), "{text}");
    // No word of the query is in the rate limiter, and yet it is among the first results, on its cosine score.
    let hs = headers(&text);
    let at = hs
        .iter()
        .position(|h| h.contains("src/auth/rate_limit.ts"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(at < 3, "{text}");
    assert!(text.contains("cosine="), "{text}");
    assert!(
        frames.iter().any(|f| f["type"] == "tool_execution_update"
            && f["partialResult"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("embedding: "))),
        "embedding progress"
    );
    let (code, _, stderr) = dreb.finish();
    assert_eq!(code, 0, "{stderr}");
}
