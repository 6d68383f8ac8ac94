//! Extensions in any language: each one a process the runtime speaks the extension protocol to
//! (`protocol/extension.yaml`, generated into `dreb-extension-protocol`) over its stdin/stdout.
//!
//! - [`discovery`]: which extensions a session loads and how each is started (project extensions only from a
//!   trusted project).
//! - [`connection`]: one process, typed calls with their timeouts, events, and the commands it sends.
//! - [`extension`]: one loaded extension: lazily (re)started process, registrations, running tool calls.
//! - [`hooks`]: an extension as a handler on the session's hook bus.
//! - [`tool`]: an extension's tool as an agent tool.
//! - [`env`]: what the extensions of a session share, and the [`ExtensionApi`] the runtime serves them.
//! - [`host`]: every extension of a session: loading, the hook bus, commands, tools, stopping.
//! - [`node`]: how the reference's TypeScript/JavaScript extensions are started (the Node extension host).

pub mod connection;
pub mod discovery;
pub mod env;
pub mod error;
pub mod extension;
pub mod hooks;
pub mod host;
pub mod node;
pub mod tool;

pub use discovery::{DiscoveryInput, ExtensionSource, Launch, Scope, Skipped, discover};
pub use error::ExtensionError;
pub use extension::Extension;
pub use host::{ExtensionApi, ExtensionHost, HostEnv};
pub use node::{JavaScriptLauncher, NodeHost, find_javascript_launcher};
pub use tool::ExtensionTool;
