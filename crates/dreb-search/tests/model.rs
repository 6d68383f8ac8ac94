//! With the test embedding model (all-MiniLM-L6-v2 from a PyPI package, see scripts/fetch-search-model.sh):
//! the vectors behave like sentence embeddings, and natural-language queries find code that shares no words
//! with them.

mod common;

use common::{engine, fixture, model_dir, paths, search};
use dreb_search::Semantic;
use dreb_search::embed::{Embedder, ModelSource, cosine};

#[test]
fn embeddings_are_normalised_and_meaningful() {
    let Some(dir) = model_dir() else { return };
    let e = Embedder::load(&dir).unwrap();
    assert_eq!(e.dimension(), 384);
    let a = e.embed("How do I sort a list of numbers?");
    let b = e.embed("Sorting an array of integers in ascending order");
    let c = e.embed("The weather in Lisbon is sunny today.");
    let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    let (ab, ac) = (cosine(&a, &b), cosine(&a, &c));
    assert!(ab > 0.5, "related sentences: {ab}");
    assert!(ac < 0.2, "unrelated sentences: {ac}");
    assert!(ab > ac + 0.4);
}

#[test]
fn natural_language_queries_rank_by_meaning() {
    let Some(model) = model_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let mut e = engine(dir.path(), ModelSource::Dir(model));
    // No word of these queries occurs in the chunk it should find.
    let throttle = search(
        &mut e,
        "where is the code that throttles too many requests from one caller",
    );
    assert_eq!(throttle.semantic, Semantic::On);
    // The semantic metric singles the rate limiter out; the other metrics (import graph, git) may reorder the
    // top few, as they do in the reference.
    let best_cosine = throttle
        .results
        .iter()
        .max_by(|a, b| a.scores.cosine.total_cmp(&b.scores.cosine))
        .unwrap();
    assert_eq!(
        best_cosine.chunk.name.as_deref(),
        Some("RateLimiter"),
        "{:?}",
        paths(&throttle)
    );
    assert!(best_cosine.scores.cosine > 0.15, "{:?}", best_cosine.scores);
    assert!(best_cosine.rank < 3, "rank {}", best_cosine.rank);
    assert_eq!(
        throttle
            .results
            .iter()
            .filter(|r| r.scores.bm25 > 0.0)
            .count(),
        0,
        "no keyword overlap"
    );
    let svg = search(&mut e, "draw a graph as a vector image");
    let best = svg
        .results
        .iter()
        .max_by(|a, b| a.scores.cosine.total_cmp(&b.scores.cosine))
        .unwrap();
    assert_eq!(best.chunk.file_path, "src/render.rs", "{:?}", paths(&svg));
    assert!(best.rank < 3, "rank {}", best.rank);
    // Every chunk got a vector; a second engine reuses them.
    let mut again = engine(dir.path(), ModelSource::Dir(model_dir().unwrap()));
    assert_eq!(
        again.update_index(None, &|_, _, _| {}).unwrap(),
        Default::default()
    );
}

/// The forward pass agrees with an independent one: the first dimensions of the embedding of "search the code",
/// as a plain-Python BERT (f64 arithmetic, exact erf) computes them from the same files.
#[test]
fn the_forward_pass_matches_an_independent_implementation() {
    let Some(dir) = model_dir() else { return };
    let e = Embedder::load(&dir).unwrap();
    let v = e.embed("search the code");
    let want = [
        -0.083293, 0.021961, -0.1362, 0.004234, 0.036095, 0.024462, -0.033061, 0.02597,
    ];
    for (i, w) in want.iter().enumerate() {
        assert!((v[i] - w).abs() < 2e-4, "dimension {i}: {} vs {w}", v[i]);
    }
}

/// Texts embedded together (stacked in one forward pass) get the vectors they get alone.
#[test]
fn batched_embeddings_equal_single_ones() {
    let Some(dir) = model_dir() else { return };
    let e = Embedder::load(&dir).unwrap();
    let texts: Vec<String> = [
        "fn main() {}",
        "a much longer piece of text about parsing configuration files",
        "x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let batched = e.embed_all(&texts, &|_, _| {});
    for (t, b) in texts.iter().zip(&batched) {
        let single = e.embed(t);
        assert!(
            single.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5),
            "{t}"
        );
    }
}
