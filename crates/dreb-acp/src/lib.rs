//! `dreb --mode acp`: the agent behind the Agent Client Protocol (JSON-RPC 2.0, one message per line on
//! stdin/stdout), as editors such as Zed run it. A translator over the same runtime as `--mode rpc`: each ACP
//! session is a [`dreb_runtime::Runtime`], its event frames become `session/update` notifications, its dialogs
//! become `session/request_permission` requests. Design: `docs/adr/0007-acp-front-end.md`; mapping: `docs/acp.md`.
//!
//! | module | job |
//! |---|---|
//! | `jsonrpc` | classifying input lines, the spec's error for each malformed one, encoding |
//! | `connection` | the ordered stdout queue and our requests to the client |
//! | `agent` | each ACP method on the sessions |
//! | `session` | one session's runtime and its pump (the order of its lines) |
//! | `translate` | event frames to updates |
//! | `history` | a stored conversation to updates (`session/load`) |
//! | `tools` | tool kind, title, locations and diff |
//! | `dialogs` | dialogs to permission requests and back |
//! | `files` | the client's `fs/*` methods as the tools' text files |
//! | `terminals` | the client's `terminal/*` methods as the bash tool's command runner |
//! | `prior` | a written file's previous content, for the whole-file diff |
//! | `prompt` | ACP prompt content to the runtime's prompt |
//! | `config` | model and thinking level as session config options |

mod agent;
mod config;
mod connection;
mod dialogs;
mod files;
mod history;
pub mod jsonrpc;
mod prior;
mod prompt;
mod session;
mod terminals;
mod tools;
mod translate;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{Error as RpcError, RequestId};
use dreb_protocol::framing::JsonlReader;
use dreb_runtime::RuntimeOptions;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::agent::Agent;
use crate::connection::Connection;
use crate::jsonrpc::Incoming;

/// How long background children get to finish at shutdown (as in `--mode rpc`).
const CHILDREN_TIMEOUT: Duration = Duration::from_secs(3);

/// Serves ACP on `input` / `output` until `input` ends or `shutdown` completes; the exit code.
///
/// `template` is what each session's runtime starts from (the command line's provider, model, tools, agent
/// dir, ...); its `cwd` and session file are replaced by the session's, and its `stop` token ends every session.
pub async fn serve(
    template: RuntimeOptions,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    shutdown: impl Future<Output = ()> + Send,
) -> i32 {
    let stop = template.stop.clone();
    let (conn, _writer) = Connection::start(output);
    let agent = Arc::new(Agent::new(template, conn.clone()));
    let mut reader = JsonlReader::new(input);
    tokio::pin!(shutdown);
    loop {
        let record = tokio::select! {
            r = reader.next_record() => r,
            () = &mut shutdown => break,
        };
        let line = match record {
            Ok(Some(Ok(line))) => line,
            Ok(Some(Err(e))) => {
                conn.respond(
                    &RequestId::Null,
                    Err(RpcError::parse_error().data(e.to_string())),
                );
                continue;
            }
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("stdin: {e}");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match jsonrpc::classify(line.as_bytes()) {
            Err(bad) => conn.respond(&bad.id, Err(bad.error)),
            Ok(Incoming::Request { id, method, params }) => {
                // Each request on its own task: a running prompt never holds up a cancel or another session.
                let agent = agent.clone();
                let conn = conn.clone();
                tokio::spawn(async move {
                    if let Some(reply) = agent.request(id.clone(), &method, params).await {
                        conn.respond(&id, reply);
                    }
                });
            }
            Ok(Incoming::Notification { method, params }) => {
                let agent = agent.clone();
                tokio::spawn(async move { agent.notification(&method, params).await });
            }
            Ok(Incoming::Response { id, outcome }) => {
                if !conn.settle(&id, outcome) {
                    tracing::debug!("response to an unknown request {id}");
                }
            }
        }
    }
    // Running work stops; each session's runtime ends as `--mode rpc` ends it.
    stop.cancel();
    conn.close_pending();
    for session in agent.sessions() {
        session.runtime.shutdown();
        session.runtime.wait_for_children(CHILDREN_TIMEOUT).await;
        session.runtime.announce_session_shutdown().await;
        session.runtime.stop_extensions().await;
        session.runtime.flush_performance_log().await;
    }
    conn.flush().await;
    0
}
