//! The coding-agent session behind the RPC commands.
//!
//! [`Runtime`] is a cheap-clone handle to the live session's services, each the owner of one concern (`services/`:
//! the session file from `dreb-session`, settings and context from `dreb-settings`, the model registry and
//! providers from `dreb-ai`, resources, tools from `dreb-tools`, the queue, dialogs, extensions, MCP) beside the
//! agent loop (`dreb-agent`) and the run's lifecycle. It implements the generated [`dreb_protocol::RpcHandler`]
//! (each spec group's handler trait, in `commands/`); events reach the host through a [`FrameSink`] the serving
//! layer provides (one ordered writer).

mod announce;
mod background;
mod catalog;
mod commands;
mod convert;
mod dialog_tracker;
mod event_bridge;
mod extension_api;
mod extensions;
mod guards;
mod lazy_tool;
mod mcp;
mod nested_context;
mod options;
mod persist;
mod project_state;
mod projection;
mod run_phase;
mod runtime;
mod services;
mod session_conversation;
mod session_naming;
mod sink;
mod startup;
mod sync;
mod system_prompt;

pub use options::{
    ExtensionOptions, ResourceFlags, RuntimeOptions, StartupError, UI_TYPES, is_known_tool,
    provided_tool_names,
};
pub use projection::project_dashboard_event;
pub use services::Runtime;
pub use sink::{FrameSink, VecSink};
