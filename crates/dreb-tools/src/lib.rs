//! The coding tools (read, bash, edit, write, ls, find, grep, web_fetch, web_search, search, ...) and their safety
//! guards. `search`, the semantic codebase search, is built from the `dreb-search` crate.
//!
//! Every tool implements [`dreb_agent::Tool`]. Build them one by one (`tools::read::ReadTool::new`, ...) or by
//! name with [`create_tool`]. The shell executor behind both the `bash` tool and the RPC `bash` command is in
//! [`bash`]; the guards the runtime's before/after hooks call are in [`guards`]. Lazy nested context loading
//! (which context files a tool call brings in) is `dreb_settings::nested_context`, wired by the runtime.

pub mod bash;
pub mod collate;
pub mod common;
pub mod files;
pub mod guards;
pub mod image;
pub mod mutation_queue;
pub mod paths;
pub mod tools;
pub mod truncate;
pub mod walk;
pub mod web;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

use dreb_agent::Tool;

pub use bash::{
    BashExecOptions, BashResult, BashSlot, CommandRun, CommandRunner, ShellConfig, execute_bash,
};
pub use files::TextFiles;
pub use tools::ask_user::{
    AskAnswer, AskOptions, AskOutcome, AskQuestion, AskRequest, AskResult, Dialog, DialogError,
};
pub use tools::suggest_next::SuggestSink;
pub use tools::tasks::{SessionTask, TaskStatus, TasksSink};

/// Tool names this crate implements, in the reference's default order.
pub const IMPLEMENTED_TOOLS: [&str; 15] = [
    "read",
    "bash",
    "edit",
    "write",
    "grep",
    "find",
    "ls",
    "web_search",
    "web_fetch",
    "wait",
    "watch_github_ci",
    "ask_user",
    "tasks_update",
    "search",
    "suggest_next",
];

/// Also available by name, outside the default set (`--tools tmp_read`).
pub const EXTRA_TOOLS: [&str; 1] = ["tmp_read"];

/// What the tools need from the session.
#[derive(Clone)]
pub struct ToolContext {
    /// The session cwd (the RPC `bash` command uses the process cwd instead; see [`execute_bash`]).
    pub cwd: PathBuf,
    pub shell: ShellConfig,
    /// Environment for commands (see [`bash::shell_env`]); `None` inherits the process environment.
    pub env: Option<Vec<(OsString, OsString)>>,
    /// The `shellCommandPrefix` setting.
    pub command_prefix: Option<String>,
    /// The `images.autoResize` setting.
    pub auto_resize_images: bool,
    /// The host's question UI; `None` when there is none.
    pub dialog: Option<Arc<dyn Dialog>>,
    /// Becomes the `tasks_update` event.
    pub on_tasks_update: TasksSink,
    /// Becomes the `suggest_next` event.
    pub on_suggest_next: SuggestSink,
    /// The front end's text files for `read`, `edit` and `write`; `None`: the disk.
    pub files: Option<Arc<dyn TextFiles>>,
    /// What runs the `bash` tool's commands; `None`: this machine ([`bash::LocalRunner`]).
    pub commands: Option<Arc<dyn CommandRunner>>,
}

impl ToolContext {
    /// Defaults for `cwd`: the resolved shell, inherited environment, no UI, events dropped.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ToolContext {
            cwd: cwd.into(),
            shell: ShellConfig::default(),
            env: None,
            command_prefix: None,
            auto_resize_images: true,
            dialog: None,
            on_tasks_update: Arc::new(|_| {}),
            on_suggest_next: Arc::new(|_| {}),
            files: None,
            commands: None,
        }
    }
}

/// Whether [`create_tool`] builds `name` (without building it).
pub fn is_builtin_tool(name: &str) -> bool {
    IMPLEMENTED_TOOLS.contains(&name) || EXTRA_TOOLS.contains(&name)
}

/// Build one tool by name; `None` for names this crate does not implement.
pub fn create_tool(name: &str, ctx: &ToolContext) -> Option<Arc<dyn Tool>> {
    use tools::*;
    let cwd = ctx.cwd.clone();
    Some(match name {
        "read" => Arc::new(
            read::ReadTool::new(
                cwd,
                read::ReadOptions {
                    auto_resize_images: ctx.auto_resize_images,
                },
            )
            .with_files(ctx.files.clone()),
        ),
        "bash" => Arc::new(
            bash::BashTool::new(
                cwd,
                bash::BashToolOptions {
                    shell: ctx.shell.clone(),
                    env: ctx.env.clone(),
                    command_prefix: ctx.command_prefix.clone(),
                },
            )
            .with_runner(ctx.commands.clone()),
        ),
        "tmp_read" => Arc::new(read::TmpReadTool::new(read::ReadOptions {
            auto_resize_images: ctx.auto_resize_images,
        })),
        "edit" => Arc::new(edit::EditTool::new(cwd).with_files(ctx.files.clone())),
        "write" => Arc::new(write::WriteTool::new(cwd).with_files(ctx.files.clone())),
        "grep" => Arc::new(grep::GrepTool::new(cwd)),
        "find" => Arc::new(find::FindTool::new(cwd)),
        "ls" => Arc::new(ls::LsTool::new(cwd)),
        "web_search" => Arc::new(web::search::WebSearchTool::new(cwd)),
        "web_fetch" => Arc::new(web::fetch::WebFetchTool::new()),
        "wait" => Arc::new(suggest_next::WaitTool::default()),
        "watch_github_ci" => Arc::new(watch_github_ci::WatchGithubCiTool::new(
            cwd,
            ctx.env.clone(),
        )),
        "ask_user" => Arc::new(ask_user::AskUserTool::new(ctx.dialog.clone())),
        "tasks_update" => Arc::new(tasks::TasksUpdateTool::new(ctx.on_tasks_update.clone())),
        "search" => Arc::new(dreb_search::SearchTool::new(
            cwd,
            crate::paths::resolve_to_cwd,
            dreb_search::SearchEnv::from_process(),
        )),
        "suggest_next" => Arc::new(suggest_next::SuggestNextTool::new(
            ctx.on_suggest_next.clone(),
        )),
        _ => return None,
    })
}

/// Build the named tools that exist, in the given order.
pub fn create_tools(names: &[&str], ctx: &ToolContext) -> Vec<Arc<dyn Tool>> {
    names.iter().filter_map(|n| create_tool(n, ctx)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_every_implemented_tool_by_name() {
        let ctx = ToolContext::new(std::env::temp_dir());
        let tools = create_tools(&IMPLEMENTED_TOOLS, &ctx);
        let names: Vec<&str> = tools.iter().map(|t| t.definition().name.as_str()).collect();
        assert_eq!(names, IMPLEMENTED_TOOLS.to_vec());
        assert!(create_tool("no_such_tool", &ctx).is_none());
        for name in IMPLEMENTED_TOOLS.iter().chain(&EXTRA_TOOLS).chain(&[
            "no_such_tool",
            "subagent",
            "skill",
            "mcp__s__t",
            "",
        ]) {
            assert_eq!(
                is_builtin_tool(name),
                create_tool(name, &ctx).is_some(),
                "{name}"
            );
        }
        assert_eq!(
            create_tool(EXTRA_TOOLS[0], &ctx).unwrap().definition().name,
            "tmp_read"
        );
    }

    /// The definitions exactly as the model sees them (names, descriptions, parameter schemas).
    #[test]
    fn tool_definitions_snapshot() {
        let ctx = ToolContext::new("/work");
        let defs: Vec<_> = create_tools(&IMPLEMENTED_TOOLS, &ctx)
            .iter()
            .map(|t| t.definition().clone())
            .collect();
        insta::assert_json_snapshot!("tool_definitions", defs);
    }
}
