//! The system prompt: a base prompt (or `--system-prompt`), the appended text, project context files, the skills the
//! model may load, date and cwd.

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
}

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
    prompt.push_str(&format_project_context_section(parts.context_files));
    // The model can only use a skill through the `skill` tool or by reading its file.
    if parts.tools.iter().any(|t| t == "read" || t == "skill") {
        prompt.push_str(&skills_section(parts.skills));
    }
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
            skills: &[],
            cwd: Path::new("/p"),
            date: "2026-12-01",
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
        });
        assert!(!none.contains("available_skills"));
    }
}
