//! `~` expansion in trust paths. Its own test binary because it sets `HOME`.

mod common;

use common::{Env, FakeCatalog, to_json};
use serde_json::json;

#[test]
fn tilde_paths_expand_to_home() {
    let env = Env::new();
    let home = env.mkdir("home");
    let projects = env.mkdir("home/projects");
    // SAFETY: the only test in this binary; no other thread reads the environment.
    unsafe { std::env::set_var("HOME", &home) };
    let m = env.manager();
    let eval = m.evaluate_context_trust(&json!("~/projects")).unwrap();
    assert_eq!(eval.canonical_target, projects);
    let r = m
        .trust_context_folder(&json!("~"), &FakeCatalog::reference())
        .unwrap();
    assert_eq!(r.added_root.as_deref(), Some(home.as_str()));
    let r = m.apply_update(
        Some(&json!({"trustedContextFolders": ["~/projects", "\"~/projects\""]})),
        &FakeCatalog::reference(),
    );
    assert_eq!(
        to_json(&r.unwrap())["trustedContextFolders"],
        json!([projects])
    );
    assert_eq!(
        m.evaluate_context_trust(&json!("~other/x"))
            .unwrap_err()
            .to_string(),
        "Invalid context trust path: path must be absolute after ~ expansion"
    );
    // Configured "~" roots are honoured when evaluating.
    env.write_global(r#"{"context": {"trustedFolders": ["~/projects"]}}"#);
    let eval = m.evaluate_context_trust(&json!(projects)).unwrap();
    assert_eq!(eval.granting_root.as_deref(), Some(projects.as_str()));
}
