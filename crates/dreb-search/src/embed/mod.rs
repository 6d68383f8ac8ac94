//! The local embedding model: a sentence-transformers BERT model read from a directory on disk
//! (`config.json`, `model.safetensors`, `tokenizer.json` or `vocab.txt`, optionally `sentence_bert_config.json`).
//! Nothing is downloaded: where no model is found, search ranks without the semantic metric.

mod bert;
mod safetensors;
pub mod tokenizer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use bert::Bert;
use tokenizer::WordPiece;

/// Environment variable naming the model directory (`off` disables embeddings).
pub const MODEL_ENV: &str = "DREB_SEARCH_MODEL";

/// The model the reference uses, under the agent directory's `models/`.
pub const DEFAULT_MODEL_DIR_NAME: &str = "all-MiniLM-L6-v2";

/// Why a model directory could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read {path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
}

impl ModelError {
    pub(crate) fn io(path: &Path, e: std::io::Error) -> ModelError {
        ModelError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }

    pub(crate) fn format(path: &Path, message: String) -> ModelError {
        ModelError::Format {
            path: path.to_path_buf(),
            message,
        }
    }
}

/// Where the model is to be found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// A directory to load from.
    Dir(PathBuf),
    /// Turned off (`DREB_SEARCH_MODEL=off`).
    Disabled,
}

impl ModelSource {
    /// `$DREB_SEARCH_MODEL` if set, else `<agentDir>/models/all-MiniLM-L6-v2`.
    pub fn from_env(agent_dir: &Path) -> ModelSource {
        Self::resolve(std::env::var_os(MODEL_ENV).as_deref(), agent_dir)
    }

    pub fn resolve(value: Option<&std::ffi::OsStr>, agent_dir: &Path) -> ModelSource {
        match value.filter(|v| !v.is_empty()) {
            Some(v) if v == "off" || v == "none" => ModelSource::Disabled,
            Some(v) => ModelSource::Dir(dreb_paths::expand_tilde(&v.to_string_lossy())),
            None => ModelSource::Dir(agent_dir.join("models").join(DEFAULT_MODEL_DIR_NAME)),
        }
    }
}

/// Tokens stacked into one forward pass while embedding many texts.
const BATCH_TOKENS: usize = 1024;

pub struct Embedder {
    name: String,
    tokenizer: WordPiece,
    model: Bert,
    /// Tokens per text, special tokens included.
    max_tokens: usize,
}

impl Embedder {
    /// Load the model in `dir`.
    pub fn load(dir: &Path) -> Result<Embedder, ModelError> {
        let model = Bert::load(dir)?;
        let tokenizer = WordPiece::load(dir)?;
        let max_seq = std::fs::read_to_string(dir.join("sentence_bert_config.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["max_seq_length"].as_u64())
            .map_or(model.max_positions(), |m| m as usize);
        let base = dir
            .file_name()
            .map_or_else(|| "model".to_string(), |n| n.to_string_lossy().into_owned());
        Ok(Embedder {
            name: format!("dreb-rs/{base}"),
            max_tokens: max_seq.min(model.max_positions()).max(2),
            tokenizer,
            model,
        })
    }

    /// The key its vectors are stored under in the index.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn dimension(&self) -> usize {
        self.model.dimension()
    }

    fn token_ids(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::with_capacity(self.max_tokens);
        ids.push(self.tokenizer.cls);
        ids.extend(self.tokenizer.encode(text, self.max_tokens - 2));
        ids.push(self.tokenizer.sep);
        ids
    }

    /// One text's embedding (normalised).
    pub fn embed(&self, text: &str) -> Vec<f32> {
        self.model.embed(&self.token_ids(text))
    }

    /// Embeddings of `texts` in groups of about [`BATCH_TOKENS`] tokens (one matrix per group).
    fn embed_grouped(&self, texts: &[String], mut done: impl FnMut(usize)) -> Vec<Vec<f32>> {
        let ids: Vec<Vec<u32>> = texts.iter().map(|t| self.token_ids(t)).collect();
        let mut out = Vec::with_capacity(ids.len());
        let mut start = 0;
        while start < ids.len() {
            let mut end = start;
            let mut tokens = 0;
            while end < ids.len() && (end == start || tokens + ids[end].len() <= BATCH_TOKENS) {
                tokens += ids[end].len();
                end += 1;
            }
            let group: Vec<&[u32]> = ids[start..end].iter().map(Vec::as_slice).collect();
            out.extend(self.model.embed_batch(&group));
            done(end - start);
            start = end;
        }
        out
    }

    /// Embed many texts on the available cores, calling `progress(done, total)` as batches finish.
    pub fn embed_all(
        &self,
        texts: &[String],
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Vec<Vec<f32>> {
        let total = texts.len();
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .clamp(1, 8)
            .min(total.max(1));
        let done = std::sync::atomic::AtomicUsize::new(0);
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); total];
        let per = total.div_ceil(threads).max(1);
        std::thread::scope(|s| {
            for (slot, batch) in out.chunks_mut(per).zip(texts.chunks(per)) {
                let done = &done;
                s.spawn(move || {
                    let vectors = self.embed_grouped(batch, |k| {
                        let n = done.fetch_add(k, std::sync::atomic::Ordering::Relaxed) + k;
                        progress(n, total);
                    });
                    for (o, v) in slot.iter_mut().zip(vectors) {
                        *o = v;
                    }
                });
            }
        });
        out
    }
}

type Loaded = Result<Arc<Embedder>, ModelError>;

/// The model in `dir`, loaded once per process (a failed load is remembered until the directory changes).
pub fn shared(dir: &Path) -> Loaded {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Loaded>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(hit) = map.get(dir)
        && (hit.is_ok() || !dir.join("model.safetensors").is_file())
    {
        return hit.clone();
    }
    let loaded = Embedder::load(dir).map(Arc::new);
    map.insert(dir.to_path_buf(), loaded.clone());
    loaded
}

/// The dot product of two normalised vectors (their cosine similarity).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
