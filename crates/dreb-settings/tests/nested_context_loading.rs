//! Lazy nested context decisions end to end on real directories.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use dreb_settings::context_trust::ContextTrustPolicy;
use dreb_settings::nested_context::{
    NestedContextState, compute_nested_context_block, resolve_target_dir, resolve_walk_dirs,
};
use serde_json::json;

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn identity(s: &str) -> String {
    s.to_string()
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    cwd: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    let cwd = root.join("cwd");
    fs::create_dir_all(&cwd).unwrap();
    Fixture {
        _dir: dir,
        root,
        cwd,
    }
}

fn state(f: &Fixture, policy: ContextTrustPolicy) -> NestedContextState {
    NestedContextState {
        policy,
        cwd: f.cwd.clone(),
        loaded: HashSet::new(),
        scanned_dirs: HashSet::new(),
    }
}

fn trusted(root: &Path) -> ContextTrustPolicy {
    ContextTrustPolicy {
        unrestricted: false,
        trusted_folders: vec![root.to_string_lossy().into_owned()],
    }
}

#[test]
fn untrusted_target_loads_nothing_and_is_not_cached() {
    let f = fixture();
    let other = f.root.join("other/repo");
    write(&other.join("AGENTS.md"), "ctx");
    let mut s = state(&f, ContextTrustPolicy::default());
    let args = json!({"path": other.join("file.rs").to_string_lossy()});
    assert_eq!(
        compute_nested_context_block("read", &args, &mut s, &identity),
        None
    );
    assert!(s.scanned_dirs.is_empty());
    // Trusting it later admits the same directory.
    s.policy = trusted(&f.root.join("other"));
    let block = compute_nested_context_block("read", &args, &mut s, &identity).unwrap();
    assert!(block.contains("ctx"));
}

#[test]
fn trusted_root_is_the_walk_ceiling_and_block_format() {
    let f = fixture();
    let root = f.root.join("ws");
    write(&f.root.join("AGENTS.md"), "above the root");
    write(&root.join("AGENTS.md"), "  root ctx  \n");
    write(&root.join("pkg/.claude/CLAUDE.md"), "pkg ctx<!-- c -->");
    fs::create_dir_all(root.join("pkg/src")).unwrap();
    let mut s = state(&f, trusted(&root));
    let target = root.join("pkg/src");
    let block = compute_nested_context_block(
        "ls",
        &json!({"path": target.to_string_lossy()}),
        &mut s,
        &identity,
    )
    .unwrap();
    let a = root.join("AGENTS.md");
    let b = root.join("pkg/.claude/CLAUDE.md");
    assert_eq!(
        block,
        format!(
            "[dreb] Auto-loaded project context\n\nA tool just operated in `{}`, whose project context had not been loaded yet. The file(s) below were loaded automatically to prevent missing important project context when working across multiple repos / projects / folders. (Manage folder-specific loading with `context.trustedFolders`, or disable unrestricted loading with `context.autoLoadNested`.)\n\n===== BEGIN project context: {a} =====\nroot ctx\n===== END project context: {a} =====\n\n===== BEGIN project context: {b} =====\npkg ctx\n===== END project context: {b} =====",
            target.display(),
            a = a.display(),
            b = b.display()
        )
    );
    // Loaded files and the scanned dir are remembered.
    assert_eq!(
        compute_nested_context_block(
            "ls",
            &json!({"path": target.to_string_lossy()}),
            &mut s,
            &identity
        ),
        None
    );
    assert_eq!(
        compute_nested_context_block(
            "grep",
            &json!({"path": root.to_string_lossy()}),
            &mut s,
            &identity
        ),
        None
    );
}

#[cfg(unix)]
#[test]
fn symlinked_candidate_escaping_the_root_is_rejected() {
    let f = fixture();
    let root = f.root.join("ws");
    write(&f.root.join("secret/AGENTS.md"), "injected");
    fs::create_dir_all(&root).unwrap();
    std::os::unix::fs::symlink(f.root.join("secret/AGENTS.md"), root.join("AGENTS.md")).unwrap();
    let mut s = state(&f, trusted(&root));
    assert_eq!(
        compute_nested_context_block(
            "ls",
            &json!({"path": root.to_string_lossy()}),
            &mut s,
            &identity
        ),
        None
    );
    // A symlinked target directory that leaves the root is untrusted altogether.
    std::os::unix::fs::symlink(f.root.join("secret"), root.join("door")).unwrap();
    let args = json!({"command": format!("cd {}/door && ls", root.display())});
    assert_eq!(
        compute_nested_context_block("bash", &args, &mut s, &identity),
        None
    );
}

#[test]
fn self_read_and_cat_suppress_only_when_delivered_in_full() {
    let f = fixture();
    let root = f.root.join("ws");
    write(&root.join("AGENTS.md"), "small");
    let mut s = state(&f, trusted(&root));
    let read = json!({"path": root.join("AGENTS.md").to_string_lossy()});
    assert_eq!(
        compute_nested_context_block("read", &read, &mut s, &identity),
        None
    );
    assert!(
        s.loaded.contains(&root.join("AGENTS.md")),
        "suppressed files are still marked loaded"
    );

    // Too large for the bash output limit after rendering: injected instead.
    let root2 = f.root.join("ws2");
    write(&root2.join("CLAUDE.md"), "x\ty");
    let mut s = state(&f, trusted(&root2));
    let cat = json!({"command": format!("cd {} && cat CLAUDE.md", root2.display())});
    let huge = |_: &str| "z".repeat(60 * 1024);
    assert!(compute_nested_context_block("bash", &cat, &mut s, &huge).is_some());

    let root3 = f.root.join("ws3");
    write(&root3.join("CLAUDE.md"), "fits");
    let mut s = state(&f, trusted(&root3));
    let cat = json!({"command": format!("cd {} && cat CLAUDE.md", root3.display())});
    assert_eq!(
        compute_nested_context_block("bash", &cat, &mut s, &identity),
        None
    );
    // A sliced read is not a full delivery.
    let root4 = f.root.join("ws4");
    write(&root4.join("AGENTS.md"), "sliced");
    let mut s = state(&f, trusted(&root4));
    let sliced = json!({"path": root4.join("AGENTS.md").to_string_lossy(), "limit": 1});
    assert!(
        compute_nested_context_block("read", &sliced, &mut s, &identity)
            .unwrap()
            .contains("sliced")
    );
}

#[test]
fn unrestricted_walks_stop_at_cwd_or_git_root() {
    let f = fixture();
    write(&f.root.join("AGENTS.md"), "root-level");
    write(&f.cwd.join("sub/AGENTS.md"), "inside cwd");
    let dirs = resolve_walk_dirs(&f.cwd.join("sub"), &f.cwd, None);
    assert_eq!(dirs, vec![f.cwd.clone(), f.cwd.join("sub")]);

    let repo = f.root.join("elsewhere/repo");
    fs::create_dir_all(repo.join(".git")).unwrap();
    fs::create_dir_all(repo.join("a/b")).unwrap();
    let dirs = resolve_walk_dirs(&repo.join("a/b"), &f.cwd, None);
    assert_eq!(dirs, vec![repo.clone(), repo.join("a"), repo.join("a/b")]);

    // No git root: the outermost directory holding a context file is the ceiling.
    let plain = f.root.join("plain/x");
    fs::create_dir_all(&plain).unwrap();
    let dirs = resolve_walk_dirs(&plain, &f.cwd, None);
    assert_eq!(dirs.first().unwrap(), &f.root);

    let mut s = state(
        &f,
        ContextTrustPolicy {
            unrestricted: true,
            trusted_folders: vec![],
        },
    );
    let block =
        compute_nested_context_block("read", &json!({"path": "sub/file.txt"}), &mut s, &identity)
            .unwrap();
    assert!(block.contains("inside cwd") && !block.contains("root-level"));
}

#[test]
fn target_dir_resolution() {
    let f = fixture();
    fs::create_dir_all(f.cwd.join("d")).unwrap();
    assert_eq!(
        resolve_target_dir("ls", &json!({"path": "d"}), &f.cwd),
        Some(f.cwd.join("d"))
    );
    assert_eq!(
        resolve_target_dir("write", &json!({"path": "d/new.txt"}), &f.cwd),
        Some(f.cwd.join("d"))
    );
    assert_eq!(
        resolve_target_dir("bash", &json!({"command": "cd d && ls"}), &f.cwd),
        Some(f.cwd.join("d"))
    );
    assert_eq!(
        resolve_target_dir("bash", &json!({"command": "ls"}), &f.cwd),
        None
    );
    assert_eq!(
        resolve_target_dir("web_fetch", &json!({"path": "d"}), &f.cwd),
        None
    );
    assert_eq!(
        resolve_target_dir("read", &json!({"path": " "}), &f.cwd),
        None
    );
}
