//! Golden test of the Rust backend: each `codegen/tests/fixtures/<name>.yaml` generates `<name>.rs` beside it, and
//! no `.rs` there lacks its spec. `crates/dreb-protocol/tests/fixture_basic.rs` compiles that output and
//! round-trips the fixture's examples. Update the goldens with
//! `UPDATE_GOLDENS=1 cargo test -p dreb-codegen-rust --test golden`, then review the diff.

use std::path::{Path, PathBuf};

fn unified_diff(path: &Path, expected: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{} (checked in)", path.display()),
            &format!("{} (generated)", path.display()),
        )
        .to_string()
}

#[test]
fn rust_backend_goldens() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures");
    let update = std::env::var_os("UPDATE_GOLDENS").is_some();
    let mut failures = Vec::new();
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let has = |ext: &str| {
        let mut v: Vec<&PathBuf> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        v.sort();
        v
    };
    let specs = has("yaml");
    assert!(!specs.is_empty(), "no fixture specs in {}", dir.display());
    for golden in has("rs") {
        if !golden.with_extension("yaml").exists() {
            failures.push(format!(
                "{} is no longer generated (no {} beside it); delete it",
                golden.display(),
                golden.with_extension("yaml").display()
            ));
        }
    }
    for spec in specs {
        let ir = dreb_codegen_core::load_spec(spec).unwrap_or_else(|e| panic!("{e}"));
        let actual = dreb_codegen_rust::generate(&ir).unwrap_or_else(|e| panic!("{e}"));
        assert!(actual.starts_with(&dreb_codegen_core::banner_comment("//")));
        let golden = spec.with_extension("rs");
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected != actual {
            if update {
                std::fs::write(&golden, &actual).unwrap();
            } else {
                failures.push(unified_diff(&golden, &expected, &actual));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "Rust backend output differs from the goldens; if intended, run `UPDATE_GOLDENS=1 cargo test -p dreb-codegen-rust --test golden`\n{}",
        failures.join("\n")
    );
}
