//! Golden test of the Python backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/python/`). `checked_in_output_matches_protocol_spec` is the drift gate
//! for the output of `protocol/rpc.yaml`.
//! The golden is type-checked (`mypy --strict`) by `tests/test_golden.py` in `clients/python`.
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test python`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use dreb_codegen::{BANNER, GeneratedFile, load_spec, python};

const PREFIX: &str = "clients/python";

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files_under(dir: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out
}

fn diff(expected: &str, actual: &str, name: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .header(name, "generated")
        .to_string()
}

#[test]
fn fixture_matches_golden() {
    let ir = load_spec(manifest_dir().join("tests/fixtures/basic.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let files = python::generate(&ir);
    let golden = manifest_dir().join("tests/golden/python");
    let update = std::env::var_os("UPDATE_GOLDENS").is_some();
    let mut problems = Vec::new();
    let mut produced = BTreeSet::new();
    for GeneratedFile { path, contents } in &files {
        assert!(
            contents.starts_with(&format!("# {BANNER}\n")),
            "{} lacks the banner",
            path.display()
        );
        let rel = path
            .strip_prefix(PREFIX)
            .expect("Python output lives in clients/python")
            .to_path_buf();
        let target = golden.join(&rel);
        produced.insert(rel.clone());
        if update {
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(&target, contents).unwrap();
            continue;
        }
        match std::fs::read_to_string(&target) {
            Ok(expected) if &expected == contents => {}
            Ok(expected) => problems.push(diff(&expected, contents, &rel.display().to_string())),
            Err(_) => problems.push(format!("missing golden file {}", target.display())),
        }
    }
    if !update {
        for extra in files_under(&golden).difference(&produced) {
            problems.push(format!(
                "golden file {} is no longer generated",
                extra.display()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nrewrite with: UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test python",
        problems.join("\n")
    );
}

/// Drift gate: the checked-in output for `protocol/rpc.yaml` is what the backend generates now.
#[test]
fn checked_in_output_matches_protocol_spec() {
    let root = dreb_codegen::repo_root();
    let ir = load_spec(root.join(dreb_codegen::SPEC_PATH)).unwrap_or_else(|e| panic!("{e}"));
    let mut problems = Vec::new();
    for GeneratedFile { path, contents } in python::generate(&ir) {
        match std::fs::read_to_string(root.join(&path)) {
            Ok(actual) if actual == contents => {}
            Ok(actual) => problems.push(diff(&actual, &contents, &path.display().to_string())),
            Err(_) => problems.push(format!("{} is missing", path.display())),
        }
    }
    assert!(
        problems.is_empty(),
        "{}\nregenerate with: {}",
        problems.join("\n"),
        dreb_codegen::REGENERATE_COMMAND
    );
}
