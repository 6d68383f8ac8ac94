//! The `search` tool the model calls: the reference's name, description, parameters, result texts and details.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::{TextContent, ToolDefinition, UserBlock};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::embed::{MODEL_ENV, ModelSource};
use crate::engine::{SearchEngine, SearchError, Semantic};
use crate::format::format_results;
use crate::scanner::ScanRoots;

pub const DESCRIPTION: &str = "Search the codebase using natural language queries. Returns ranked code/doc results using semantic similarity and keyword matching. First query builds the index (may take a moment); subsequent queries are fast. Supports identifier queries (e.g. 'AuthMiddleware'), natural language (e.g. 'where is rate limiting handled'), and path queries (e.g. 'src/auth/').";

const DEFAULT_LIMIT: usize = 20;

/// Updates closer together than this are dropped (the first and last of each phase always go out).
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);

fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The search query (natural language, identifier, or path)"},
            "restrictToDir": {"type": "string", "description": "Filter results to files under this path (relative to searchDir or cwd). Does not affect indexing — the entire searchDir is still indexed."},
            "limit": {"type": "number", "description": "Maximum number of results to return (default: 20)"},
            "searchDir": {"type": "string", "description": "Directory to index and search instead of cwd (useful when cwd is ~/). The entire contents of this directory are scanned and indexed."},
            "rebuild": {"type": "boolean", "description": "Force a clean rebuild of the search index (default: false)"}
        },
        "required": ["query"]
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Params {
    query: String,
    restrict_to_dir: Option<String>,
    limit: Option<f64>,
    search_dir: Option<String>,
    rebuild: Option<bool>,
}

/// Resolves a path argument against the cwd the way the file tools do (`~`, `@` prefixes, normalisation).
pub type PathResolver = fn(&str, &Path) -> PathBuf;

/// Where the tool finds the user's files and the model.
#[derive(Clone, Debug)]
pub struct SearchEnv {
    pub home: PathBuf,
    pub model: ModelSource,
}

impl SearchEnv {
    /// The process's home and agent directory, and `$DREB_SEARCH_MODEL`.
    pub fn from_process() -> SearchEnv {
        SearchEnv {
            home: dreb_paths::home_dir(),
            model: ModelSource::from_env(&dreb_paths::agent_dir()),
        }
    }
}

pub struct SearchTool {
    cwd: PathBuf,
    resolve: PathResolver,
    env: SearchEnv,
    definition: ToolDefinition,
}

type SharedEngine = Arc<Mutex<SearchEngine>>;

/// One engine per project root in the process, so calls share the open index (and run one at a time).
fn engine_for(root: &Path, env: &SearchEnv) -> SharedEngine {
    static ENGINES: OnceLock<Mutex<HashMap<PathBuf, SharedEngine>>> = OnceLock::new();
    let mut map = ENGINES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    map.entry(root.to_path_buf())
        .or_insert_with(|| {
            let roots = ScanRoots {
                project_root: root.to_path_buf(),
                home: Some(env.home.clone()),
                global_memory_dir: Some(env.home.join(".dreb").join("memory")),
            };
            Arc::new(Mutex::new(SearchEngine::new(
                roots,
                root.join(".dreb").join("index"),
                env.model.clone(),
            )))
        })
        .clone()
}

fn text(text: impl Into<String>, details: Value) -> ToolOutput {
    ToolOutput {
        content: vec![UserBlock::Text(TextContent {
            text: text.into(),
            text_signature: None,
            ..Default::default()
        })],
        details: Some(details),
        end_turn: false,
    }
}

fn no_index(message: impl Into<String>) -> ToolOutput {
    text(message, json!({"resultCount": 0, "indexBuilt": false}))
}

/// The note added when results were ranked without the semantic metric.
fn semantic_note(semantic: &Semantic) -> Option<String> {
    let why = match semantic {
        Semantic::On => return None,
        Semantic::Disabled => format!("semantic ranking is turned off ({MODEL_ENV}=off)"),
        Semantic::Unavailable { dir, error } => format!(
            "semantic ranking is unavailable: no usable embedding model at {} ({error}); set {MODEL_ENV} to a model directory",
            dir.display()
        ),
    };
    Some(format!(
        "[Note: {why}. Results are ranked by keyword (full-text), path, symbol, import-graph and git-recency matches only.]"
    ))
}

impl SearchTool {
    pub fn new(cwd: impl Into<PathBuf>, resolve: PathResolver, env: SearchEnv) -> SearchTool {
        SearchTool {
            cwd: cwd.into(),
            resolve,
            env,
            definition: ToolDefinition {
                name: "search".into(),
                description: DESCRIPTION.into(),
                parameters: parameters(),
            },
        }
    }
}

/// A restriction given as an absolute path inside the project becomes project-relative.
fn relative_filter(filter: &str, root: &Path) -> String {
    let p = Path::new(filter);
    match p.strip_prefix(root) {
        Ok(rel) if p.is_absolute() => rel.to_string_lossy().into_owned(),
        _ => filter.to_string(),
    }
}

#[async_trait]
impl Tool for SearchTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        if cancel.is_cancelled() {
            return Err(ToolError::new("Operation aborted"));
        }
        let p: Params = serde_json::from_value(params)
            .map_err(|e| ToolError::new(format!("Invalid arguments for tool search: {e}")))?;
        if p.query.trim().is_empty() {
            return Ok(no_index("Search query cannot be empty."));
        }
        let root = match &p.search_dir {
            Some(dir) => {
                let resolved = (self.resolve)(dir, &self.cwd);
                if !resolved.is_dir() {
                    return Ok(no_index(format!(
                        "searchDir does not exist or is not a directory: {}",
                        resolved.display()
                    )));
                }
                resolved
            }
            None => self.cwd.clone(),
        };
        let limit = p
            .limit
            .filter(|l| l.is_finite() && *l > 0.0)
            .map_or(DEFAULT_LIMIT, |l| (l.floor() as usize).max(1));
        let filter = p
            .restrict_to_dir
            .as_deref()
            .map(|f| relative_filter(f, &root));
        let engine = engine_for(&root, &self.env);
        let query = p.query.clone();
        let rebuild = p.rebuild == Some(true);
        let work = tokio::task::spawn_blocking(move || {
            run(
                &engine,
                &query,
                limit,
                filter.as_deref(),
                rebuild,
                on_update,
            )
        });
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(ToolError::new("Operation aborted")),
            joined = work => joined.map_err(|e| ToolError::new(format!("search task failed: {e}")))?,
        }
    }
}

fn run(
    engine: &SharedEngine,
    query: &str,
    limit: usize,
    filter: Option<&str>,
    rebuild: bool,
    on_update: ToolUpdateFn,
) -> Result<ToolOutput, ToolError> {
    let mut engine = engine.lock().unwrap_or_else(|e| e.into_inner());
    if rebuild {
        engine.reset_index();
    }
    let last: Mutex<(String, Instant)> = Mutex::new((String::new(), Instant::now()));
    let progress = |phase: &str, current: usize, total: usize| {
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        let edge = last.0 != phase || current == total || current == 0;
        if !edge && last.1.elapsed() < UPDATE_INTERVAL {
            return;
        }
        *last = (phase.to_string(), Instant::now());
        on_update(text(
            format!("{phase}: {current}/{total}"),
            json!({"resultCount": 0, "indexBuilt": true}),
        ));
    };
    let outcome = engine
        .search(query, limit, filter, &progress)
        .map_err(|e: SearchError| ToolError::new(e.to_string()))?;
    let note = semantic_note(&outcome.semantic);
    let with_note = |body: String| match &note {
        Some(n) => format!("{body}\n\n{n}"),
        None => body,
    };
    if outcome.results.is_empty() {
        return Ok(text(
            with_note("No results found.".into()),
            json!({"resultCount": 0, "indexBuilt": true}),
        ));
    }
    let mut details = json!({"resultCount": outcome.results.len(), "indexBuilt": true});
    if let Some((files, chunks)) = engine.stats() {
        details["indexStats"] = json!({"files": files, "chunks": chunks});
    }
    Ok(text(with_note(format_results(&outcome.results)), details))
}
