//! The client's terminals (`terminal/*`, when the client offers `terminal: true` in `initialize`) behind the bash
//! tool's [`CommandRunner`] seam: the command runs in an editor terminal the user watches, embedded in the tool
//! call (`{"type": "terminal", "terminalId"}`); its output is read back with `terminal/output` for the agent. Abort
//! and timeout kill (`terminal/kill`) and every terminal is released (`terminal/release`), also when the run is
//! dropped. The bash tool does the rest as for a local run (rendering, truncation, the output log, the texts).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    CreateTerminalRequest, CreateTerminalResponse, EnvVariable, KillTerminalRequest,
    ReleaseTerminalRequest, SessionId, TerminalExitStatus, TerminalId, TerminalOutputRequest,
    TerminalOutputResponse, WaitForTerminalExitRequest, WaitForTerminalExitResponse,
};
use async_trait::async_trait;
use dreb_tools::bash::{CommandRun, CommandRunner, ExecEnd, LocalRunner, OnData, check_cwd};
use serde_json::Value;

use crate::connection::{Connection, PeerError};
use crate::session::Notes;

/// How often the output is read back while the command runs (partial results for the agent).
const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// What the client keeps of the output (it drops the beginning beyond this): the tail the agent reads.
const OUTPUT_BYTE_LIMIT: u64 = 1 << 20;
/// How long an answer to an output read, a kill or a release is awaited (a stuck editor never wedges an abort).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(2);

pub struct ClientTerminals {
    conn: Connection,
    /// Set once the session has its id (a new session learns it after its runtime started).
    session: Arc<OnceLock<SessionId>>,
    notes: Notes,
}

impl ClientTerminals {
    pub fn new(conn: Connection, session: Arc<OnceLock<SessionId>>, notes: Notes) -> Self {
        ClientTerminals {
            conn,
            session,
            notes,
        }
    }
}

/// A terminal of the client's, released when dropped (unless released already).
struct Live {
    conn: Connection,
    session: SessionId,
    id: TerminalId,
    released: bool,
}

impl Live {
    async fn output(&self) -> Option<TerminalOutputResponse> {
        let request = TerminalOutputRequest::new(self.session.clone(), self.id.clone());
        bounded(self.conn.request("terminal/output", &request).get()).await
    }

    async fn kill(&self) {
        let request = KillTerminalRequest::new(self.session.clone(), self.id.clone());
        bounded(self.conn.request("terminal/kill", &request).get::<Value>()).await;
    }

    async fn release(mut self) {
        self.released = true;
        let request = ReleaseTerminalRequest::new(self.session.clone(), self.id.clone());
        bounded(
            self.conn
                .request("terminal/release", &request)
                .get::<Value>(),
        )
        .await;
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if !self.released {
            // The run was dropped mid-way: the terminal (and its command) goes; nobody waits for the answer.
            let request = ReleaseTerminalRequest::new(self.session.clone(), self.id.clone());
            drop(self.conn.request("terminal/release", &request));
        }
    }
}

/// The answer within [`ANSWER_TIMEOUT`], or `None` (logged).
async fn bounded<R>(answer: impl std::future::Future<Output = Result<R, PeerError>>) -> Option<R> {
    match tokio::time::timeout(ANSWER_TIMEOUT, answer).await {
        Ok(Ok(r)) => Some(r),
        Ok(Err(e)) => {
            tracing::warn!("terminal request failed: {e}");
            None
        }
        Err(_) => {
            tracing::warn!("the client did not answer a terminal request in time");
            None
        }
    }
}

/// The variables of `env` (the command's full environment) that differ from this process's: what the client's
/// terminal, which starts from the editor's environment, must be told (the agent's `bin` dir on `PATH`).
fn added_env(env: Option<&[(std::ffi::OsString, std::ffi::OsString)]>) -> Vec<EnvVariable> {
    let Some(env) = env else { return Vec::new() };
    env.iter()
        .filter(|(k, v)| std::env::var_os(k).as_ref() != Some(v))
        .map(|(k, v)| EnvVariable::new(k.to_string_lossy(), v.to_string_lossy()))
        .collect()
}

fn exit_end(status: &TerminalExitStatus) -> ExecEnd {
    // A signal leaves no exit code, as for a local process killed by one.
    ExecEnd::Exited(status.exit_code.map(|c| c as i32))
}

#[async_trait]
impl CommandRunner for ClientTerminals {
    async fn run(&self, run: CommandRun<'_>, on_data: &mut OnData<'_>) -> Result<ExecEnd, String> {
        let Some(session) = self.session.get().cloned() else {
            // Not reachable once the session is registered; the machine's shell then.
            return LocalRunner.run(run, on_data).await;
        };
        check_cwd(run.spec)?;
        if run.cancel.is_cancelled() {
            return Ok(ExecEnd::Aborted);
        }
        let spec = run.spec;
        let mut args = spec.shell.args.clone();
        args.push(spec.command.clone());
        let request = CreateTerminalRequest::new(
            session.clone(),
            spec.shell.shell.to_string_lossy().into_owned(),
        )
        .args(args)
        .env(added_env(spec.env.as_deref()))
        .cwd(spec.cwd.clone())
        .output_byte_limit(OUTPUT_BYTE_LIMIT);
        let mut created = Box::pin(
            self.conn
                .request("terminal/create", &request)
                .get::<CreateTerminalResponse>(),
        );
        let created = tokio::select! {
            r = &mut created => r,
            _ = run.cancel.cancelled() => {
                // Aborted before the editor answered: release the terminal once it exists.
                let (conn, session) = (self.conn.clone(), session.clone());
                tokio::spawn(async move {
                    if let Ok(r) = created.await {
                        Live { conn, session, id: r.terminal_id, released: false }.release().await;
                    }
                });
                return Ok(ExecEnd::Aborted);
            }
        };
        let id = created
            .map_err(|e| format!("The editor could not run the command: {e}"))?
            .terminal_id;
        let live = Live {
            conn: self.conn.clone(),
            session: session.clone(),
            id: id.clone(),
            released: false,
        };
        self.notes.terminal(run.tool_call_id, id.clone());

        let mut exited = Box::pin(
            self.conn
                .request(
                    "terminal/wait_for_exit",
                    &WaitForTerminalExitRequest::new(session.clone(), id.clone()),
                )
                .get::<WaitForTerminalExitResponse>(),
        );
        let deadline = run.timeout.map(|t| tokio::time::Instant::now() + t);
        let mut poll = tokio::time::interval(POLL_INTERVAL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        poll.tick().await;
        let mut reader = OutputReader::default();
        let end = loop {
            tokio::select! {
                r = &mut exited => break r.map(|r| exit_end(&r.exit_status)),
                _ = poll.tick() => {
                    if let Some(out) = live.output().await {
                        let delta = reader.delta(&out);
                        if !delta.is_empty() {
                            on_data(delta.as_bytes());
                        }
                    }
                }
                _ = run.cancel.cancelled() => break Ok(ExecEnd::Aborted),
                _ = sleep_until(deadline), if deadline.is_some() => break Ok(ExecEnd::TimedOut),
            }
        };
        if matches!(end, Ok(ExecEnd::Aborted | ExecEnd::TimedOut)) {
            live.kill().await;
        }
        // What it wrote since the last read (and, when the exit was not reported, its status).
        let end = match (end, live.output().await) {
            (end, Some(out)) => {
                let delta = reader.delta(&out);
                if !delta.is_empty() {
                    on_data(delta.as_bytes());
                }
                match (end, &out.exit_status) {
                    (Err(_), Some(status)) => Ok(exit_end(status)),
                    (end, _) => end,
                }
            }
            (end, None) => end,
        };
        live.release().await;
        end.map_err(|e| format!("The editor's terminal failed: {e}"))
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// What is new in each `terminal/output` answer. The client answers the whole output it keeps, the beginning
/// dropped past the byte limit, so a new answer is the previous one's end (at most) followed by the new output.
#[derive(Default)]
struct OutputReader {
    last: String,
}

/// How many bytes of a truncated answer anchor the search for its start in the previous output.
const ANCHOR: usize = 64;
/// How many anchor matches are checked before the whole answer is taken as new.
const MAX_CANDIDATES: usize = 64;

impl OutputReader {
    fn delta(&mut self, out: &TerminalOutputResponse) -> String {
        let new = out.output.as_str();
        let delta = if new.starts_with(self.last.as_str()) {
            &new[self.last.len()..]
        } else {
            &new[self.overlap(new)..]
        };
        let delta = delta.to_string();
        self.last = out.output.clone();
        delta
    }

    /// The length of the longest start of `new` that the previous output ends with, found through `new`'s first
    /// bytes; 0 when there is none.
    fn overlap(&self, new: &str) -> usize {
        let last = self.last.as_str();
        let mut cut = new.len().min(ANCHOR);
        while !new.is_char_boundary(cut) {
            cut -= 1;
        }
        let anchor = &new[..cut];
        if anchor.is_empty() {
            return 0;
        }
        // Where the anchor starts in the previous output (the earliest start is the longest overlap), then the
        // previous output's last bytes, where the anchor runs past its end.
        let mut tail = last.len().saturating_sub(ANCHOR);
        while !last.is_char_boundary(tail) {
            tail += 1;
        }
        let starts = last
            .match_indices(anchor)
            .take(MAX_CANDIDATES)
            .map(|(i, _)| i)
            .chain((tail..last.len()).filter(|&i| last.is_char_boundary(i)));
        starts
            .into_iter()
            .find(|&i| new.starts_with(&last[i..]))
            .map_or(0, |i| last.len() - i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(s: &str, truncated: bool) -> TerminalOutputResponse {
        TerminalOutputResponse::new(s, truncated)
    }

    #[test]
    fn output_deltas_follow_appends_and_a_dropped_beginning() {
        let mut r = OutputReader::default();
        assert_eq!(r.delta(&out("hello ", false)), "hello ");
        assert_eq!(r.delta(&out("hello world\n", false)), "world\n");
        assert_eq!(r.delta(&out("hello world\n", false)), "");
        // The client dropped "hello " (its byte limit) while "next\n" arrived.
        assert_eq!(r.delta(&out("world\nnext\n", true)), "next\n");
        // Nothing in common with what came before: all of it is new.
        assert_eq!(r.delta(&out("other", true)), "other");
        // Long output: the overlap is found past the anchor's length.
        let long: String = (0..200).map(|i| format!("line {i}\n")).collect();
        let mut r = OutputReader::default();
        r.delta(&out(&long, false));
        let dropped = format!("{}line 200\n", &long[500..]);
        assert_eq!(r.delta(&out(&dropped, true)), "line 200\n");
    }

    #[test]
    fn exit_statuses() {
        let r: WaitForTerminalExitResponse = serde_json::from_value(
            // The exit status is the result itself (flattened), unlike `terminal/output`'s `exitStatus`.
            serde_json::json!({"exitCode": 3, "signal": null}),
        )
        .unwrap();
        assert_eq!(exit_end(&r.exit_status), ExecEnd::Exited(Some(3)));
    }

    #[test]
    fn only_changed_variables_go_to_the_clients_terminal() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let env = vec![
            ("PATH".into(), path),
            ("DREB_ACP_TEST_ADDED".into(), "1".into()),
        ];
        let vars = added_env(Some(&env));
        assert_eq!(vars.len(), 1);
        assert_eq!(vars[0].name, "DREB_ACP_TEST_ADDED");
        assert!(added_env(None).is_empty());
    }
}
