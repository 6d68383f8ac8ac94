//! One ACP session: a runtime of its own (its cwd, its session file) and the pump, the one task that writes the
//! session's lines. Every frame of the runtime, every update we add and the answer of each prompt pass through the
//! pump's queue in order, so a prompt's response is written after the last update of its turn.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, CreateElicitationRequest,
    CreateElicitationResponse, ElicitationFormMode, ElicitationSchema, ElicitationSessionScope,
    Error as RpcError, ErrorCode, PromptRequest, PromptResponse, RequestId,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, SessionId,
    SessionNotification, SessionUpdate, StopReason, TerminalId, ToolCall, ToolCallId,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UnstructuredCommandInput,
};
use dreb_protocol::handlers::{DiscoveryHandler as _, PromptingHandler as _};
use dreb_protocol::support::RequestContext;
use dreb_protocol::{AbortParams, FrameSink, GetCommandsParams, Input};
use dreb_runtime::Runtime;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::connection::{Connection, PeerError};
use crate::dialogs::{self, Dialog, DialogKind, Route};
use crate::prompt;
use crate::translate::Translator;

/// What the pump handles, in arrival order.
enum PumpInput {
    /// Encoded event frames of the runtime (one or more lines).
    Frames(Vec<u8>),
    /// An update of ours (`available_commands_update`, `config_option_update`).
    Update(Box<SessionUpdate>),
    PromptStarted,
    /// The run of prompt `id` settled: answer it.
    PromptSettled {
        id: RequestId,
        cancelled: bool,
    },
    /// Prompt `id` failed to start.
    PromptFailed {
        id: RequestId,
        error: RpcError,
    },
    /// A tool call's command runs in the client's terminal `terminal`.
    Terminal {
        tool_call: String,
        terminal: TerminalId,
    },
    /// What a `write` call's file held before (`None`: a new file).
    PriorText {
        tool_call: String,
        text: Option<String>,
    },
}

/// What the session's tools tell the pump, in order with the runtime's frames.
#[derive(Clone)]
pub struct Notes(mpsc::UnboundedSender<PumpInput>);

impl Notes {
    pub fn terminal(&self, tool_call: &str, terminal: TerminalId) {
        let _ = self.0.send(PumpInput::Terminal {
            tool_call: tool_call.to_string(),
            terminal,
        });
    }

    pub fn prior_text(&self, tool_call: &str, text: Option<String>) {
        let _ = self.0.send(PumpInput::PriorText {
            tool_call: tool_call.to_string(),
            text,
        });
    }
}

/// The runtime's frame sink: frames go to the pump's queue (never blocks the runtime).
struct PumpSink(mpsc::UnboundedSender<PumpInput>);

impl FrameSink for PumpSink {
    fn send_frame(&self, frame: Vec<u8>) {
        let _ = self.0.send(PumpInput::Frames(frame));
    }
}

/// The queue a runtime starts with, before the session exists: its frames wait there until the pump starts.
pub struct Inbox {
    tx: mpsc::UnboundedSender<PumpInput>,
    rx: mpsc::UnboundedReceiver<PumpInput>,
}

impl Inbox {
    pub fn new() -> Inbox {
        let (tx, rx) = mpsc::unbounded_channel();
        Inbox { tx, rx }
    }

    pub fn sink(&self) -> Arc<dyn FrameSink> {
        Arc::new(PumpSink(self.tx.clone()))
    }

    pub fn notes(&self) -> Notes {
        Notes(self.tx.clone())
    }
}

impl Default for Inbox {
    fn default() -> Self {
        Self::new()
    }
}

pub struct Session {
    pub runtime: Runtime,
    pub cwd: PathBuf,
    queue: mpsc::UnboundedSender<PumpInput>,
    cancelled: Arc<AtomicBool>,
    /// One prompt at a time, as ACP's turn model has it: set when a prompt starts, cleared by the pump just before
    /// it writes that prompt's response (so a client that waited for the response can always prompt again).
    busy: Arc<AtomicBool>,
}

impl Session {
    /// The session and its pump over `inbox` (frames queued since the runtime started are written first). Run the
    /// pump ([`Pump::run`]) after the response that tells the client the session id, so no update precedes it;
    /// register the session before that response, so the client's next request finds it.
    pub fn new(
        runtime: Runtime,
        cwd: PathBuf,
        inbox: Inbox,
        id: SessionId,
        conn: Connection,
        forms: bool,
    ) -> (Session, Pump) {
        let busy = Arc::new(AtomicBool::new(false));
        let pump = Pump {
            busy: busy.clone(),
            conn,
            session_id: id,
            translator: Translator::new(cwd.clone()),
            runtime: runtime.clone(),
            always_allowed: Arc::new(Mutex::new(HashSet::new())),
            dialog_calls: HashSet::new(),
            asking: Arc::new(Mutex::new(HashMap::new())),
            commands: None,
            forms,
            rx: inbox.rx,
        };
        let session = Session {
            runtime,
            cwd,
            queue: inbox.tx,
            cancelled: Arc::new(AtomicBool::new(false)),
            busy,
        };
        (session, pump)
    }

    pub fn send_update(&self, update: SessionUpdate) {
        let _ = self.queue.send(PumpInput::Update(Box::new(update)));
    }

    /// Runs a prompt to the end. The response is written by the pump (after the turn's last update), so this
    /// returns nothing to answer; a prompt refused before it starts is answered here.
    pub async fn prompt(
        &self,
        id: RequestId,
        req: PromptRequest,
    ) -> Option<Result<Value, RpcError>> {
        let params = match prompt::to_params(&req.prompt) {
            Ok(p) => p,
            Err(e) => return Some(Err(RpcError::invalid_params().data(e.to_string()))),
        };
        if self
            .busy
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Some(Err(RpcError::invalid_request().data(
                "a prompt is already running in this session; cancel it or wait for its response",
            )));
        }
        self.cancelled.store(false, Ordering::SeqCst);
        let _ = self.queue.send(PumpInput::PromptStarted);
        let ctx = RequestContext::detached(None);
        if let Err(e) = self.runtime.prompt(&ctx, params).await {
            let _ = self.queue.send(PumpInput::PromptFailed {
                id,
                error: RpcError::new(-32603, e),
            });
            return None;
        }
        self.runtime.wait_until_settled().await;
        // Extensions and MCP servers load in the background: their commands may be new (sent only on a change).
        if let Ok(update) = commands(&self.runtime).await {
            self.send_update(update);
        }
        let _ = self.queue.send(PumpInput::PromptSettled {
            id,
            cancelled: self.cancelled.load(Ordering::SeqCst),
        });
        None
    }

    /// `session/cancel`: the run stops (with its bash processes and background subagents); the prompt then
    /// answers `cancelled`.
    pub async fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        let _ = self
            .runtime
            .abort(&RequestContext::detached(None), AbortParams {})
            .await;
    }
}

/// Writes one session's lines in order (see the module doc).
pub struct Pump {
    rx: mpsc::UnboundedReceiver<PumpInput>,
    busy: Arc<AtomicBool>,
    conn: Connection,
    session_id: SessionId,
    translator: Translator,
    runtime: Runtime,
    /// Commands the user allowed for good in this session (the gate's "always" answer).
    always_allowed: Arc<Mutex<HashSet<String>>>,
    /// Dialogs outside a tool call that were shown as a tool call of their own (`dialog-<id>`).
    dialog_calls: HashSet<String>,
    /// The permission request each open dialog waits on (by dialog id), until the client answers it.
    asking: Arc<Mutex<HashMap<String, RequestId>>>,
    /// The commands last sent (an unchanged list is not sent again).
    commands: Option<AvailableCommandsUpdate>,
    /// The client offers form elicitation (free-text dialogs are asked as forms).
    forms: bool,
}

impl Pump {
    pub async fn run(mut self) {
        while let Some(input) = self.rx.recv().await {
            match input {
                PumpInput::Frames(bytes) => {
                    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                        match serde_json::from_slice::<Value>(line) {
                            Ok(frame) => self.frame(&frame),
                            Err(e) => tracing::warn!("unreadable runtime frame: {e}"),
                        }
                    }
                }
                PumpInput::Update(u) => {
                    if let SessionUpdate::AvailableCommandsUpdate(list) = &*u {
                        if self.commands.as_ref() == Some(list) {
                            continue;
                        }
                        self.commands = Some(list.clone());
                    }
                    self.update(*u)
                }
                PumpInput::PromptStarted => self.translator.begin_prompt(),
                PumpInput::PromptSettled { id, cancelled } => {
                    let result = self.stop_reason(cancelled).and_then(|r| {
                        serde_json::to_value(PromptResponse::new(r))
                            .map_err(RpcError::into_internal_error)
                    });
                    self.busy.store(false, Ordering::SeqCst);
                    self.conn.respond(&id, result);
                }
                PumpInput::PromptFailed { id, error } => {
                    self.busy.store(false, Ordering::SeqCst);
                    self.conn.respond(&id, Err(error));
                }
                PumpInput::Terminal {
                    tool_call,
                    terminal,
                } => {
                    if let Some(u) = self.translator.attach_terminal(&tool_call, terminal) {
                        self.update(u);
                    }
                }
                PumpInput::PriorText { tool_call, text } => {
                    if let Some(u) = self.translator.prior_text(&tool_call, text) {
                        self.update(u);
                    }
                }
            }
        }
    }

    fn update(&self, update: SessionUpdate) {
        self.conn.notify(
            "session/update",
            &SessionNotification::new(self.session_id.clone(), update),
        );
    }

    fn stop_reason(&self, cancelled: bool) -> Result<StopReason, RpcError> {
        let reply = self.translator.last_reply();
        if cancelled || reply.is_some_and(|r| r.stop_reason == "aborted") {
            return Ok(StopReason::Cancelled);
        }
        match reply {
            Some(r) if r.stop_reason == "length" => Ok(StopReason::MaxTokens),
            Some(r) if r.stop_reason == "error" => Err(RpcError::new(
                -32603,
                r.error
                    .clone()
                    .unwrap_or_else(|| "the model request failed".into()),
            )),
            _ => Ok(StopReason::EndTurn),
        }
    }

    fn frame(&mut self, frame: &Value) {
        match frame.get("type").and_then(Value::as_str) {
            Some("extension_ui_request") => {
                if let Some(dialog) = dialogs::parse(frame) {
                    self.dialog(dialog);
                }
            }
            Some("extension_ui_response_handled") => {
                // A dialog shown as its own tool call ends with it, in order with the turn's other updates.
                let id = frame.get("id").and_then(Value::as_str).unwrap_or("");
                // Settled without the client's answer (a timeout, an abort): withdraw the request it still shows.
                let unanswered = lock(&self.asking).remove(id);
                if let Some(request) = unanswered {
                    self.conn.cancel_request(&request);
                }
                if self.dialog_calls.remove(id) {
                    self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        format!("dialog-{id}"),
                        ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
                    )));
                }
            }
            _ => {
                for u in self.translator.frame(frame) {
                    self.update(u);
                }
            }
        }
    }

    fn dialog(&mut self, dialog: Dialog) {
        let allowed_before = matches!(&dialog.kind, DialogKind::Gate { command, .. }
            if lock(&self.always_allowed).contains(command));
        if allowed_before {
            let answer = dialogs::response(&dialog, &[Some(dialogs::ALLOW_ONCE.to_string())]);
            self.runtime
                .handle_input(&Input::ExtensionUiResponse(answer));
            return;
        }
        let steps = match dialogs::route(&dialog, self.forms) {
            Route::Permission(steps) => steps,
            Route::Form { message, schema } => return self.form(dialog, message, schema),
            Route::Answer(answer) => {
                self.runtime
                    .handle_input(&Input::ExtensionUiResponse(answer));
                return;
            }
        };
        let tool_call = match self.translator.running_call() {
            Some(call) => call,
            None => {
                // Not about a tool call (an extension's dialog): shown as a tool call of its own.
                let id = format!("dialog-{}", dialog.id);
                self.update(SessionUpdate::ToolCall(
                    ToolCall::new(ToolCallId::new(id.as_str()), steps[0].title.clone())
                        .kind(ToolKind::Other)
                        .status(ToolCallStatus::Pending),
                ));
                self.dialog_calls.insert(dialog.id.clone());
                ToolCallUpdate::new(ToolCallId::new(id), ToolCallUpdateFields::new())
            }
        };
        // The first request is queued now, in order with the updates before it; the answers come later.
        let session_id = self.session_id.clone();
        let mut requests = steps.into_iter().map(move |step| {
            let fields = tool_call.fields.clone().title(step.title);
            RequestPermissionRequest::new(
                session_id.clone(),
                ToolCallUpdate::new(tool_call.tool_call_id.clone(), fields),
                step.options,
            )
        });
        let first = requests.next().expect("steps is not empty");
        let first = self.conn.request("session/request_permission", &first);
        lock(&self.asking).insert(dialog.id.clone(), first.id.clone());
        let rest: Vec<_> = requests.collect();
        let conn = self.conn.clone();
        let runtime = self.runtime.clone();
        let always = self.always_allowed.clone();
        let asking = self.asking.clone();
        tokio::spawn(async move {
            let mut chosen = vec![outcome(first.get().await)];
            for req in rest {
                if chosen.last().is_some_and(Option::is_none) {
                    break;
                }
                let answer = conn.request("session/request_permission", &req);
                // Only while the dialog is still open (the pump withdraws it once it settled).
                match lock(&asking).get_mut(&dialog.id) {
                    Some(waiting) => *waiting = answer.id.clone(),
                    None => {
                        conn.cancel_request(&answer.id);
                    }
                }
                chosen.push(outcome(answer.get().await));
            }
            lock(&asking).remove(&dialog.id);
            if let DialogKind::Gate { command, .. } = &dialog.kind
                && chosen[0].as_deref() == Some(dialogs::ALLOW_ALWAYS)
            {
                lock(&always).insert(command.clone());
            }
            runtime.handle_input(&Input::ExtensionUiResponse(dialogs::response(
                &dialog, &chosen,
            )));
        });
    }
}

impl Pump {
    /// A dialog as one `elicitation/create` form, about the running tool call when there is one.
    fn form(&mut self, dialog: Dialog, message: String, schema: ElicitationSchema) {
        let scope = ElicitationSessionScope::new(self.session_id.clone())
            .tool_call_id(self.translator.running_call().map(|c| c.tool_call_id));
        let request =
            CreateElicitationRequest::new(ElicitationFormMode::new(scope, schema), message);
        let answer = self.conn.request("elicitation/create", &request);
        lock(&self.asking).insert(dialog.id.clone(), answer.id.clone());
        let runtime = self.runtime.clone();
        let asking = self.asking.clone();
        tokio::spawn(async move {
            let action = match answer.get::<CreateElicitationResponse>().await {
                Ok(r) => Some(r.action),
                Err(PeerError::Rejected(e)) if e.code == ErrorCode::RequestCancelled => None,
                Err(e) => {
                    tracing::warn!("elicitation failed: {e}");
                    None
                }
            };
            lock(&asking).remove(&dialog.id);
            runtime.handle_input(&Input::ExtensionUiResponse(dialogs::form_response(
                &dialog,
                action.as_ref(),
            )));
        });
    }
}

/// The chosen option's id; `None` when the client cancelled or could not answer.
fn outcome(answer: Result<RequestPermissionResponse, PeerError>) -> Option<String> {
    match answer {
        Ok(r) => match r.outcome {
            RequestPermissionOutcome::Selected(s) => Some(s.option_id.to_string()),
            _ => None,
        },
        // Withdrawn by us: its dialog had already settled.
        Err(PeerError::Rejected(e)) if e.code == ErrorCode::RequestCancelled => None,
        Err(e) => {
            tracing::warn!("permission request failed: {e}");
            None
        }
    }
}

/// Our commands, skills and prompt templates as ACP commands (built-ins are the client's to handle: `prompt`
/// refuses them).
pub async fn commands(runtime: &Runtime) -> Result<SessionUpdate, RpcError> {
    let list = runtime
        .get_commands(&RequestContext::detached(None), GetCommandsParams {})
        .await
        .map_err(|e| RpcError::new(-32603, e))?;
    let list = serde_json::to_value(&list.commands).map_err(RpcError::into_internal_error)?;
    let commands = list
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c.get("source").and_then(Value::as_str) != Some("builtin"))
        .filter_map(|c| {
            let name = c.get("name").and_then(Value::as_str)?;
            let description = c.get("description").and_then(Value::as_str).unwrap_or("");
            Some(AvailableCommand::new(name, description).input(
                AvailableCommandInput::Unstructured(UnstructuredCommandInput::new("arguments")),
            ))
        })
        .collect();
    Ok(SessionUpdate::AvailableCommandsUpdate(
        AvailableCommandsUpdate::new(commands),
    ))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
