//! The semantic codebase `search` tool (the reference's `@dreb/semantic-search`, rebuilt).
//!
//! A project's files ([`scanner`]) are split into chunks ([`chunk`]) and kept in an SQLite index with FTS5 at
//! `<root>/.dreb/index/search.db` ([`db`]), updated incrementally by mtime ([`engine`]). Each chunk gets a vector
//! from a local sentence-embedding model read from disk ([`embed`]; never downloaded). A query is scored by six
//! metrics (BM25, cosine similarity, path, symbol, import graph, git recency: [`metrics`]) and ranked by Pareto
//! dominance weighted by the query's type ([`poem`], [`classify`]). Without a model, ranking uses the other five
//! and the result says so. See `docs/search.md` and ADR 0010.

pub mod chunk;
pub mod classify;
pub mod db;
pub mod embed;
pub mod engine;
pub mod format;
pub mod imports;
pub mod metrics;
pub mod poem;
pub mod scanner;
pub mod tool;
pub mod types;

pub use engine::{IndexUpdate, SearchEngine, SearchError, SearchOutcome, Semantic};
pub use tool::{SearchEnv, SearchTool};
