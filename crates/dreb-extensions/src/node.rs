//! How TypeScript / JavaScript extensions (the reference's kind) are run: by the Node extension host
//! (`clients/extension-host`), one host process for all of a session's JavaScript extensions, each on its own
//! channel of the host's stdin/stdout (`dreb-extension-host --multiplex`; see `protocol/extension.yaml`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::connection::{CommandServer, Connection, OnExit, Process};
use crate::error::ExtensionError;

/// The host's entry script inside its package.
const HOST_SCRIPT: &str = "bin/dreb-extension-host.mjs";

/// The label of the host's process in the log.
const HOST_LABEL: &str = "node extension host";

/// `program args...` that start the host, or why JavaScript extensions cannot run here.
pub type JavaScriptLauncher = Result<(PathBuf, Vec<String>), String>;

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Finds Node (`DREB_NODE`, else `node` on `PATH`) and the host: `DREB_EXTENSION_HOST` (the entry script), else
/// `dreb-extension-host` on `PATH` (`npm install -g ./clients/extension-host`), else the host of the checkout this
/// binary was built from (`checkout`, when it exists).
pub fn find_javascript_launcher(checkout: Option<&Path>) -> JavaScriptLauncher {
    let node = match std::env::var_os("DREB_NODE") {
        Some(p) => PathBuf::from(p),
        None => on_path("node").ok_or_else(|| {
            "TypeScript/JavaScript extensions need Node.js: `node` was not found on PATH (or set DREB_NODE)"
                .to_string()
        })?,
    };
    let script = match std::env::var_os("DREB_EXTENSION_HOST") {
        Some(p) => Some(PathBuf::from(p)),
        None => on_path("dreb-extension-host")
            .map(|bin| bin.canonicalize().unwrap_or(bin))
            .or_else(|| {
                checkout
                    .map(|c| c.join(HOST_SCRIPT))
                    .filter(|p| p.is_file())
            }),
    };
    match script {
        Some(script) => Ok((node, vec![script.to_string_lossy().into_owned()])),
        None => Err(
            "TypeScript/JavaScript extensions need the dreb extension host: install it with \
             `npm install -g ./clients/extension-host` (run `npm ci` in it first), or set DREB_EXTENSION_HOST"
                .to_string(),
        ),
    }
}

/// The session's Node extension host: started when the first JavaScript extension starts (never when there is
/// none), started again after a crash when one of them is next used, stopped with the extensions.
pub struct NodeHost {
    cwd: PathBuf,
    checkout: Option<PathBuf>,
    process: tokio::sync::Mutex<Option<Arc<Process>>>,
}

impl NodeHost {
    pub fn new(cwd: PathBuf, checkout: Option<PathBuf>) -> NodeHost {
        NodeHost {
            cwd,
            checkout,
            process: tokio::sync::Mutex::new(None),
        }
    }

    /// A channel for the extension at `path` (the host loads it when `initialize` arrives on it), starting the
    /// host when it is not running.
    pub async fn open(
        &self,
        path: &str,
        server: Arc<dyn CommandServer>,
        on_exit: OnExit,
    ) -> Result<Arc<Connection>, ExtensionError> {
        let mut slot = self.process.lock().await;
        let process = match slot.as_ref().filter(|p| !p.is_closed()) {
            Some(p) => p.clone(),
            None => {
                let (node, mut args) = find_javascript_launcher(self.checkout.as_deref())
                    .map_err(ExtensionError::Unavailable)?;
                args.push("--multiplex".to_string());
                let p = Process::spawn(HOST_LABEL, &node, &args, &self.cwd, true)?;
                *slot = Some(p.clone());
                p
            }
        };
        process.open(path, server, on_exit)
    }

    /// Stop the host (its stdin closed; killed after `grace`).
    pub async fn stop(&self, grace: std::time::Duration) {
        let process = self.process.lock().await.take();
        if let Some(p) = process {
            p.stop(grace).await;
        }
    }
}
