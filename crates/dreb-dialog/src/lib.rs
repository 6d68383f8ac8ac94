//! The extension-UI dialog engine: the agent side of the `extension_ui_request` /
//! `extension_ui_response` sub-protocol (`protocol/rpc.yaml`, host guide in `docs/extension-ui.md`).
//!
//! [`DialogEngine`] is cheap to clone and `Send + Sync`. It writes encoded frames to a [`FrameSink`] (the
//! runtime connects it to the ordered stdout writer) and keeps a table of pending dialogs.
//!
//! - Blocking methods — [`select`](DialogEngine::select), [`confirm`](DialogEngine::confirm),
//!   [`input`](DialogEngine::input), [`editor`](DialogEngine::editor), [`ask`](DialogEngine::ask) — emit
//!   an `extension_ui_request` with a fresh UUID `id` (plus `timeout` in ms when one is given, and for
//!   `ask` also `expiresAt` = now + timeout in ms since the epoch, as in the reference), wait for the
//!   matching answer and settle exactly once: host answer, timeout, abort ([`DialogOptions::cancel`], e.g.
//!   the agent run's token), shutdown ([`DialogEngine::cancel_all`]), or the caller dropping the future.
//!   Every settlement of an emitted dialog writes `extension_ui_response_handled {id}` exactly once. A
//!   token that is already cancelled, or a call after shutdown, resolves to the default without emitting.
//! - Defaults: `select`/`input`/`editor` → `None`, `confirm` → `false`, `ask` → `Ok(None)`. A response of
//!   the wrong kind gives the default too (`value` sent to a confirm → `false`). `editor` has no timeout
//!   and ignores aborts, like the reference.
//! - `ask` is single-flight: one outstanding at a time, further asks queue FIFO and are emitted only after
//!   the active one settles; a queued ask whose token is cancelled settles without being emitted. Host
//!   cancel, timeout and shutdown of an ask call the stop hook ([`DialogEngine::set_ask_stop_hook`]; the
//!   runtime aborts the agent turn there). An all-skipped answer is a valid answer, not a stop (reference
//!   behaviour; `protocol/rpc.yaml`'s prose says otherwise). A malformed ask answer fails the call with the
//!   reference's exact texts ([`response`] constants) after settling it.
//! - [`DialogEngine::handle_response`] routes an `extension_ui_response` (the raw
//!   [`dreb_protocol::Input`]). An unknown or already-settled id is ignored (debug log), as in the reference.
//! - Fire-and-forget: [`notify`](DialogEngine::notify), [`set_status`](DialogEngine::set_status),
//!   [`set_widget`](DialogEngine::set_widget), [`set_title`](DialogEngine::set_title),
//!   [`set_editor_text`](DialogEngine::set_editor_text): emitted once, never tracked, no handled event.
//! - [`DialogEngine::pending_requests`] lists the waiting blocking requests exactly as emitted: the
//!   dashboard snapshot's `pendingExtensionUiRequests`.
//! - `impl dreb_tools::Dialog for DialogEngine` serves the `ask_user` tool.
//!
//! # Wiring (runtime)
//!
//! ```text
//! let engine = DialogEngine::new(Arc::new(move |bytes| { let _ = output.send_encoded(bytes); }));
//! engine.set_ask_stop_hook(Arc::new(move || session.abort_current_turn()));   // non-blocking
//! // stdin: Decoded::Input(input) => engine.handle_response(&input)
//! // get_dashboard_snapshot: pendingExtensionUiRequests = engine.pending_requests()
//! // ToolContext.dialog = Some(Arc::new(engine.clone()))                       // ask_user
//! // stdin EOF / shutdown: engine.cancel_all()
//! ```
//!
//! # Permission gate (setting `permissionGate`)
//!
//! [`PermissionGate`] asks the host before the agent's `bash` tool runs a dangerous command, and denies
//! unless the user explicitly allows it. The runtime builds it from the merged settings key
//! [`PERMISSION_GATE_SETTING`]:
//!
//! ```json
//! { "permissionGate": { "enabled": true, "timeoutMs": 60000 } }
//! ```
//!
//! `enabled` defaults to `false`; `timeoutMs` defaults to 60000 and `0` means wait until answered or
//! aborted. Parse it with [`PermissionGateSettings::from_value`].

mod ask_user;
mod engine;
mod methods;
pub mod permission_gate;
pub mod response;

pub use engine::{AskStopHook, DialogEngine, DialogOptions, FrameSink, ResponseDisposition};
pub use methods::DEFAULT_ASK_TITLE;
pub use permission_gate::{
    DangerPredicate, GateDecision, PERMISSION_GATE_SETTING, PermissionAnswer, PermissionGate,
    PermissionGateSettings, dangerous_command_reason,
};
pub use response::parse_ask_answers;
