//! `find`: files (and directories, with a trailing `/`) matching a glob, relative to the search directory,
//! gitignore-aware. A pattern without `/` matches file names; a pattern with `/` matches the relative path.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{as_count, blocking, definition, parse_params, text_output};
use crate::paths::resolve_to_cwd;
use crate::truncate::{DEFAULT_MAX_BYTES, Limits, format_size, truncate_head};
use crate::walk::{
    Batch, Entry, Smallest, Visit, dreb_tool_visible_dirs, relative_posix, walk_parallel,
};

pub const FIND_DEFAULT_LIMIT: usize = 1000;

#[derive(Deserialize)]
struct FindParams {
    pattern: String,
    path: Option<String>,
    limit: Option<f64>,
}

pub struct FindTool {
    cwd: PathBuf,
    def: ToolDefinition,
}

pub fn find_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'"},
            "path": {"type": "string", "description": "Directory to search in (default: current directory)"},
            "limit": {"type": "number", "description": "Maximum number of results (default: 1000)"}
        },
        "required": ["pattern"]
    })
}

impl FindTool {
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let description = format!(
            "Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to {FIND_DEFAULT_LIMIT} results or {}KB (whichever is hit first).",
            DEFAULT_MAX_BYTES / 1024
        );
        FindTool {
            cwd: cwd.into(),
            def: definition("find", description, find_schema()),
        }
    }
}

/// The first `limit` matching paths under `roots` in sorted order (relative to `base`, directories with a
/// trailing `/`), and how many matched in all.
pub fn find_paths(
    pattern: &str,
    base: &Path,
    roots: &[PathBuf],
    limit: usize,
    cancel: &CancellationToken,
) -> Result<(Vec<String>, usize), String> {
    let glob: GlobMatcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| format!("Invalid glob pattern '{pattern}': {e}"))?
        .compile_matcher();
    let by_path = pattern.contains('/');
    let found: Smallest<String, ()> = Smallest::new(limit.max(1));
    let base = base.to_path_buf();
    walk_parallel(roots, None, cancel, || {
        let (glob, base) = (glob.clone(), base.clone());
        let mut batch = Batch::new(found.clone());
        let kept = found.clone();
        Box::new(move |entry: Entry| {
            // Everything under directory `d` has a key starting `d/`: once the first `limit` paths are certain,
            // a directory whose `d/` sorts after the last of them is not walked.
            if entry.is_dir {
                let key = format!("{}/", relative_posix(&entry.path, &base));
                if kept.beyond(key.as_str()) {
                    return Visit::Skip;
                }
            }
            let hit = if by_path {
                glob.is_match(relative_posix(&entry.path, &base))
            } else {
                entry.path.file_name().is_some_and(|n| glob.is_match(n))
            };
            if hit {
                let rel = relative_posix(&entry.path, &base);
                batch.push(if entry.is_dir { format!("{rel}/") } else { rel }, (), 1);
            }
            Visit::Continue
        })
    });
    let (kept, total) = found.finish();
    let mut all: Vec<String> = kept.into_iter().map(|(k, ())| k).collect();
    all.truncate(limit);
    Ok((all, total))
}

fn run_find(
    cwd: PathBuf,
    p: FindParams,
    cancel: CancellationToken,
) -> Result<ToolOutput, ToolError> {
    let search = resolve_to_cwd(
        p.path.as_deref().filter(|s| !s.is_empty()).unwrap_or("."),
        &cwd,
    );
    let limit = as_count(p.limit)
        .map(|l| l.max(1) as usize)
        .unwrap_or(FIND_DEFAULT_LIMIT);
    if !search.is_dir() {
        return Err(ToolError::new(format!(
            "Path not found: {}",
            search.display()
        )));
    }
    let mut roots = vec![search.clone()];
    if p.path.as_deref().is_none_or(str::is_empty) {
        roots.extend(dreb_tool_visible_dirs(&cwd));
    }
    let (results, _total) =
        find_paths(&p.pattern, &search, &roots, limit, &cancel).map_err(ToolError::new)?;
    if results.is_empty() {
        return Ok(text_output("No files found matching pattern", None));
    }
    let limit_reached = results.len() >= limit;
    let trunc = truncate_head(&results.join("\n"), Limits::bytes_only());
    let mut output = trunc.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if limit_reached {
        notices.push(format!(
            "{limit} results limit reached. Use limit={} for more, or refine pattern",
            limit * 2
        ));
        details.insert("resultLimitReached".into(), json!(limit));
    }
    if trunc.truncated {
        notices.push(format!("{} limit reached", format_size(DEFAULT_MAX_BYTES)));
        details.insert("truncation".into(), trunc.to_json());
    }
    if !notices.is_empty() {
        output.push_str(&format!("\n\n[{}]", notices.join(". ")));
    }
    Ok(text_output(
        output,
        (!details.is_empty()).then_some(Value::Object(details)),
    ))
}

#[async_trait]
impl Tool for FindTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let p: FindParams = parse_params("find", params)?;
        let cwd = self.cwd.clone();
        let walk_cancel = cancel.clone();
        blocking(&cancel, move || run_find(cwd, p, walk_cancel)).await
    }
}
