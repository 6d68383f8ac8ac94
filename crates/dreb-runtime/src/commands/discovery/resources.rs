//! Resource discovery: skills and prompt templates from the settings, the agent dir, the project and the bundled
//! skills, the subagent definitions, and the built-in slash commands. Knows nothing of the live session.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use dreb_protocol::{
    BuiltinSlashCommand, PromptSlashCommand, RpcSlashCommand, SkillSlashCommand, SourceInfo,
    SourceOrigin, SourceScope,
};
use dreb_settings::SettingsManager;
use dreb_settings::context_files::ContextFile;
use dreb_settings::frontmatter::Frontmatter;
use serde_json::Value;

use super::bundled_skills;

/// The 20 interactive built-ins, with the `dashboard` flag (false: terminal-only), in the reference's order.
pub(crate) const BUILTIN_COMMANDS: [(&str, &str, bool); 20] = [
    ("settings", "Open settings menu", true),
    ("model", "Select model (opens selector UI)", true),
    (
        "scoped-models",
        "Enable/disable models for Ctrl+P cycling",
        true,
    ),
    (
        "export",
        "Export session (HTML default, or specify path: .html/.jsonl)",
        true,
    ),
    (
        "import",
        "Import and resume a session from a JSONL file",
        true,
    ),
    ("copy", "Copy last agent message to clipboard", false),
    ("name", "Set session display name", true),
    ("session", "Show session info and stats", true),
    ("hotkeys", "Show all keyboard shortcuts", false),
    ("fork", "Create a new fork from a previous message", true),
    ("tree", "Navigate session tree (switch branches)", true),
    ("login", "Login with OAuth provider", true),
    ("logout", "Logout from OAuth provider", true),
    ("new", "Start a new session", true),
    ("compact", "Manually compact the session context", true),
    (
        "dream",
        "Consolidate and prune memories (backup, merge, scan sessions)",
        true,
    ),
    ("resume", "Resume a different session", true),
    (
        "reload",
        "Reload keybindings, extensions, skills, prompts, and themes",
        true,
    ),
    (
        "buddy",
        "Hatch or manage your terminal companion (pet, reroll, off)",
        false,
    ),
    ("quit", "Quit dreb", true),
];

/// The UI type RPC sessions filter skills by (a skill's `ui` frontmatter restricts it to one UI).
const UI_TYPE: &str = "rpc";

/// Where a resource came from, as `sourceInfo` reports it.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub path: PathBuf,
    /// `auto` for the discovered directories, `local` for paths listed in settings.
    pub source: &'static str,
    pub scope: SourceScope,
    pub base_dir: Option<PathBuf>,
}

impl Source {
    fn info(&self) -> SourceInfo {
        SourceInfo {
            path: self.path.to_string_lossy().into_owned(),
            source: self.source.to_string(),
            scope: self.scope,
            origin: SourceOrigin::TopLevel,
            base_dir: self
                .base_dir
                .as_ref()
                .map(|b| b.to_string_lossy().into_owned()),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Skill {
    pub name: String,
    pub description: String,
    pub ui: Option<String>,
    /// `disable-model-invocation: true`: only the user may run it (`/skill:name`); the model neither sees it in the
    /// system prompt nor can load it with the `skill` tool.
    pub disable_model_invocation: bool,
    /// The `SKILL.md` text of a compiled-in skill (the others are read from `source.path` when expanded).
    pub text: Option<&'static str>,
    pub source: Source,
}

#[derive(Debug, Clone)]
pub(crate) struct PromptTemplate {
    pub name: String,
    pub description: String,
    /// The body after the frontmatter, with `$1`/`$@`/… placeholders.
    pub content: String,
    pub source: Source,
}

/// Resource metadata loaded at startup and on `reload`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resources {
    pub context_files: Vec<PathBuf>,
    pub skills: Vec<Skill>,
    pub prompts: Vec<PromptTemplate>,
    /// The memory indexes the system prompt shows (found with the rest, by start-up's discovery and `reload`).
    pub memory: Option<dreb_settings::memory::MemoryIndexes>,
    /// The repository's state when the resources were found.
    pub project_state: Option<crate::project_state::ProjectState>,
}

/// The frontmatter of a resource file (YAML, see [`dreb_settings::frontmatter`]); frontmatter that is not valid
/// YAML is read line by line, with a warning naming the file.
pub(crate) fn parse_frontmatter(text: &str, path: &Path) -> Frontmatter {
    let front = dreb_settings::frontmatter::parse(text);
    if let Some(e) = &front.error {
        tracing::warn!(
            "{}: the frontmatter is not valid YAML ({e}); its top-level `key: value` lines are used",
            path.display()
        );
    }
    front
}

/// Directory entries sorted by name (directory order is not stable across file systems), hidden ones and
/// `node_modules` skipped. Symlinks are followed.
fn entries(dir: &Path) -> Vec<(PathBuf, bool)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, bool)> = read
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            !name.starts_with('.') && name != "node_modules"
        })
        .filter_map(|e| {
            let meta = std::fs::metadata(e.path()).ok()?;
            (meta.is_dir() || meta.is_file()).then(|| (e.path(), meta.is_dir()))
        })
        .collect();
    out.sort();
    out
}

/// The ignore files a skills directory may hold, as the reference reads them; each applies to its directory's
/// subtree.
const SKILL_IGNORE_FILES: [&str; 3] = [".gitignore", ".ignore", ".fdignore"];

/// The ignore rules of `dir`'s ignore files (an invalid line is skipped, as git does), if it has any.
fn dir_ignore_rules(dir: &Path) -> Option<ignore::gitignore::Gitignore> {
    let mut builder = ignore::gitignore::GitignoreBuilder::new(dir);
    let mut any = false;
    for name in SKILL_IGNORE_FILES {
        let path = dir.join(name);
        if path.is_file() {
            // Errors name a bad glob; the rest of the file still applies.
            let _ = builder.add(&path);
            any = true;
        }
    }
    any.then(|| builder.build().ok()).flatten()
}

/// Whether `path` is ignored by `rules` (root-most first): the deepest directory whose rules decide (ignore or `!`
/// re-include) wins.
fn ignored(rules: &[ignore::gitignore::Gitignore], path: &Path, is_dir: bool) -> bool {
    for matcher in rules.iter().rev() {
        match matcher.matched(path, is_dir) {
            ignore::Match::Ignore(_) => return true,
            ignore::Match::Whitelist(_) => return false,
            ignore::Match::None => {}
        }
    }
    false
}

/// Skill files of a skills directory: a directory holding `SKILL.md` is a skill (nothing below it is searched);
/// otherwise root-level `*.md` files, and subdirectories searched the same way. What the directories' `.gitignore`,
/// `.ignore` and `.fdignore` files exclude is skipped.
fn skill_files(dir: &Path, root: bool, out: &mut Vec<PathBuf>) {
    skill_files_under(dir, root, &mut Vec::new(), out);
}

/// [`skill_files`] below directories whose ignore rules are `rules` (pushed on the way down, popped on the way up).
fn skill_files_under(
    dir: &Path,
    root: bool,
    rules: &mut Vec<ignore::gitignore::Gitignore>,
    out: &mut Vec<PathBuf>,
) {
    let own = match dir_ignore_rules(dir) {
        Some(matcher) => {
            rules.push(matcher);
            true
        }
        None => false,
    };
    let list: Vec<(PathBuf, bool)> = entries(dir)
        .into_iter()
        .filter(|(path, is_dir)| !ignored(rules, path, *is_dir))
        .collect();
    if let Some((skill, _)) = list
        .iter()
        .find(|(p, is_dir)| !is_dir && p.file_name().is_some_and(|n| n == "SKILL.md"))
    {
        out.push(skill.clone());
    } else {
        for (path, is_dir) in list {
            if is_dir {
                skill_files_under(&path, false, rules, out);
            } else if root && path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    if own {
        rules.pop();
    }
}

fn load_skill(source: Source) -> Option<Skill> {
    let text = std::fs::read_to_string(&source.path).ok()?;
    skill_from_text(&text, source)
}

/// A skill from its `SKILL.md` text: `name` defaults to the parent directory's name; without a description it is not
/// loaded.
fn skill_from_text(text: &str, source: Source) -> Option<Skill> {
    let front = parse_frontmatter(text, &source.path);
    let parent = source
        .path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let description = front
        .string("description")
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())?;
    Some(Skill {
        name: front.string("name").unwrap_or(parent),
        description,
        ui: front.string("ui"),
        disable_model_invocation: front.is_true("disable-model-invocation"),
        text: None,
        source,
    })
}

/// The built-in skills (lowest priority), with `sourceInfo` `{source: "builtin", scope: SourceScope::User, baseDir: <skill
/// dir>}` as the reference reports them.
fn builtin_skills(agent_dir: &Path) -> Vec<Skill> {
    let builtin = |path: PathBuf| Source {
        base_dir: path.parent().map(Path::to_path_buf),
        path,
        source: "builtin",
        scope: SourceScope::User,
    };
    bundled_skills::bundled_skills(agent_dir)
        .into_iter()
        .filter_map(|(path, text)| {
            let skill = skill_from_text(text, builtin(path))?;
            Some(Skill {
                text: Some(text),
                ..skill
            })
        })
        .collect()
}

fn load_prompt(source: Source) -> Option<PromptTemplate> {
    let path = source.path.as_path();
    let text = std::fs::read_to_string(path).ok()?;
    let front = parse_frontmatter(&text, path);
    let name = path
        .file_name()?
        .to_string_lossy()
        .trim_end_matches(".md")
        .to_string();
    // The description is the frontmatter's, else the first non-empty body line (60 characters).
    let description = match front.string("description") {
        Some(d) => d,
        None => front
            .body
            .lines()
            .find(|l| !l.trim().is_empty())
            .map(|l| {
                let short: String = l.chars().take(60).collect();
                if l.chars().count() > 60 {
                    format!("{short}...")
                } else {
                    short
                }
            })
            .unwrap_or_default(),
    };
    Some(PromptTemplate {
        name,
        description,
        content: front.body,
        source,
    })
}

/// `.agents/skills` in `cwd` and its ancestors, up to the git root (or the file-system root outside a repository).
fn ancestor_agents_skill_dirs(cwd: &Path) -> Vec<PathBuf> {
    let git_root = dreb_settings::paths::git_root(cwd);
    let mut dirs = Vec::new();
    for dir in cwd.ancestors() {
        dirs.push(dir.join(".agents").join("skills"));
        if git_root == Some(dir) {
            break;
        }
    }
    dirs
}

/// The workspace's one home resolution (`dreb-paths`).
pub(crate) fn home_dir() -> Option<PathBuf> {
    Some(dreb_paths::home_dir())
}

/// `~`-expanded `entry`, relative to `base`, with `.` and `..` resolved lexically (as Node's `path.resolve`).
pub(crate) fn resolve_entry(entry: &str, base: &Path) -> PathBuf {
    let t = entry.trim();
    let joined = match (t.strip_prefix('~'), home_dir()) {
        (Some(rest), Some(home)) => home.join(rest.trim_start_matches('/')),
        _ => base.join(t),
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Plain path entries of a settings `skills` / `prompts` list (patterns — `!`, `+`, `-`, `*`, `?` — only filter
/// in the reference and are not supported here).
fn settings_paths(
    settings: &serde_json::Map<String, Value>,
    key: &str,
    base: &Path,
) -> Vec<PathBuf> {
    let Some(list) = settings.get(key).and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(Value::as_str)
        .filter(|e| !(e.starts_with(['!', '+', '-']) || e.contains(['*', '?'])))
        .map(|e| resolve_entry(e, base))
        .collect()
}

/// `*.md` files under `dir`, recursively (settings-listed prompt directories).
fn md_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for (path, is_dir) in entries(dir) {
        if is_dir {
            md_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// Files of a settings entry: the file itself, or the resource files of a directory.
fn entry_files(path: &Path, skills: bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => out.push(path.to_path_buf()),
        Ok(m) if m.is_dir() && skills => skill_files(path, true, &mut out),
        Ok(m) if m.is_dir() => md_files(path, &mut out),
        _ => {}
    }
    out
}

/// Where to look, in the reference's order: paths listed in project then global settings (`local`), then the
/// auto-discovered project directories, then the user ones (`auto`). A file is taken from its first source.
fn candidate_files(
    cwd: &Path,
    agent_dir: &Path,
    project_settings: &serde_json::Map<String, Value>,
    global_settings: &serde_json::Map<String, Value>,
    skills: bool,
) -> Vec<Source> {
    let project_base = cwd.join(".dreb");
    let key = if skills { "skills" } else { "prompts" };
    let mut sources: Vec<Source> = Vec::new();
    let mut add =
        |files: Vec<PathBuf>, source: &'static str, scope: SourceScope, base: Option<&Path>| {
            for path in files {
                if !sources.iter().any(|s| s.path == path) {
                    sources.push(Source {
                        path,
                        source,
                        scope,
                        base_dir: base.map(Path::to_path_buf),
                    });
                }
            }
        };
    for (settings, scope, base) in [
        (
            project_settings,
            SourceScope::Project,
            project_base.as_path(),
        ),
        (global_settings, SourceScope::User, agent_dir),
    ] {
        for path in settings_paths(settings, key, base) {
            add(entry_files(&path, skills), "local", scope, None);
        }
    }
    let auto_files = |dir: &Path| {
        let mut out = Vec::new();
        if skills {
            skill_files(dir, true, &mut out);
        } else {
            out = entries(dir)
                .into_iter()
                .filter(|(p, is_dir)| !is_dir && p.extension().is_some_and(|e| e == "md"))
                .map(|(p, _)| p)
                .collect();
        }
        out
    };
    if skills {
        let user_agents_skills = home_dir().map(|h| h.join(".agents").join("skills"));
        add(
            auto_files(&project_base.join("skills")),
            "auto",
            SourceScope::Project,
            Some(&project_base),
        );
        for dir in ancestor_agents_skill_dirs(cwd) {
            if Some(&dir) != user_agents_skills.as_ref() {
                add(
                    auto_files(&dir),
                    "auto",
                    SourceScope::Project,
                    Some(&project_base),
                );
            }
        }
        add(
            auto_files(&agent_dir.join("skills")),
            "auto",
            SourceScope::User,
            Some(agent_dir),
        );
        if let Some(dir) = &user_agents_skills {
            add(auto_files(dir), "auto", SourceScope::User, Some(agent_dir));
        }
    } else {
        add(
            auto_files(&project_base.join("prompts")),
            "auto",
            SourceScope::Project,
            Some(&project_base),
        );
        add(
            auto_files(&agent_dir.join("prompts")),
            "auto",
            SourceScope::User,
            Some(agent_dir),
        );
    }
    sources
}

/// Discover skills and prompt templates as the reference's resource loader does (see [`candidate_files`]); the
/// first of a name wins.
/// `context_files` are the project's context files, which the caller has loaded (it needs their text too).
pub(crate) fn load_resources(
    cwd: &Path,
    agent_dir: &Path,
    settings: &SettingsManager,
    flags: &crate::options::ResourceFlags,
    context_files: &[ContextFile],
) -> Resources {
    let (project, global) = (settings.project_settings(), settings.global_settings());
    // Command-line paths first (`temporary` scope, as the reference labels them), then discovery unless disabled.
    let cli = |paths: &[PathBuf], skills: bool| -> Vec<Source> {
        let mut out: Vec<Source> = Vec::new();
        for path in paths {
            let path = resolve_entry(&path.to_string_lossy(), cwd);
            for file in entry_files(&path, skills) {
                if !out.iter().any(|s| s.path == file) {
                    out.push(Source {
                        path: file,
                        source: "cli",
                        scope: SourceScope::Temporary,
                        base_dir: None,
                    });
                }
            }
        }
        out
    };
    let skill_sources = cli(&flags.skills, true)
        .into_iter()
        .chain(if flags.no_skills {
            Vec::new()
        } else {
            candidate_files(cwd, agent_dir, &project, &global, true)
        });
    let prompt_sources =
        cli(&flags.prompt_templates, false)
            .into_iter()
            .chain(if flags.no_prompt_templates {
                Vec::new()
            } else {
                candidate_files(cwd, agent_dir, &project, &global, false)
            });
    let mut skills: Vec<Skill> = Vec::new();
    let mut add_skill = |skill: Skill| {
        if skills.iter().any(|s| s.name == skill.name) {
            tracing::warn!(
                "skill \"{}\" from {} ignored: the name is already taken",
                skill.name,
                skill.source.path.display()
            );
        } else {
            skills.push(skill);
        }
    };
    for source in skill_sources {
        let file = source.path.clone();
        match load_skill(source) {
            Some(skill) => add_skill(skill),
            None => tracing::warn!("skill {} not loaded: missing description", file.display()),
        }
    }
    if !flags.no_skills {
        builtin_skills(agent_dir).into_iter().for_each(add_skill);
    }
    let mut prompts: Vec<PromptTemplate> = Vec::new();
    for source in prompt_sources {
        if let Some(p) = load_prompt(source)
            && !prompts.iter().any(|q| q.name == p.name)
        {
            prompts.push(p);
        }
    }
    // As the reference's resource loader does (start-up and `reload`): the user's memory directory exists, for
    // the agent's memory files and for hosts (a dashboard's memories screen) that expect it.
    let memory = dreb_paths::memory_dir(agent_dir);
    if let Err(e) = std::fs::create_dir_all(&memory) {
        tracing::warn!(
            "Could not create memory directory {}: {e}. Memory saves to this directory will fail.",
            memory.display()
        );
    }
    Resources {
        context_files: context_files.iter().map(|c| c.path.clone()).collect(),
        skills,
        prompts,
        memory: None,
        project_state: None,
    }
}

impl Resources {
    /// The skills of this UI type (`rpc`): what `get_commands` lists and the `skill` tool can find.
    pub(crate) fn visible_skills(&self) -> impl Iterator<Item = &Skill> {
        self.skills
            .iter()
            .filter(|s| s.ui.as_deref().is_none_or(|ui| ui == UI_TYPE))
    }

    /// `(name, description)` of the skills the system prompt offers the model: the visible ones it may invoke.
    pub(crate) fn model_skills(&self) -> Vec<(String, String)> {
        self.visible_skills()
            .filter(|s| !s.disable_model_invocation)
            .map(|s| (s.name.clone(), s.description.clone()))
            .collect()
    }

    /// `get_commands`: prompt templates, then `skill:<name>`, then the built-ins, which replace a colliding entry in
    /// place (map semantics). As in the reference's RPC mode, `enableSkillCommands` does not filter the skills (it only
    /// governs the interactive UI's slash-command list).
    pub(crate) fn commands(&self) -> Vec<RpcSlashCommand> {
        let mut commands: Vec<(String, RpcSlashCommand)> = Vec::new();
        for p in &self.prompts {
            if !commands.iter().any(|(n, _)| *n == p.name) {
                let c = RpcSlashCommand::Prompt(PromptSlashCommand {
                    name: p.name.clone(),
                    description: Some(p.description.clone()),
                    source: Default::default(),
                    source_info: p.source.info(),
                });
                commands.push((p.name.clone(), c));
            }
        }
        for s in self.visible_skills() {
            let name = format!("skill:{}", s.name);
            if !commands.iter().any(|(n, _)| *n == name) {
                let c = RpcSlashCommand::Skill(SkillSlashCommand {
                    name: name.clone(),
                    description: Some(s.description.clone()),
                    source: Default::default(),
                    source_info: s.source.info(),
                });
                commands.push((name, c));
            }
        }
        for (name, description, dashboard) in BUILTIN_COMMANDS {
            let c = RpcSlashCommand::Builtin(BuiltinSlashCommand {
                name: name.to_string(),
                description: description.to_string(),
                source: Default::default(),
                dashboard,
            });
            match commands.iter_mut().find(|(n, _)| n == name) {
                Some(slot) => slot.1 = c,
                None => commands.push((name.to_string(), c)),
            }
        }
        commands.into_iter().map(|(_, c)| c).collect()
    }
}

/// Approximates JavaScript `localeCompare`: case-insensitive first, lower case before upper case on a tie.
fn locale_compare(a: &str, b: &str) -> Ordering {
    a.to_lowercase()
        .cmp(&b.to_lowercase())
        .then_with(|| b.cmp(a))
}

/// Subagent types as `(name, description)`: bundled, then `~/.dreb/agents/*.md` (HOME-based), then
/// `<cwd>/.dreb/agents/*.md`, later sources replacing earlier ones by name; sorted by name.
pub fn discover_agent_types(home: Option<&Path>, cwd: &Path) -> Vec<(String, String)> {
    let mut agents: Vec<(String, String)> = crate::background::agent_types::discover(home, cwd)
        .into_iter()
        .map(|a| (a.name, a.description))
        .collect();
    agents.sort_by(|a, b| locale_compare(&a.0, &b.0));
    agents
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_offered_the_rpc_skills_it_may_invoke() {
        let agent_dir = tempfile::tempdir().unwrap();
        let resources = Resources {
            skills: builtin_skills(agent_dir.path()),
            ..Default::default()
        };
        let routing = resources
            .skills
            .iter()
            .find(|s| s.name == "model-routing-guide")
            .unwrap();
        assert!(routing.disable_model_invocation);
        let offered: Vec<String> = resources
            .model_skills()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert!(offered.contains(&"mach6-review".to_string()), "{offered:?}");
        // Model-invocation-disabled, and restricted to another UI.
        assert!(!offered.contains(&"model-routing-guide".to_string()));
        assert!(!offered.contains(&"telegram-send".to_string()));
    }

    #[test]
    fn skill_directories_skip_what_their_ignore_files_exclude() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(".gitignore", "drafts/\n*.wip.md\n/top-only/\nnew/\n");
        write("notes.md", "a root file");
        write("notes.wip.md", "ignored by pattern");
        write("drafts/review/SKILL.md", "an ignored directory");
        write("tools/lint/SKILL.md", "kept");
        write(
            "tools/lint.wip.md",
            "patterns apply below too, but only root files are skills",
        );
        // The deeper file decides: `new/` is ignored by the root's rules and taken back here.
        write("group/.ignore", "old/\n!new/\n");
        write("group/old/gone/SKILL.md", "ignored by the nested .ignore");
        write("group/new/SKILL.md", "kept");
        write("group/.fdignore", "secret/SKILL.md\n");
        write("group/secret/SKILL.md", "an ignored SKILL.md");
        write(
            "group/secret/inner/SKILL.md",
            "its directory is searched then",
        );
        write(
            "group/top-only/SKILL.md",
            "anchored to the root's directory: kept here",
        );

        let mut found = Vec::new();
        skill_files(root, true, &mut found);
        let found: Vec<String> = found
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            found,
            [
                "group/new/SKILL.md",
                "group/secret/inner/SKILL.md",
                "group/top-only/SKILL.md",
                "notes.md",
                "tools/lint/SKILL.md",
            ]
        );
    }

    fn source(path: &str) -> Source {
        Source {
            path: PathBuf::from(path),
            base_dir: None,
            source: "local",
            scope: SourceScope::Project,
        }
    }

    #[test]
    fn skill_frontmatter_is_yaml() {
        let skill = skill_from_text(
            "---\ndescription: >-\n  Reviews a change\n  end to end.\nui: \"rpc\"\ndisable-model-invocation: True\n---\nBody",
            source("/x/review/SKILL.md"),
        )
        .unwrap();
        assert_eq!(skill.description, "Reviews a change end to end.");
        assert_eq!(skill.name, "review", "the parent directory's name");
        assert_eq!(skill.ui.as_deref(), Some("rpc"));
        assert!(skill.disable_model_invocation);
        // A quoted "true" is a string, not the boolean the reference compares with.
        let quoted = skill_from_text(
            "---\ndescription: d\ndisable-model-invocation: \"true\"\n---\n",
            source("/x/q/SKILL.md"),
        )
        .unwrap();
        assert!(!quoted.disable_model_invocation);
        // Without a description (or an empty one) a skill is not loaded.
        assert!(
            skill_from_text("---\ndescription: \"\"\n---\n", source("/x/e/SKILL.md")).is_none()
        );
        // Not YAML: read line by line rather than dropped.
        let loose = skill_from_text(
            "---\nname: loose\ndescription: Use when: the user asks\n---\n",
            source("/x/l/SKILL.md"),
        )
        .unwrap();
        assert_eq!(loose.description, "Use when: the user asks");
    }
}
