//! How a session starts: the options (CLI flags and environment that matter), the start-up error, and the tool
//! names `--tools` accepts.

use std::path::PathBuf;
use std::sync::Arc;

use dreb_ai::Providers;
use tokio_util::sync::CancellationToken;

/// How the runtime starts (the CLI flags and environment that matter).
#[derive(Clone, Default)]
pub struct RuntimeOptions {
    pub cwd: PathBuf,
    /// `DREB_CODING_AGENT_DIR`, default `~/.dreb/agent`.
    pub agent_dir: PathBuf,
    pub provider: Option<String>,
    /// `provider/id` or a fuzzy pattern, with an optional `:<thinking>` suffix.
    pub model: Option<String>,
    pub thinking: Option<String>,
    pub api_key: Option<String>,
    pub no_session: bool,
    /// Open this session file instead of starting a new one.
    pub session: Option<PathBuf>,
    pub session_dir: Option<PathBuf>,
    /// `-c/--continue`: continue the most recent session of the cwd (a new one when there is none).
    pub continue_recent: bool,
    /// `--fork <path|id prefix>`: start on a copy of that session, in a new file of this cwd's session dir.
    pub fork: Option<PathBuf>,
    pub parent_session: Option<String>,
    /// `--agent-type`: the subagent type written into a new session's header (children of the subagent tool).
    pub agent_type: Option<String>,
    /// The `dreb` executable the subagent tool runs children with (default: this process's executable).
    pub subagent_binary: Option<PathBuf>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    /// Enabled tools (None = all built-in tools).
    pub tools: Option<Vec<String>>,
    /// `--models`: comma-separated model scope patterns (overrides settings `enabledModels`).
    pub models: Option<String>,
    /// Providers to stream from (tests inject one with a scripted `faux` scenario).
    pub providers: Option<Providers>,
    /// Cancelled when the process shuts down: running work stops.
    pub stop: CancellationToken,
    /// The UI the session serves (`--ui`, else the mode's: `rpc`, `cli`; `acp` for the ACP front end): the system
    /// prompt names it, and `dashboard` and `acp` turn on the dashboard projection of events (see `projection`).
    pub ui: Option<String>,
    /// `--skill`, `--no-skills`, `--prompt-template`, `--no-prompt-templates`.
    pub resource_flags: ResourceFlags,
    /// Hook handlers to register after the built-in guards, in order, each under its source name (an extension's
    /// path, `mcp:<server>`, a front end's name): reported as `extensionPath` when it fails.
    pub hooks: Vec<(String, Arc<dyn dreb_hooks::HookHandler>)>,
    /// `-e/--extension`, `--no-extensions` and the extension flags.
    pub extensions: ExtensionOptions,
    /// A front end's text files for the `read`, `edit` and `write` tools (an ACP editor's buffers); `None`: the disk.
    pub text_files: Option<Arc<dyn dreb_tools::TextFiles>>,
    /// What runs the `bash` tool's commands (an ACP editor's terminals); `None`: this machine.
    pub commands: Option<Arc<dyn dreb_tools::CommandRunner>>,
    /// MCP servers a front end's client brings (an `mcpServers` object, `docs/mcp.md`; ACP's `session/new`):
    /// started like the configured ones, in any project, and winning over a configured one of the same name.
    pub mcp_servers: Option<serde_json::Value>,
}

/// The command line's say in extensions.
#[derive(Clone, Debug, Default)]
pub struct ExtensionOptions {
    /// `-e/--extension` paths.
    pub paths: Vec<PathBuf>,
    /// `--no-extensions`.
    pub no_extensions: bool,
    /// Extension flags (`--name` → `true`, `--name value` / `--name=value` → the value), in order.
    pub flags: Vec<(String, serde_json::Value)>,
    /// Whether dialogs reach a user (RPC mode); false in print and JSON modes.
    pub has_ui: bool,
}

/// The command line's say in resource discovery.
#[derive(Clone, Debug, Default)]
pub struct ResourceFlags {
    /// `--skill` paths (files or directories), loaded first, also with `no_skills`.
    pub skills: Vec<PathBuf>,
    /// `--no-skills`: no skill discovery (settings paths, skill directories, bundled skills).
    pub no_skills: bool,
    /// `--prompt-template` paths, loaded first, also with `no_prompt_templates`.
    pub prompt_templates: Vec<PathBuf>,
    /// `--no-prompt-templates`: no prompt template discovery.
    pub no_prompt_templates: bool,
}

/// Why the runtime could not start; the text goes to stderr and the process exits 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartupError(pub String);

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartupError {}

/// Tools active whatever `--tools` says, in the reference's order.
pub(crate) const ALWAYS_ACTIVE_TOOLS: [&str; 3] = ["skill", "tasks_update", "search"];

/// `--ui` values: `rpc` (the default), `agent` (a subagent child), `dashboard` (lean `message_update`s).
pub const UI_TYPES: [&str; 3] = ["rpc", "agent", "dashboard"];

/// Tool names this build provides, as `--tools` accepts them: the tool crate's tools, then `subagent` and `skill`
/// (which the runtime builds itself).
pub fn provided_tool_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = dreb_tools::IMPLEMENTED_TOOLS
        .iter()
        .chain(dreb_tools::EXTRA_TOOLS.iter())
        .copied()
        .collect();
    names.extend(["subagent", ALWAYS_ACTIVE_TOOLS[0]]);
    names
}

/// Whether `--tools` accepts `name`: a provided tool or an MCP tool.
pub fn is_known_tool(name: &str) -> bool {
    // An MCP tool (`mcp__<server>__<tool>` or `mcp__<server>__*`) is offered once its server lists it.
    name.starts_with("mcp__") || provided_tool_names().contains(&name)
}

/// The session's tool names in request order: `requested` (`--tools`; empty for `--no-tools`) or the default set,
/// plus the always-active tools, without repeats.
pub(crate) fn active_tool_names(requested: Option<&[String]>, max_subagents: usize) -> Vec<String> {
    let mut names: Vec<String> = match requested {
        Some(list) => list
            .iter()
            .cloned()
            .chain(ALWAYS_ACTIVE_TOOLS.iter().map(|s| s.to_string()))
            .collect(),
        None => {
            let mut names: Vec<String> = dreb_tools::IMPLEMENTED_TOOLS
                .iter()
                .map(|s| s.to_string())
                .collect();
            if max_subagents > 0 {
                // The reference's place: after the web tools, before `wait`.
                let at = names
                    .iter()
                    .position(|n| n == "wait")
                    .unwrap_or(names.len());
                names.insert(at, "subagent".into());
            }
            // `skill` goes where the reference puts it: first of the always-active tools.
            let at = names
                .iter()
                .position(|n| n == ALWAYS_ACTIVE_TOOLS[1])
                .unwrap_or(names.len());
            names.insert(at, ALWAYS_ACTIVE_TOOLS[0].into());
            names
        }
    };
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    names
}
