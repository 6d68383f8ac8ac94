//! `ls`: one directory's entries, sorted case-insensitively, `/` after directories, dotfiles included.

use std::path::PathBuf;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::collate::compare_names;
use crate::common::{as_count, blocking, definition, parse_params, text_output};
use crate::paths::{node_fs_error, resolve_to_cwd};
use crate::truncate::{DEFAULT_MAX_BYTES, Limits, format_size, truncate_head};

pub const LS_DEFAULT_LIMIT: usize = 500;

#[derive(Deserialize)]
struct LsParams {
    path: Option<String>,
    limit: Option<f64>,
}

pub struct LsTool {
    cwd: PathBuf,
    def: ToolDefinition,
}

pub fn ls_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Directory to list (default: current directory)"},
            "limit": {"type": "number", "description": "Maximum number of entries to return (default: 500)"}
        }
    })
}

impl LsTool {
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        let description = format!(
            "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to {LS_DEFAULT_LIMIT} entries or {}KB (whichever is hit first).",
            DEFAULT_MAX_BYTES / 1024
        );
        LsTool {
            cwd: cwd.into(),
            def: definition("ls", description, ls_schema()),
        }
    }
}

fn list(dir: PathBuf, limit: usize) -> Result<ToolOutput, ToolError> {
    let meta = match std::fs::metadata(&dir) {
        Ok(m) => m,
        Err(_) => return Err(ToolError::new(format!("Path not found: {}", dir.display()))),
    };
    if !meta.is_dir() {
        return Err(ToolError::new(format!(
            "Not a directory: {}",
            dir.display()
        )));
    }
    let reader = std::fs::read_dir(&dir).map_err(|e| {
        ToolError::new(format!(
            "Cannot read directory: {}",
            node_fs_error(&e, "scandir", &dir)
        ))
    })?;
    let mut names: Vec<String> = reader
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_by(|a, b| compare_names(a, b));

    let mut results = Vec::new();
    let mut limit_reached = false;
    for name in names {
        if results.len() >= limit {
            limit_reached = true;
            break;
        }
        // Follows symlinks like `stat`; entries that cannot be stat'ed (broken links) are skipped.
        let Ok(m) = std::fs::metadata(dir.join(&name)) else {
            continue;
        };
        results.push(if m.is_dir() { format!("{name}/") } else { name });
    }
    if results.is_empty() {
        return Ok(text_output("(empty directory)", None));
    }
    let trunc = truncate_head(&results.join("\n"), Limits::bytes_only());
    let mut output = trunc.content.clone();
    let mut details = Map::new();
    let mut notices = Vec::new();
    if limit_reached {
        notices.push(format!(
            "{limit} entries limit reached. Use limit={} for more",
            limit * 2
        ));
        details.insert("entryLimitReached".into(), json!(limit));
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
impl Tool for LsTool {
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
        let p: LsParams = parse_params("ls", params)?;
        let raw = p.path.as_deref().filter(|s| !s.is_empty()).unwrap_or(".");
        let dir = resolve_to_cwd(raw, &self.cwd);
        let limit = as_count(p.limit)
            .map(|l| l.max(0) as usize)
            .unwrap_or(LS_DEFAULT_LIMIT);
        blocking(&cancel, move || list(dir, limit)).await
    }
}
