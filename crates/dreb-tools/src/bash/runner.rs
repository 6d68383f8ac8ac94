//! Where the `bash` tool's command runs: a [`CommandRunner`]. [`LocalRunner`] (the default) spawns it here in its
//! own process group ([`run_command`]); a front end may run it elsewhere (an ACP editor's terminal). The tool
//! itself does the rest the same way whatever runs the command: partial results, terminal rendering, truncation,
//! the full-output log file, the timeout and abort texts.

use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::process::{ExecEnd, SpawnSpec, run_command};

/// Where a run's output goes: each chunk of merged stdout/stderr, in arrival order.
pub type OnData<'a> = dyn for<'b> FnMut(&'b [u8]) + Send + 'a;

/// One command to run for a tool call.
pub struct CommandRun<'a> {
    /// The tool call the command belongs to (a front end may show its process there).
    pub tool_call_id: &'a str,
    pub spec: &'a SpawnSpec,
    /// Kill the command after this long ([`ExecEnd::TimedOut`]).
    pub timeout: Option<Duration>,
    /// Abort: kill the command ([`ExecEnd::Aborted`]).
    pub cancel: &'a CancellationToken,
}

/// Runs the bash tool's commands. Whatever runs them must stop the command (and what it started) on abort and
/// timeout, and when the returned future is dropped.
#[async_trait]
pub trait CommandRunner: Send + Sync {
    /// Runs the command to its end; `on_data` gets its output (stdout and stderr merged) as it arrives. An `Err`
    /// is the tool's error text (the command could not be started).
    async fn run(&self, run: CommandRun<'_>, on_data: &mut OnData<'_>) -> Result<ExecEnd, String>;
}

/// Runs commands on this machine ([`run_command`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalRunner;

#[async_trait]
impl CommandRunner for LocalRunner {
    async fn run(&self, run: CommandRun<'_>, on_data: &mut OnData<'_>) -> Result<ExecEnd, String> {
        run_command(run.spec, run.timeout, run.cancel, on_data).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use dreb_agent::Tool;
    use serde_json::json;

    use super::*;
    use crate::ToolContext;
    use crate::tools::test_util::{noop_update, recording_update, text_of};

    /// A front end's runner: writes its scripted chunks, then ends as scripted; records what it was asked.
    struct Scripted {
        chunks: Vec<&'static [u8]>,
        end: ExecEnd,
        asked: Mutex<Vec<(String, String, Option<Duration>)>>,
    }

    #[async_trait]
    impl CommandRunner for Scripted {
        async fn run(
            &self,
            run: CommandRun<'_>,
            on_data: &mut OnData<'_>,
        ) -> Result<ExecEnd, String> {
            self.asked.lock().unwrap().push((
                run.tool_call_id.to_string(),
                run.spec.command.clone(),
                run.timeout,
            ));
            for c in &self.chunks {
                on_data(c);
            }
            Ok(self.end)
        }
    }

    fn bash_with(runner: Arc<Scripted>) -> Arc<dyn Tool> {
        let mut ctx = ToolContext::new(std::env::temp_dir());
        ctx.command_prefix = Some("set -e".into());
        ctx.commands = Some(runner);
        crate::create_tool("bash", &ctx).unwrap()
    }

    #[tokio::test]
    async fn the_bash_tool_runs_through_the_front_ends_runner_with_the_same_result_texts() {
        let runner = Arc::new(Scripted {
            chunks: vec![b"50%\r100%\n", b"\x1b[31mdone\x1b[0m\n"],
            end: ExecEnd::Exited(Some(3)),
            asked: Mutex::default(),
        });
        let tool = bash_with(runner.clone());
        let (update, partials) = recording_update();
        let err = tool
            .execute(
                "call-7",
                json!({"command": "make", "timeout": 2}),
                CancellationToken::new(),
                update,
            )
            .await
            .unwrap_err();
        // Rendered as a terminal shows it, with the exit code, exactly as a local run.
        assert_eq!(err.message, "100%\ndone\n\nCommand exited with code 3");
        assert!(!partials.lock().unwrap().is_empty());
        assert_eq!(
            runner.asked.lock().unwrap()[..],
            [(
                "call-7".to_string(),
                "set -e\nmake".to_string(),
                Some(Duration::from_secs(2))
            )]
        );

        let timed_out = bash_with(Arc::new(Scripted {
            chunks: vec![b"partial\n"],
            end: ExecEnd::TimedOut,
            asked: Mutex::default(),
        }));
        let err = timed_out
            .execute(
                "c",
                json!({"command": "sleep 9", "timeout": 1}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap_err();
        assert_eq!(err.message, "partial\n\nCommand timed out after 1 seconds");

        let big: &'static [u8] = Box::leak(vec![b'x'; 60 * 1024].into_boxed_slice());
        let ok = bash_with(Arc::new(Scripted {
            chunks: vec![b"head\n", big],
            end: ExecEnd::Exited(Some(0)),
            asked: Mutex::default(),
        }))
        .execute(
            "c",
            json!({"command": "cat big"}),
            CancellationToken::new(),
            noop_update(),
        )
        .await
        .unwrap();
        // Truncated with the full output in the log file, as a local run.
        let details = ok.details.clone().unwrap();
        let log = details["fullOutputPath"].as_str().unwrap().to_string();
        assert!(text_of(&ok).contains("Full output: "), "{}", text_of(&ok));
        assert_eq!(std::fs::read(&log).unwrap().len(), 5 + 60 * 1024);
        std::fs::remove_file(log).unwrap();
    }
}
