//! `write`: create or overwrite a file, creating parent directories.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{check_cancel, definition, parse_params, run_blocking, text_output};
use crate::files::TextFiles;
use crate::mutation_queue::with_file_mutation_queue;
use crate::paths::{node_fs_error, resolve_to_cwd};

#[derive(Deserialize)]
struct WriteParams {
    path: String,
    content: String,
}

pub struct WriteTool {
    cwd: PathBuf,
    def: ToolDefinition,
    files: Option<Arc<dyn TextFiles>>,
}

pub fn write_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
            "content": {"type": "string", "description": "Content to write to the file"}
        },
        "required": ["path", "content"]
    })
}

impl WriteTool {
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        WriteTool {
            cwd: cwd.into(),
            def: definition(
                "write",
                "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
                write_schema(),
            ),
            files: None,
        }
    }

    /// The file is written to the front end's text files when it takes it.
    pub fn with_files(mut self, files: Option<Arc<dyn TextFiles>>) -> Self {
        self.files = files;
        self
    }
}

/// The reference reports the JavaScript string length (UTF-16 code units), not UTF-8 bytes.
pub(crate) fn js_length(s: &str) -> usize {
    s.encode_utf16().count()
}

#[async_trait]
impl Tool for WriteTool {
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
        let p: WriteParams = parse_params("write", params)?;
        let abs = resolve_to_cwd(&p.path, &self.cwd);
        check_cancel(&cancel)?;
        with_file_mutation_queue(&abs, || async {
            let target = abs.clone();
            let content = p.content.clone();
            check_cancel(&cancel)?;
            let taken = match &self.files {
                Some(files) => files
                    .write_text(&target, &content)
                    .await
                    .map_err(ToolError::new)?,
                None => false,
            };
            if !taken {
                run_blocking(move || {
                    if let Some(dir) = target.parent() {
                        std::fs::create_dir_all(dir)
                            .map_err(|e| node_fs_error(&e, "mkdir", dir))?;
                    }
                    std::fs::write(&target, content.as_bytes())
                        .map_err(|e| node_fs_error(&e, "open", &target))?;
                    Ok(())
                })
                .await?;
            }
            Ok(text_output(
                format!(
                    "Successfully wrote {} bytes to {}",
                    js_length(&p.content),
                    p.path
                ),
                None,
            ))
        })
        .await
    }
}
