//! `edit`: replace one unique occurrence of `oldText` with `newText` (exact match first, then a whitespace-,
//! quote- and dash-normalised match). Keeps the file's BOM and line endings; details carry a diff.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::edit_diff::{
    count_occurrences, detect_line_ending, fuzzy_find_text, generate_diff_string, normalize_to_lf,
    restore_line_endings, strip_bom,
};
use crate::common::{abortable, check_cancel, definition, parse_params, run_blocking, text_output};
use crate::files::TextFiles;
use crate::mutation_queue::with_file_mutation_queue;
use crate::paths::{errno_code, node_fs_error, resolve_to_cwd};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EditParams {
    path: String,
    old_text: String,
    new_text: String,
}

pub struct EditTool {
    cwd: PathBuf,
    def: ToolDefinition,
    files: Option<Arc<dyn TextFiles>>,
}

pub fn edit_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
            "oldText": {"type": "string", "description": "Exact text to find and replace (must match exactly)"},
            "newText": {"type": "string", "description": "New text to replace the old text with"}
        },
        "required": ["path", "oldText", "newText"]
    })
}

impl EditTool {
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        EditTool {
            cwd: cwd.into(),
            def: definition(
                "edit",
                "Edit a file by replacing exact text. The oldText must match exactly (including whitespace). Use this for precise, surgical edits.",
                edit_schema(),
            ),
            files: None,
        }
    }

    /// The file is read from and written to the front end's text files when it takes them.
    pub fn with_files(mut self, files: Option<Arc<dyn TextFiles>>) -> Self {
        self.files = files;
        self
    }
}

fn apply_edit(abs: PathBuf, p: EditParams) -> Result<ToolOutput, ToolError> {
    let path = &p.path;
    if let Err(e) = nix::unistd::access(
        &abs,
        nix::unistd::AccessFlags::R_OK | nix::unistd::AccessFlags::W_OK,
    ) {
        let err = std::io::Error::from_raw_os_error(e as i32);
        let code = errno_code(&err)
            .map(|c| format!(". Error code: {c}"))
            .unwrap_or_default();
        return Err(ToolError::new(format!(
            "Could not access file: {path}{code}"
        )));
    }
    let bytes = std::fs::read(&abs).map_err(|e| node_fs_error(&e, "read", &abs))?;
    let (final_content, output) = edit_text(&String::from_utf8_lossy(&bytes), &p)?;
    std::fs::write(&abs, final_content.as_bytes()).map_err(|e| node_fs_error(&e, "open", &abs))?;
    Ok(output)
}

/// The edited file content and the tool's answer, for the file's current text.
fn edit_text(raw: &str, p: &EditParams) -> Result<(String, ToolOutput), ToolError> {
    let path = &p.path;
    let (bom, content) = strip_bom(raw);
    let ending = detect_line_ending(content);
    let content = normalize_to_lf(content);
    let old_text = normalize_to_lf(&p.old_text);
    let new_text = normalize_to_lf(&p.new_text);

    let Some(m) = fuzzy_find_text(&content, &old_text) else {
        return Err(ToolError::new(format!(
            "Could not find the exact text in {path}. The old text must match exactly including all whitespace and newlines."
        )));
    };
    let occurrences = count_occurrences(&content, &old_text);
    if occurrences > 1 {
        return Err(ToolError::new(format!(
            "Found {occurrences} occurrences of the text in {path}. The text must be unique. Please provide more context to make it unique."
        )));
    }
    let base = &m.content_for_replacement;
    let updated = format!(
        "{}{}{}",
        &base[..m.index],
        new_text,
        &base[m.index + m.match_length..]
    );
    if *base == updated {
        return Err(ToolError::new(format!(
            "No changes made to {path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected."
        )));
    }
    let final_content = format!("{bom}{}", restore_line_endings(&updated, ending));

    let (diff, first_changed) = generate_diff_string(base, &updated, 4);
    let mut details = Map::new();
    details.insert("diff".into(), Value::String(diff));
    if let Some(line) = first_changed {
        details.insert("firstChangedLine".into(), json!(line));
    }
    Ok((
        final_content,
        text_output(
            format!("Successfully replaced text in {path}."),
            Some(Value::Object(details)),
        ),
    ))
}

#[async_trait]
impl Tool for EditTool {
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
        let p: EditParams = parse_params("edit", params)?;
        let abs = resolve_to_cwd(&p.path, &self.cwd);
        check_cancel(&cancel)?;
        let key_path = abs.clone();
        let files = self.files.clone();
        with_file_mutation_queue(&key_path, || async move {
            check_cancel(&cancel)?;
            if let Some(files) = files {
                let text = abortable(&cancel, async {
                    files.read_text(&abs).await.map_err(ToolError::new)
                })
                .await?;
                if let Some(text) = text {
                    let (content, output) = edit_text(&text, &p)?;
                    if files
                        .write_text(&abs, &content)
                        .await
                        .map_err(ToolError::new)?
                    {
                        return Ok(output);
                    }
                    // Read from the front end, written to disk: the front end declined the write.
                    std::fs::write(&abs, content.as_bytes())
                        .map_err(|e| node_fs_error(&e, "open", &abs))?;
                    return Ok(output);
                }
            }
            run_blocking(move || apply_edit(abs, p)).await
        })
        .await
    }
}
