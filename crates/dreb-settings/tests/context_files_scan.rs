//! Session-start context scan: user-level files, upward walk order and dedup, rules, and the
//! system-prompt section.

use std::fs;
use std::path::{Path, PathBuf};

use dreb_settings::context_files::{
    ContextFile, format_project_context_section, load_context_files_from_dir,
    load_project_context_files_with_home,
};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

struct Layout {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    agent: PathBuf,
}

fn layout() -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    let home = root.join("home");
    let agent = home.join(".dreb/agent");
    fs::create_dir_all(&agent).unwrap();
    Layout {
        _dir: dir,
        root,
        home,
        agent,
    }
}

fn paths(files: &[ContextFile]) -> Vec<PathBuf> {
    files.iter().map(|f| f.path.clone()).collect()
}

#[test]
fn user_level_then_root_most_first_then_rules() {
    let l = layout();
    let cwd = l.root.join("work/repo/pkg");
    fs::create_dir_all(&cwd).unwrap();
    write(&l.agent.join("AGENTS.md"), "agent agents");
    write(&l.agent.join("CLAUDE.md"), "agent claude");
    write(&l.home.join(".claude/CLAUDE.md"), "home claude");
    write(&l.home.join(".dreb/CONTEXT.md"), "home context");
    write(&l.root.join("work/AGENTS.md"), "work <!-- hidden -->agents");
    write(&l.root.join("work/repo/CLAUDE.md"), "repo claude");
    write(
        &l.root.join("work/repo/.claude/CLAUDE.md"),
        "repo dot-claude",
    );
    write(&l.root.join("work/repo/.dreb/CONTEXT.md"), "repo context");
    write(&cwd.join("AGENTS.md"), "pkg agents");
    write(&cwd.join(".dreb/rules/b.md"), "rule b");
    write(&cwd.join(".dreb/rules/a/deep.md"), "rule deep");
    write(
        &cwd.join(".dreb/rules/scoped.md"),
        "---\npaths: src/**\n---\nscoped",
    );
    write(&cwd.join(".dreb/rules/notes.txt"), "not markdown");
    write(&cwd.join(".claude/rules/c.md"), "claude rule");

    let (files, diagnostics) = load_project_context_files_with_home(&cwd, &l.agent, &l.home);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    let expected = vec![
        l.agent.join("AGENTS.md"),
        l.agent.join("CLAUDE.md"),
        l.home.join(".claude/CLAUDE.md"),
        l.home.join(".dreb/CONTEXT.md"),
        l.root.join("work/AGENTS.md"),
        l.root.join("work/repo/CLAUDE.md"),
        l.root.join("work/repo/.claude/CLAUDE.md"),
        l.root.join("work/repo/.dreb/CONTEXT.md"),
        cwd.join("AGENTS.md"),
        cwd.join(".dreb/rules/a/deep.md"),
        cwd.join(".dreb/rules/b.md"),
        cwd.join(".claude/rules/c.md"),
    ];
    assert_eq!(paths(&files), expected);
    assert_eq!(files[4].content, "work agents");
}

#[test]
fn user_level_file_is_not_loaded_twice_when_cwd_is_home() {
    let l = layout();
    write(&l.home.join(".dreb/CONTEXT.md"), "ctx");
    write(&l.home.join("AGENTS.md"), "home agents");
    let (files, _) = load_project_context_files_with_home(&l.home, &l.agent, &l.home);
    assert_eq!(
        paths(&files),
        vec![l.home.join(".dreb/CONTEXT.md"), l.home.join("AGENTS.md")]
    );
}

#[cfg(unix)]
#[test]
fn same_file_twice_in_a_directory_loads_once() {
    let l = layout();
    let dir = l.root.join("d");
    write(&dir.join("AGENTS.md"), "one");
    std::os::unix::fs::symlink(dir.join("AGENTS.md"), dir.join("CLAUDE.md")).unwrap();
    let mut diags = Vec::new();
    let files = load_context_files_from_dir(&dir, None, &mut diags);
    assert_eq!(paths(&files), vec![dir.join("AGENTS.md")]);
}

#[cfg(unix)]
#[test]
fn allowed_root_rejects_escaping_symlinks_and_symlinked_rule_dirs_are_skipped() {
    let l = layout();
    let root = l.root.join("trusted");
    write(&l.root.join("outside/AGENTS.md"), "secret");
    fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(l.root.join("outside/AGENTS.md"), root.join("AGENTS.md")).unwrap();
    write(&root.join("CLAUDE.md"), "fine");
    let mut diags = Vec::new();
    let files = load_context_files_from_dir(&root, Some(root.to_str().unwrap()), &mut diags);
    assert_eq!(paths(&files), vec![root.join("CLAUDE.md")]);

    let cwd = l.root.join("proj");
    write(&l.root.join("elsewhere/r.md"), "linked rule");
    fs::create_dir_all(cwd.join(".dreb/rules")).unwrap();
    std::os::unix::fs::symlink(l.root.join("elsewhere"), cwd.join(".dreb/rules/linked")).unwrap();
    let (files, _) = load_project_context_files_with_home(&cwd, &l.agent, &l.home);
    assert!(
        files
            .iter()
            .all(|f| !f.path.starts_with(cwd.join(".dreb/rules/linked")))
    );
}

#[test]
fn unreadable_candidate_is_a_diagnostic() {
    let l = layout();
    let cwd = l.root.join("p");
    fs::create_dir_all(cwd.join("AGENTS.md")).unwrap(); // a directory: exists but unreadable
    let (files, diagnostics) = load_project_context_files_with_home(&cwd, &l.agent, &l.home);
    assert!(files.is_empty());
    assert_eq!(diagnostics.len(), 1);
    assert!(diagnostics[0].message.starts_with(&format!(
        "Could not read {}:",
        cwd.join("AGENTS.md").display()
    )));
}

#[test]
fn project_context_section_format() {
    assert_eq!(format_project_context_section(&[]), "");
    let files = vec![
        ContextFile {
            path: "/a/AGENTS.md".into(),
            content: "Use tabs.\n".into(),
        },
        ContextFile {
            path: "/a/b/CLAUDE.md".into(),
            content: "Be brief.".into(),
        },
    ];
    assert_eq!(
        format_project_context_section(&files),
        "\n\n# Project Context\n\nProject-specific instructions and guidelines:\n\n## /a/AGENTS.md\n\nUse tabs.\n\n\n## /a/b/CLAUDE.md\n\nBe brief.\n\n"
    );
}
