//! Subagent type definitions: markdown files with a `---` frontmatter (`name`, `description`, `tools`, `model`)
//! whose body is appended to the child's system prompt. Sources, later ones replacing earlier ones by name: the
//! bundled agents, `~/.dreb/agents/*.md`, then `<cwd>/.dreb/agents/*.md`.

use std::path::Path;

/// The agent the subagent tool uses when none is named.
pub const DEFAULT_AGENT: &str = "Explore";

const BUNDLED_AGENTS: [&str; 2] = [
    include_str!("../../data/agents/explore.md"),
    include_str!("../../data/agents/code-reviewer.md"),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTypeConfig {
    pub name: String,
    pub description: String,
    /// Comma-separated tool names (None = the default subagent tools).
    pub tools: Option<String>,
    /// Model preference list: the first one that resolves wins.
    pub models: Vec<String>,
    /// The body, appended to the child's system prompt.
    pub system_prompt: String,
}

/// Parse one definition. `model` may be a single value, a comma-separated list or a YAML list.
pub fn parse_agent(text: &str) -> Result<AgentTypeConfig, String> {
    let text = text.replace("\r\n", "\n");
    let rest = text
        .strip_prefix("---\n")
        .ok_or("missing --- frontmatter delimiters")?;
    let (front, body) = match rest.find("\n---") {
        Some(end) => {
            let after = &rest[end + 4..];
            // The closing delimiter must end its line.
            if !(after.is_empty() || after.starts_with('\n')) {
                return Err("missing --- frontmatter delimiters".into());
            }
            (&rest[..end], after)
        }
        None => return Err("missing --- frontmatter delimiters".into()),
    };
    let get = |key: &str| -> Option<String> {
        front.lines().find_map(|l| {
            let v = l.strip_prefix(key)?.strip_prefix(':')?.trim();
            (!v.is_empty()).then(|| v.to_string())
        })
    };
    let name = get("name").ok_or("missing required 'name' field in frontmatter")?;
    Ok(AgentTypeConfig {
        name,
        description: get("description").unwrap_or_default(),
        tools: get("tools"),
        models: model_list(front, get("model")),
        system_prompt: body.trim().to_string(),
    })
}

fn model_list(front: &str, inline: Option<String>) -> Vec<String> {
    if let Some(inline) = inline {
        return inline
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
    }
    // `model:` alone on its line, followed by indented `- item` lines.
    let mut lines = front.lines().skip_while(|l| l.trim_end() != "model:");
    if lines.next().is_none() {
        return Vec::new();
    }
    lines
        .map_while(|l| {
            let starts_indented = l.starts_with(' ') || l.starts_with('\t');
            let item = l.trim_start().strip_prefix("- ")?;
            starts_indented.then(|| item.trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .collect()
}

fn load(texts: impl IntoIterator<Item = (String, String)>, agents: &mut Vec<AgentTypeConfig>) {
    for (origin, text) in texts {
        match parse_agent(&text) {
            Ok(config) => match agents.iter_mut().find(|a| a.name == config.name) {
                Some(slot) => *slot = config,
                None => agents.push(config),
            },
            Err(e) => tracing::warn!("[subagent] Skipping agent file {origin}: {e}"),
        }
    }
}

fn files_in(dir: &Path) -> Vec<(String, String)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<_> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| match std::fs::read_to_string(&p) {
            Ok(text) => Some((p.display().to_string(), text)),
            Err(e) => {
                tracing::warn!("[subagent] Could not read agent file {}: {e}", p.display());
                None
            }
        })
        .collect()
}

/// Every agent type visible from `cwd`, in discovery order (bundled first; a later source replaces an earlier
/// definition of the same name in place).
pub fn discover(home: Option<&Path>, cwd: &Path) -> Vec<AgentTypeConfig> {
    let mut agents = Vec::new();
    load(
        BUNDLED_AGENTS
            .iter()
            .map(|t| ("<bundled>".to_string(), t.to_string())),
        &mut agents,
    );
    if let Some(home) = home {
        load(files_in(&home.join(".dreb").join("agents")), &mut agents);
    }
    load(files_in(&cwd.join(".dreb").join("agents")), &mut agents);
    agents
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_inline_comma_and_yaml_model_lists() {
        let a = parse_agent("---\nname: A\ndescription: d\ntools: read, bash\nmodel: x/one, two\n---\n\nBody text\n")
            .unwrap();
        assert_eq!(a.name, "A");
        assert_eq!(a.tools.as_deref(), Some("read, bash"));
        assert_eq!(a.models, ["x/one", "two"]);
        assert_eq!(a.system_prompt, "Body text");
        let b = parse_agent("---\nname: B\nmodel:\n  - first\n  - second\ndescription: d\n---\nx")
            .unwrap();
        assert_eq!(b.models, ["first", "second"]);
        let c = parse_agent("---\nname: C\n---\n").unwrap();
        assert!(c.models.is_empty() && c.tools.is_none() && c.description.is_empty());
    }

    #[test]
    fn rejects_what_has_no_frontmatter_or_name() {
        assert!(parse_agent("no frontmatter").is_err());
        assert!(
            parse_agent("---\ndescription: x\n---\nbody")
                .unwrap_err()
                .contains("name")
        );
    }

    #[test]
    fn project_definitions_replace_bundled_ones_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let agents = dir.path().join(".dreb/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("explore.md"),
            "---\nname: Explore\ndescription: mine\n---\nproject body",
        )
        .unwrap();
        std::fs::write(agents.join("broken.md"), "nothing").unwrap();
        let found = discover(None, dir.path());
        let explore = found.iter().find(|a| a.name == DEFAULT_AGENT).unwrap();
        assert_eq!(explore.description, "mine");
        assert_eq!(explore.system_prompt, "project body");
        assert_eq!(found.iter().filter(|a| a.name == DEFAULT_AGENT).count(), 1);
    }
}
