//! Shared helpers: the reference's recorded session files and RPC transcripts (copied from
//! `/work/shared/fixtures/reference`, written by the TypeScript dreb 2.61.1).

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

pub const FIXTURES: &[&str] = &[
    "a-simple",
    "b-tool-openai",
    "b-tool-anthropic",
    "stats-tool",
    "c-name-bash-label",
    "d-branched-compacted",
    "f-branch-summary",
    "e-forked",
];

/// The reference's session dir (paths in recorded transcripts start with it).
pub const REFERENCE_AGENT_DIR: &str = "/home/user/.dreb/agent";
pub const REFERENCE_SESSION_DIR: &str = "/home/user/.dreb/agent/sessions/--home-user-project--";

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn fixture_path(name: &str) -> PathBuf {
    fixtures_dir()
        .join("sessions")
        .join(format!("{name}.jsonl"))
}

pub fn fixture_text(name: &str) -> String {
    std::fs::read_to_string(fixture_path(name)).unwrap()
}

/// The file name the reference gave a fixture (from `sessions/index.json`).
pub fn original_file_name(name: &str) -> String {
    let index: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures_dir().join("sessions/index.json")).unwrap(),
    )
    .unwrap();
    index["files"][name].as_str().unwrap().to_string()
}

/// The `data` of the recorded response with request id `id` in `rpc/<transcript>.out.jsonl`.
pub fn recorded_response(transcript: &str, id: &str) -> Value {
    let text = std::fs::read_to_string(
        fixtures_dir()
            .join("rpc")
            .join(format!("{transcript}.out.jsonl")),
    )
    .unwrap();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["type"] == "response" && v["id"] == id {
            return v["data"].clone();
        }
    }
    panic!("no response {id} in {transcript}");
}

/// The recorded response line (raw text) for request `id`.
pub fn recorded_response_line(transcript: &str, id: &str) -> String {
    let text = std::fs::read_to_string(
        fixtures_dir()
            .join("rpc")
            .join(format!("{transcript}.out.jsonl")),
    )
    .unwrap();
    text.lines()
        .find(|l| {
            l.contains("\"type\":\"response\"") && l.starts_with(&format!("{{\"id\":\"{id}\""))
        })
        .unwrap_or_else(|| panic!("no response {id} in {transcript}"))
        .to_string()
}

/// Writes the first `n` lines of a fixture into `dir/<original name>` and returns the path.
pub fn write_prefix(dir: &Path, name: &str, n: usize) -> PathBuf {
    let text = fixture_text(name);
    let prefix: String = text.lines().take(n).map(|l| format!("{l}\n")).collect();
    let path = dir.join(original_file_name(name));
    std::fs::write(&path, prefix).unwrap();
    path
}

/// Copies a whole fixture into `dir/<original name>`.
pub fn install(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(original_file_name(name));
    std::fs::copy(fixture_path(name), &path).unwrap();
    path
}

/// Strips `id` and `timestamp` from an entry so freshly generated entries can be compared with recorded ones.
pub fn without_id_and_time(mut v: Value) -> Value {
    let m = v.as_object_mut().unwrap();
    m.remove("id");
    m.remove("timestamp");
    v
}
