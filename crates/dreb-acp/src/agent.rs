//! The agent side of ACP: each client request as work on the sessions (one runtime per session).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol_schema::v1::{
    AgentCapabilities, CancelRequestNotification, ClientCapabilities, ClientNotification,
    ClientRequest, CloseSessionResponse, Error as RpcError, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    RequestId, ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities, SessionId,
    SessionInfo, SessionListCapabilities, SessionNotification, SessionResumeCapabilities,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
};
use agent_client_protocol_schema::{MethodDispatchError, ProtocolVersion};
use dreb_protocol::handlers::StateHandler as _;
use dreb_protocol::support::RequestContext;
use dreb_protocol::{GetMessagesParams, GetStateParams};
use dreb_runtime::{Runtime, RuntimeOptions};
use serde::Serialize;
use serde_json::Value;

use crate::config;
use crate::connection::Connection;
use crate::files::ClientFiles;
use crate::history;
use crate::prior::PriorText;
use crate::session::{Inbox, Pump, Session};
use crate::terminals::ClientTerminals;

type Reply = Option<Result<Value, RpcError>>;

pub struct Agent {
    /// What every session's runtime starts from (the command line's flags); cwd and session file are the
    /// session's.
    template: RuntimeOptions,
    conn: Connection,
    sessions: Mutex<HashMap<SessionId, Arc<Session>>>,
    /// What the client offered in `initialize` (its `fs`, `terminal` and elicitation methods are used when
    /// offered).
    client: Mutex<ClientCapabilities>,
    /// The prompts in flight, by request id (`$/cancel_request` on one cancels its session's turn).
    prompts: Mutex<HashMap<RequestId, SessionId>>,
}

fn ok(v: impl Serialize) -> Reply {
    Some(serde_json::to_value(v).map_err(RpcError::into_internal_error))
}

fn invalid_params(why: impl Into<String>) -> RpcError {
    RpcError::invalid_params().data(Value::String(why.into()))
}

fn runtime_error(message: impl Into<String>) -> RpcError {
    RpcError::new(-32603, message)
}

impl Agent {
    pub fn new(template: RuntimeOptions, conn: Connection) -> Agent {
        Agent {
            template,
            conn,
            sessions: Mutex::new(HashMap::new()),
            client: Mutex::new(ClientCapabilities::new()),
            prompts: Mutex::new(HashMap::new()),
        }
    }

    fn session(&self, id: &SessionId) -> Result<Arc<Session>, RpcError> {
        lock(&self.sessions)
            .get(id)
            .cloned()
            .ok_or_else(|| RpcError::session_not_found(id.clone()))
    }

    pub fn sessions(&self) -> Vec<Arc<Session>> {
        lock(&self.sessions).values().cloned().collect()
    }

    /// Handles one request; `None` when the handler already wrote the response (it had to precede updates).
    pub async fn request(&self, id: RequestId, method: &str, params: Value) -> Reply {
        let request = match ClientRequest::from_method_and_params(method, &params) {
            Ok(r) => r,
            Err(MethodDispatchError::UnknownMethod { .. }) => {
                return Some(Err(RpcError::method_not_found().data(method.to_string())));
            }
            Err(MethodDispatchError::InvalidPayload { source, .. }) => {
                return Some(Err(invalid_params(source.to_string())));
            }
            Err(e) => return Some(Err(invalid_params(e.to_string()))),
        };
        match request {
            ClientRequest::InitializeRequest(r) => ok(self.initialize(r)),
            ClientRequest::NewSessionRequest(r) => self.new_session(id, r).await,
            ClientRequest::LoadSessionRequest(r) => {
                self.open_stored(id, r.session_id, r.cwd, Reopen::Load, &r.mcp_servers)
                    .await
            }
            ClientRequest::ResumeSessionRequest(r) => {
                self.open_stored(id, r.session_id, r.cwd, Reopen::Resume, &r.mcp_servers)
                    .await
            }
            ClientRequest::ListSessionsRequest(r) => self.list_sessions(r).await,
            ClientRequest::SetSessionConfigOptionRequest(r) => self.set_config(r).await,
            ClientRequest::PromptRequest(r) => match self.session(&r.session_id) {
                Ok(s) => {
                    lock(&self.prompts).insert(id.clone(), r.session_id.clone());
                    let reply = s.prompt(id.clone(), r).await;
                    lock(&self.prompts).remove(&id);
                    reply
                }
                Err(e) => Some(Err(e)),
            },
            ClientRequest::CloseSessionRequest(r) => {
                let removed = lock(&self.sessions).remove(&r.session_id);
                match removed {
                    Some(s) => {
                        s.cancel().await;
                        s.runtime.shutdown();
                        ok(CloseSessionResponse::new())
                    }
                    None => Some(Err(RpcError::session_not_found(r.session_id))),
                }
            }
            ClientRequest::AuthenticateRequest(_) => Some(Err(invalid_params(
                "this agent offers no authentication methods: provider keys come from the environment or auth.json",
            ))),
            // Known to the protocol, not offered in `initialize`.
            _ => Some(Err(RpcError::method_not_found()
                .data(format!("{method} is not supported by this agent")))),
        }
    }

    pub async fn notification(&self, method: &str, params: Value) {
        if method == "$/cancel_request" {
            // Only a prompt runs long enough to be cancelled; it then answers `cancelled`.
            let target = serde_json::from_value::<CancelRequestNotification>(params)
                .ok()
                .and_then(|n| lock(&self.prompts).get(&n.request_id).cloned());
            if let Some(session) = target.and_then(|id| self.session(&id).ok()) {
                session.cancel().await;
            }
            return;
        }
        match ClientNotification::from_method_and_params(method, &params) {
            Ok(ClientNotification::CancelNotification(n)) => match self.session(&n.session_id) {
                Ok(s) => s.cancel().await,
                Err(_) => tracing::debug!("session/cancel for an unknown session"),
            },
            // Notifications are never answered, not even with an error.
            Ok(_) => tracing::debug!("ignored notification {method}"),
            Err(e) => tracing::debug!("ignored notification {method}: {e}"),
        }
    }

    fn initialize(&self, r: InitializeRequest) -> InitializeResponse {
        *lock(&self.client) = r.client_capabilities.clone();
        // We speak v1; a client asking for another version gets ours and decides (the spec's negotiation).
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(
                        PromptCapabilities::new()
                            .image(true)
                            .audio(false)
                            .embedded_context(true),
                    )
                    // No MCP transport over ACP yet: the client's servers are not started (docs/acp.md).
                    .mcp_capabilities(McpCapabilities::new().http(true))
                    .session_capabilities(
                        SessionCapabilities::new()
                            .list(SessionListCapabilities::new())
                            .close(SessionCloseCapabilities::new())
                            .resume(SessionResumeCapabilities::new()),
                    ),
            )
            .agent_info(Implementation::new("dreb", env!("CARGO_PKG_VERSION")).title("dreb"))
    }

    fn check_cwd(cwd: &Path) -> Result<(), RpcError> {
        if !cwd.is_absolute() {
            return Err(invalid_params(format!(
                "cwd must be an absolute path: {}",
                cwd.display()
            )));
        }
        if !cwd.is_dir() {
            return Err(invalid_params(format!(
                "cwd is not a directory: {}",
                cwd.display()
            )));
        }
        Ok(())
    }

    /// A runtime for the session; `id` is set once the session's id is known (the client's file methods need it).
    fn start_runtime(
        &self,
        cwd: &Path,
        session_file: Option<PathBuf>,
        id: Arc<OnceLock<SessionId>>,
        mcp_servers: &[McpServer],
    ) -> Result<(Runtime, Inbox), RpcError> {
        let inbox = Inbox::new();
        let mut options = self.template.clone();
        options.mcp_servers = client_mcp_servers(mcp_servers);
        options.cwd = cwd.to_path_buf();
        // A new session is new; a loaded one is that file (the command line's -c/--session/--fork do not apply).
        options.continue_recent = false;
        options.fork = None;
        options.session = session_file;
        options.stop = self.template.stop.child_token();
        options.extensions.has_ui = true;
        // The editor's UI: the system prompt says so, and events come as the lean `message_update`s (no cumulative
        // copies of the reply): the pump reads only the deltas, and the copies would make a long reply cost
        // quadratic time here.
        options.ui = Some("acp".into());
        let client = lock(&self.client).clone();
        options.text_files = ClientFiles::new(self.conn.clone(), &client.fs, id.clone())
            .map(|f| Arc::new(f) as Arc<dyn dreb_tools::TextFiles>);
        if client.terminal {
            options.commands = Some(Arc::new(ClientTerminals::new(
                self.conn.clone(),
                id,
                inbox.notes(),
            )));
        }
        // The previous content of each written file, for the editor's whole-file diff.
        options.hooks.push((
            "acp".into(),
            Arc::new(PriorText::new(
                cwd.to_path_buf(),
                options.text_files.clone(),
                inbox.notes(),
            )),
        ));
        let runtime = Runtime::start(options, inbox.sink()).map_err(|e| runtime_error(e.0))?;
        Ok((runtime, inbox))
    }

    async fn session_id(runtime: &Runtime) -> Result<SessionId, RpcError> {
        let state = runtime
            .get_state(&RequestContext::detached(None), GetStateParams {})
            .await
            .map_err(runtime_error)?;
        Ok(SessionId::new(state.session_id))
    }

    /// Registers the session (before its response, so the client's next request finds it) and queues its
    /// commands as its first update; the pump to run once the response is queued.
    async fn register(&self, id: &SessionId, runtime: Runtime, cwd: PathBuf, inbox: Inbox) -> Pump {
        let forms = lock(&self.client)
            .elicitation
            .as_ref()
            .is_some_and(|e| e.supports_form());
        let (session, pump) =
            Session::new(runtime, cwd, inbox, id.clone(), self.conn.clone(), forms);
        match crate::session::commands(&session.runtime).await {
            Ok(update) => session.send_update(update),
            Err(e) => tracing::warn!("cannot list commands: {}", e.message),
        }
        lock(&self.sessions).insert(id.clone(), Arc::new(session));
        pump
    }

    async fn new_session(&self, id: RequestId, r: NewSessionRequest) -> Reply {
        if let Err(e) = Self::check_cwd(&r.cwd) {
            return Some(Err(e));
        }
        let started = async {
            let id_cell = Arc::new(OnceLock::new());
            let (runtime, inbox) =
                self.start_runtime(&r.cwd, None, id_cell.clone(), &r.mcp_servers)?;
            let session_id = Self::session_id(&runtime).await?;
            let _ = id_cell.set(session_id.clone());
            let options = config::options(&runtime)
                .await
                .map_err(|e| runtime_error(e.to_string()))?;
            Ok::<_, RpcError>((runtime, inbox, session_id, options))
        }
        .await;
        match started {
            Ok((runtime, inbox, session_id, options)) => {
                let pump = self.register(&session_id, runtime, r.cwd, inbox).await;
                let response = NewSessionResponse::new(session_id).config_options(options);
                self.conn.respond(&id, ok(response).expect("always Some"));
                tokio::spawn(pump.run());
                None
            }
            Err(e) => Some(Err(e)),
        }
    }

    /// The stored session with this id (exactly), from the session listing.
    async fn find_session_file(&self, id: &SessionId) -> Result<PathBuf, RpcError> {
        let wanted = id.to_string();
        let found = self
            .stored_sessions()
            .await?
            .into_iter()
            .find(|s| s.id == wanted)
            .map(|s| s.path);
        found.ok_or_else(|| {
            RpcError::resource_not_found(None).data(format!("no stored session {wanted}"))
        })
    }

    async fn stored_sessions(&self) -> Result<Vec<dreb_session::SessionInfo>, RpcError> {
        let agent_dir = self.template.agent_dir.clone();
        let session_dir = self.template.session_dir.clone();
        tokio::task::spawn_blocking(move || match session_dir {
            Some(dir) => Ok(dreb_session::list_sessions(
                &dir,
                dreb_session::ListOptions::default(),
            )),
            None => dreb_session::list_all_sessions(
                &dreb_session::paths::sessions_root(&agent_dir),
                dreb_session::ListOptions::default(),
            ),
        })
        .await
        .map_err(RpcError::into_internal_error)?
        .map_err(|e| runtime_error(format!("cannot list sessions: {e}")))
    }

    /// `session/load` (the history replayed first) and `session/resume` (without it): the stored session opened
    /// in a runtime of its own, or the one already open in this process.
    async fn open_stored(
        &self,
        id: RequestId,
        session_id: SessionId,
        cwd: PathBuf,
        how: Reopen,
        mcp_servers: &[McpServer],
    ) -> Reply {
        if let Err(e) = Self::check_cwd(&cwd) {
            return Some(Err(e));
        }
        let live = lock(&self.sessions).get(&session_id).cloned();
        if let Some(session) = live {
            if how == Reopen::Load
                && let Err(e) = self
                    .replay(&session.runtime, &session_id, &session.cwd)
                    .await
            {
                return Some(Err(e));
            }
            return Some(reopen_response(&session.runtime, how).await);
        }
        let started = async {
            let file = self.find_session_file(&session_id).await?;
            let id_cell = Arc::new(OnceLock::from(session_id.clone()));
            let (runtime, inbox) = self.start_runtime(&cwd, Some(file), id_cell, mcp_servers)?;
            if how == Reopen::Load {
                self.replay(&runtime, &session_id, &cwd).await?;
            }
            Ok::<_, RpcError>((runtime, inbox))
        }
        .await;
        let (runtime, inbox) = match started {
            Ok(started) => started,
            Err(e) => return Some(Err(e)),
        };
        match reopen_response(&runtime, how).await {
            Ok(response) => {
                let pump = self.register(&session_id, runtime, cwd, inbox).await;
                self.conn.respond(&id, Ok(response));
                tokio::spawn(pump.run());
            }
            Err(e) => {
                runtime.shutdown();
                self.conn.respond(&id, Err(e));
            }
        }
        None
    }

    /// The stored conversation as updates, written before the load's response.
    async fn replay(&self, runtime: &Runtime, id: &SessionId, cwd: &Path) -> Result<(), RpcError> {
        let messages = runtime
            .get_messages(&RequestContext::detached(None), GetMessagesParams {})
            .await
            .map_err(runtime_error)?;
        let messages =
            serde_json::to_value(&messages.messages).map_err(RpcError::into_internal_error)?;
        let messages = messages.as_array().cloned().unwrap_or_default();
        for update in history::replay(&messages, cwd) {
            self.conn.notify(
                "session/update",
                &SessionNotification::new(id.clone(), update),
            );
        }
        Ok(())
    }

    async fn list_sessions(&self, r: ListSessionsRequest) -> Reply {
        let stored = match self.stored_sessions().await {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        let sessions = stored
            .iter()
            .filter(|s| r.cwd.as_deref().is_none_or(|cwd| Path::new(&s.cwd) == cwd))
            .map(|s| {
                let rpc = s.to_rpc();
                SessionInfo::new(s.id.clone(), PathBuf::from(&s.cwd))
                    .title(s.name.clone().unwrap_or_else(|| s.first_message.clone()))
                    .updated_at(rpc.modified)
            })
            .collect();
        // Every session in one page: there is no cursor to continue from.
        ok(ListSessionsResponse::new(sessions))
    }

    async fn set_config(&self, r: SetSessionConfigOptionRequest) -> Reply {
        let session = match self.session(&r.session_id) {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        let id = r.config_id.to_string();
        let applied = async {
            config::set(&session.runtime, &id, &r.value).await?;
            config::options(&session.runtime).await
        }
        .await;
        match applied {
            Ok(options) => ok(SetSessionConfigOptionResponse::new(options)),
            Err(config::ConfigError::Runtime(e)) => Some(Err(runtime_error(e))),
            Err(e) => Some(Err(invalid_params(e.to_string()))),
        }
    }
}

/// How a stored session is opened again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reopen {
    /// `session/load`: the conversation is replayed as updates before the answer.
    Load,
    /// `session/resume`: no replay (the client still shows it).
    Resume,
}

async fn reopen_response(runtime: &Runtime, how: Reopen) -> Result<Value, RpcError> {
    let options = config::options(runtime)
        .await
        .map_err(|e| runtime_error(e.to_string()))?;
    let response = match how {
        Reopen::Load => serde_json::to_value(LoadSessionResponse::new().config_options(options)),
        Reopen::Resume => {
            serde_json::to_value(ResumeSessionResponse::new().config_options(options))
        }
    };
    response.map_err(RpcError::into_internal_error)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The client's MCP servers as an `mcpServers` object (`docs/mcp.md`): stdio and HTTP; SSE (not advertised) is
/// skipped. ACP names may hold any characters; ours become `mcp__<name>__<tool>`, so others turn into `-`.
fn client_mcp_servers(servers: &[McpServer]) -> Option<Value> {
    let mut out = serde_json::Map::new();
    for server in servers {
        let (name, entry) = match server {
            McpServer::Stdio(s) => (
                &s.name,
                serde_json::json!({
                    "command": s.command.to_string_lossy(),
                    "args": s.args,
                    "env": s.env.iter().map(|e| (e.name.clone(), Value::String(e.value.clone()))).collect::<serde_json::Map<_, _>>(),
                }),
            ),
            McpServer::Http(h) => (
                &h.name,
                serde_json::json!({
                    "type": "http",
                    "url": h.url,
                    "headers": h.headers.iter().map(|e| (e.name.clone(), Value::String(e.value.clone()))).collect::<serde_json::Map<_, _>>(),
                }),
            ),
            _ => {
                tracing::warn!("an MCP server of a transport not offered in initialize is skipped");
                continue;
            }
        };
        let mut safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        while safe.contains("__") {
            safe = safe.replace("__", "_");
        }
        if safe.is_empty() {
            safe = "server".into();
        }
        out.insert(safe, entry);
    }
    (!out.is_empty()).then_some(Value::Object(out))
}
