//! Import-graph proximity: files that import, or are imported by, strongly matching files get part of their
//! score (one hop); seed files connected to other seeds get a small bonus.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;

use super::Scores;
use crate::db::SearchDb;

const PROPAGATION: f64 = 0.5;
const SELF_BOOST: f64 = 0.25;

static SOURCE_EXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\.[jt]sx?$|\.py$|\.go$|\.rs$|\.java$|\.c$|\.h$|\.cpp$|\.hpp$|\.cc$|\.cxx$")
        .unwrap()
});

fn strip_ext(path: &str) -> String {
    SOURCE_EXT.replace(path, "").into_owned()
}

/// `seeds`: file id → seed score; `file_chunks`: file id → its chunk ids. Returns chunk scores.
pub fn import_graph(
    db: &SearchDb,
    seeds: &HashMap<i64, f64>,
    file_chunks: &HashMap<i64, Vec<i64>>,
) -> rusqlite::Result<Scores> {
    let mut scores = Scores::new();
    if seeds.is_empty() {
        return Ok(scores);
    }
    let files = db.all_files()?;
    let mut by_path: HashMap<&str, i64> = HashMap::new();
    let mut by_stripped: HashMap<String, i64> = HashMap::new();
    let mut path_of: HashMap<i64, &str> = HashMap::new();
    for f in &files {
        by_path.insert(&f.file_path, f.id);
        by_stripped.entry(strip_ext(&f.file_path)).or_insert(f.id);
        path_of.insert(f.id, &f.file_path);
    }
    let resolve = |t: &str| by_path.get(t).or_else(|| by_stripped.get(t)).copied();
    let mut propagated: HashMap<i64, f64> = HashMap::new();
    // A stable order, so equal sums come out the same on every run.
    let mut seed_list: Vec<(i64, f64)> = seeds.iter().map(|(k, v)| (*k, *v)).collect();
    seed_list.sort_by_key(|(k, _)| *k);
    for (file_id, seed) in seed_list {
        let share = seed * PROPAGATION;
        if share <= 0.0 {
            continue;
        }
        let mut connected = 0usize;
        let mut touch = |id: i64, connected: &mut usize| {
            if seeds.contains_key(&id) {
                *connected += 1;
            } else {
                *propagated.entry(id).or_default() += share;
            }
        };
        for target in db.imports_from(file_id)? {
            if let Some(id) = resolve(&target) {
                touch(id, &mut connected);
            }
        }
        if let Some(path) = path_of.get(&file_id) {
            let mut importers: HashSet<i64> = db.importers_of(path)?.into_iter().collect();
            let stripped = strip_ext(path);
            if stripped != *path {
                importers.extend(db.importers_of(&stripped)?);
            }
            let mut importers: Vec<i64> = importers.into_iter().collect();
            importers.sort_unstable();
            for id in importers {
                touch(id, &mut connected);
            }
        }
        if connected > 0 {
            *propagated.entry(file_id).or_default() +=
                seed * SELF_BOOST * (connected as f64 / 3.0).min(1.0);
        }
    }
    let max = propagated.values().copied().fold(0.0, f64::max);
    if max <= 0.0 {
        return Ok(scores);
    }
    for (file_id, score) in propagated {
        if let Some(chunks) = file_chunks.get(&file_id).filter(|c| !c.is_empty()) {
            let each = score / max / chunks.len() as f64;
            for id in chunks {
                scores.insert(*id, each);
            }
        }
    }
    Ok(scores)
}
