//! The search engine of one project: keeps its index up to date (new, changed and deleted files by mtime; missing
//! embeddings), computes the six metrics for a query and ranks them.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::chunk::chunk_file;
use crate::classify::classify;
use crate::db::{IndexedFile, SearchDb};
use crate::embed::{self, Embedder, ModelError, ModelSource};
use crate::imports::extract_imports;
use crate::metrics::{self, Scores, git::git_recency, imports::import_graph};
use crate::poem;
use crate::scanner::{ScanRoots, ScannedFile, scan};
use crate::types::{FileType, SearchResult, StoredChunk};

/// The index file inside the index directory.
pub const DB_FILE: &str = "search.db";

/// Results per metric considered.
const METRIC_CANDIDATE_LIMIT: usize = 1000;

/// Chunks embedded (and stored) per step.
const EMBED_BATCH: usize = 512;

/// What went wrong beyond a single file.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("search index error: {0}")]
    Db(#[from] rusqlite::Error),
    #[error("cannot create the search index directory {path}: {message}")]
    IndexDir { path: PathBuf, message: String },
}

/// Progress: `(phase, current, total)`; phases `scanning`, `indexing`, `embedding`, `searching`.
pub type Progress<'a> = &'a (dyn Fn(&str, usize, usize) + Sync);

/// What an index update did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IndexUpdate {
    pub added: usize,
    pub updated: usize,
    pub removed: usize,
    pub failed: usize,
}

/// Whether the semantic metric took part, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Semantic {
    On,
    /// Turned off by configuration.
    Disabled,
    /// No usable model at this directory.
    Unavailable {
        dir: PathBuf,
        error: ModelError,
    },
}

pub struct SearchOutcome {
    pub results: Vec<SearchResult>,
    pub semantic: Semantic,
}

pub struct SearchEngine {
    roots: ScanRoots,
    index_dir: PathBuf,
    model: ModelSource,
    db: Option<SearchDb>,
}

/// Drop a leading `./` (and trailing slashes do no harm: paths are compared as prefixes).
fn normalise_filter(filter: &str) -> &str {
    let mut f = filter;
    while let Some(rest) = f.strip_prefix("./") {
        f = rest;
    }
    if f == "." { "" } else { f }
}

impl SearchEngine {
    pub fn new(roots: ScanRoots, index_dir: PathBuf, model: ModelSource) -> SearchEngine {
        SearchEngine {
            roots,
            index_dir,
            model,
            db: None,
        }
    }

    pub fn project_root(&self) -> &Path {
        &self.roots.project_root
    }

    fn db(&mut self) -> Result<&mut SearchDb, SearchError> {
        if self.db.is_none() {
            std::fs::create_dir_all(&self.index_dir).map_err(|e| SearchError::IndexDir {
                path: self.index_dir.clone(),
                message: e.to_string(),
            })?;
            self.db = Some(SearchDb::open(&self.index_dir.join(DB_FILE))?);
        }
        Ok(self.db.as_mut().expect("opened above"))
    }

    /// Delete the index; the next search builds it from scratch.
    pub fn reset_index(&mut self) {
        self.db = None;
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(self.index_dir.join(format!("{DB_FILE}{suffix}")));
        }
    }

    /// `(files, chunks)` in the index, when it exists.
    pub fn stats(&mut self) -> Option<(i64, i64)> {
        if !self.index_dir.join(DB_FILE).is_file() {
            return None;
        }
        let db = self.db().ok()?;
        Some((db.file_count().ok()?, db.chunk_count().ok()?))
    }

    fn embedder(&self) -> Result<Arc<Embedder>, Semantic> {
        match &self.model {
            ModelSource::Disabled => Err(Semantic::Disabled),
            ModelSource::Dir(dir) => embed::shared(dir).map_err(|error| Semantic::Unavailable {
                dir: dir.clone(),
                error,
            }),
        }
    }

    /// Bring the index up to date: files added, changed (by mtime) or deleted since the last update are
    /// re-chunked or removed, and every chunk without a vector gets one when there is a model.
    pub fn update_index(
        &mut self,
        embedder: Option<&Embedder>,
        progress: Progress<'_>,
    ) -> Result<IndexUpdate, SearchError> {
        progress("scanning", 0, 1);
        let scanned = scan(&self.roots);
        progress("scanning", 1, 1);
        let roots = self.roots.clone();
        let db = self.db()?;
        let existing: HashMap<String, IndexedFile> = db
            .all_files()?
            .into_iter()
            .map(|f| (f.file_path.clone(), f))
            .collect();
        let scanned_paths: HashSet<&str> = scanned.iter().map(|f| f.file_path.as_str()).collect();
        let mut update = IndexUpdate::default();
        let mut work: Vec<&ScannedFile> = Vec::new();
        for f in &scanned {
            match existing.get(&f.file_path) {
                None => {
                    update.added += 1;
                    work.push(f);
                }
                Some(old) if old.mtime != f.mtime => {
                    update.updated += 1;
                    work.push(f);
                }
                Some(_) => {}
            }
        }
        for old in existing.values() {
            if !scanned_paths.contains(old.file_path.as_str()) {
                db.delete_file(old.id)?;
                update.removed += 1;
            }
        }
        let total = work.len();
        for (i, f) in work.into_iter().enumerate() {
            progress("indexing", i + 1, total);
            // Read and chunk before touching the database, so a file that fails keeps no half-written record.
            let Ok(content) = std::fs::read_to_string(roots.absolute(&f.file_path)) else {
                update.failed += 1;
                continue;
            };
            let chunks = chunk_file(&content, &f.file_path, f.file_type);
            let imports = extract_imports(&content, &f.file_path, f.file_type);
            db.replace_file(
                &f.file_path,
                f.mtime,
                f.file_type.as_str(),
                &chunks,
                &imports,
            )?;
        }
        if let Some(embedder) = embedder {
            self.embed_missing(embedder, progress)?;
        }
        Ok(update)
    }

    fn embed_missing(
        &mut self,
        embedder: &Embedder,
        progress: Progress<'_>,
    ) -> Result<(), SearchError> {
        let db = self.db()?;
        let ids = db.chunk_ids_without_embedding(embedder.name())?;
        // In slices, so an interrupted first build keeps what it embedded.
        for (i, batch) in ids.chunks(EMBED_BATCH).enumerate() {
            let chunks = db.chunks_by_id(batch)?;
            let texts: Vec<String> = chunks.iter().map(|c| c.content.clone()).collect();
            let done_before = i * EMBED_BATCH;
            let vectors = embedder.embed_all(&texts, &|n, _| {
                progress("embedding", done_before + n, ids.len())
            });
            let items: Vec<(i64, Vec<f32>)> = chunks.iter().map(|c| c.id).zip(vectors).collect();
            db.upsert_embeddings(embedder.name(), &items)?;
        }
        Ok(())
    }

    /// Update the index, then rank the chunks (under `path_filter`, relative to the project root) for `query`.
    pub fn search(
        &mut self,
        query: &str,
        limit: usize,
        path_filter: Option<&str>,
        progress: Progress<'_>,
    ) -> Result<SearchOutcome, SearchError> {
        let (embedder, semantic) = match self.embedder() {
            Ok(e) => (Some(e), Semantic::On),
            Err(why) => (None, why),
        };
        self.update_index(embedder.as_deref(), progress)?;
        let root = self.roots.project_root.clone();
        let db = self.db()?;
        let mut chunks = db.all_chunks()?;
        if let Some(filter) = path_filter.map(normalise_filter).filter(|f| !f.is_empty()) {
            chunks.retain(|c| c.file_path.starts_with(filter));
        }
        if chunks.is_empty() {
            return Ok(SearchOutcome {
                results: Vec::new(),
                semantic,
            });
        }
        let allowed: HashSet<i64> = chunks.iter().map(|c| c.id).collect();
        progress("searching", 0, 6);
        let bm25 = metrics::bm25(&db.fts_search(&fts_query(query), METRIC_CANDIDATE_LIMIT));
        progress("searching", 1, 6);
        let cosine = match &embedder {
            Some(e) => vector_scores(db, e, query, &allowed)?,
            None => Scores::new(),
        };
        progress("searching", 2, 6);
        let path = metrics::path_match(query, &chunks);
        progress("searching", 3, 6);
        let symbol = metrics::symbol_match(query, &db.all_symbols()?);
        progress("searching", 4, 6);
        let seeds = file_seeds(&chunks, &[&bm25, &cosine]);
        let mut file_chunks: HashMap<i64, Vec<i64>> = HashMap::new();
        for c in &chunks {
            file_chunks.entry(c.file_id).or_default().push(c.id);
        }
        let imports = import_graph(db, &seeds, &file_chunks)?;
        progress("searching", 5, 6);
        let recency = git_recency(&root, &chunks);
        progress("searching", 6, 6);
        let mut candidates = poem::candidates([&bm25, &cosine, &path, &symbol, &imports, &recency]);
        candidates.retain(|(id, _)| allowed.contains(id));
        let ranked = poem::rank(&candidates, classify(query), poem::TOP_K);
        let by_id: HashMap<i64, StoredChunk> = chunks.into_iter().map(|c| (c.id, c)).collect();
        let results = ranked
            .into_iter()
            .take(limit)
            .filter_map(|(id, scores, rank)| {
                by_id.get(&id).map(|chunk| SearchResult {
                    chunk: chunk.clone(),
                    scores,
                    rank,
                })
            })
            .collect();
        Ok(SearchOutcome { results, semantic })
    }
}

/// Cosine similarity of the query with every stored vector of this model (the best
/// [`METRIC_CANDIDATE_LIMIT`]), negative values as 0.
fn vector_scores(
    db: &SearchDb,
    embedder: &Embedder,
    query: &str,
    allowed: &HashSet<i64>,
) -> Result<Scores, SearchError> {
    let q = embedder.embed(query);
    let mut scored: Vec<(i64, f64)> = db
        .all_embeddings(embedder.name())?
        .into_iter()
        .filter(|(id, _)| allowed.contains(id))
        .map(|(id, v)| (id, embed::cosine(&q, &v) as f64))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.truncate(METRIC_CANDIDATE_LIMIT);
    Ok(scored.into_iter().map(|(id, s)| (id, s.max(0.0))).collect())
}

/// Import-graph seeds: each file's best keyword or semantic score, keeping the files at or above the median
/// (and at least 0.1).
fn file_seeds(chunks: &[StoredChunk], maps: &[&Scores]) -> HashMap<i64, f64> {
    let mut files: HashMap<i64, f64> = HashMap::new();
    for c in chunks {
        let best = maps
            .iter()
            .filter_map(|m| m.get(&c.id))
            .copied()
            .fold(0.0, f64::max);
        if best > 0.0 {
            let e = files.entry(c.file_id).or_insert(0.0);
            *e = e.max(best);
        }
    }
    if files.is_empty() {
        return files;
    }
    let mut sorted: Vec<f64> = files.values().copied().collect();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let threshold = sorted[sorted.len() / 2].max(0.1);
    files.retain(|_, s| *s >= threshold);
    files
}

const STOPWORDS: [&str; 60] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "had", "has", "have",
    "he", "her", "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "no", "not",
    "of", "on", "or", "our", "she", "so", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "up", "us", "was", "we", "what", "when", "where", "which",
    "who", "will", "with", "would", "you", "your",
];

/// The query as an FTS5 expression: operators and special characters removed, stopwords dropped, the
/// remaining terms joined with OR (so partial matches count).
pub fn fts_query(query: &str) -> String {
    let cleaned: String = query
        .chars()
        .map(|c| {
            if "*\"():^{}[]~!@#$%&=+|<>".contains(c) {
                ' '
            } else {
                c
            }
        })
        .collect();
    let terms: Vec<String> = cleaned
        .split_whitespace()
        .filter(|t| {
            !matches!(
                t.to_ascii_uppercase().as_str(),
                "AND" | "OR" | "NOT" | "NEAR"
            )
        })
        .map(|t| t.trim_start_matches('-'))
        .filter(|t| !t.is_empty() && !STOPWORDS.contains(&t.to_lowercase().as_str()))
        .map(|t| {
            // Terms with characters FTS5's bareword syntax refuses (`.`, `/`, `'`, `-`, `,`...) are quoted.
            if t.chars().all(|c| c.is_alphanumeric() || c == '_') {
                t.to_string()
            } else {
                format!("\"{t}\"")
            }
        })
        .collect();
    if terms.is_empty() {
        "\"\"".into()
    } else {
        terms.join(" OR ")
    }
}

/// The file types the index knows, for documentation and tests.
pub fn indexed_types() -> impl Iterator<Item = &'static str> {
    FileType::ALL.into_iter().map(FileType::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fts_query_ors_terms_without_stopwords_or_operators() {
        assert_eq!(fts_query("where is the rate limiter"), "rate OR limiter");
        assert_eq!(fts_query("foo AND (bar*) -baz"), "foo OR bar OR baz");
        assert_eq!(
            fts_query("config.yaml src/auth"),
            "\"config.yaml\" OR \"src/auth\""
        );
        assert_eq!(fts_query("the of"), "\"\"");
    }
}
