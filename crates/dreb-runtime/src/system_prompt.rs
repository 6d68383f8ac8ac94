//! The system prompt: a base prompt (or `--system-prompt`), the appended text, project context files, date and cwd.

use std::path::Path;

use dreb_settings::context_files::{ContextFile, format_project_context_section};

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
        "subagent" => "subagent: delegate focused work to child agents that run in the background",
        "wait" => "wait: pause until background work reports",
        "ask_user" => "ask_user: ask the user a clarifying question",
        "tasks_update" => "tasks_update: publish the current task list",
        "suggest_next" => "suggest_next: suggest the user's next prompt and end the turn",
        _ => return None,
    })
}

/// `--system-prompt` / `--append-system-prompt` accept text or a path to a file holding it.
pub(crate) fn text_or_file(value: &str, cwd: &Path) -> String {
    let path = cwd.join(value);
    if value.len() < 4096 && path.is_file() {
        if let Ok(text) = std::fs::read_to_string(&path) {
            return text;
        }
    }
    value.to_string()
}

pub(crate) struct PromptParts<'a> {
    pub custom: Option<&'a str>,
    pub append: Option<&'a str>,
    pub tools: &'a [String],
    pub context_files: &'a [ContextFile],
    pub cwd: &'a Path,
    pub date: &'a str,
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
            base
        }
    };
    if let Some(append) = parts.append.filter(|a| !a.is_empty()) {
        prompt.push_str("\n\n");
        prompt.push_str(append);
    }
    prompt.push_str(&format_project_context_section(parts.context_files));
    prompt.push_str(&format!("\nCurrent date: {}", parts.date));
    prompt.push_str(&format!(
        "\nCurrent working directory: {}",
        parts.cwd.display()
    ));
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
            cwd: Path::new("/p"),
            date: "2026-12-01",
        });
        assert!(p.contains("- read: read a file"));
        assert!(p.contains("\n\nExtra rule."));
        assert!(p.contains("## /p/AGENTS.md\n\nUse tabs."));
        assert!(p.ends_with("Current date: 2026-12-01\nCurrent working directory: /p"));
    }

    #[test]
    fn custom_prompt_replaces_the_base() {
        let p = build_system_prompt(&PromptParts {
            custom: Some("Only answer in haiku."),
            append: None,
            tools: &[],
            context_files: &[],
            cwd: Path::new("/"),
            date: "d",
        });
        assert!(p.starts_with("Only answer in haiku.\nCurrent date: d"));
    }
}
