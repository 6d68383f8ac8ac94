//! Golden tests of the Rust backend: each `tests/fixtures/<name>.yaml` generates `tests/fixtures/<name>.rs`.
//! `crates/dreb-protocol/tests/fixture_basic.rs` compiles that output and round-trips the fixture's examples.
//! Update the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test golden`, then review the diff.

mod common;

use std::path::PathBuf;

#[test]
fn rust_backend_goldens() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let update = std::env::var_os("UPDATE_GOLDENS").is_some();
    let mut failures = Vec::new();
    let mut specs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    specs.sort();
    assert!(!specs.is_empty(), "no fixture specs in {}", dir.display());
    for spec in specs {
        let ir = dreb_codegen::load_spec(&spec).unwrap_or_else(|e| panic!("{e}"));
        let actual = dreb_codegen::rust::generate(&ir);
        let golden = spec.with_extension("rs");
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected != actual {
            if update {
                std::fs::write(&golden, &actual).unwrap();
            } else {
                failures.push(common::unified_diff(&golden, &expected, &actual));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "Rust backend output differs from the goldens; if intended, run `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test golden`\n{}",
        failures.join("\n")
    );
}
