//! Git recency: files changed in more recent commits score higher (linear from the oldest to the newest change
//! among the indexed files); files git does not know, or no git at all, score a neutral 0.5.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::Scores;
use crate::types::StoredChunk;

const NEUTRAL: f64 = 0.5;

/// `git log` gets this long (then it is killed and every file scores neutral) ...
const GIT_TIMEOUT: Duration = Duration::from_secs(15);
/// ... and this much output (the newest commits come first, so a cut loses only old ones).
const GIT_MAX_OUTPUT: u64 = 10 * 1024 * 1024;

/// The output of `git log` listing each commit's time and changed files, or `None` when git fails or is missing.
fn git_log(root: &Path) -> Option<Vec<u8>> {
    let mut child = Command::new("git")
        .args([
            "log",
            "--max-count=10000",
            "--format=COMMIT %at",
            "--name-only",
            "--diff-filter=AMCR",
        ])
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.take(GIT_MAX_OUTPUT).read_to_end(&mut buf);
        buf
    });
    let deadline = Instant::now() + GIT_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let out = reader.join().ok()?;
    // Killed at the output cap (a broken pipe) still leaves the newest commits, which are what matters.
    (status.is_some_and(|s| s.success()) || out.len() as u64 >= GIT_MAX_OUTPUT).then_some(out)
}

/// The newest commit time (seconds) that touched each of `paths`, from one `git log` over the last 10,000
/// commits; empty when git is missing or the directory is not a repository.
fn last_change_times(root: &Path, paths: &HashSet<&str>) -> HashMap<String, i64> {
    let mut times = HashMap::new();
    let Some(stdout) = git_log(root) else {
        return times;
    };
    let text = String::from_utf8_lossy(&stdout);
    let mut current = 0i64;
    for line in text.lines() {
        if let Some(ts) = line.strip_prefix("COMMIT ") {
            current = ts.trim().parse().ok().filter(|t| *t > 0).unwrap_or(0);
            continue;
        }
        let path = line.trim();
        if !path.is_empty() && current > 0 && paths.contains(path) && !times.contains_key(path) {
            times.insert(path.to_string(), current);
            if times.len() == paths.len() {
                break;
            }
        }
    }
    times
}

pub fn git_recency(root: &Path, chunks: &[StoredChunk]) -> Scores {
    let paths: HashSet<&str> = chunks.iter().map(|c| c.file_path.as_str()).collect();
    let times = last_change_times(root, &paths);
    let (oldest, newest) = times
        .values()
        .fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(*t), hi.max(*t)));
    chunks
        .iter()
        .map(|c| {
            let score = match times.get(&c.file_path) {
                None => NEUTRAL,
                Some(_) if newest == oldest => 1.0,
                Some(t) => (t - oldest) as f64 / (newest - oldest) as f64,
            };
            (c.id, score)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: i64, path: &str) -> StoredChunk {
        StoredChunk {
            id,
            file_id: id,
            file_path: path.into(),
            start_line: 1,
            end_line: 1,
            kind: "file".into(),
            name: None,
            content: String::new(),
            file_type: "plaintext".into(),
        }
    }

    fn git(root: &Path, args: &[&str], date: &str) {
        let ok = Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn newer_commits_score_higher_and_unknown_files_are_neutral() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"], "2020-01-01T00:00:00Z");
        std::fs::write(root.join("old.txt"), "a").unwrap();
        git(root, &["add", "old.txt"], "2020-01-01T00:00:00Z");
        git(root, &["commit", "-q", "-m", "old"], "2020-01-01T00:00:00Z");
        std::fs::write(root.join("new.txt"), "b").unwrap();
        git(root, &["add", "new.txt"], "2024-01-01T00:00:00Z");
        git(root, &["commit", "-q", "-m", "new"], "2024-01-01T00:00:00Z");
        let chunks = [
            chunk(1, "old.txt"),
            chunk(2, "new.txt"),
            chunk(3, "untracked.txt"),
        ];
        let s = git_recency(root, &chunks);
        assert_eq!((s[&1], s[&2], s[&3]), (0.0, 1.0, 0.5));
        // Not a repository: everything neutral.
        let plain = tempfile::tempdir().unwrap();
        let s = git_recency(plain.path(), &chunks);
        assert!(s.values().all(|v| *v == 0.5));
    }
}
