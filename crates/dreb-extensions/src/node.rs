//! How TypeScript / JavaScript extensions (the reference's kind) are started: by the Node extension host
//! (`clients/extension-host`), one host process per extension, with Node.js.

use std::path::{Path, PathBuf};

/// The host's entry script inside its package.
const HOST_SCRIPT: &str = "bin/dreb-extension-host.mjs";

/// `program args...` to run before the extension's path, or why JavaScript extensions cannot run here.
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
