//! `read`: a text file (head-truncated, with continuation notices) or an image (sent as an image block).

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{
    abortable, as_count, blocking, definition, image_block, parse_params, text_block,
};
use crate::files::TextFiles;
use crate::image::{prepare_image, sniff_image_mime};
use crate::paths::{node_fs_error, resolve_read_path};
use crate::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Limits, TruncatedBy, format_size, truncate_head,
};

#[derive(Deserialize)]
struct ReadParams {
    path: String,
    offset: Option<f64>,
    limit: Option<f64>,
}

/// Options of the read tool.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Scale images down to the provider limits (default true).
    pub auto_resize_images: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            auto_resize_images: true,
        }
    }
}

pub struct ReadTool {
    cwd: PathBuf,
    options: ReadOptions,
    def: ToolDefinition,
    files: Option<Arc<dyn TextFiles>>,
}

pub fn read_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
            "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
            "limit": {"type": "number", "description": "Maximum number of lines to read"}
        },
        "required": ["path"]
    })
}

impl ReadTool {
    pub fn new(cwd: impl Into<PathBuf>, options: ReadOptions) -> Self {
        let description = format!(
            "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as attachments. For text files, output is truncated to {DEFAULT_MAX_LINES} lines or {}KB (whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset until complete.",
            DEFAULT_MAX_BYTES / 1024
        );
        ReadTool {
            cwd: cwd.into(),
            options,
            def: definition("read", description, read_schema()),
            files: None,
        }
    }

    /// Text files come from the front end (images always from disk).
    pub fn with_files(mut self, files: Option<Arc<dyn TextFiles>>) -> Self {
        self.files = files;
        self
    }
}

/// The image types `read` attaches: never asked of a front end's text files.
fn is_image_path(path: &std::path::Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    ["jpg", "jpeg", "png", "gif", "webp"]
        .iter()
        .any(|i| ext.eq_ignore_ascii_case(i))
}

fn read_file(
    path: PathBuf,
    raw_path: String,
    p: ReadParams,
    opts: ReadOptions,
) -> Result<ToolOutput, ToolError> {
    // R_OK check first, like the reference, so a missing file reports `access`.
    nix::unistd::access(&path, nix::unistd::AccessFlags::R_OK).map_err(|e| {
        node_fs_error(
            &std::io::Error::from_raw_os_error(e as i32),
            "access",
            &path,
        )
    })?;
    let mut file = std::fs::File::open(&path).map_err(|e| node_fs_error(&e, "open", &path))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| node_fs_error(&e, "read", &path))?;
    render(&bytes, &raw_path, &p, &opts)
}

/// What `read` answers for a file's bytes: an image attachment, or the selected, truncated lines.
fn render(
    bytes: &[u8],
    raw_path: &str,
    p: &ReadParams,
    opts: &ReadOptions,
) -> Result<ToolOutput, ToolError> {
    let bytes = bytes.to_vec();
    if let Some(mime) = sniff_image_mime(&bytes[..bytes.len().min(64)]) {
        let content = if opts.auto_resize_images {
            match prepare_image(&bytes, mime) {
                None => vec![text_block(format!(
                    "Read image file [{mime}]\n[Image omitted: could not be resized below the inline image size limit.]"
                ))],
                Some(img) => {
                    let mut note = format!("Read image file [{}]", img.mime_type);
                    if let Some(dim) = img.dimension_note() {
                        note.push('\n');
                        note.push_str(&dim);
                    }
                    vec![text_block(note), image_block(img.data, img.mime_type)]
                }
            }
        } else {
            let data = crate::image::base64(&bytes);
            vec![
                text_block(format!("Read image file [{mime}]")),
                image_block(data, mime),
            ]
        };
        return Ok(ToolOutput {
            content,
            details: None,
            end_turn: false,
        });
    }

    let text = String::from_utf8_lossy(&bytes);
    let all_lines: Vec<&str> = text.split('\n').collect();
    let total = all_lines.len();
    let offset = as_count(p.offset);
    let start = match offset {
        Some(o) if o != 0 => (o - 1).max(0) as usize,
        _ => 0,
    };
    let start_display = start + 1;
    if start >= total {
        return Err(ToolError::new(format!(
            "Offset {} is beyond end of file ({total} lines total)",
            p.offset.map(dreb_js::number_to_string).unwrap_or_default()
        )));
    }
    let mut user_limited: Option<usize> = None;
    let selected = match as_count(p.limit) {
        Some(limit) => {
            let end = (start + limit.max(0) as usize).min(total);
            user_limited = Some(end - start);
            all_lines[start..end].join("\n")
        }
        None => all_lines[start..].join("\n"),
    };
    let trunc = truncate_head(&selected, Limits::default());
    let mut details = None;
    let output = if trunc.first_line_exceeds_limit {
        let size = format_size(all_lines[start].len());
        details = Some(json!({"truncation": trunc.to_json()}));
        format!(
            "[Line {start_display} is {size}, exceeds {} limit. Use bash: sed -n '{start_display}p' {raw_path} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(DEFAULT_MAX_BYTES)
        )
    } else if trunc.truncated {
        let end_display = start_display + trunc.output_lines - 1;
        let next = end_display + 1;
        let notice = if trunc.truncated_by == Some(TruncatedBy::Lines) {
            format!(
                "[Showing lines {start_display}-{end_display} of {total}. Use offset={next} to continue.]"
            )
        } else {
            format!(
                "[Showing lines {start_display}-{end_display} of {total} ({} limit). Use offset={next} to continue.]",
                format_size(DEFAULT_MAX_BYTES)
            )
        };
        details = Some(json!({"truncation": trunc.to_json()}));
        format!("{}\n\n{notice}", trunc.content)
    } else if let Some(n) = user_limited.filter(|n| start + n < total) {
        let remaining = total - (start + n);
        format!(
            "{}\n\n[{remaining} more lines in file. Use offset={} to continue.]",
            trunc.content,
            start + n + 1
        )
    } else {
        trunc.content
    };
    Ok(ToolOutput {
        content: vec![text_block(output)],
        details,
        end_turn: false,
    })
}

#[async_trait]
impl Tool for ReadTool {
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
        let p: ReadParams = parse_params("read", params)?;
        let path = resolve_read_path(&p.path, &self.cwd);
        let raw = p.path.clone();
        let opts = self.options.clone();
        if let Some(files) = self.files.as_ref().filter(|_| !is_image_path(&path)) {
            let text = abortable(&cancel, async {
                files.read_text(&path).await.map_err(ToolError::new)
            })
            .await?;
            if let Some(text) = text {
                return render(text.as_bytes(), &raw, &p, &opts);
            }
        }
        blocking(&cancel, move || read_file(path, raw, p, opts)).await
    }
}

/// `tmp_read`: `read` confined to `/tmp` (relative paths resolve against `/tmp`; `..` and symlinks leading out
/// are refused). Used by sandboxed agents.
pub struct TmpReadTool {
    inner: ReadTool,
    def: ToolDefinition,
}

const TMP_PREFIX: &str = "/tmp";

impl TmpReadTool {
    pub fn new(options: ReadOptions) -> Self {
        let inner = ReadTool::new(TMP_PREFIX, options);
        let mut def = inner.def.clone();
        def.name = "tmp_read".into();
        def.description = format!("Read files under /tmp only. {}", inner.def.description);
        TmpReadTool { inner, def }
    }
}

fn is_under_tmp(p: &std::path::Path) -> bool {
    let real_tmp = std::fs::canonicalize(TMP_PREFIX).unwrap_or_else(|_| PathBuf::from(TMP_PREFIX));
    p.starts_with(TMP_PREFIX) || p.starts_with(&real_tmp)
}

#[async_trait]
impl Tool for TmpReadTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn execute(
        &self,
        tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let raw = params
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let lexical = crate::paths::resolve_to_cwd(&raw, std::path::Path::new(TMP_PREFIX));
        let resolved = std::fs::canonicalize(&lexical).unwrap_or(lexical);
        if !is_under_tmp(&resolved) {
            return Ok(ToolOutput {
                content: vec![text_block(format!(
                    "Error: Access denied. tmp_read can only read files under /tmp. Resolved path: {}",
                    resolved.display()
                ))],
                details: None,
                end_turn: false,
            });
        }
        self.inner
            .execute(tool_call_id, params, cancel, on_update)
            .await
    }
}

#[cfg(test)]
mod tmp_read_tests {
    use super::*;
    use crate::tools::test_util::{noop_update, text_of};

    #[tokio::test]
    async fn confined_to_tmp() {
        let tool = TmpReadTool::new(ReadOptions::default());
        assert_eq!(tool.definition().name, "tmp_read");
        let dir = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
        std::fs::write(dir.path().join("ok.txt"), "fine").unwrap();
        let name = dir
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let out = tool
            .execute(
                "c",
                json!({"path": format!("{name}/ok.txt")}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap();
        assert_eq!(text_of(&out), "fine");
        let out = tool
            .execute(
                "c",
                json!({"path": "../etc/dreb-no-such-file"}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap();
        assert_eq!(
            text_of(&out),
            "Error: Access denied. tmp_read can only read files under /tmp. Resolved path: /etc/dreb-no-such-file"
        );
        std::os::unix::fs::symlink("/etc", dir.path().join("escape")).unwrap();
        let out = tool
            .execute(
                "c",
                json!({"path": format!("{name}/escape")}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap();
        assert!(text_of(&out).starts_with("Error: Access denied."));
        let out = tool
            .execute(
                "c",
                json!({"path": "/tmpevil/x"}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap();
        assert!(text_of(&out).starts_with("Error: Access denied."));
    }
}
