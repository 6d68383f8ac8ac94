//! One configured MCP server: its connection (a child process or Streamable HTTP, through `rmcp`), its state, the
//! tools and prompts it offers, and its calls. A connection that fails or a server that exits is retried on the
//! next use after a back-off (1 s doubling to 30 s); stopping kills the child's whole process group.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use dreb_agent::{ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::{TextContent, UserBlock};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientConfig, ClientNotification, ClientRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ErrorData, GetPromptRequestParams, ProgressNotificationParam, ProgressToken,
    ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RunningService,
};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::{ServerConfig, Transport};
use crate::elicit;
use crate::env::McpEnv;

/// Where a server is in its life, as `get_resources` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    Starting,
    Ready,
    /// Did not start, or exited; retried on next use (after the back-off).
    Failed(String),
    /// Disabled in its configuration or by command.
    Disabled,
}

impl ServerState {
    pub fn as_str(&self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Failed(_) => "failed",
            ServerState::Disabled => "disabled",
        }
    }
}

/// A tool as the server listed it.
#[derive(Debug, Clone)]
pub struct ServerTool {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// A prompt as the server listed it.
#[derive(Debug, Clone)]
pub struct ServerPrompt {
    pub name: String,
    pub description: Option<String>,
    /// Argument names in the server's order, with whether each is required.
    pub arguments: Vec<(String, bool)>,
}

type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, ToolUpdateFn>>>;

struct Inner {
    state: ServerState,
    tools: Vec<ServerTool>,
    prompts: Vec<ServerPrompt>,
    peer: Option<Peer<RoleClient>>,
    service: Option<RunningService<RoleClient, Handler>>,
    /// The child's process group (it is its leader), for stopping everything it started.
    pgid: Option<i32>,
    failures: u32,
    retry_at: Option<Instant>,
    disabled: bool,
}

pub struct McpServer {
    config: ServerConfig,
    env: Arc<McpEnv>,
    me: Weak<McpServer>,
    inner: Mutex<Inner>,
    /// One connection attempt at a time.
    connecting: tokio::sync::Mutex<()>,
    progress: ProgressRoutes,
    /// `false` while a connection attempt runs.
    settled: watch::Sender<bool>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

const STDERR_LINES: usize = 20;
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A lock that a panicked holder does not poison for the others (the state stays usable).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl McpServer {
    pub fn new(config: ServerConfig, env: Arc<McpEnv>) -> Arc<Self> {
        let disabled = config.disabled;
        Arc::new_cyclic(|me| McpServer {
            config,
            env,
            me: me.clone(),
            inner: Mutex::new(Inner {
                state: if disabled {
                    ServerState::Disabled
                } else {
                    ServerState::Starting
                },
                tools: Vec::new(),
                prompts: Vec::new(),
                peer: None,
                service: None,
                pgid: None,
                failures: 0,
                retry_at: None,
                disabled,
            }),
            connecting: tokio::sync::Mutex::new(()),
            progress: Arc::default(),
            settled: watch::Sender::new(disabled),
            stderr_tail: Arc::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The state, noticing a server that exited since its last use.
    pub fn state(&self) -> ServerState {
        let mut inner = lock(&self.inner);
        if inner.state == ServerState::Ready
            && inner.peer.as_ref().is_some_and(Peer::is_transport_closed)
        {
            inner.state = ServerState::Failed(self.exited_text());
            inner.peer = None;
            // What the server started may outlive it.
            if let Some(pgid) = inner.pgid.take() {
                kill_group(pgid);
            }
            inner.tools.clear();
            inner.prompts.clear();
        }
        inner.state.clone()
    }

    pub fn tools(&self) -> Vec<ServerTool> {
        lock(&self.inner).tools.clone()
    }

    pub fn prompts(&self) -> Vec<ServerPrompt> {
        lock(&self.inner).prompts.clone()
    }

    pub fn is_disabled(&self) -> bool {
        lock(&self.inner).disabled
    }

    /// Wait until no connection attempt runs.
    pub async fn settled(&self) {
        let mut rx = self.settled.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    fn exited_text(&self) -> String {
        let tail: Vec<String> = lock(&self.stderr_tail).iter().cloned().collect();
        if tail.is_empty() {
            "the server exited".to_string()
        } else {
            format!("the server exited; its last output: {}", tail.join(" | "))
        }
    }

    /// Connect (again), replacing a connection that is there. The outcome is in [`Self::state`].
    pub async fn connect(&self) {
        let _one = self.connecting.lock().await;
        if lock(&self.inner).disabled {
            return;
        }
        self.settled.send_replace(false);
        self.stop_connection().await;
        lock(&self.inner).state = ServerState::Starting;
        lock(&self.stderr_tail).clear();
        let timeout = self.env.startup_timeout;
        let outcome = match tokio::time::timeout(timeout, self.open()).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!(
                "did not finish starting within {} ms",
                timeout.as_millis()
            )),
        };
        let changed = {
            let mut inner = lock(&self.inner);
            match outcome {
                Ok(live) => {
                    inner.state = ServerState::Ready;
                    inner.tools = live.tools;
                    inner.prompts = live.prompts;
                    inner.peer = Some(live.service.peer().clone());
                    inner.service = Some(live.service);
                    inner.pgid = live.pgid;
                    inner.failures = 0;
                    inner.retry_at = None;
                    Ok(())
                }
                Err(error) => {
                    if let Some(pgid) = inner.pgid.take() {
                        kill_group(pgid);
                    }
                    inner.failures += 1;
                    let backoff =
                        Duration::from_secs(1 << (inner.failures - 1).min(5)).min(MAX_BACKOFF);
                    inner.retry_at = Some(Instant::now() + backoff);
                    inner.state = ServerState::Failed(error.clone());
                    Err(error)
                }
            }
        };
        if let Err(error) = &changed {
            tracing::warn!("MCP server {}: {error}", self.config.name);
            (self.env.on_failure)(&self.config.name, "startup", error);
        }
        self.settled.send_replace(true);
        (self.env.on_tools_changed)();
    }

    async fn open(&self) -> Result<Live, String> {
        let handler = Handler {
            server: self.me.clone(),
            info: client_config(&self.env),
            progress: self.progress.clone(),
        };
        let (service, pgid) = match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).envs(env);
                if let Some(dir) = cwd {
                    cmd.current_dir(dir);
                }
                // Its own process group, so that stopping it stops what it started too (npx → node, sh → ...).
                cmd.process_group(0);
                let (process, stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .map_err(|e| format!("cannot start {command}: {e}"))?;
                let pgid = process.id().map(|p| p as i32);
                // Known at once, so that a start that times out still stops the whole group.
                lock(&self.inner).pgid = pgid;
                if let Some(stderr) = stderr {
                    tokio::spawn(keep_stderr(
                        self.config.name.clone(),
                        stderr,
                        self.stderr_tail.clone(),
                    ));
                }
                match handler.serve(process).await {
                    Ok(service) => (service, pgid),
                    Err(e) => {
                        if let Some(pgid) = pgid {
                            kill_group(pgid);
                        }
                        // Give the stderr reader a moment: a server that dies at once says why there.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        return Err(self.with_stderr(format!("initialization failed: {e}")));
                    }
                }
            }
            Transport::Http { url, headers } => {
                use rmcp::transport::StreamableHttpClientTransport;
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                for (k, v) in headers {
                    let name = reqwest_header_name(k)?;
                    let value = v
                        .parse()
                        .map_err(|_| format!("header {k} has a value HTTP does not allow"))?;
                    config.custom_headers.insert(name, value);
                }
                let transport =
                    StreamableHttpClientTransport::with_client(http_client(url)?, config);
                let service = handler
                    .serve(transport)
                    .await
                    .map_err(|e| format!("initialization failed: {e}"))?;
                (service, None)
            }
        };
        let capabilities = service
            .peer()
            .peer_info()
            .map(|i| serde_json::to_value(&i.capabilities).unwrap_or_default())
            .unwrap_or_default();
        let tools = if capabilities.get("tools").is_some() {
            list_tools(service.peer()).await?
        } else {
            Vec::new()
        };
        let prompts = if capabilities.get("prompts").is_some() {
            list_prompts(service.peer()).await?
        } else {
            Vec::new()
        };
        Ok(Live {
            service,
            pgid,
            tools,
            prompts,
        })
    }

    fn with_stderr(&self, error: String) -> String {
        let tail: Vec<String> = lock(&self.stderr_tail).iter().cloned().collect();
        if tail.is_empty() {
            error
        } else {
            format!("{error}; the server wrote: {}", tail.join(" | "))
        }
    }

    /// The connection for a call: the live one, or a new one when the server failed or exited and its back-off
    /// has passed.
    async fn peer_for_use(&self) -> Result<Peer<RoleClient>, String> {
        self.settled().await;
        let state = self.state();
        match state {
            ServerState::Ready => {
                if let Some(peer) = lock(&self.inner).peer.clone() {
                    return Ok(peer);
                }
            }
            ServerState::Disabled => {
                return Err(format!("MCP server {} is disabled", self.config.name));
            }
            ServerState::Starting => {}
            ServerState::Failed(error) => {
                let retry_at = lock(&self.inner).retry_at;
                if let Some(at) = retry_at {
                    let now = Instant::now();
                    if at > now {
                        return Err(format!(
                            "MCP server {} is not available ({error}); next restart attempt in {} s",
                            self.config.name,
                            (at - now).as_secs().max(1)
                        ));
                    }
                }
            }
        }
        self.connect().await;
        match self.state() {
            ServerState::Ready => lock(&self.inner)
                .peer
                .clone()
                .ok_or_else(|| format!("MCP server {} is not connected", self.config.name)),
            ServerState::Failed(error) => Err(format!(
                "MCP server {} is not available: {error}",
                self.config.name
            )),
            other => Err(format!(
                "MCP server {} is {}",
                self.config.name,
                other.as_str()
            )),
        }
    }

    /// Call tool `tool` with `arguments`; progress goes to `on_update`; `cancel` (the run's abort) and the call
    /// timeout send the MCP cancellation and end the call at once.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let peer = self.peer_for_use().await.map_err(ToolError::new)?;
        let mut params = CallToolRequestParams::new(tool.to_string());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| self.call_error(e.to_string()))?;
        let id = handle.id.clone();
        let token = handle.progress_token.clone();
        lock(&self.progress).insert(token.clone(), on_update);
        let _route = RouteGuard {
            routes: self.progress.clone(),
            token,
        };
        let timeout = self
            .config
            .tool_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(self.env.tool_timeout);
        let reason = tokio::select! {
            response = handle.await_response() => {
                return match response {
                    Ok(ServerResult::CallToolResult(result)) => {
                        crate::content::tool_result(&serde_json::to_value(&result).unwrap_or_default())
                    }
                    Ok(other) => Err(ToolError::new(format!(
                        "MCP server {} answered tools/call with an unexpected result: {}",
                        self.config.name,
                        serde_json::to_string(&other).unwrap_or_default()
                    ))),
                    Err(e) => Err(self.call_error(e.to_string())),
                };
            }
            _ = cancel.cancelled() => "aborted".to_string(),
            _ = tokio::time::sleep(timeout) => format!("no answer within {} ms", timeout.as_millis()),
        };
        let notification = ClientNotification::CancelledNotification(CancelledNotification::new(
            CancelledNotificationParam::new(Some(id), Some(reason.clone())),
        ));
        if let Err(e) = peer.send_notification(notification).await {
            tracing::debug!(
                "MCP server {}: cancellation not sent: {e}",
                self.config.name
            );
        }
        Err(ToolError::new(if reason == "aborted" {
            "Tool call aborted".to_string()
        } else {
            format!(
                "MCP server {} gave {reason} for tool {tool}; the call was cancelled",
                self.config.name
            )
        }))
    }

    fn call_error(&self, error: String) -> ToolError {
        let exited = lock(&self.inner)
            .peer
            .as_ref()
            .is_some_and(Peer::is_transport_closed);
        if exited {
            self.state();
            // The server died mid-call: the next use restarts it (after the back-off).
            let mut inner = lock(&self.inner);
            inner.failures += 1;
            inner.retry_at = Some(Instant::now() + Duration::from_secs(1));
            drop(inner);
            (self.env.on_tools_changed)();
            return ToolError::new(format!(
                "MCP server {}: {}; it will be restarted on next use",
                self.config.name,
                self.exited_text()
            ));
        }
        ToolError::new(format!("MCP server {}: {error}", self.config.name))
    }

    /// `prompts/get` with `arguments`, as the text of a user message.
    pub async fn get_prompt(
        &self,
        prompt: &str,
        arguments: Map<String, Value>,
    ) -> Result<String, String> {
        let peer = self.peer_for_use().await?;
        let mut params = GetPromptRequestParams::new(prompt.to_string());
        if !arguments.is_empty() {
            params = params.with_arguments(arguments);
        }
        let result = tokio::time::timeout(self.env.tool_timeout, peer.get_prompt(params))
            .await
            .map_err(|_| format!("MCP server {} did not answer prompts/get", self.config.name))?
            .map_err(|e| format!("MCP server {}: {e}", self.config.name))?;
        Ok(crate::content::prompt_text(
            &serde_json::to_value(&result).unwrap_or_default(),
        ))
    }

    /// Re-list tools and prompts after a `list_changed` notification.
    async fn refresh_lists(&self) {
        let Some(peer) = lock(&self.inner).peer.clone() else {
            return;
        };
        let tools = list_tools(&peer).await;
        let prompts = list_prompts(&peer).await;
        {
            let mut inner = lock(&self.inner);
            if let Ok(tools) = tools {
                inner.tools = tools;
            }
            if let Ok(prompts) = prompts {
                inner.prompts = prompts;
            }
        }
        (self.env.on_tools_changed)();
    }

    /// Disable (stop, and refuse calls) or enable (and connect).
    pub async fn set_enabled(&self, enabled: bool) {
        if enabled {
            {
                let mut inner = lock(&self.inner);
                inner.disabled = false;
                inner.retry_at = None;
                inner.failures = 0;
            }
            self.connect().await;
        } else {
            let _one = self.connecting.lock().await;
            lock(&self.inner).disabled = true;
            self.stop_connection().await;
            let mut inner = lock(&self.inner);
            inner.state = ServerState::Disabled;
            drop(inner);
            self.settled.send_replace(true);
            (self.env.on_tools_changed)();
        }
    }

    /// Close the connection and stop the process group (SIGTERM, then SIGKILL after a grace period).
    async fn stop_connection(&self) {
        let (service, pgid) = {
            let mut inner = lock(&self.inner);
            inner.peer = None;
            inner.tools.clear();
            inner.prompts.clear();
            (inner.service.take(), inner.pgid.take())
        };
        if let Some(mut service) = service {
            let _ = tokio::time::timeout(Duration::from_millis(500), service.close()).await;
        }
        if let Some(pgid) = pgid {
            stop_group(pgid).await;
        }
    }

    /// Stop for good (the session ends).
    pub async fn shutdown(&self) {
        let _one = self.connecting.lock().await;
        self.stop_connection().await;
    }
}

struct Live {
    service: RunningService<RoleClient, Handler>,
    pgid: Option<i32>,
    tools: Vec<ServerTool>,
    prompts: Vec<ServerPrompt>,
}

struct RouteGuard {
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        lock(&self.routes).remove(&self.token);
    }
}

/// The HTTP client of a Streamable HTTP server: TLS with ring (installed once, as the providers do), no idle
/// pooling (the SDK's advice: a reused half-read connection stalls on delayed ACKs), no redirects (they would replay
/// the session id and headers elsewhere), no proxy for loopback.
fn http_client(url: &str) -> Result<reqwest::Client, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let loopback = reqwest::Url::parse(url)
        .map_err(|e| format!("invalid url {url}: {e}"))?
        .host_str()
        .is_some_and(|h| h == "localhost" || h == "[::1]" || h.starts_with("127."));
    let mut b = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(30));
    if loopback {
        b = b.no_proxy();
    }
    b.build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

fn reqwest_header_name(name: &str) -> Result<http::HeaderName, String> {
    name.parse()
        .map_err(|_| format!("{name:?} is not a valid HTTP header name"))
}

fn client_config(env: &McpEnv) -> ClientConfig {
    // Built from its wire form: the SDK's structs are non-exhaustive, the protocol's JSON is stable.
    serde_json::from_value(json!({
        "protocolVersion": rmcp::model::ProtocolVersion::default(),
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": env.client_name, "version": env.client_version},
    }))
    .expect("a valid initialize request")
}

async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<ServerTool>, String> {
    let tools = peer
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    Ok(tools
        .into_iter()
        .map(|t| {
            let v = serde_json::to_value(&t).unwrap_or_default();
            ServerTool {
                name: t.name.to_string(),
                description: v
                    .get("description")
                    .or_else(|| v.get("title"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                input_schema: v
                    .get("inputSchema")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"})),
            }
        })
        .collect())
}

async fn list_prompts(peer: &Peer<RoleClient>) -> Result<Vec<ServerPrompt>, String> {
    let prompts = peer
        .list_all_prompts()
        .await
        .map_err(|e| format!("prompts/list failed: {e}"))?;
    Ok(prompts
        .into_iter()
        .map(|p| {
            let v = serde_json::to_value(&p).unwrap_or_default();
            ServerPrompt {
                name: p.name.to_string(),
                description: v
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                arguments: v
                    .get("arguments")
                    .and_then(Value::as_array)
                    .map(|args| {
                        args.iter()
                            .filter_map(|a| {
                                Some((
                                    a.get("name")?.as_str()?.to_string(),
                                    a.get("required").and_then(Value::as_bool).unwrap_or(false),
                                ))
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect())
}

async fn keep_stderr(
    name: String,
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!("MCP server {name}: {line}");
        let mut tail = lock(&tail);
        if tail.len() == STDERR_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
}

fn kill_group(pgid: i32) {
    use nix::sys::signal::{Signal, killpg};
    let _ = killpg(nix::unistd::Pid::from_raw(pgid), Signal::SIGKILL);
}

/// SIGTERM to the group, SIGKILL if its leader is still there after 1 s.
async fn stop_group(pgid: i32) {
    use nix::sys::signal::{Signal, killpg};
    let group = nix::unistd::Pid::from_raw(pgid);
    if killpg(group, Signal::SIGTERM).is_err() {
        return; // already gone
    }
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if killpg(group, None).is_err() {
            return;
        }
    }
    let _ = killpg(group, Signal::SIGKILL);
}

/// The SDK's client side of one connection: dialogs for elicitations, progress to the running call,
/// `list_changed` to a refresh.
struct Handler {
    server: Weak<McpServer>,
    info: ClientConfig,
    progress: ProgressRoutes,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(server) = self.server.upgrade() else {
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        };
        let params = serde_json::to_value(&request).unwrap_or_default();
        if params.get("mode").and_then(Value::as_str) == Some("url") {
            // Not advertised: a URL to open needs a browser the host may not have.
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        }
        Ok(
            match elicit::ask(server.env.dialogs.as_ref(), server.name(), &params).await {
                elicit::Answer::Accept(content) => ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(content)),
                elicit::Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
                elicit::Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
            },
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let update = lock(&self.progress).get(&params.progress_token).cloned();
        let Some(update) = update else { return };
        let mut text = match params.total {
            Some(total) => format!("{}/{}", params.progress, total),
            None => format!("{}", params.progress),
        };
        if let Some(m) = &params.message {
            text = format!("{text} {m}");
        }
        update(ToolOutput {
            content: vec![UserBlock::Text(TextContent {
                text,
                text_signature: None,
                ..Default::default()
            })],
            details: Some(json!({
                "progress": params.progress,
                "total": params.total,
                "message": params.message,
            })),
            end_turn: false,
        });
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            tokio::spawn(async move { server.refresh_lists().await });
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(server) = self.server.upgrade() {
            tokio::spawn(async move { server.refresh_lists().await });
        }
    }
}
