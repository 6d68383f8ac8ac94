//! Command-line arguments (the reference's flags that matter for `--mode rpc`).

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser};
use dreb_runtime::{UI_TYPES, UNPROVIDED_TOOLS, is_known_tool, provided_tool_names};

#[derive(Debug, Clone, Parser)]
#[command(
    name = "dreb",
    version,
    about = "A headless coding agent served over JSON-lines RPC on stdin/stdout"
)]
pub struct Args {
    /// Output mode. Only `rpc` is implemented: JSONL commands on stdin, responses and events on stdout.
    #[arg(long, value_name = "MODE")]
    pub mode: Option<String>,

    /// Host UI flavour: `rpc` (default), `agent` (a subagent child) or `dashboard` (lean `message_update`s).
    /// Other values are rejected.
    #[arg(long, value_name = "TYPE")]
    pub ui: Option<String>,

    /// LLM provider (anthropic, openai, google, faux, or one from models.json).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,

    /// Model pattern or id (`provider/id`, fuzzy match, optional `:<thinking>` suffix).
    #[arg(long, value_name = "PATTERN")]
    pub model: Option<String>,

    /// Scoped models for cycling: comma-separated patterns (globs and `:<thinking>` allowed).
    #[arg(long, value_name = "PATTERNS")]
    pub models: Option<String>,

    /// Thinking level: off, minimal, low, medium, high, xhigh, max.
    #[arg(long, value_name = "LEVEL")]
    pub thinking: Option<String>,

    /// API key for the chosen model's provider (overrides environment and auth.json).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,

    /// Keep the session in memory only.
    #[arg(long)]
    pub no_session: bool,

    /// Open this session: a path (contains `/` or ends in `.jsonl`; created when missing), else a session id
    /// prefix (this cwd's sessions first, then every cwd's; a match in another cwd is forked here). An id prefix
    /// that matches nothing is an error.
    #[arg(long, value_name = "PATH|ID")]
    pub session: Option<String>,

    /// Directory for session files instead of `<agentDir>/sessions/--<cwd>--/`.
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,

    /// Parent session path written into a new session's header (used by subagents).
    #[arg(long, value_name = "PATH")]
    pub parent_session: Option<String>,

    /// Subagent type written into a new session's header (used by subagent children).
    #[arg(long, value_name = "NAME")]
    pub agent_type: Option<String>,

    /// System prompt text, or a path to a file holding it.
    #[arg(long, value_name = "TEXT|FILE")]
    pub system_prompt: Option<String>,

    /// Text (or a file) appended to the system prompt.
    #[arg(long, value_name = "TEXT|FILE")]
    pub append_system_prompt: Option<String>,

    /// Comma-separated list of enabled tools (names listed below; others are rejected).
    #[arg(long, value_name = "LIST")]
    pub tools: Option<String>,

    /// Disable all tools.
    #[arg(long)]
    pub no_tools: bool,

    /// Positional messages are for interactive/print modes, which this binary does not provide.
    #[arg(hide = true)]
    pub messages: Vec<String>,
}

/// The text after the options in `--help`: the environment variables the binary reads and the valid `--tools`
/// and `--ui` values, taken from the code that uses them.
pub fn help_footer() -> String {
    const VARS: [(&str, &str); 13] = [
        (
            "DREB_CODING_AGENT_DIR",
            "Agent directory: settings.json, models.json, auth.json, sessions (default ~/.dreb/agent; a leading ~ is expanded)",
        ),
        (
            "HOME",
            "Home directory: the default agent dir, ~ in paths, user agent types and skills",
        ),
        (
            "DREB_PACKAGE_DIR",
            "Package assets such as bundled skills (default: the executable's directory)",
        ),
        (
            "DREB_LOG",
            "Log filter for stderr, tracing EnvFilter syntax (e.g. debug, dreb_runtime=trace); default warn",
        ),
        ("RUST_LOG", "Log filter used when DREB_LOG is not set"),
        (
            "DREB_FAUX_SCENARIO",
            "Scenario file the offline `faux` provider plays (default: a built-in scenario)",
        ),
        (
            "DREB_STDOUT_STALL_TIMEOUT_SECS",
            "Give up (exit) when the host reads no stdout for this many seconds while output waits (default 120; 0 = never)",
        ),
        (
            "DREB_MAX_RECORD_BYTES",
            "Largest stdin JSONL record accepted, in bytes",
        ),
        (
            "DREB_CACHE_RETENTION",
            "`long`: ask Anthropic / OpenAI Responses for long prompt-cache retention",
        ),
        (
            "DREB_RETRY_BASE_DELAY_MS",
            "Overrides the retry.baseDelayMs setting (automatic retry back-off)",
        ),
        (
            "XDG_DATA_HOME",
            "delete_session moves files to $XDG_DATA_HOME/Trash (default ~/.local/share/Trash)",
        ),
        (
            "USER",
            "With LOGNAME and HOSTNAME: the seed of the buddy's name",
        ),
        (
            "PATH",
            "Where the bash tool looks for bash when /bin/bash is missing; commands get <agentDir>/bin prepended",
        ),
    ];
    let mut out = String::from("Environment:\n");
    for (name, what) in VARS {
        out.push_str(&format!("  {name:<32}{what}\n"));
    }
    out.push_str(
        "  Provider API keys (used when neither --api-key nor auth.json gives one; models.json providers name their own):\n",
    );
    for (provider, names) in dreb_ai::auth::PROVIDER_KEY_VARS {
        out.push_str(&format!("    {provider:<30}{}\n", names.join(", ")));
    }
    out.push_str("\nTools (--tools):\n");
    out.push_str(&format!("  {}\n", provided_tool_names().join(", ")));
    out.push_str(&format!(
        "  Accepted for compatibility with the reference, not provided by this build: {}\n",
        UNPROVIDED_TOOLS.join(", ")
    ));
    out.push_str(&format!("\nUI types (--ui): {}\n", UI_TYPES.join(", ")));
    out
}

impl Args {
    /// The process arguments, parsed with [`help_footer`] after the options in `--help` / `-h`. Usage errors exit as
    /// clap's do; `--help` and `--version` print and exit 0.
    pub fn parse_process_args() -> Args {
        let matches = Args::command().after_help(help_footer()).get_matches();
        Args::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }

    /// Checks the reference enforces before serving; the text goes to stderr with exit code 1.
    pub fn validate_for_rpc(&self) -> Result<(), String> {
        match self.mode.as_deref() {
            Some("rpc") => {}
            Some(other) => {
                return Err(format!(
                    "Error: --mode {other} is not supported; use --mode rpc"
                ));
            }
            None => {
                return Err(
                    "Error: --mode rpc is required (interactive and print modes are not provided)"
                        .into(),
                );
            }
        }
        if self.messages.iter().any(|m| m.starts_with('@')) {
            return Err("Error: @file arguments are not supported in RPC mode".into());
        }
        if !self.messages.is_empty() {
            return Err(
                "Error: positional messages are not supported in RPC mode; send a prompt command"
                    .into(),
            );
        }
        if self.api_key.is_some() && self.model.is_none() && self.provider.is_none() {
            return Err(
                "Error: --api-key requires a model to be specified via --provider/--model".into(),
            );
        }
        if let Some(ui) = &self.ui
            && !UI_TYPES.contains(&ui.as_str())
        {
            return Err(format!(
                "Error: invalid --ui \"{ui}\" (expected one of {})",
                UI_TYPES.join(", ")
            ));
        }
        if let Some(tools) = &self.tools {
            let unknown: Vec<&str> = tools
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty() && !is_known_tool(t))
                .collect();
            if !unknown.is_empty() {
                return Err(format!(
                    "Error: unknown tool{} in --tools: {} (valid tools: {}; also accepted, not provided by this \
                     build: {})",
                    if unknown.len() == 1 { "" } else { "s" },
                    unknown.join(", "),
                    provided_tool_names().join(", "),
                    UNPROVIDED_TOOLS.join(", ")
                ));
            }
        }
        if let Some(level) = &self.thinking {
            const LEVELS: [&str; 7] = ["off", "minimal", "low", "medium", "high", "xhigh", "max"];
            if !LEVELS.contains(&level.as_str()) {
                return Err(format!(
                    "Error: invalid --thinking level \"{level}\" (expected one of {})",
                    LEVELS.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// `--tools` as a list (None = the default tool set).
    pub fn tool_list(&self) -> Option<Vec<String>> {
        if self.no_tools {
            return Some(Vec::new());
        }
        self.tools.as_ref().map(|t| {
            t.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("dreb").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn rpc_mode_with_the_common_flags() {
        let a = parse(&[
            "--mode",
            "rpc",
            "--provider",
            "faux",
            "--model",
            "faux/scripted:high",
            "--no-session",
        ]);
        assert!(a.validate_for_rpc().is_ok());
        assert_eq!(a.provider.as_deref(), Some("faux"));
        assert!(a.no_session);
    }

    #[test]
    fn rejects_what_the_reference_rejects() {
        assert!(
            parse(&["--mode", "rpc", "@notes.md"])
                .validate_for_rpc()
                .unwrap_err()
                .contains("@file")
        );
        assert!(
            parse(&["--mode", "rpc", "--api-key", "k"])
                .validate_for_rpc()
                .unwrap_err()
                .contains("--api-key")
        );
        assert!(
            parse(&["--mode", "rpc", "--thinking", "huge"])
                .validate_for_rpc()
                .is_err()
        );
        assert!(parse(&["--mode", "text"]).validate_for_rpc().is_err());
        assert!(parse(&[]).validate_for_rpc().is_err());
    }

    #[test]
    fn tool_lists() {
        assert_eq!(
            parse(&["--tools", "read, bash"]).tool_list(),
            Some(vec!["read".into(), "bash".into()])
        );
        assert_eq!(parse(&["--no-tools"]).tool_list(), Some(vec![]));
        assert_eq!(parse(&[]).tool_list(), None);
    }
}
