//! Git recency: files changed in more recent commits score higher (linear from the oldest to the newest change
//! among the indexed files); files git does not know, or no git at all, score a neutral 0.5.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Command, Stdio};

use super::Scores;
use crate::types::StoredChunk;

const NEUTRAL: f64 = 0.5;

/// The newest commit time (seconds) that touched each of `paths`, from one `git log` over the last 10,000
/// commits; empty when git is missing or the directory is not a repository.
fn last_change_times(root: &Path, paths: &HashSet<&str>) -> HashMap<String, i64> {
    let mut times = HashMap::new();
    let Ok(out) = Command::new("git")
        .args([
            "log",
            "--max-count=10000",
            "--format=COMMIT %at",
            "--name-only",
            "--diff-filter=AMCR",
        ])
        .current_dir(root)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
    else {
        return times;
    };
    if !out.status.success() {
        return times;
    }
    let text = String::from_utf8_lossy(&out.stdout);
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
