//! One loaded extension: its process (started on first use, started again after a crash, at most
//! [`MAX_STARTS`] times), what it registered, and its running tool calls.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use dreb_agent::{ToolOutput, ToolUpdateFn};
use dreb_extension_protocol as ext;
use dreb_extension_protocol::{CallSpec, Command, ResponseData};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::connection::{CommandServer, Connection, OnExit};
use crate::discovery::{ExtensionSource, Launch};
use crate::env::HostEnv;
use crate::error::ExtensionError;
use crate::node::NodeHost;

/// How often a session starts one extension's process (the first start and two restarts after crashes).
pub const MAX_STARTS: u32 = 3;

/// How long `initialize` may take.
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long `session_shutdown` may take, and then how long the process has to exit after its stdin closed.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

/// The wire name of a generated enum value (open enums keep unknown names).
pub(crate) fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

/// A loaded extension.
pub struct Extension {
    source: ExtensionSource,
    path: String,
    env: Arc<HostEnv>,
    /// The session's Node extension host, which runs it when it is JavaScript.
    node: Arc<NodeHost>,
    conn: tokio::sync::Mutex<Option<Arc<Connection>>>,
    registration: RwLock<ext::Registration>,
    /// The wire names of `registration.events`, asked on every hook call and agent event.
    subscriptions: RwLock<HashSet<String>>,
    starts: AtomicU32,
    /// Set by [`Extension::stop`]: the exit that follows is not a crash.
    stopping: AtomicBool,
    /// `tool_update` targets, by tool call id.
    running_tools: Mutex<HashMap<String, ToolUpdateFn>>,
    me: Weak<Extension>,
}

impl std::fmt::Debug for Extension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extension")
            .field("path", &self.path)
            .finish()
    }
}

impl Extension {
    pub(crate) fn new(
        source: ExtensionSource,
        env: Arc<HostEnv>,
        node: Arc<NodeHost>,
    ) -> Arc<Extension> {
        let path = source.path.to_string_lossy().into_owned();
        Arc::new_cyclic(|me| Extension {
            source,
            path,
            env,
            node,
            conn: tokio::sync::Mutex::new(None),
            registration: RwLock::new(ext::Registration {
                name: None,
                commands: None,
                tools: None,
                flags: None,
                events: None,
                providers: None,
            }),
            subscriptions: RwLock::new(HashSet::new()),
            starts: AtomicU32::new(0),
            stopping: AtomicBool::new(false),
            running_tools: Mutex::new(HashMap::new()),
            me: me.clone(),
        })
    }

    /// The path it was loaded from (its name in `extension_error`).
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn source(&self) -> &ExtensionSource {
        &self.source
    }

    /// What it registered (a copy).
    pub fn registration(&self) -> ext::Registration {
        self.registration
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Its name in `get_resources`: the name it registered (a dreb-rs addition), else the reference's
    /// `sourceInfo.source` (`cli` for `-e`, `local` for the others).
    pub fn name(&self) -> String {
        self.registration()
            .name
            .unwrap_or_else(|| self.source.source.to_string())
    }

    /// Whether it subscribed to `event`.
    pub fn subscribes(&self, event: &str) -> bool {
        self.subscriptions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(event)
    }

    /// Replace what it registered (and the subscriptions derived from it).
    fn set_registration(&self, registration: ext::Registration) {
        *self
            .subscriptions
            .write()
            .unwrap_or_else(|e| e.into_inner()) = registration
            .events
            .iter()
            .flatten()
            .map(wire_name)
            .collect();
        *self.registration.write().unwrap_or_else(|e| e.into_inner()) = registration;
    }

    /// The running process, started (and initialised) when there is none.
    pub async fn connection(&self) -> Result<Arc<Connection>, ExtensionError> {
        let mut slot = self.conn.lock().await;
        if let Some(conn) = slot.as_ref()
            && !conn.is_closed()
        {
            return Ok(conn.clone());
        }
        if self.stopping.load(Ordering::Acquire) {
            return Err(ExtensionError::Unavailable(format!(
                "Extension {} is stopped",
                self.path
            )));
        }
        let n = self.starts.fetch_add(1, Ordering::AcqRel);
        if n >= MAX_STARTS {
            return Err(ExtensionError::Unavailable(format!(
                "Extension {} crashed {} times and is not started again in this session",
                self.path, MAX_STARTS
            )));
        }
        if n > 0 {
            // Back off before a restart: 250 ms, then 1 s.
            tokio::time::sleep(Duration::from_millis(if n == 1 { 250 } else { 1000 })).await;
        }
        let conn = self.spawn().await?;
        let init = conn
            .call(
                ext::InitializeParams {
                    protocol_version: ext::PROTOCOL_VERSION.to_string(),
                    extension_path: self.path.clone(),
                    cwd: self.env.cwd.to_string_lossy().into_owned(),
                    agent_dir: self.env.agent_dir.to_string_lossy().into_owned(),
                    has_ui: self.env.has_ui,
                    flag_values: self.env.flag_values.clone(),
                },
                Some(INITIALIZE_TIMEOUT),
                None,
            )
            .await;
        let init = match init {
            Ok(init) => init,
            Err(e) => {
                conn.stop(Duration::from_millis(200)).await;
                return Err(e);
            }
        };
        self.set_registration(init.registration);
        *slot = Some(conn.clone());
        if n > 0 {
            self.env.api.registrations_changed();
        }
        Ok(conn)
    }

    /// Its connection: a process of its own, or a channel of the session's Node extension host.
    async fn spawn(&self) -> Result<Arc<Connection>, ExtensionError> {
        let server = Arc::new(ExtensionCommands {
            ext: self.me.clone(),
        });
        let me = self.me.clone();
        let on_exit: OnExit = Box::new(move |reason| {
            if let Some(ext) = me.upgrade()
                && !ext.stopping.load(Ordering::Acquire)
            {
                ext.env.report(&ext.path, "process", &reason);
            }
        });
        match &self.source.launch {
            Launch::Process { program, args } => {
                Connection::spawn(&self.path, program, args, &self.env.cwd, server, on_exit)
            }
            Launch::JavaScript => self.node.open(&self.path, server, on_exit).await,
        }
    }

    /// A call to the extension, starting it when needed.
    pub async fn call<C: CallSpec>(
        &self,
        params: C,
        timeout: Option<Duration>,
        cancel: Option<&CancellationToken>,
    ) -> Result<C::Output, ExtensionError> {
        let conn = self.connection().await?;
        conn.call(params, timeout, cancel).await
    }

    /// Send an event when the process is running (events never start it).
    pub async fn notify(&self, event: &ext::Event) {
        // A process being started hears of nothing until it is ready (the event path never waits for it).
        if let Ok(slot) = self.conn.try_lock()
            && let Some(conn) = slot.as_ref()
            && !conn.is_closed()
        {
            conn.notify(event).await;
        }
    }

    /// Run one of its tools; `on_update` gets its `tool_update`s.
    pub async fn execute_tool(
        &self,
        tool_name: &str,
        tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<ext::ToolExecutionResult, ExtensionError> {
        let params = match params {
            Value::Object(map) => map,
            _ => Default::default(),
        };
        self.running_tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tool_call_id.to_string(), on_update);
        let result = self
            .call(
                ext::ExecuteToolParams {
                    tool_name: tool_name.to_string(),
                    tool_call_id: tool_call_id.to_string(),
                    params,
                },
                None,
                Some(&cancel),
            )
            .await;
        self.running_tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(tool_call_id);
        result
    }

    /// `session_shutdown`, then stop the process (no restart afterwards).
    pub async fn stop(&self) {
        let conn = self.conn.lock().await.clone();
        let Some(conn) = conn.filter(|c| !c.is_closed()) else {
            self.stopping.store(true, Ordering::Release);
            return;
        };
        if self.subscribes("session_shutdown")
            && let Err(e) = conn
                .call(ext::SessionShutdownParams {}, Some(SHUTDOWN_TIMEOUT), None)
                .await
        {
            self.env
                .report(&self.path, "session_shutdown", &e.to_string());
        }
        self.stopping.store(true, Ordering::Release);
        conn.stop(EXIT_GRACE).await;
    }

    fn tool_update(&self, p: ext::ToolUpdateParams) -> Result<(), String> {
        let target = self
            .running_tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&p.tool_call_id)
            .cloned();
        let Some(update) = target else {
            return Err(format!("No running tool call {}", p.tool_call_id));
        };
        let partial: ToolOutput = match serde_json::from_value(p.partial_result.clone()) {
            Ok(output) => output,
            // Any JSON is accepted; a value that is not a tool result is shown as its text.
            Err(_) => ToolOutput::text(p.partial_result.to_string()),
        };
        update(partial);
        Ok(())
    }

    fn register(&self, more: ext::Registration) {
        let mut reg = self.registration();
        if more.name.is_some() {
            reg.name = more.name;
        }
        extend(&mut reg.commands, more.commands, |c| c.name.clone());
        extend(&mut reg.tools, more.tools, |t| t.name.clone());
        extend(&mut reg.flags, more.flags, |f| f.name.clone());
        extend(&mut reg.events, more.events, wire_name);
        extend(&mut reg.providers, more.providers, |p| p.name.clone());
        self.set_registration(reg);
        self.env.api.registrations_changed();
    }

    fn unregister_provider(&self, name: &str) {
        let mut reg = self.registration();
        if let Some(list) = reg.providers.as_mut() {
            list.retain(|p| p.name != name);
        }
        self.set_registration(reg);
        self.env.api.registrations_changed();
    }
}

/// Add `more` to `list`; an entry with the same key replaces the old one.
fn extend<T>(list: &mut Option<Vec<T>>, more: Option<Vec<T>>, key: impl Fn(&T) -> String) {
    let Some(more) = more else {
        return;
    };
    let list = list.get_or_insert_with(Vec::new);
    for item in more {
        let k = key(&item);
        match list.iter_mut().find(|x| key(x) == k) {
            Some(slot) => *slot = item,
            None => list.push(item),
        }
    }
}

/// Answers one extension's commands: registrations and tool progress here, the rest by the runtime's API.
struct ExtensionCommands {
    ext: Weak<Extension>,
}

#[async_trait::async_trait]
impl CommandServer for ExtensionCommands {
    async fn serve(&self, command: Command) -> Result<ResponseData, String> {
        let Some(ext) = self.ext.upgrade() else {
            return Err("The session has ended".into());
        };
        match command {
            Command::Register(p) => {
                ext.register(p.registration);
                Ok(ResponseData::Register)
            }
            Command::ToolUpdate(p) => ext.tool_update(p).map(|()| ResponseData::ToolUpdate),
            Command::UnregisterProvider(p) => {
                ext.unregister_provider(&p.name);
                Ok(ResponseData::UnregisterProvider)
            }
            other => ext.env.api.serve(&ext.path, other).await,
        }
    }
}
