//! Command-line arguments (the reference's flags that matter for `--mode rpc`).

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser};
use dreb_runtime::{UI_TYPES, is_known_tool, provided_tool_names};

#[derive(Debug, Clone, Parser)]
#[command(
    name = "dreb",
    version,
    about = "A headless coding agent served over JSON-lines RPC on stdin/stdout"
)]
pub struct Args {
    /// Output mode: `rpc` (JSONL commands on stdin, responses and events on stdout), `acp` (the Agent Client
    /// Protocol, JSON-RPC 2.0 on stdin/stdout, for editors), `json` (run the prompts given as arguments or on
    /// stdin, every event as a JSON line), `text` (the same, printing the final reply). The interactive terminal
    /// UI is not provided.
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

    /// Continue the most recent session of this directory (a new one when there is none).
    #[arg(short = 'c', long = "continue")]
    pub continue_recent: bool,

    /// Pick a session to resume interactively. RPC mode has no picker: use --session or --continue.
    #[arg(short = 'r', long)]
    pub resume: bool,

    /// Start on a copy of this session (a path or an id prefix), written to a new file of this directory.
    #[arg(long, value_name = "PATH|ID")]
    pub fork: Option<String>,

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

    /// Load an extension (repeatable): a .py file, an executable, or a .ts/.js module (docs/extensions.md).
    #[arg(short = 'e', long = "extension", value_name = "PATH")]
    pub extensions: Vec<String>,

    /// Do not discover extensions (`-e` ones still load). `-ne` is accepted too, and so are repeats.
    #[arg(long, overrides_with = "no_extensions")]
    pub no_extensions: bool,

    /// Add a skill file or directory (repeatable; also with --no-skills).
    #[arg(long = "skill", value_name = "PATH")]
    pub skills: Vec<PathBuf>,

    /// Do not discover skills (settings, .dreb/skills, ~/.agents/skills, bundled); --skill paths still load.
    #[arg(long)]
    pub no_skills: bool,

    /// Add a prompt template file or directory (repeatable; also with --no-prompt-templates).
    #[arg(long = "prompt-template", value_name = "PATH")]
    pub prompt_templates: Vec<PathBuf>,

    /// Do not discover prompt templates; --prompt-template paths still load.
    #[arg(long)]
    pub no_prompt_templates: bool,

    /// Terminal theme: accepted and ignored (themes are for the interactive terminal UI).
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,

    /// Accepted and ignored (themes are for the interactive terminal UI).
    #[arg(long)]
    pub no_themes: bool,

    /// Offline: no network at start-up. This build contacts nothing at start-up, so it changes nothing.
    #[arg(long)]
    pub offline: bool,

    /// Log at `info` on stderr (when DREB_LOG / RUST_LOG are not set).
    #[arg(long)]
    pub verbose: bool,

    /// Print the available models (optionally only those matching SEARCH) and exit.
    #[arg(long, value_name = "SEARCH", num_args = 0..=1, default_missing_value = "")]
    pub list_models: Option<String>,

    /// Export a session file to HTML (to OUT, default next to it) and exit.
    #[arg(long, value_name = "FILE", num_args = 1..=2)]
    pub export: Option<Vec<PathBuf>>,

    /// Print mode: run the prompts given as arguments (or stdin), print the final reply, exit (1 if it failed).
    #[arg(short = 'p', long)]
    pub print: bool,

    /// Flags this build does not know, as the reference treats them: extension flags (ignored without a loaded
    /// extension). Filled by [`Args::parse_process_args`].
    #[arg(skip)]
    pub extension_flags: Vec<String>,

    /// Prompts for print and JSON modes, sent one after another.
    #[arg(value_name = "MESSAGE")]
    pub messages: Vec<String>,
}

/// The text after the options in `--help`: the environment variables the binary reads and the valid `--tools`
/// and `--ui` values, taken from the code that uses them.
pub fn help_footer() -> String {
    const VARS: [(&str, &str); 21] = [
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
            "Package assets such as the bundled skills, read from there (default: <agentDir>/package/<version>, written by dreb)",
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
            "DREB_SEARCH_MODEL",
            "Embedding model directory of the search tool (default <agentDir>/models/all-MiniLM-L6-v2; off: full-text ranking only)",
        ),
        (
            "DREB_SEARCH_BACKEND",
            "web_search backend: ddg (default), searxng, brave (over search.backend in .dreb/config.json)",
        ),
        (
            "DREB_SEARXNG_URL",
            "SearXNG base URL for web_search (default http://localhost:8888)",
        ),
        ("DREB_BRAVE_API_KEY", "Brave Search API key for web_search"),
        (
            "DREB_WEB_SEARCH_RATE_LIMIT_MS",
            "Least spacing between two web searches, across processes (default 10000)",
        ),
        (
            "DREB_DDG_URL",
            "DuckDuckGo HTML base URL for web_search (default https://html.duckduckgo.com)",
        ),
        (
            "DREB_BRAVE_URL",
            "Brave Search API base URL for web_search (default https://api.search.brave.com)",
        ),
        (
            "DREB_WEB_FETCH_ALLOW_PRIVATE",
            "Tests and development only: 1 lets web_fetch reach loopback and private addresses",
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
            "Where the bash tool looks for bash when /bin/bash is missing, and watch_github_ci for gh; commands get <agentDir>/bin prepended",
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
    out.push_str(&format!("\nUI types (--ui): {}\n", UI_TYPES.join(", ")));
    out
}

/// Splits the reference's extension flags off `argv`: a `--name` (or `--name=value`) this build does not know, with
/// the next argument as its value when that does not start with `-`. The reference hands such flags to the
/// extensions that register them and ignores the rest; with no extensions loaded here, they are ignored (listed in
/// the debug log). `-ne` is the reference's short form of `--no-extensions`.
pub fn split_extension_flags(
    argv: Vec<std::ffi::OsString>,
) -> (Vec<std::ffi::OsString>, Vec<String>) {
    split_extension_flags_of(&Args::command(), argv)
}

/// [`split_extension_flags`] with the options of `command` (built once per start: building it is most of the
/// cost of parsing the arguments).
fn split_extension_flags_of(
    command: &clap::Command,
    argv: Vec<std::ffi::OsString>,
) -> (Vec<std::ffi::OsString>, Vec<String>) {
    let known: Vec<&str> = command
        .get_arguments()
        .filter_map(clap::Arg::get_long)
        .chain(["help", "version"])
        .collect();
    let mut kept = Vec::with_capacity(argv.len());
    let mut extension = Vec::new();
    let mut rest = argv.into_iter();
    if let Some(program) = rest.next() {
        kept.push(program);
    }
    let mut rest = rest.peekable();
    while let Some(arg) = rest.next() {
        let Some(text) = arg.to_str() else {
            kept.push(arg);
            continue;
        };
        if text == "--" {
            kept.push(arg);
            kept.extend(rest.by_ref());
            break;
        }
        if text == "-ne" {
            kept.push("--no-extensions".into());
            continue;
        }
        let Some(name) = text.strip_prefix("--") else {
            kept.push(arg);
            continue;
        };
        let bare = name.split('=').next().unwrap_or(name);
        if known.contains(&bare) {
            kept.push(arg);
            continue;
        }
        let mut flag = text.to_string();
        if !name.contains('=')
            && let Some(value) = rest.peek().and_then(|v| v.to_str())
            && !value.starts_with('-')
        {
            flag = format!("{flag} {value}");
            rest.next();
        }
        extension.push(flag);
    }
    (kept, extension)
}

/// Whether `argv` (program name first) may ask for the help text: `--help`, or `-h` alone or among other short
/// flags (`-ph`). May say yes for an argument that is really a value (the footer is then built for nothing), never
/// no for a request for help.
fn may_ask_for_help(argv: &[std::ffi::OsString]) -> bool {
    argv.iter().skip(1).any(|a| {
        let a = a.to_string_lossy();
        a == "--help" || (a.starts_with('-') && !a.starts_with("--") && a.contains('h'))
    })
}

impl Args {
    /// The extension flags by name: `--name` is `true`, `--name value` and `--name=value` are the value.
    pub fn extension_flag_values(&self) -> Vec<(String, serde_json::Value)> {
        self.extension_flags
            .iter()
            .map(|flag| {
                let flag = flag.trim_start_matches('-');
                match flag.split_once(['=', ' ']) {
                    Some((name, value)) => (name.to_string(), serde_json::Value::from(value)),
                    None => (flag.to_string(), serde_json::Value::Bool(true)),
                }
            })
            .collect()
    }

    /// The process arguments, parsed with [`help_footer`] after the options in `--help` / `-h`. Usage errors exit as
    /// clap's do; `--help` and `--version` print and exit 0.
    pub fn parse_process_args() -> Args {
        let mut command = Args::command();
        let (argv, extension_flags) =
            split_extension_flags_of(&command, std::env::args_os().collect());
        // Only `--help` / `-h` show the footer: it is not built on every start.
        if may_ask_for_help(&argv) {
            command = command.after_help(help_footer());
        }
        let mut matches = command.get_matches_from(argv);
        // `_mut` takes the values out instead of parsing a copy of the matches.
        let mut args = Args::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| e.exit());
        args.extension_flags = extension_flags;
        args
    }

    /// The one-shot output format: `--mode json`, or `-p` / `--mode text`; `None` for RPC.
    pub fn print_format(&self) -> Option<crate::print_mode::PrintFormat> {
        use crate::print_mode::PrintFormat;
        match self.mode.as_deref() {
            Some("json") => Some(PrintFormat::Json),
            Some("text") => Some(PrintFormat::Text),
            Some(_) => None,
            None if self.print => Some(PrintFormat::Text),
            None => None,
        }
    }

    /// Checks before a one-shot run; the text goes to stderr with exit code 1.
    pub fn validate_for_print(&self) -> Result<(), String> {
        if self.print && self.mode.as_deref() == Some("rpc") {
            return Err("Error: -p/--print cannot be combined with --mode rpc".into());
        }
        if self.resume {
            return Err(
                "Error: --resume opens an interactive session picker; use --session <path|id> or --continue"
                    .into(),
            );
        }
        if self.api_key.is_some() && self.model.is_none() && self.provider.is_none() {
            return Err(
                "Error: --api-key requires a model to be specified via --provider/--model".into(),
            );
        }
        Ok(())
    }

    /// `--mode acp`: serve the Agent Client Protocol (`dreb-acp`) instead of the RPC protocol.
    pub fn acp(&self) -> bool {
        self.mode.as_deref() == Some("acp")
    }

    /// Whether the process only runs a one-off action and exits (`--list-models`, `--export`).
    pub fn one_off(&self) -> bool {
        self.list_models.is_some() || self.export.is_some()
    }

    /// Checks the reference enforces before serving; the text goes to stderr with exit code 1.
    pub fn validate_for_rpc(&self) -> Result<(), String> {
        if self.print {
            return Err("Error: -p/--print cannot be combined with --mode rpc".into());
        }
        if self.resume {
            return Err(
                "Error: --resume opens an interactive session picker, which RPC mode does not have; use \
                 --session <path|id> or --continue"
                    .into(),
            );
        }
        if self.fork.is_some()
            && (self.session.is_some() || self.continue_recent || self.no_session)
        {
            return Err(
                "Error: --fork cannot be combined with --session, --continue, --resume or --no-session"
                    .into(),
            );
        }
        match self.mode.as_deref() {
            Some("rpc" | "acp") => {}
            Some(other) => {
                return Err(format!(
                    "Error: --mode {other} is not supported; use --mode rpc, --mode acp, --mode json or --mode text"
                ));
            }
            None => {
                return Err(
                    "Error: --mode rpc, --mode json or -p is required (the interactive terminal UI is not provided)"
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
                    "Error: unknown tool{} in --tools: {} (valid tools: {})",
                    if unknown.len() == 1 { "" } else { "s" },
                    unknown.join(", "),
                    provided_tool_names().join(", "),
                ));
            }
        }
        if let Some(level) = &self.thinking {
            let levels = dreb_protocol::ThinkingLevel::VALUES;
            if !levels.contains(&level.as_str()) {
                return Err(format!(
                    "Error: invalid --thinking level \"{level}\" (expected one of {})",
                    levels.join(", ")
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
    fn the_help_footer_is_built_whenever_help_may_be_asked_for() {
        let asks = |args: &[&str]| {
            let argv: Vec<std::ffi::OsString> = std::iter::once("dreb")
                .chain(args.iter().copied())
                .map(Into::into)
                .collect();
            may_ask_for_help(&argv)
        };
        assert!(asks(&["--help"]));
        assert!(asks(&["-h"]));
        assert!(asks(&["--mode", "rpc", "-ph"]));
        assert!(!asks(&[
            "--mode",
            "rpc",
            "--provider",
            "faux",
            "--no-session"
        ]));
        assert!(!asks(&["-p", "hello"]));
        // The program name is not an argument.
        let argv: Vec<std::ffi::OsString> = vec!["-h".into()];
        assert!(!may_ask_for_help(&argv));
    }

    fn split(args: &[&str]) -> (Vec<String>, Vec<String>) {
        let argv = std::iter::once("dreb")
            .chain(args.iter().copied())
            .map(std::ffi::OsString::from)
            .collect();
        let (kept, extension) = split_extension_flags(argv);
        (
            kept.into_iter()
                .skip(1)
                .map(|a| a.into_string().unwrap())
                .collect(),
            extension,
        )
    }

    #[test]
    fn unknown_long_flags_are_extension_flags() {
        let (kept, extension) = split(&[
            "--mode",
            "rpc",
            "--plan-mode",
            "--my-ext-level",
            "3",
            "--other=x",
            "-ne",
            "--provider",
            "faux",
        ]);
        assert_eq!(
            kept,
            ["--mode", "rpc", "--no-extensions", "--provider", "faux"]
        );
        assert_eq!(extension, ["--plan-mode", "--my-ext-level 3", "--other=x"]);
        let a = Args::try_parse_from(std::iter::once("dreb".to_string()).chain(kept)).unwrap();
        assert!(a.no_extensions);
        assert!(a.validate_for_rpc().is_ok());
    }

    #[test]
    fn the_references_flags_parse() {
        let a = parse(&[
            "--mode",
            "rpc",
            "-c",
            "--skill",
            "a",
            "--skill",
            "b",
            "--no-skills",
            "--prompt-template",
            "t.md",
            "--no-prompt-templates",
            "--theme",
            "dark",
            "--no-themes",
            "--offline",
            "--verbose",
            "-e",
            "x.ts",
            "--no-extensions",
        ]);
        assert!(
            a.continue_recent && a.no_skills && a.no_prompt_templates && a.offline && a.verbose
        );
        assert_eq!(a.skills, [PathBuf::from("a"), PathBuf::from("b")]);
        assert_eq!(a.extensions, ["x.ts"]);
        assert!(a.validate_for_rpc().is_ok());
        assert_eq!(parse(&["--list-models"]).list_models.as_deref(), Some(""));
        assert_eq!(
            parse(&["--list-models", "opus"]).list_models.as_deref(),
            Some("opus")
        );
        assert!(parse(&["--export", "s.jsonl", "o.html"]).one_off());
        for refused in [
            &["--mode", "rpc", "-r"][..],
            &["--mode", "rpc", "-p"][..],
            &["--mode", "rpc", "--fork", "abc", "--no-session"],
        ] {
            assert!(parse(refused).validate_for_rpc().is_err(), "{refused:?}");
        }
    }

    #[test]
    fn acp_mode_is_served_like_rpc() {
        let args = parse(&["--mode", "acp", "--provider", "faux"]);
        assert!(args.acp() && args.validate_for_rpc().is_ok());
        assert!(!parse(&["--mode", "rpc"]).acp());
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
