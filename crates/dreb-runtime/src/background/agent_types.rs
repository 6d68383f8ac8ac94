//! Subagent type definitions: markdown files with a `---` frontmatter (`name`, `description`, `tools`, `model`)
//! whose body is appended to the child's system prompt. Sources, later ones replacing earlier ones by name: the
//! bundled agents, `~/.dreb/agents/*.md`, then `<cwd>/.dreb/agents/*.md`.

use std::path::Path;

/// The agent the subagent tool uses when none is named.
pub const DEFAULT_AGENT: &str = "Explore";

/// The bundled definitions (`data/agents/*.md`), in the order the reference lists its `agents/` directory (by file
/// name).
const BUNDLED_AGENTS: [&str; 11] = [
    include_str!("../../data/agents/code-reviewer.md"),
    include_str!("../../data/agents/completeness-checker.md"),
    include_str!("../../data/agents/developers-advocate.md"),
    include_str!("../../data/agents/devils-advocate.md"),
    include_str!("../../data/agents/error-auditor.md"),
    include_str!("../../data/agents/explore.md"),
    include_str!("../../data/agents/feature-dev.md"),
    include_str!("../../data/agents/independent-assessor.md"),
    include_str!("../../data/agents/sandbox.md"),
    include_str!("../../data/agents/simplifier.md"),
    include_str!("../../data/agents/test-reviewer.md"),
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

/// Parse one definition. `model` may be a single value, a comma-separated list or a YAML list; `tools` a
/// comma-separated list (or a YAML list).
pub fn parse_agent(text: &str) -> Result<AgentTypeConfig, String> {
    // Only CRLF is normalised here (the frontmatter parser also turns a lone CR into LF); no copy without a CR.
    let text = if memchr::memchr(b'\r', text.as_bytes()).is_some() {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    // The closing delimiter must end its line.
    let closed = text.strip_prefix("---\n").and_then(|rest| {
        let after = &rest[rest.find("\n---")? + 4..];
        (after.is_empty() || after.starts_with('\n')).then_some(())
    });
    if closed.is_none() {
        return Err("missing --- frontmatter delimiters".into());
    }
    let front = dreb_settings::frontmatter::parse(&text);
    if let Some(e) = &front.error {
        tracing::warn!(
            "[subagent] agent frontmatter is not valid YAML ({e}); its top-level `key: value` lines are used"
        );
    }
    let name = front
        .string("name")
        .ok_or("missing required 'name' field in frontmatter")?;
    let list = |key: &str| {
        front.list(key).unwrap_or_else(|| {
            front
                .string(key)
                .map(|s| {
                    s.split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        })
    };
    let tools = front
        .string("tools")
        .or_else(|| front.list("tools").map(|t| t.join(", ")));
    Ok(AgentTypeConfig {
        name,
        description: front.string("description").unwrap_or_default(),
        tools,
        models: list("model"),
        system_prompt: front.body,
    })
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
        let d = parse_agent(
            "---\nname: \"D: quoted\"\ndescription: >-\n  Finds things\n  fast.\ntools: [read, grep]\nmodel: [m/a]\n---\nx",
        )
        .unwrap();
        assert_eq!(d.name, "D: quoted");
        assert_eq!(d.description, "Finds things fast.");
        assert_eq!(d.tools.as_deref(), Some("read, grep"));
        assert_eq!(d.models, ["m/a"]);
        // Not YAML (`: ` inside a plain value): the lines are still read.
        let e = parse_agent("---\nname: E\ndescription: Use when: asked\n---\nbody").unwrap();
        assert_eq!(e.description, "Use when: asked");
        assert_eq!(e.system_prompt, "body");
    }

    #[test]
    fn bundled_definitions_are_valid_yaml() {
        for text in BUNDLED_AGENTS {
            assert_eq!(
                dreb_settings::frontmatter::parse(text).error,
                None,
                "{text}"
            );
            assert!(!parse_agent(text).unwrap().description.is_empty());
        }
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
