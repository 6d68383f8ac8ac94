//! `bash`: run a command in the session cwd, streaming partial output, terminal-rendered and tail-truncated,
//! with the full output logged to a temp file when large.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use crate::bash::capture::OutputCapture;
use crate::bash::executor::apply_prefix;
use crate::bash::process::{ExecEnd, SpawnSpec};
use crate::bash::runner::{CommandRun, CommandRunner, LocalRunner};
use crate::bash::shell::ShellConfig;
use crate::bash::terminal::render_terminal_output;
use crate::common::{definition, parse_params, text_block};
use crate::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Limits, TruncatedBy, format_size, truncate_tail,
};

#[derive(Deserialize)]
struct BashParams {
    command: String,
    timeout: Option<f64>,
}

/// Options of the bash tool.
#[derive(Debug, Clone, Default)]
pub struct BashToolOptions {
    pub shell: ShellConfig,
    /// Full environment for commands (see [`crate::bash::shell_env`]); `None` inherits.
    pub env: Option<Vec<(OsString, OsString)>>,
    /// The `shellCommandPrefix` setting.
    pub command_prefix: Option<String>,
}

pub struct BashTool {
    cwd: PathBuf,
    options: BashToolOptions,
    def: ToolDefinition,
    runner: Arc<dyn CommandRunner>,
}

pub fn bash_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "Bash command to execute"},
            "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"}
        },
        "required": ["command"]
    })
}

impl BashTool {
    pub fn new(cwd: impl Into<PathBuf>, options: BashToolOptions) -> Self {
        let description = format!(
            "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last {DEFAULT_MAX_LINES} lines or {}KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.",
            DEFAULT_MAX_BYTES / 1024
        );
        BashTool {
            cwd: cwd.into(),
            options,
            def: definition("bash", description, bash_schema()),
            runner: Arc::new(LocalRunner),
        }
    }

    /// Commands run through `runner` (a front end's terminals); `None` keeps them on this machine.
    pub fn with_runner(mut self, runner: Option<Arc<dyn CommandRunner>>) -> Self {
        if let Some(runner) = runner {
            self.runner = runner;
        }
        self
    }
}

/// Shortest gap between two partial results.
const UPDATE_INTERVAL: Duration = Duration::from_millis(50);

struct Streamed {
    capture: OutputCapture,
    dirty: bool,
    last: Option<std::time::Instant>,
}

impl Streamed {
    fn flush(&mut self) -> ToolOutput {
        self.dirty = false;
        self.last = Some(std::time::Instant::now());
        partial(&self.capture)
    }
}

/// The partial result sent while the command runs.
fn partial(capture: &OutputCapture) -> ToolOutput {
    let text = render_terminal_output(&capture.text());
    let trunc = truncate_tail(&text, Limits::default());
    let mut details = Map::new();
    if trunc.truncated {
        details.insert("truncation".into(), trunc.to_json());
    }
    if let Some(p) = capture.log_path() {
        details.insert("fullOutputPath".into(), json!(p.to_string_lossy()));
    }
    ToolOutput {
        content: vec![text_block(trunc.content)],
        details: Some(Value::Object(details)),
        end_turn: false,
    }
}

#[async_trait]
impl Tool for BashTool {
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
        let p: BashParams = parse_params("bash", params)?;
        let spec = SpawnSpec {
            command: apply_prefix(self.options.command_prefix.as_deref(), &p.command),
            cwd: self.cwd.clone(),
            shell: self.options.shell.clone(),
            env: self.options.env.clone(),
        };
        let timeout = p.timeout.filter(|t| t.is_finite() && *t > 0.0);
        on_update(ToolOutput::default());

        // Partial results are throttled: the first chunk goes out at once, later ones at most every
        // UPDATE_INTERVAL, with a ticker flushing output that arrived in between (so a command that prints and
        // then sleeps still shows its output).
        let stream = Arc::new(Mutex::new(Streamed {
            capture: OutputCapture::default(),
            dirty: false,
            last: None,
        }));
        let end = {
            let s2 = stream.clone();
            let upd = on_update.clone();
            let mut on_data = move |data: &[u8]| {
                let mut st = s2.lock().unwrap_or_else(|e| e.into_inner());
                st.capture.push(data.len(), data);
                st.dirty = true;
                if st.last.is_none_or(|t| t.elapsed() >= UPDATE_INTERVAL) {
                    let update = st.flush();
                    drop(st);
                    upd(update);
                }
            };
            let ticker = async {
                let mut tick = tokio::time::interval(UPDATE_INTERVAL);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let update = {
                        let mut st = stream.lock().unwrap_or_else(|e| e.into_inner());
                        if !st.dirty {
                            continue;
                        }
                        st.flush()
                    };
                    on_update(update);
                }
            };
            let run = self.runner.run(
                CommandRun {
                    tool_call_id,
                    spec: &spec,
                    timeout: timeout.map(Duration::from_secs_f64),
                    cancel: &cancel,
                },
                &mut on_data,
            );
            tokio::select! {
                end = run => end,
                _ = ticker => unreachable!("the ticker never finishes"),
            }
        };
        // Output that arrived after the last partial still goes out as one, as every chunk did in the reference.
        let last_update = {
            let mut st = stream.lock().unwrap_or_else(|e| e.into_inner());
            st.dirty.then(|| st.flush())
        };
        if let Some(update) = last_update {
            on_update(update);
        }
        let capture = Arc::try_unwrap(stream)
            .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()).capture)
            .unwrap_or_default();
        let mut capture = capture;
        // The log file keeps the output as written; the result shows the screen as the reference's terminal
        // renderer leaves it: no trailing newlines, and nothing at all when only whitespace was written.
        let raw_screen = render_terminal_output(&capture.text());
        let full = screen_text(&raw_screen);
        let end = match end {
            Ok(end) => end,
            Err(e) => {
                capture.finish(false, "");
                return Err(ToolError::new(e));
            }
        };
        match end {
            ExecEnd::Aborted | ExecEnd::TimedOut => {
                capture.finish(false, "");
                let mut out = full;
                if !out.is_empty() {
                    out.push_str("\n\n");
                }
                if end == ExecEnd::Aborted {
                    out.push_str("Command aborted");
                } else {
                    out.push_str(&format!(
                        "Command timed out after {} seconds",
                        dreb_js::number_to_string(timeout.unwrap_or(0.0))
                    ));
                }
                Err(ToolError::new(out))
            }
            ExecEnd::Exited(code) => {
                let trunc = truncate_tail(&full, Limits::default());
                let path = capture
                    .finish(trunc.truncated, &raw_screen)
                    .map(|p| p.to_string_lossy().into_owned());
                let mut text = if trunc.content.is_empty() {
                    "(no output)".to_string()
                } else {
                    trunc.content.clone()
                };
                let mut details = None;
                if trunc.truncated {
                    let shown = path.clone().unwrap_or_default();
                    let start = trunc.total_lines - trunc.output_lines + 1;
                    let end_line = trunc.total_lines;
                    if trunc.last_line_partial {
                        let last = full.rsplit('\n').next().unwrap_or("");
                        text.push_str(&format!(
                            "\n\n[Showing last {} of line {end_line} (line is {}). Full output: {shown}]",
                            format_size(trunc.output_bytes),
                            format_size(last.len())
                        ));
                    } else if trunc.truncated_by == Some(TruncatedBy::Lines) {
                        text.push_str(&format!(
                            "\n\n[Showing lines {start}-{end_line} of {}. Full output: {shown}]",
                            trunc.total_lines
                        ));
                    } else {
                        text.push_str(&format!(
                            "\n\n[Showing lines {start}-{end_line} of {} ({} limit). Full output: {shown}]",
                            trunc.total_lines,
                            format_size(DEFAULT_MAX_BYTES)
                        ));
                    }
                    let mut d = Map::new();
                    d.insert("truncation".into(), trunc.to_json());
                    if let Some(p) = &path {
                        d.insert("fullOutputPath".into(), json!(p));
                    }
                    details = Some(Value::Object(d));
                }
                match code {
                    Some(c) if c != 0 => {
                        text.push_str(&format!("\n\nCommand exited with code {c}"));
                        Err(ToolError {
                            message: text,
                            details: None,
                        })
                    }
                    _ => Ok(ToolOutput {
                        content: vec![text_block(text)],
                        details,
                        end_turn: false,
                    }),
                }
            }
        }
    }
}

/// What the result shows of the rendered output: without its trailing newlines, and empty when it holds only
/// whitespace (so that the result reads `(no output)`).
fn screen_text(rendered: &str) -> String {
    let text = rendered.trim_end_matches(['\n', '\r']);
    if text.trim().is_empty() {
        String::new()
    } else {
        text.to_string()
    }
}
