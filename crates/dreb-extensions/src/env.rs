//! What every extension of a session shares: the session's place and flags, the agent API the runtime serves,
//! where failures go, and how JavaScript extensions start.

use std::path::PathBuf;
use std::sync::Arc;

use dreb_extension_protocol::{Command, ResourcesDiscoverResult, ResponseData};
use dreb_hooks::{FailureSink, HookFailure};
use serde_json::Value;

/// The agent API, served by the runtime: every command an extension sends except `register` and
/// `tool_update` (which the host answers itself).
#[async_trait::async_trait]
pub trait ExtensionApi: Send + Sync {
    /// Run `command` for the extension at `extension` (its path).
    async fn serve(&self, extension: &str, command: Command) -> Result<ResponseData, String>;
    /// An extension's tools or commands changed (a later `register`, a restart): refresh the tool set.
    fn registrations_changed(&self);
    /// The `resources_discover` answers after a load (startup or reload), by extension path, before the load is
    /// marked ready: add the skill and prompt paths to the session's resources.
    async fn resources_discovered(&self, _found: Vec<(String, ResourcesDiscoverResult)>) {}
    /// Whether this session's directory is still open to the `session_directory` hook (at start-up, when neither
    /// the command line nor the settings chose it). Asked once, by the start-up load.
    fn session_directory_open(&self) -> bool {
        false
    }
    /// The directory the `session_directory` answers chose (relative ones against the cwd), before the loaded
    /// extensions get `session_start` and before the load is marked ready: place the session there.
    async fn session_directory_chosen(&self, _dir: PathBuf) {}
}

/// What every extension of the session shares.
pub struct HostEnv {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub has_ui: bool,
    /// The command line's extension flags, by name.
    pub flag_values: indexmap::IndexMap<String, Value>,
    pub api: Arc<dyn ExtensionApi>,
    /// Where failures go (the runtime sends them to the host as `extension_error`).
    pub failures: FailureSink,
    /// The Node extension host of the checkout the binary was built from, the last place
    /// [`crate::node::find_javascript_launcher`] looks (only when a JavaScript extension starts).
    pub javascript_checkout: Option<PathBuf>,
}

impl HostEnv {
    pub(crate) fn report(&self, path: &str, event: &str, error: &str) {
        tracing::warn!("extension {path} failed at {event}: {error}");
        (self.failures)(HookFailure {
            source: path.to_string(),
            event: event.to_string(),
            error: error.to_string(),
        });
    }
}
