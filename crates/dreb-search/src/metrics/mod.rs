//! The ranking metrics besides BM25 and cosine similarity: path and symbol overlap with the query, import-graph
//! proximity to strong matches, and how recently git saw each file change. Each maps chunk ids to 0..=1.

pub mod git;
pub mod imports;

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use regex::Regex;

use crate::types::StoredChunk;

pub type Scores = HashMap<i64, f64>;

static CAMEL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"([a-z])([A-Z])").unwrap());
static ACRONYM: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"([A-Z]+)([A-Z][a-z])").unwrap());
static DELIMS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[\s/\\.\-_]+").unwrap());

/// Lowercase word tokens of at least two characters, split at spaces, path separators, dots, dashes,
/// underscores and camelCase boundaries (`XMLParser` → `xml`, `parser`), without repeats, in order.
pub fn tokenize(text: &str) -> Vec<String> {
    let spaced = CAMEL.replace_all(text, "$1 $2");
    let spaced = ACRONYM.replace_all(&spaced, "$1 $2");
    let mut seen = HashSet::new();
    DELIMS
        .split(&spaced)
        .map(str::to_lowercase)
        .filter(|t| t.chars().count() >= 2 && seen.insert(t.clone()))
        .collect()
}

/// Divide by the largest value when it is not already 1.
fn normalise(scores: &mut Scores) {
    let max = scores.values().copied().fold(0.0, f64::max);
    if max > 0.0 && max != 1.0 {
        scores.values_mut().for_each(|v| *v /= max);
    }
}

/// The share of the query's tokens found in each chunk's file path.
pub fn path_match(query: &str, chunks: &[StoredChunk]) -> Scores {
    let q = tokenize(query);
    let mut scores = Scores::new();
    if q.is_empty() {
        return scores;
    }
    let mut cache: HashMap<&str, f64> = HashMap::new();
    for c in chunks {
        let score = *cache.entry(c.file_path.as_str()).or_insert_with(|| {
            let path: HashSet<String> = tokenize(&c.file_path).into_iter().collect();
            q.iter().filter(|t| path.contains(*t)).count() as f64 / q.len() as f64
        });
        if score > 0.0 {
            scores.insert(c.id, score);
        }
    }
    normalise(&mut scores);
    scores
}

/// Token overlap of the query with each chunk's symbol names, with a bonus when one contains the other.
pub fn symbol_match(query: &str, symbols: &HashMap<i64, Vec<String>>) -> Scores {
    let q = tokenize(query);
    let mut scores = Scores::new();
    if q.is_empty() {
        return scores;
    }
    let q_lower = query.to_lowercase();
    for (id, names) in symbols {
        let best = names
            .iter()
            .map(|name| {
                let tokens: HashSet<String> = tokenize(name).into_iter().collect();
                let mut s =
                    q.iter().filter(|t| tokens.contains(*t)).count() as f64 / q.len() as f64;
                let lower = name.to_lowercase();
                if lower.contains(&q_lower) {
                    s = (s + 0.3).min(1.0);
                } else if q_lower.contains(&lower) && lower.chars().count() >= 3 {
                    s = (s + 0.2).min(1.0);
                }
                s
            })
            .fold(0.0, f64::max);
        if best > 0.0 {
            scores.insert(*id, best);
        }
    }
    normalise(&mut scores);
    scores
}

/// BM25 results scaled so the best is 1.
pub fn bm25(results: &[(i64, f64)]) -> Scores {
    let max = results.iter().map(|(_, s)| *s).fold(0.0, f64::max);
    if max <= 0.0 {
        return Scores::new();
    }
    results.iter().map(|(id, s)| (*id, s / max)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_splits_code_names() {
        assert_eq!(
            tokenize("XMLParser.parse_file"),
            vec!["xml", "parser", "parse", "file"]
        );
        assert_eq!(
            tokenize("src/auth/rateLimit.ts a"),
            vec!["src", "auth", "rate", "limit", "ts"]
        );
    }

    #[test]
    fn symbol_match_rewards_containment() {
        let mut symbols = HashMap::new();
        symbols.insert(1, vec!["RateLimiter".to_string()]);
        symbols.insert(2, vec!["parse".to_string()]);
        symbols.insert(3, vec!["unrelated".to_string()]);
        let s = symbol_match("rate limiter", &symbols);
        assert_eq!(s.get(&1), Some(&1.0));
        assert!(!s.contains_key(&3));
    }
}
