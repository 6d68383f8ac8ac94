//! Lazy nested context (`context.autoLoadNested`, `context.trustedFolders`): after a tool call, the AGENTS.md /
//! CLAUDE.md files around the directory it touched that this session has not loaded yet ride on its result as one
//! more text block, as the reference does (the system prompt is not rebuilt, so the provider's prompt cache stays
//! valid). The decisions are `dreb_settings::nested_context`'s; this module keeps the session's memory of them
//! (files loaded, directories scanned) and reads the global trust policy afresh before each one, so the trust
//! commands and another process's settings writes take effect at the next tool call.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use dreb_settings::SettingsManager;
use dreb_settings::nested_context::{NestedContextState, compute_nested_context_block};
use serde_json::Value;

use crate::sync::lock;

/// What this session already loaded (each file at most once) and scanned (each directory at most once).
#[derive(Default)]
pub(crate) struct NestedContext {
    /// `None` until the first decision, which seeds the loaded files with the ones the session started with.
    seen: Mutex<Option<Seen>>,
}

struct Seen {
    loaded: HashSet<PathBuf>,
    scanned_dirs: HashSet<PathBuf>,
}

impl NestedContext {
    /// The block to append to the result of `tool_name` called with `args`, if any, with secrets redacted. Nothing
    /// happens (and nothing is remembered) while the global policy trusts nothing.
    pub(crate) fn block_for(
        &self,
        settings: &SettingsManager,
        cwd: &Path,
        agent_dir: &Path,
        tool_name: &str,
        args: &Value,
    ) -> Option<String> {
        let policy = settings.global_context_trust_policy();
        if !policy.is_active() {
            return None;
        }
        let mut seen = lock(&self.seen);
        let seen = seen.get_or_insert_with(|| {
            // The context files of the session's start (cwd and its ancestors, the agent dir) are never injected.
            let (files, _) =
                dreb_settings::context_files::load_project_context_files(cwd, agent_dir);
            let startup = NestedContextState::new(policy.clone(), cwd.to_path_buf(), &files);
            Seen {
                loaded: startup.loaded,
                scanned_dirs: HashSet::new(),
            }
        });
        let mut state = NestedContextState {
            policy,
            cwd: cwd.to_path_buf(),
            loaded: std::mem::take(&mut seen.loaded),
            scanned_dirs: std::mem::take(&mut seen.scanned_dirs),
        };
        let block = compute_nested_context_block(
            tool_name,
            args,
            &mut state,
            &dreb_tools::bash::terminal::render_terminal_output,
        );
        seen.loaded = state.loaded;
        seen.scanned_dirs = state.scanned_dirs;
        // Secrets in a context file are redacted like those in the tool's own output.
        let extra = settings.secret_output_patterns().unwrap_or_default();
        let extra = dreb_tools::guards::compile_extra_secret_patterns(&extra);
        block.map(|b| dreb_tools::guards::scrub_secrets(&b, &extra).scrubbed)
    }
}
