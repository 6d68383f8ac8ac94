//! evaluate / trust / untrust / remove_trusted_context_folder: canonicalisation, subsumption,
//! symlink escapes, trust-all, malformed paths and the exact texts.

mod common;

use common::{Env, FakeCatalog, to_json};
use dreb_settings::context_trust::{ContextTrustPolicy, match_context_trust};
use serde_json::{Value, json};

fn c() -> FakeCatalog {
    FakeCatalog::reference()
}

#[test]
fn malformed_paths_are_rejected_without_mutation() {
    let env = Env::new();
    let m = env.manager();
    let file = env.root().join("f.txt");
    std::fs::write(&file, "x").unwrap();
    let cases = [
        (json!(null), "expected a non-empty path string"),
        (json!([]), "expected a non-empty path string"),
        (json!({}), "expected a non-empty path string"),
        (json!(""), "expected a non-empty path string"),
        (json!("   "), "expected a non-empty path string"),
        (json!(123), "expected a non-empty path string"),
        (
            json!("relative/dir"),
            "path must be absolute after ~ expansion",
        ),
        (
            json!("/definitely/missing/dir"),
            "path must be an existing directory",
        ),
        (
            json!(file.to_string_lossy()),
            "path must be an existing directory",
        ),
    ];
    for (path, reason) in cases {
        let expected = format!("Invalid context trust path: {reason}");
        assert_eq!(
            m.evaluate_context_trust(&path).unwrap_err().to_string(),
            expected,
            "{path}"
        );
        assert_eq!(
            m.trust_context_folder(&path, &c()).unwrap_err().to_string(),
            expected,
            "{path}"
        );
        assert_eq!(
            m.untrust_context_folder(&path, &c())
                .unwrap_err()
                .to_string(),
            expected,
            "{path}"
        );
    }
    for path in [json!(null), json!(""), json!(5), json!([])] {
        assert_eq!(
            m.remove_trusted_context_folder(&path, &c())
                .unwrap_err()
                .to_string(),
            "remove_trusted_context_folder requires a non-empty string path"
        );
    }
    assert!(!env.global_path().exists(), "nothing was written");
}

#[test]
fn trust_evaluate_untrust_cycle() {
    let env = Env::new();
    let m = env.manager();
    let company = env.mkdir("src/company");
    let package = env.mkdir("src/company/package");

    let eval = m.evaluate_context_trust(&json!(package)).unwrap();
    assert_eq!(
        to_json(&eval),
        json!({"canonicalTarget": package, "state": "untrusted"})
    );

    let r = m.trust_context_folder(&json!(company), &c()).unwrap();
    let data = to_json(&r);
    assert_eq!(
        data["evaluation"],
        json!({"canonicalTarget": company, "state": "trusted-root", "grantingRoot": company})
    );
    assert_eq!(data["addedRoot"], json!(company));
    assert_eq!(data["settings"]["trustedContextFolders"], json!([company]));
    assert_eq!(
        data["settings"]["effectiveTrustedContextRoots"],
        json!([company])
    );
    let keys: Vec<&String> = data.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["evaluation", "settings", "addedRoot"]);
    assert_eq!(
        env.global_json(),
        json!({"context": {"trustedFolders": [company]}})
    );

    // A descendant inherits access; trusting it again adds nothing.
    let eval = m
        .evaluate_context_trust(&json!(format!("{package}/")))
        .unwrap();
    assert_eq!(
        to_json(&eval),
        json!({"canonicalTarget": package, "state": "trusted-root", "grantingRoot": company})
    );
    let r = m.trust_context_folder(&json!(package), &c()).unwrap();
    assert_eq!(r.added_root, None);
    assert_eq!(r.settings.trusted_context_folders, vec![company.clone()]);

    // Untrusting the descendant removes the granting root.
    let r = m.untrust_context_folder(&json!(package), &c()).unwrap();
    let data = to_json(&r);
    assert_eq!(
        data["evaluation"],
        json!({"canonicalTarget": package, "state": "untrusted"})
    );
    assert_eq!(data["removedRoot"], json!(company));
    assert_eq!(data["settings"]["trustedContextFolders"], json!([]));
    assert_eq!(
        env.global_json(),
        json!({"context": {"trustedFolders": []}})
    );

    // Untrusting an untrusted folder is a successful no-op.
    let before = env.global_text();
    let r = m.untrust_context_folder(&json!(package), &c()).unwrap();
    assert_eq!(r.removed_root, None);
    assert_eq!(env.global_text(), before);
}

#[test]
fn ancestor_subsumes_existing_descendants_and_legacy_roots_are_dropped() {
    let env = Env::new();
    let a = env.mkdir("w/a");
    let b = env.mkdir("w/b");
    let w = env.mkdir("w");
    let other = env.mkdir("other");
    env.write_global(&format!(
        r#"{{"context": {{"autoLoadNested": false, "trustedFolders": ["{a}", "relative", "/gone/dir", "{b}", "{other}"]}}}}"#
    ));
    let m = env.manager();
    let snap = m.snapshot(&c()).unwrap();
    assert_eq!(snap.trusted_context_folders.len(), 5, "raw configured list");
    assert_eq!(
        snap.effective_trusted_context_roots,
        vec![a.clone(), b.clone(), other.clone()]
    );

    let r = m.trust_context_folder(&json!(w), &c()).unwrap();
    assert_eq!(r.added_root.as_deref(), Some(w.as_str()));
    assert_eq!(
        r.settings.trusted_context_folders,
        vec![other.clone(), w.clone()]
    );
    assert_eq!(
        env.global_json(),
        json!({"context": {"autoLoadNested": false, "trustedFolders": [other, w]}})
    );
}

#[cfg(unix)]
#[test]
fn symlink_out_of_trusted_root_is_untrusted() {
    let env = Env::new();
    let root = env.mkdir("trusted");
    let outside = env.mkdir("outside");
    let link = format!("{root}/escape");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let inside_link = format!("{root}/inner-link");
    let inner = env.mkdir("trusted/inner");
    std::os::unix::fs::symlink(&inner, &inside_link).unwrap();

    let m = env.manager();
    m.trust_context_folder(&json!(root), &c()).unwrap();
    let eval = m.evaluate_context_trust(&json!(link)).unwrap();
    assert_eq!(
        to_json(&eval),
        json!({"canonicalTarget": outside, "state": "untrusted"})
    );
    let eval = m.evaluate_context_trust(&json!(inside_link)).unwrap();
    assert_eq!(
        to_json(&eval),
        json!({"canonicalTarget": inner, "state": "trusted-root", "grantingRoot": root})
    );
    // The matcher used by lazy loading agrees.
    let policy = ContextTrustPolicy {
        unrestricted: false,
        trusted_folders: vec![root.clone()],
    };
    assert!(match_context_trust(&policy, std::path::Path::new(&link)).is_none());

    // A trusted root given through a symlink is stored canonical.
    let alias = env.root().join("alias");
    std::os::unix::fs::symlink(&outside, &alias).unwrap();
    let r = m
        .trust_context_folder(&json!(alias.to_string_lossy()), &c())
        .unwrap();
    assert_eq!(r.added_root.as_deref(), Some(outside.as_str()));
    // Broken symlink roots are rejected.
    let broken = env.root().join("broken");
    std::os::unix::fs::symlink(env.root().join("nowhere"), &broken).unwrap();
    assert_eq!(
        m.trust_context_folder(&json!(broken.to_string_lossy()), &c())
            .unwrap_err()
            .to_string(),
        "Invalid context trust path: path must be an existing directory"
    );
}

#[test]
fn unrestricted_mode() {
    let env = Env::new();
    let m = env.manager();
    let dir = env.mkdir("any");
    m.apply_update(Some(&json!({"autoLoadNestedContext": true})), &c())
        .unwrap();
    let eval = m.evaluate_context_trust(&json!(dir)).unwrap();
    assert_eq!(
        to_json(&eval),
        json!({"canonicalTarget": dir, "state": "unrestricted"})
    );
    assert_eq!(
        m.untrust_context_folder(&json!(dir), &c())
            .unwrap_err()
            .to_string(),
        "Cannot untrust a context folder while unrestricted nested context loading is enabled; disable autoLoadNestedContext first"
    );
    // Trusting still records the root; removing by string is not gated.
    m.trust_context_folder(&json!(dir), &c()).unwrap();
    let r = m.remove_trusted_context_folder(&json!(dir), &c()).unwrap();
    assert_eq!(r.removed_folder, dir);
    assert!(r.settings.auto_load_nested_context);
    assert_eq!(
        env.global_json(),
        json!({"context": {"autoLoadNested": true, "trustedFolders": []}})
    );
}

#[test]
fn remove_exact_configured_string() {
    let env = Env::new();
    let keep = env.mkdir("keep");
    env.write_global(&format!(r#"{{"context": {{"trustedFolders": ["/legacy/or/moved/path", "{keep}", "~/x"]}}, "theme": "t"}}"#));
    let m = env.manager();
    let r = m
        .remove_trusted_context_folder(&json!("/legacy/or/moved/path"), &c())
        .unwrap();
    let data = to_json(&r);
    assert_eq!(
        data.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["settings", "removedFolder"]
    );
    assert_eq!(data["removedFolder"], "/legacy/or/moved/path");
    assert_eq!(
        data["settings"]["trustedContextFolders"],
        json!([keep, "~/x"])
    );
    // Missing string: successful no-op; no path resolution happens ("~/x" stays unless exact).
    m.remove_trusted_context_folder(&json!("/not/there"), &c())
        .unwrap();
    m.remove_trusted_context_folder(&json!("~/x"), &c())
        .unwrap();
    assert_eq!(
        env.global_json(),
        json!({"context": {"trustedFolders": [keep]}, "theme": "t"})
    );
}

#[test]
fn trust_write_normalises_malformed_sibling_fail_closed() {
    let env = Env::new();
    let dir = env.mkdir("d");
    env.write_global(r#"{"context": {"autoLoadNested": "yes", "extra": 1}}"#);
    let m = env.manager();
    // Malformed policy: nothing trusted, even though autoLoadNested is "truthy".
    assert!(!m.global_context_trust_policy().is_active());
    m.trust_context_folder(&json!(dir), &c()).unwrap();
    assert_eq!(
        env.global_json(),
        json!({"context": {"autoLoadNested": false, "extra": 1, "trustedFolders": [dir]}})
    );
    assert_eq!(m.global_context_trust_policy().trusted_folders, vec![dir]);
}

#[test]
fn concurrent_external_change_to_sibling_survives() {
    let env = Env::new();
    let dir = env.mkdir("d");
    let m = env.manager();
    // Another process enables trust-all after we loaded.
    env.write_global(r#"{"context": {"autoLoadNested": true}}"#);
    m.apply_update(Some(&json!({"trustedContextFolders": [dir]})), &c())
        .unwrap();
    assert_eq!(
        env.global_json(),
        json!({"context": {"autoLoadNested": true, "trustedFolders": [dir]}})
    );
    let v: Value = to_json(&m.snapshot(&c()).unwrap());
    assert_eq!(v["autoLoadNestedContext"], true);
}
