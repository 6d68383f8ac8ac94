//! The session's extensions as a service: the host of their processes (`dreb-extensions`: loading, the hook
//! handlers, their tools, commands and providers), the options they were chosen with, and what `prompt`,
//! `get_commands` and `get_resources` read of them. Loading them and serving their calls into the session is
//! `crate::extensions`' and `crate::extension_api`'s.

use std::sync::Arc;

use dreb_extensions::ExtensionHost;
use dreb_protocol::{
    ExtensionInfo, ExtensionSlashCommand, RpcSlashCommand, SourceInfo, SourceOrigin,
};

use crate::options::ExtensionOptions;

/// The session's extensions: the host of their processes (see `dreb-extensions`) and the options they were
/// chosen with.
pub(crate) struct Extensions {
    host: Arc<ExtensionHost>,
    options: ExtensionOptions,
}

impl Extensions {
    /// The extensions of a new session: `host` (nothing started yet), chosen with `options`.
    pub(crate) fn new(host: Arc<ExtensionHost>, options: ExtensionOptions) -> Extensions {
        Extensions { host, options }
    }

    pub(crate) fn options(&self) -> &ExtensionOptions {
        &self.options
    }

    /// Stop every extension (`session_shutdown` first) and take them off the hook bus.
    pub(crate) async fn stop(&self, hooks: &Arc<dreb_hooks::HookBus>) {
        self.host.ready().await;
        self.host.shutdown(hooks).await;
    }

    /// The extension that registered the command `message` names, with the command's name and arguments.
    pub(crate) fn command<'m>(
        &self,
        message: &'m str,
    ) -> Option<(Arc<dreb_extensions::Extension>, &'m str, &'m str)> {
        let (name, args) = slash_command(message)?;
        let ext = self.host.find_command(name)?;
        Some((ext, name, args))
    }

    /// `get_commands` entries of the extensions' commands (they come first, as in the reference).
    pub(crate) fn commands(&self) -> Vec<RpcSlashCommand> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for e in self.host.extensions() {
            for c in e.registration().commands.iter().flatten() {
                if !seen.insert(c.name.clone()) {
                    continue;
                }
                out.push(RpcSlashCommand::Extension(ExtensionSlashCommand {
                    name: c.name.clone(),
                    description: c.description.clone(),
                    source: Default::default(),
                    source_info: source_info(&e),
                }));
            }
        }
        out
    }

    /// `get_resources.extensions`: `{name, path}` of each loaded extension.
    pub(crate) fn resource_infos(&self) -> Vec<ExtensionInfo> {
        self.host
            .extensions()
            .iter()
            .map(|e| ExtensionInfo {
                path: e.path().to_string(),
                name: Some(e.name().to_string()),
            })
            .collect()
    }
}

/// Loading, serving and asking the extensions is the host's.
impl std::ops::Deref for Extensions {
    type Target = ExtensionHost;

    fn deref(&self) -> &ExtensionHost {
        &self.host
    }
}

/// `/name args` → `(name, args)`.
pub(crate) fn slash_command(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix('/')?;
    let (name, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    (!name.is_empty()).then_some((name, args))
}

/// The reference's `sourceInfo` of an extension's resources.
fn source_info(e: &dreb_extensions::Extension) -> SourceInfo {
    let source = e.source();
    SourceInfo {
        path: e.path().to_string(),
        source: source.source.to_string(),
        scope: source.scope,
        origin: SourceOrigin::TopLevel,
        base_dir: source
            .base_dir
            .as_ref()
            .map(|dir| dir.to_string_lossy().into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::slash_command;

    #[test]
    fn slash_commands_split_name_and_trimmed_args() {
        assert_eq!(slash_command("/stats"), Some(("stats", "")));
        assert_eq!(slash_command("/stats  a b "), Some(("stats", "a b")));
        assert_eq!(slash_command("stats"), None);
        assert_eq!(slash_command("/"), None);
    }
}
