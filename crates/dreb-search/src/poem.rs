//! Ranking candidates over several metrics without hand-tuned weights: Pareto dominance counting (the POEM /
//! TFPR approach). For each metric, a candidate placed above another among the metric's top K "dominates" it on
//! that objective; a metric's weight (by query type) counts as that many duplicated objectives. Fitness =
//! mean dominance × (number dominated + ε) / (number not dominated + ε).

use std::collections::{HashMap, HashSet};

use crate::classify::QueryType;
use crate::types::MetricScores;

/// Smoothing in the fitness ratio.
const EPSILON: f64 = 0.05;

/// Per-metric candidates kept, and compared pairwise.
pub const TOP_K: usize = 1000;

/// Weights in [`MetricScores::named`] order: bm25, cosine, pathMatch, symbolMatch, importGraph, gitRecency.
fn weights(q: QueryType) -> [u16; 6] {
    match q {
        QueryType::Identifier => [2, 1, 1, 2, 1, 1],
        QueryType::NaturalLanguage => [1, 2, 1, 1, 1, 1],
        QueryType::PathLike => [1, 1, 3, 1, 1, 1],
    }
}

/// Candidate indices sorted by one metric, best first (ties keep their input order).
fn by_metric(scores: &[MetricScores], metric: usize, subset: &[usize]) -> Vec<usize> {
    let mut order = subset.to_vec();
    order.sort_by(|&a, &b| scores[b].get(metric).total_cmp(&scores[a].get(metric)));
    order
}

/// `candidates` in a fixed order; returns `(id, scores, rank)` best first.
pub fn rank(
    candidates: &[(i64, MetricScores)],
    query_type: QueryType,
    top_k: usize,
) -> Vec<(i64, MetricScores, usize)> {
    if candidates.is_empty() {
        return Vec::new();
    }
    let all_scores: Vec<MetricScores> = candidates.iter().map(|(_, s)| *s).collect();
    let all: Vec<usize> = (0..candidates.len()).collect();
    // Prune: the union of each metric's top K.
    let kept: Vec<usize> = if candidates.len() <= top_k {
        all
    } else {
        let mut keep = HashSet::new();
        for m in 0..6 {
            keep.extend(by_metric(&all_scores, m, &all).into_iter().take(top_k));
        }
        let mut kept: Vec<usize> = keep.into_iter().collect();
        kept.sort_unstable();
        kept
    };
    let scores: Vec<MetricScores> = kept.iter().map(|&i| all_scores[i]).collect();
    let n = scores.len();
    if n == 1 {
        let i = kept[0];
        return vec![(candidates[i].0, candidates[i].1, 0)];
    }
    let w = weights(query_type);
    let total: u32 = w.iter().map(|x| *x as u32).sum();
    let mut counts = vec![0u16; n * n];
    let local: Vec<usize> = (0..n).collect();
    for (m, weight) in w.iter().enumerate() {
        if *weight == 0 {
            continue;
        }
        let sorted = by_metric(&scores, m, &local);
        let k = top_k.min(n);
        for ri in 0..k {
            let i = sorted[ri];
            let row = i * n;
            let si = scores[i].get(m);
            // Strictly better only: a tie dominates neither way (the reference's sort gives ties to the earlier
            // candidate, so the order candidates arrive in would decide).
            for &j in sorted[ri + 1..k].iter().filter(|&&j| scores[j].get(m) < si) {
                counts[row + j] += weight;
            }
        }
    }
    let threshold = total as f64 * 0.5;
    let fitness: Vec<f64> = (0..n)
        .map(|i| {
            let row = &counts[i * n..(i + 1) * n];
            let (mut sum, mut dominating, mut submitting) = (0u64, 0usize, 0usize);
            for (j, &c) in row.iter().enumerate() {
                if i == j {
                    continue;
                }
                sum += c as u64;
                let c = c as f64;
                if c > threshold {
                    dominating += 1;
                }
                if c < threshold {
                    submitting += 1;
                }
            }
            let mean = sum as f64 / ((n - 1) as f64 * total as f64);
            mean * (dominating as f64 + EPSILON) / (submitting as f64 + EPSILON)
        })
        .collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| fitness[b].total_cmp(&fitness[a]));
    order
        .into_iter()
        .enumerate()
        .map(|(rank, local)| {
            let i = kept[local];
            (candidates[i].0, candidates[i].1, rank)
        })
        .collect()
}

/// Join the metric maps into candidates (every id that any metric scored), ordered by id.
pub fn candidates(maps: [&HashMap<i64, f64>; 6]) -> Vec<(i64, MetricScores)> {
    let mut ids: Vec<i64> = maps.iter().flat_map(|m| m.keys().copied()).collect();
    ids.sort_unstable();
    ids.dedup();
    let get = |m: &HashMap<i64, f64>, id: i64| m.get(&id).copied().unwrap_or(0.0);
    ids.into_iter()
        .map(|id| {
            (
                id,
                MetricScores {
                    bm25: get(maps[0], id),
                    cosine: get(maps[1], id),
                    path_match: get(maps[2], id),
                    symbol_match: get(maps[3], id),
                    import_graph: get(maps[4], id),
                    git_recency: get(maps[5], id),
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(bm25: f64, cosine: f64, symbol: f64) -> MetricScores {
        MetricScores {
            bm25,
            cosine,
            symbol_match: symbol,
            ..Default::default()
        }
    }

    #[test]
    fn a_candidate_best_on_every_metric_ranks_first() {
        let c = vec![
            (1, s(0.2, 0.1, 0.0)),
            (2, s(1.0, 0.9, 1.0)),
            (3, s(0.5, 0.5, 0.5)),
        ];
        let r = rank(&c, QueryType::Identifier, TOP_K);
        let ids: Vec<i64> = r.iter().map(|x| x.0).collect();
        assert_eq!(ids, vec![2, 3, 1]);
        assert_eq!(r[0].2, 0);
    }

    #[test]
    fn query_type_shifts_the_weight() {
        // 1 wins on keywords, 2 on meaning.
        let c = vec![(1, s(1.0, 0.2, 0.0)), (2, s(0.2, 1.0, 0.0))];
        assert_eq!(rank(&c, QueryType::Identifier, TOP_K)[0].0, 1);
        assert_eq!(rank(&c, QueryType::NaturalLanguage, TOP_K)[0].0, 2);
    }

    #[test]
    fn pruning_keeps_each_metrics_best() {
        let mut c: Vec<(i64, MetricScores)> = (0..50).map(|i| (i, s(0.0, 0.0, 0.0))).collect();
        c.push((99, s(1.0, 0.0, 0.0)));
        let r = rank(&c, QueryType::Identifier, 5);
        assert!(r.iter().any(|x| x.0 == 99));
        assert_eq!(r[0].0, 99);
    }
}
