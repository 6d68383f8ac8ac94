//! After a restart on an existing parent session, finished children are found again from their session files in
//! `<agentDir>/subagent-sessions/*/` (the registry itself lives in memory only).

use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::child::session_files;
use super::{AgentInfo, BackgroundAgents, iso};
use crate::sync::lock;
use dreb_protocol::BackgroundAgentStatus;

const HEAD_BYTES: u64 = 256 * 1024;
const TAIL_BYTES: u64 = 64 * 1024;

fn header(file: &Path) -> Option<Value> {
    let reader = std::io::BufReader::new(std::fs::File::open(file).ok()?.take(HEAD_BYTES));
    let line = reader
        .lines()
        .map_while(Result::ok)
        .find(|l| !l.trim().is_empty())?;
    serde_json::from_str(&line).ok()
}

/// The same file, allowing for relative vs absolute spellings; session file names carry a timestamp and uuid, so
/// equal base names are a safe last resort.
fn same_session(recorded: &str, parent: &Path) -> bool {
    let recorded = Path::new(recorded);
    recorded == parent
        || std::path::absolute(recorded).ok() == std::path::absolute(parent).ok()
        || recorded.file_name().is_some() && recorded.file_name() == parent.file_name()
}

fn text_of(content: &Value) -> Option<String> {
    let text = match content {
        Value::String(s) => s.trim().to_string(),
        Value::Array(items) => items
            .iter()
            .filter(|i| i["type"] == "text")
            .filter_map(|i| i["text"].as_str())
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return None,
    };
    (!text.is_empty()).then_some(text)
}

fn task_summary(file: &Path) -> Option<String> {
    let reader = std::io::BufReader::new(std::fs::File::open(file).ok()?.take(HEAD_BYTES));
    reader.lines().map_while(Result::ok).find_map(|line| {
        let entry: Value = serde_json::from_str(&line).ok()?;
        if entry["type"] != "message" || entry["message"]["role"] != "user" {
            return None;
        }
        let text = text_of(&entry["message"]["content"])?;
        let normalised = text.split_whitespace().collect::<Vec<_>>().join(" ");
        Some(if normalised.chars().count() > 120 {
            format!("{}...", normalised.chars().take(117).collect::<String>())
        } else {
            normalised
        })
    })
}

/// `failed` when the last assistant message stopped on an error or abort.
fn finished_status(file: &Path) -> BackgroundAgentStatus {
    let Ok(mut f) = std::fs::File::open(file) else {
        return BackgroundAgentStatus::Completed;
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)));
    let mut tail = Vec::new();
    let _ = f.read_to_end(&mut tail);
    let tail = String::from_utf8_lossy(&tail);
    for line in tail.lines().rev() {
        let Ok(entry) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if entry["type"] == "message" && entry["message"]["role"] == "assistant" {
            return match entry["message"]["stopReason"].as_str() {
                Some("error" | "aborted") => BackgroundAgentStatus::Failed,
                _ => BackgroundAgentStatus::Completed,
            };
        }
    }
    BackgroundAgentStatus::Completed
}

fn started_ms(header: &Value, file: &Path) -> i64 {
    header["timestamp"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp_millis())
        .or_else(|| {
            let modified = std::fs::metadata(file).ok()?.modified().ok()?;
            Some(chrono::DateTime::<chrono::Utc>::from(modified).timestamp_millis())
        })
        .unwrap_or_else(super::now_ms)
}

impl BackgroundAgents {
    /// Register the children of `parent_session` found under `base`; returns how many were added.
    pub fn rehydrate(&self, base: &Path, parent_session: &Path) -> usize {
        let Ok(read) = std::fs::read_dir(base) else {
            return 0;
        };
        let mut dirs: Vec<PathBuf> = read
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        dirs.sort();
        let mut added = 0;
        for dir in dirs {
            let files = session_files(&dir);
            let Some((file, head)) = files.iter().find_map(|(f, _)| {
                let h = header(f)?;
                let parent = h["parentSession"].as_str()?;
                (h["type"] == "session" && same_session(parent, parent_session))
                    .then(|| (f.clone(), h))
            }) else {
                continue;
            };
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let agent_id = format!("rehydrated-{name}");
            let known = lock(&self.entries).iter().any(|e| {
                e.info.agent_id == agent_id
                    || e.info.session_dir.as_deref() == Some(&*dir.to_string_lossy())
                    || e.info.session_file.as_deref() == Some(&*file.to_string_lossy())
            });
            if known {
                continue;
            }
            let agent_type = head["agentType"]
                .as_str()
                .filter(|t| !t.trim().is_empty())
                .unwrap_or("agent")
                .to_string();
            let status_file = files.last().map(|(f, _)| f.clone()).unwrap_or(file.clone());
            let started = started_ms(&head, &file);
            self.register(
                AgentInfo {
                    task_summary: task_summary(&file)
                        .unwrap_or_else(|| format!("{agent_type} ({name})")),
                    agent_id,
                    agent_type,
                    started_at: iso(started),
                    status: finished_status(&status_file),
                    session_dir: Some(dir.display().to_string()),
                    session_file: Some(file.display().to_string()),
                    cwd: head["cwd"].as_str().map(str::to_string),
                    arbitrations: None,
                },
                None,
            );
            added += 1;
        }
        added
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_children_of_this_parent_only() {
        let base = tempfile::tempdir().unwrap();
        let write = |dir: &str, parent: &str, stop: &str| {
            let d = base.path().join(dir);
            std::fs::create_dir_all(&d).unwrap();
            let lines = [
                format!(r#"{{"type":"session","version":3,"id":"x","timestamp":"2026-07-07T12:00:00.000Z","cwd":"/p","parentSession":"{parent}","agentType":"Explore"}}"#),
                r#"{"type":"message","message":{"role":"user","content":[{"type":"text","text":"  Find   the parser  "}]}}"#.to_string(),
                format!(r#"{{"type":"message","message":{{"role":"assistant","content":[],"stopReason":"{stop}"}}}}"#),
            ];
            std::fs::write(d.join("s.jsonl"), lines.join("\n") + "\n").unwrap();
        };
        write("aaaaaaaaaaaa", "/sessions/parent.jsonl", "stop");
        write("bbbbbbbbbbbb", "/elsewhere/parent.jsonl", "error");
        write("cccccccccccc", "/sessions/other.jsonl", "stop");
        let registry = BackgroundAgents::new(1, "dreb".into());
        assert_eq!(
            registry.rehydrate(base.path(), Path::new("/sessions/parent.jsonl")),
            2
        );
        let list = registry.list();
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].agent_id, "rehydrated-aaaaaaaaaaaa");
        assert_eq!(list[0].task_summary, "Find the parser");
        assert_eq!(list[0].status, BackgroundAgentStatus::Completed);
        assert_eq!(list[0].started_at, "2026-07-07T12:00:00.000Z");
        assert_eq!(list[1].status, BackgroundAgentStatus::Failed);
        // Rehydrating again adds nothing.
        assert_eq!(
            registry.rehydrate(base.path(), Path::new("/sessions/parent.jsonl")),
            0
        );
    }
}
