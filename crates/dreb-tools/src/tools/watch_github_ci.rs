//! `watch_github_ci`: blocks on `gh pr checks --watch --fail-fast` until the pull request's checks pass or fail,
//! streaming the CLI's output as partial results. CLI-level failures (no pull request, bad selector, auth) and
//! a missing `gh` are tool errors, not "checks failed".

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::bash::terminal::render_terminal_output;
use crate::common::{definition, parse_params, text_output};
use crate::truncate::{DEFAULT_MAX_BYTES, Limits, truncate_tail};

/// Output kept while watching; older bytes are dropped (and the result says so).
const MAX_BUFFERED_BYTES: usize = DEFAULT_MAX_BYTES * 2;

/// Case-insensitive substrings of `gh pr checks` output that mean the CLI itself failed. It exits 1 for these
/// and for failed checks alike, and `--json` cannot be combined with `--watch`, so the text is all there is.
const GH_CLI_FAILURE_SIGNATURES: [&str; 10] = [
    "no pull requests found",
    "could not resolve to a pullrequest",
    "failed to run git",
    "not a git repository",
    "http 401",
    "bad credentials",
    "could not parse",
    "invalid pull request",
    "authentication required",
    "could not find repository",
];

fn detect_cli_failure(output: &str) -> Option<&'static str> {
    let lower = output.to_lowercase();
    GH_CLI_FAILURE_SIGNATURES
        .into_iter()
        .find(|s| lower.contains(s))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CiStatus {
    Watching,
    Passed,
    Failed,
}

/// The result's `details`, as the reference shapes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CiDetails {
    pub status: CiStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    pub output_truncated: bool,
}

/// Why `gh` could not be run to the end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecFailure {
    #[error("aborted")]
    Aborted,
    #[error(
        "the GitHub CLI (`gh`) was not found on PATH (spawn gh ENOENT). Install it (https://cli.github.com) and \
         sign in with `gh auth login`."
    )]
    GhNotFound,
    #[error("Working directory does not exist: {0}")]
    NoCwd(String),
    #[error("{0}")]
    Other(String),
}

/// Receives each chunk of output (an alias, so `async_trait` leaves the closure's lifetime alone).
pub type DataSink<'a> = dyn FnMut(&[u8]) + Send + 'a;

/// Runs `gh` (the tests substitute their own).
#[async_trait]
pub trait GithubCiOps: Send + Sync {
    /// `gh <args>` in `cwd` with exactly `env`; every chunk of merged stdout/stderr to `on_data`. `Ok(None)`:
    /// ended by a signal.
    async fn exec(
        &self,
        args: &[String],
        cwd: &Path,
        env: &[(OsString, OsString)],
        cancel: &CancellationToken,
        on_data: &mut DataSink<'_>,
    ) -> Result<Option<i32>, ExecFailure>;
}

/// The real `gh`, in its own process group so an abort ends whatever it started.
pub struct LocalGh;

#[async_trait]
impl GithubCiOps for LocalGh {
    async fn exec(
        &self,
        args: &[String],
        cwd: &Path,
        env: &[(OsString, OsString)],
        cancel: &CancellationToken,
        on_data: &mut DataSink<'_>,
    ) -> Result<Option<i32>, ExecFailure> {
        if !cwd.exists() {
            return Err(ExecFailure::NoCwd(cwd.display().to_string()));
        }
        if cancel.is_cancelled() {
            return Err(ExecFailure::Aborted);
        }
        let mut cmd = tokio::process::Command::new("gh");
        cmd.args(args)
            .current_dir(cwd)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ExecFailure::GhNotFound,
            _ => ExecFailure::Other(format!("spawn gh: {e}")),
        })?;
        let pgid = child.id().map(|p| p as i32);
        let kill_group = || {
            if let Some(pgid) = pgid {
                // Already gone is fine.
                let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
            }
        };
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let (mut out_buf, mut err_buf) = (vec![0u8; 16 * 1024], vec![0u8; 16 * 1024]);
        let mut status = None;
        while status.is_none() || stdout.is_some() || stderr.is_some() {
            tokio::select! {
                r = async { stdout.as_mut().unwrap().read(&mut out_buf).await }, if stdout.is_some() => match r {
                    Ok(0) | Err(_) => stdout = None,
                    Ok(n) => on_data(&out_buf[..n]),
                },
                r = async { stderr.as_mut().unwrap().read(&mut err_buf).await }, if stderr.is_some() => match r {
                    Ok(0) | Err(_) => stderr = None,
                    Ok(n) => on_data(&err_buf[..n]),
                },
                w = child.wait(), if status.is_none() => {
                    status = Some(w.map_err(|e| ExecFailure::Other(e.to_string()))?.code());
                }
                _ = cancel.cancelled() => {
                    kill_group();
                    let _ = child.wait().await;
                    return Err(ExecFailure::Aborted);
                }
            }
        }
        Ok(status.flatten())
    }
}

/// Bytes seen so far, bounded.
#[derive(Default)]
struct Buffered {
    bytes: Vec<u8>,
    omitted_earlier: bool,
}

impl Buffered {
    fn push(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        if self.bytes.len() > MAX_BUFFERED_BYTES {
            let excess = self.bytes.len() - MAX_BUFFERED_BYTES;
            self.bytes.drain(..excess);
            self.omitted_earlier = true;
        }
    }

    /// The output as the model sees it, and whether anything was left out.
    fn render(&self) -> (String, bool) {
        let rendered = render_terminal_output(&String::from_utf8_lossy(&self.bytes));
        let t = truncate_tail(&rendered, Limits::default());
        let prefix = if self.omitted_earlier {
            "[Earlier watch output omitted]\n"
        } else {
            ""
        };
        let body = if t.content.is_empty() {
            "(no output)"
        } else {
            &t.content
        };
        (
            format!("{prefix}{body}"),
            self.omitted_earlier || t.truncated,
        )
    }
}

#[derive(Deserialize)]
struct WatchParams {
    pr: Option<String>,
}

pub fn watch_github_ci_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "pr": {
                "type": "string",
                "description": "Optional pull request number, URL, or branch. Omit to use the pull request for the current branch."
            }
        }
    })
}

pub struct WatchGithubCiTool {
    cwd: PathBuf,
    env: Option<Vec<(OsString, OsString)>>,
    ops: Arc<dyn GithubCiOps>,
    def: ToolDefinition,
}

impl WatchGithubCiTool {
    /// `env`: the command environment (`None`: the process's), to which the pager, editor and colour settings
    /// are added.
    pub fn new(cwd: PathBuf, env: Option<Vec<(OsString, OsString)>>) -> Self {
        WatchGithubCiTool {
            cwd,
            env,
            ops: Arc::new(LocalGh),
            def: definition(
                "watch_github_ci",
                "Watch GitHub pull-request checks until they pass or fail. Uses the current branch's pull request \
                 by default, or an optional pull request number, URL, or branch. Returns the final GitHub CLI \
                 output without requiring user input.",
                watch_github_ci_schema(),
            ),
        }
    }

    pub fn with_ops(mut self, ops: Arc<dyn GithubCiOps>) -> Self {
        self.ops = ops;
        self
    }

    fn command_env(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = match &self.env {
            Some(e) => e.clone(),
            None => std::env::vars_os().collect(),
        };
        for (k, v) in [("GH_PAGER", "cat"), ("GH_EDITOR", "cat"), ("NO_COLOR", "1")] {
            env.retain(|(name, _)| name != k);
            env.push((k.into(), v.into()));
        }
        env
    }
}

fn details(status: CiStatus, exit_code: Option<i32>, output_truncated: bool) -> Value {
    serde_json::to_value(CiDetails {
        status,
        exit_code,
        output_truncated,
    })
    .unwrap_or(Value::Null)
}

#[async_trait]
impl Tool for WatchGithubCiTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let p: WatchParams = parse_params("watch_github_ci", params)?;
        let selector = p.pr.as_deref().map(str::trim);
        if selector == Some("") {
            return Err(ToolError::new("Pull request selector must not be blank."));
        }
        if selector.is_some_and(|s| s.starts_with('-')) {
            return Err(ToolError::new(
                "Pull request selector must not begin with '-'.",
            ));
        }
        let mut args: Vec<String> = vec!["pr".into(), "checks".into()];
        args.extend(selector.map(str::to_string));
        args.extend(["--watch".into(), "--fail-fast".into()]);

        on_update(ToolOutput {
            content: vec![],
            details: Some(details(CiStatus::Watching, None, false)),
            end_turn: false,
        });
        let mut buffered = Buffered::default();
        let env = self.command_env();
        let update = on_update.clone();
        let result = {
            let mut on_data = |data: &[u8]| {
                buffered.push(data);
                let (text, truncated) = buffered.render();
                update(text_output(
                    text,
                    Some(details(CiStatus::Watching, None, truncated)),
                ));
            };
            self.ops
                .exec(&args, &self.cwd, &env, &cancel, &mut on_data)
                .await
        };
        let (output, truncated) = buffered.render();
        let exit_code = match result {
            Ok(code) => code,
            Err(failure) => {
                let before = if buffered.bytes.is_empty() {
                    String::new()
                } else {
                    format!("{output}\n\n")
                };
                return Err(ToolError::new(match failure {
                    ExecFailure::Aborted => format!("{before}GitHub CI watch aborted."),
                    other => format!("{before}GitHub CI watch could not run: {other}"),
                }));
            }
        };
        match exit_code {
            Some(0) => Ok(text_output(
                format!("GitHub CI checks passed.\n\n{output}"),
                Some(details(CiStatus::Passed, Some(0), truncated)),
            )),
            Some(1) => match detect_cli_failure(&output) {
                Some(signature) => Err(ToolError::new(format!(
                    "GitHub CI watch could not query checks: the GitHub CLI reported an error (matched \
                     \"{signature}\"). This is a CLI-level failure such as a bad pull-request selector, no pull \
                     request for the branch, a missing repository, or an authentication problem — not a \
                     failed-check result. Re-check the selector and `gh auth status`.\n\n{output}"
                ))),
                None => Ok(text_output(
                    format!(
                        "GitHub CI checks did not pass. The GitHub CLI exited with code 1.\n\n{output}"
                    ),
                    Some(details(CiStatus::Failed, Some(1), truncated)),
                )),
            },
            Some(8) => Err(ToolError::new(format!(
                "GitHub CI watch exited while checks were still pending (exit code 8); refusing to treat this as \
                 a terminal result.\n\n{output}"
            ))),
            Some(code) => Err(ToolError::new(format!(
                "GitHub CI watch exited unexpectedly with code {code}.\n\n{output}"
            ))),
            None => Err(ToolError::new(format!(
                "GitHub CI watch exited unexpectedly without an exit code.\n\n{output}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Mutex;

    use super::*;
    use crate::tools::test_util::{noop_update, recording_update, text_of};

    /// Arguments, cwd and environment of one run.
    type Call = (Vec<String>, PathBuf, Vec<(OsString, OsString)>);

    /// Records its call and plays `output` then `end`.
    struct Scripted {
        output: Vec<Vec<u8>>,
        end: Result<Option<i32>, ExecFailure>,
        calls: Mutex<Vec<Call>>,
    }

    fn scripted(end: Result<Option<i32>, ExecFailure>, output: &str) -> Arc<Scripted> {
        Arc::new(Scripted {
            output: if output.is_empty() {
                vec![]
            } else {
                vec![output.as_bytes().to_vec()]
            },
            end,
            calls: Mutex::new(vec![]),
        })
    }

    #[async_trait]
    impl GithubCiOps for Scripted {
        async fn exec(
            &self,
            args: &[String],
            cwd: &Path,
            env: &[(OsString, OsString)],
            _cancel: &CancellationToken,
            on_data: &mut DataSink<'_>,
        ) -> Result<Option<i32>, ExecFailure> {
            self.calls
                .lock()
                .unwrap()
                .push((args.to_vec(), cwd.to_path_buf(), env.to_vec()));
            for chunk in &self.output {
                on_data(chunk);
            }
            self.end.clone()
        }
    }

    fn tool(ops: Arc<Scripted>) -> WatchGithubCiTool {
        WatchGithubCiTool::new("/repo".into(), Some(vec![("PATH".into(), "/bin".into())]))
            .with_ops(ops)
    }

    async fn run(ops: Arc<Scripted>, params: Value) -> Result<ToolOutput, ToolError> {
        tool(ops)
            .execute("w", params, CancellationToken::new(), noop_update())
            .await
    }

    #[tokio::test]
    async fn runs_gh_pr_checks_for_the_current_branch_or_a_trimmed_selector() {
        let ops = scripted(Ok(Some(0)), "ok");
        run(ops.clone(), json!({})).await.unwrap();
        run(ops.clone(), json!({"pr": "  426  "})).await.unwrap();
        let calls = ops.calls.lock().unwrap();
        assert_eq!(calls[0].0, ["pr", "checks", "--watch", "--fail-fast"]);
        assert_eq!(
            calls[1].0,
            ["pr", "checks", "426", "--watch", "--fail-fast"]
        );
        assert_eq!(calls[0].1, PathBuf::from("/repo"));
        let env: Vec<(String, String)> = calls[0]
            .2
            .iter()
            .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into()))
            .collect();
        for pair in [
            ("GH_PAGER", "cat"),
            ("GH_EDITOR", "cat"),
            ("NO_COLOR", "1"),
            ("PATH", "/bin"),
        ] {
            assert!(
                env.contains(&(pair.0.into(), pair.1.into())),
                "{pair:?} in {env:?}"
            );
        }
    }

    #[tokio::test]
    async fn blank_and_option_like_selectors_are_refused_before_spawning() {
        let ops = scripted(Ok(Some(0)), "");
        let e = run(ops.clone(), json!({"pr": "   "})).await.unwrap_err();
        assert_eq!(e.message, "Pull request selector must not be blank.");
        let e = run(ops.clone(), json!({"pr": "--repo"})).await.unwrap_err();
        assert_eq!(e.message, "Pull request selector must not begin with '-'.");
        assert!(ops.calls.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn passed_and_failed_checks_are_results_with_their_details() {
        let out = run(scripted(Ok(Some(0)), "build passed"), json!({}))
            .await
            .unwrap();
        assert_eq!(text_of(&out), "GitHub CI checks passed.\n\nbuild passed");
        assert_eq!(
            out.details,
            Some(json!({"status": "passed", "exitCode": 0, "outputTruncated": false}))
        );
        let out = run(scripted(Ok(Some(1)), "build\tfail\t1m"), json!({}))
            .await
            .unwrap();
        assert_eq!(
            text_of(&out),
            "GitHub CI checks did not pass. The GitHub CLI exited with code 1.\n\nbuild\tfail\t1m"
        );
        assert_eq!(
            out.details,
            Some(json!({"status": "failed", "exitCode": 1, "outputTruncated": false}))
        );
        let out = run(scripted(Ok(Some(0)), ""), json!({})).await.unwrap();
        assert_eq!(text_of(&out), "GitHub CI checks passed.\n\n(no output)");
    }

    #[tokio::test]
    async fn cli_failures_pending_and_odd_exits_are_tool_errors() {
        for output in [
            "no pull requests found for branch \"ghost-branch\"",
            "GraphQL: Could not resolve to a PullRequest with the number of 999999. (repository.pullRequest)",
            "failed to run git: fatal: not a git repository",
            "HTTP 401: Bad credentials (https://api.github.com/graphql)",
            "could not parse the pull request selector",
        ] {
            let e = run(scripted(Ok(Some(1)), output), json!({}))
                .await
                .unwrap_err();
            assert!(
                e.message.starts_with("GitHub CI watch could not query checks: the GitHub CLI reported an error (matched \""),
                "{}",
                e.message
            );
            assert!(
                e.message.ends_with(&format!("\n\n{output}")),
                "{}",
                e.message
            );
        }
        let e = run(scripted(Ok(Some(8)), "checks pending"), json!({}))
            .await
            .unwrap_err();
        assert!(
            e.message
                .contains("checks were still pending (exit code 8)")
        );
        for (code, text) in [
            (Some(2), "exited unexpectedly with code 2."),
            (Some(4), "exited unexpectedly with code 4."),
            (None, "exited unexpectedly without an exit code."),
        ] {
            let e = run(scripted(Ok(code), "gh diagnostic"), json!({}))
                .await
                .unwrap_err();
            assert_eq!(
                e.message,
                format!("GitHub CI watch {text}\n\ngh diagnostic")
            );
        }
    }

    #[tokio::test]
    async fn run_failures_keep_the_output_and_aborts_say_so() {
        let e = run(
            scripted(
                Err(ExecFailure::Other("spawn failed".into())),
                "authentication required",
            ),
            json!({}),
        )
        .await
        .unwrap_err();
        assert_eq!(
            e.message,
            "authentication required\n\nGitHub CI watch could not run: spawn failed"
        );
        let e = run(scripted(Err(ExecFailure::Aborted), ""), json!({}))
            .await
            .unwrap_err();
        assert_eq!(e.message, "GitHub CI watch aborted.");
    }

    #[tokio::test]
    async fn watching_updates_stream_and_the_kept_output_is_bounded() {
        let ops = Arc::new(Scripted {
            output: vec![
                vec![b'x'; DEFAULT_MAX_BYTES * 2],
                vec![b'y'; DEFAULT_MAX_BYTES * 2],
            ],
            end: Ok(Some(0)),
            calls: Mutex::new(vec![]),
        });
        let (update, seen) = recording_update();
        let out = tool(ops)
            .execute("w", json!({}), CancellationToken::new(), update)
            .await
            .unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 3);
        assert!(seen[0].content.is_empty());
        assert_eq!(
            seen[0].details,
            Some(json!({"status": "watching", "outputTruncated": false}))
        );
        assert_eq!(seen[2].details.as_ref().unwrap()["status"], "watching");
        assert_eq!(out.details.as_ref().unwrap()["outputTruncated"], true);
        let text = text_of(&out);
        assert!(
            text.starts_with("GitHub CI checks passed.\n\n[Earlier watch output omitted]\n"),
            "{}",
            &text[..80]
        );
        assert!(!text.contains('x'));
    }

    /// A directory holding an executable `gh` with `body` (a shell script).
    fn fake_gh(body: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let gh = dir.path().join("gh");
        std::fs::write(&gh, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }

    fn real_tool(cwd: &Path, path: &Path) -> WatchGithubCiTool {
        WatchGithubCiTool::new(
            cwd.to_path_buf(),
            Some(vec![(
                "PATH".into(),
                format!("{}:/usr/bin:/bin", path.display()).into(),
            )]),
        )
    }

    #[tokio::test]
    async fn the_real_gh_is_run_from_path_with_its_output_and_exit_code() {
        let bin = fake_gh(
            "echo \"args: $*\"\necho \"pager=$GH_PAGER color=$NO_COLOR\" >&2\nprintf 'lint\\tpass\\n'\nexit 1",
        );
        let cwd = tempfile::tempdir().unwrap();
        let out = real_tool(cwd.path(), bin.path())
            .execute(
                "w",
                json!({"pr": "7"}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap();
        let text = text_of(&out);
        assert!(
            text.starts_with(
                "GitHub CI checks did not pass. The GitHub CLI exited with code 1.\n\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("args: pr checks 7 --watch --fail-fast"),
            "{text}"
        );
        assert!(text.contains("pager=cat color=1"), "{text}");
        assert!(text.contains("lint\tpass"), "{text}");
    }

    #[tokio::test]
    async fn a_missing_gh_is_a_clear_tool_error() {
        let empty = tempfile::tempdir().unwrap();
        let cwd = tempfile::tempdir().unwrap();
        let tool = WatchGithubCiTool::new(
            cwd.path().to_path_buf(),
            Some(vec![("PATH".into(), empty.path().as_os_str().to_owned())]),
        );
        let e = tool
            .execute("w", json!({}), CancellationToken::new(), noop_update())
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            "GitHub CI watch could not run: the GitHub CLI (`gh`) was not found on PATH (spawn gh ENOENT). \
             Install it (https://cli.github.com) and sign in with `gh auth login`."
        );
    }

    #[tokio::test]
    async fn an_abort_kills_a_watch_in_progress() {
        // `gh` that never ends on its own; the abort comes once its first output has arrived.
        let bin = fake_gh("echo watching\nexec sleep 600");
        let cwd = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        let update: ToolUpdateFn = Arc::new(move |o: ToolOutput| {
            if !o.content.is_empty() {
                c.cancel();
            }
        });
        let e = real_tool(cwd.path(), bin.path())
            .execute("w", json!({}), cancel, update)
            .await
            .unwrap_err();
        // The output keeps its final newline, then the blank line before the notice.
        assert_eq!(e.message, "watching\n\n\nGitHub CI watch aborted.");
    }
}
