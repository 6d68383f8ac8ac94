//! The system prompt: a base prompt (or `--system-prompt`), the appended text, project context files, the skills the
//! model may load, the memory indexes, the repository's state, then date, cwd, the UI and the model.

mod memory;

use std::path::Path;

use dreb_settings::context_files::{ContextFile, format_project_context_section};
use dreb_settings::memory::MemoryIndexes;

use crate::project_state::ProjectState;

/// One-line descriptions of the built-in tools, shown in the base prompt.
fn tool_line(name: &str) -> Option<&'static str> {
    Some(match name {
        "read" => "read: read a file (text with line numbers, or an image)",
        "bash" => "bash: run a shell command in the working directory",
        "edit" => "edit: replace an exact piece of text in a file",
        "write" => "write: create or overwrite a file",
        "grep" => "grep: search file contents (respects .gitignore)",
        "find" => "find: find files by glob pattern (respects .gitignore)",
        "ls" => "ls: list a directory",
        "web_search" => "web_search: search the web (titles, URLs and snippets)",
        "web_fetch" => "web_fetch: fetch a URL as readable text (HTML as Markdown, PDF text)",
        "subagent" => "subagent: delegate focused work to child agents that run in the background",
        "wait" => "wait: pause until background work reports",
        "watch_github_ci" => {
            "watch_github_ci: wait until a pull request's GitHub checks pass or fail"
        }
        "ask_user" => "ask_user: ask the user a clarifying question",
        "skill" => "skill: load a skill's instructions for the task at hand",
        "tasks_update" => "tasks_update: publish the current task list",
        "search" => {
            "search: semantic codebase search (natural-language questions, identifiers, paths) over code and docs"
        }
        "suggest_next" => "suggest_next: suggest the user's next prompt and end the turn",
        _ => return None,
    })
}

/// `--system-prompt` / `--append-system-prompt` accept text or a path to a file holding it.
pub(crate) fn text_or_file(value: &str, cwd: &Path) -> String {
    let path = cwd.join(value);
    if value.len() < 4096
        && path.is_file()
        && let Ok(text) = std::fs::read_to_string(&path)
    {
        return text;
    }
    value.to_string()
}

pub(crate) struct PromptParts<'a> {
    pub custom: Option<&'a str>,
    pub append: Option<&'a str>,
    pub tools: &'a [String],
    pub context_files: &'a [ContextFile],
    /// `(name, description)` of the skills offered to the model (already without the model-invocation-disabled ones).
    pub skills: &'a [(String, String)],
    pub cwd: &'a Path,
    pub date: &'a str,
    /// The memory section's directories and indexes (no section without them).
    pub memory: Option<&'a MemoryIndexes>,
    /// The repository's state at session start (no section outside a repository).
    pub project_state: Option<&'a ProjectState>,
    /// Running as root (uid 0) adds a warning.
    pub as_root: bool,
    /// The UI the replies go to (`rpc`, `cli`, `agent`, ... or a `--ui` value).
    pub ui: Option<&'a str>,
    /// `(provider, model id)`; kept as the last line so a model change replaces it (see [`with_model_line`]).
    pub model: Option<(&'a str, &'a str)>,
    /// Settings turned the subagent tool off for this (parent) session.
    pub subagents_disabled: bool,
}

impl Default for PromptParts<'_> {
    fn default() -> Self {
        PromptParts {
            custom: None,
            append: None,
            tools: &[],
            context_files: &[],
            skills: &[],
            cwd: Path::new(""),
            date: "",
            memory: None,
            project_state: None,
            as_root: false,
            ui: None,
            model: None,
            subagents_disabled: false,
        }
    }
}

/// How each UI is described to the model; another `--ui` value is shown as given.
fn ui_description(ui: &str) -> &str {
    match ui {
        "rpc" => "RPC (a program drives this session and consumes your output)",
        "cli" => "CLI (one-shot command line: your final reply is printed and the process exits)",
        "agent" => {
            "Subagent (a child agent: do the task you were given and report the results concisely)"
        }
        "acp" => {
            "Editor (the user works with you from a code editor, through the Agent Client Protocol)"
        }
        "dashboard" => "Dashboard (a web dashboard drives this session and shows your output)",
        "tui" => "Terminal UI (an interactive terminal)",
        other => other,
    }
}

/// Prefix of the prompt's last line when it names the model.
const MODEL_LINE: &str = "\nYou are running on: ";

/// `prompt` naming `provider/id` as the model it runs on, in place of the model it named (a model change).
pub(crate) fn with_model_line(prompt: &str, provider: &str, id: &str) -> String {
    let base = match prompt.rfind(MODEL_LINE) {
        Some(at) if !prompt[at + MODEL_LINE.len()..].contains('\n') => &prompt[..at],
        _ => prompt,
    };
    format!("{base}{MODEL_LINE}{provider}/{id}")
}

/// The warning a session running as root gets.
const ROOT_WARNING: &str = "\n\n## Running as root\n\nThis session runs as root (uid 0): every command has full \
    control of the system.\n- Do not use sudo, su or doas; there is nothing to escalate to.\n- Be especially careful \
    with file changes, package installs and system commands; pick the least destructive way to do each task.\n- Tell \
    the user before doing anything that could affect the system's stability.";

/// `s` safe inside XML text and attribute values.
pub(crate) fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// The skills the model may load, as an `<available_skills>` list (empty when there are none).
fn skills_section(skills: &[(String, String)]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n\nSkills hold detailed instructions for particular kinds of work. When the task fits one of the \
         descriptions below, call the skill tool with that skill's name to load its instructions.\nA path \
         mentioned in a skill is relative to the skill's directory (the folder of its SKILL.md): make it absolute \
         before using it in a tool call.\n\n<available_skills>",
    );
    for (name, description) in skills {
        out.push_str(&format!(
            "\n  <skill>\n    <name>{}</name>\n    <description>{}</description>\n  </skill>",
            escape_xml(name),
            escape_xml(description)
        ));
    }
    out.push_str("\n</available_skills>");
    out
}

pub(crate) fn build_system_prompt(parts: &PromptParts<'_>) -> String {
    let mut prompt = match parts.custom {
        Some(custom) => custom.to_string(),
        None => {
            let tools: Vec<String> = parts
                .tools
                .iter()
                .filter_map(|t| tool_line(t))
                .map(|l| format!("- {l}"))
                .collect();
            let mut base = String::from(
                "You are dreb, an expert coding assistant working in the user's project. You help by reading \
                 files, running commands, editing code and writing new files.\n",
            );
            if !tools.is_empty() {
                base.push_str("\nAvailable tools:\n");
                base.push_str(&tools.join("\n"));
                base.push('\n');
            }
            base.push_str(
                "\nGuidelines:\n- Read before you edit; prefer small, exact edits.\n- Use tools to check your \
                 work instead of guessing.\n- Be concise in your answers; show file paths clearly.",
            );
            let has = |name: &str| parts.tools.iter().any(|t| t == name);
            if has("search") && (has("grep") || has("find") || has("ls")) {
                base.push_str(
                    "\n- Start with search to explore and understand the codebase; use grep, find and ls for exact \
                     text and specific file names.",
                );
            }
            // Without this, models poll `gh` in a loop, sleep, or ask the user whether CI is done.
            if parts.tools.iter().any(|t| t == "watch_github_ci") {
                base.push_str(
                    "\n- To wait for a pull request's CI, call watch_github_ci (it blocks until the checks pass or \
                     fail; omit `pr` for the current branch) instead of polling, sleeping, using wait or asking \
                     the user.",
                );
            }
            base
        }
    };
    if let Some(append) = parts.append.filter(|a| !a.is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(append);
    }
    if parts.subagents_disabled {
        prompt.push_str(
            "\n\nSubagents are turned off for this session: there is no subagent tool, so do yourself the work you \
             would otherwise delegate.",
        );
    }
    prompt.push_str(&format_project_context_section(parts.context_files));
    // The model can only use a skill through the `skill` tool or by reading its file.
    if parts.tools.iter().any(|t| t == "read" || t == "skill") {
        prompt.push_str(&skills_section(parts.skills));
    }
    if let Some(memory) = parts.memory {
        prompt.push_str(&memory::section(memory, chrono::Utc::now()));
    }
    if let Some(state) = parts.project_state {
        prompt.push_str(&state.prompt_section());
    }
    if parts.as_root {
        prompt.push_str(ROOT_WARNING);
    }
    prompt.push_str(&format!("\nCurrent date: {}", parts.date));
    prompt.push_str(&format!(
        "\nCurrent working directory: {}",
        parts.cwd.display()
    ));
    if let Some(ui) = parts.ui {
        prompt.push_str(&format!("\nUI: {}", ui_description(ui)));
    }
    if let Some((provider, id)) = parts.model {
        prompt.push_str(&format!("{MODEL_LINE}{provider}/{id}"));
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_prompt_lists_tools_context_date_and_cwd() {
        let files = vec![ContextFile {
            path: "/p/AGENTS.md".into(),
            content: "Use tabs.".into(),
        }];
        let p = build_system_prompt(&PromptParts {
            custom: None,
            append: Some("Extra rule."),
            tools: &["read".into(), "bash".into()],
            context_files: &files,
            skills: &[],
            cwd: Path::new("/p"),
            date: "2026-12-01",
            ..PromptParts::default()
        });
        assert!(p.contains("- read: read a file"));
        assert!(p.contains("\n\nExtra rule."));
        assert!(p.contains("## /p/AGENTS.md\n\nUse tabs."));
        assert!(p.ends_with("Current date: 2026-12-01\nCurrent working directory: /p"));
    }

    #[test]
    fn the_ci_guideline_comes_with_the_ci_tool() {
        let prompt = |tools: &[String]| {
            build_system_prompt(&PromptParts {
                custom: None,
                append: None,
                tools,
                context_files: &[],
                skills: &[],
                cwd: Path::new("/p"),
                date: "d",
                ..PromptParts::default()
            })
        };
        let with = prompt(&["bash".into(), "watch_github_ci".into()]);
        assert!(with.contains(
            "\n- watch_github_ci: wait until a pull request's GitHub checks pass or fail\n"
        ));
        assert!(with.contains("\n- To wait for a pull request's CI, call watch_github_ci "));
        let without = prompt(&["bash".into()]);
        assert!(!without.contains("watch_github_ci"));
    }

    #[test]
    fn custom_prompt_replaces_the_base() {
        let p = build_system_prompt(&PromptParts {
            custom: Some("Only answer in haiku."),
            append: None,
            tools: &[],
            context_files: &[],
            skills: &[],
            cwd: Path::new("/"),
            date: "d",
            ..PromptParts::default()
        });
        assert!(p.starts_with("Only answer in haiku.\nCurrent date: d"));
    }

    fn with_skills(tools: &[&str], custom: Option<&str>) -> String {
        let tools: Vec<String> = tools.iter().map(|t| t.to_string()).collect();
        build_system_prompt(&PromptParts {
            custom,
            append: None,
            tools: &tools,
            context_files: &[],
            skills: &[
                ("review".into(), "Reviews a PR".into()),
                ("a<b>".into(), "Uses \"quotes\" & 'apostrophes'".into()),
            ],
            cwd: Path::new("/p"),
            date: "d",
            ..PromptParts::default()
        })
    }

    #[test]
    fn skills_are_listed_when_the_model_can_load_them() {
        let p = with_skills(&["bash", "skill"], None);
        let block = "<available_skills>\n  <skill>\n    <name>review</name>\n    <description>Reviews a PR</description>\
                     \n  </skill>\n  <skill>\n    <name>a&lt;b&gt;</name>\n    <description>Uses &quot;quotes&quot; &amp; \
                     &apos;apostrophes&apos;</description>\n  </skill>\n</available_skills>\nCurrent date: d";
        assert!(p.contains(block), "{p}");
        assert!(p.contains("- skill: load a skill's instructions"), "{p}");
        // `read` alone is enough (the model can read SKILL.md itself); a custom prompt keeps the list too.
        assert!(with_skills(&["read"], Some("Custom.")).contains("<available_skills>"));
        assert!(!with_skills(&["bash"], None).contains("available_skills"));
        let none = build_system_prompt(&PromptParts {
            custom: None,
            append: None,
            tools: &["skill".into()],
            context_files: &[],
            skills: &[],
            cwd: Path::new("/p"),
            date: "d",
            ..PromptParts::default()
        });
        assert!(!none.contains("available_skills"));
    }

    fn full(custom: Option<&str>) -> String {
        let state = ProjectState {
            branch: "main".into(),
            uncommitted: 1,
            commits: vec![("abc1234".into(), "Fix it".into())],
            tags: vec![],
        };
        build_system_prompt(&PromptParts {
            custom,
            tools: &["read".into(), "bash".into()],
            cwd: Path::new("/p"),
            date: "2026-12-07",
            project_state: Some(&state),
            as_root: true,
            ui: Some("rpc"),
            model: Some(("anthropic", "claude-x")),
            subagents_disabled: true,
            ..PromptParts::default()
        })
    }

    #[test]
    fn project_state_root_warning_ui_and_model_come_last_in_order() {
        for custom in [None, Some("Custom.")] {
            let p = full(custom);
            let at = |needle: &str| {
                p.find(needle)
                    .unwrap_or_else(|| panic!("{needle:?} missing: {p}"))
            };
            let order = [
                at("Subagents are turned off for this session"),
                at("## Project state (true at session start only)"),
                at("- Status: 1 uncommitted change\n"),
                at("## Running as root"),
                at("\nCurrent date: 2026-12-07"),
                at("\nCurrent working directory: /p"),
                at("\nUI: RPC (a program drives this session"),
            ];
            assert!(order.windows(2).all(|w| w[0] < w[1]), "{p}");
            assert!(
                p.ends_with("\nYou are running on: anthropic/claude-x"),
                "{p}"
            );
        }
        let plain = build_system_prompt(&PromptParts {
            cwd: Path::new("/p"),
            date: "d",
            ..PromptParts::default()
        });
        for absent in [
            "Subagents",
            "Project state",
            "root",
            "UI:",
            "running on",
            "# Memory",
        ] {
            assert!(!plain.contains(absent), "{absent}: {plain}");
        }
        assert!(full(None).contains("\nUI: RPC"));
        let ui = |ui| {
            build_system_prompt(&PromptParts {
                ui: Some(ui),
                ..PromptParts::default()
            })
        };
        assert!(ui("agent").ends_with("\nUI: Subagent (a child agent: do the task you were given and report the results concisely)"));
        assert!(
            ui("custom-ui").ends_with("\nUI: custom-ui"),
            "another UI is named as given"
        );
    }

    #[test]
    fn a_model_change_replaces_the_model_line() {
        let p = full(None);
        let changed = with_model_line(&p, "openai", "gpt-y");
        assert!(changed.ends_with("\nUI: RPC (a program drives this session and consumes your output)\nYou are running on: openai/gpt-y"));
        assert_eq!(changed.matches("You are running on").count(), 1);
        assert_eq!(with_model_line(&changed, "anthropic", "claude-x"), p);
        // A prompt without the line (an extension's own) gets it appended.
        assert_eq!(
            with_model_line("Own prompt.", "a", "b"),
            "Own prompt.\nYou are running on: a/b"
        );
    }
}
