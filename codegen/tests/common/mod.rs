//! Shared helpers for the golden and drift tests.

use std::path::Path;

/// A unified diff of `expected` (on disk) against `actual` (freshly generated).
pub fn unified_diff(path: &Path, expected: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header(
            &format!("{} (checked in)", path.display()),
            &format!("{} (generated)", path.display()),
        )
        .to_string()
}

/// One backend under golden test: where its output lives and how its files start.
#[allow(dead_code)]
pub struct Backend {
    /// The golden folder under `tests/golden/`.
    pub name: &'static str,
    /// The test target (`--test <test>`) that checks it.
    pub test: &'static str,
    /// The fixture spec under `tests/fixtures/` it is run on.
    pub fixture: &'static str,
    /// Folder (relative to the repo root) the backend writes into.
    pub prefix: &'static str,
    /// The banner every generated file starts with.
    pub banner_start: String,
    pub generate: fn(&dreb_codegen::Ir) -> Vec<dreb_codegen::GeneratedFile>,
}

/// Every file under `dir` (recursively), relative to it.
#[allow(dead_code)]
pub fn files_under(dir: &Path) -> std::collections::BTreeSet<std::path::PathBuf> {
    let mut out = std::collections::BTreeSet::new();
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

/// The fixture spec's output equals the checked-in golden (`UPDATE_GOLDENS=1` rewrites it), every file carries
/// the banner, and no stale golden file is left.
#[allow(dead_code)]
pub fn assert_fixture_matches_golden(backend: &Backend) {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ir = dreb_codegen::load_spec(manifest.join("tests/fixtures").join(backend.fixture))
        .unwrap_or_else(|e| panic!("{e}"));
    let golden = manifest.join("tests/golden").join(backend.name);
    let update = std::env::var_os("UPDATE_GOLDENS").is_some();
    let mut problems = Vec::new();
    let mut produced = std::collections::BTreeSet::new();
    for dreb_codegen::GeneratedFile { path, contents } in (backend.generate)(&ir) {
        assert!(
            contents.starts_with(&backend.banner_start),
            "{} lacks the banner",
            path.display()
        );
        let rel = path
            .strip_prefix(backend.prefix)
            .unwrap_or_else(|_| panic!("{} output lives in {}", backend.name, backend.prefix))
            .to_path_buf();
        let target = golden.join(&rel);
        produced.insert(rel.clone());
        if update {
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(&target, &contents).unwrap();
            continue;
        }
        match std::fs::read_to_string(&target) {
            Ok(expected) if expected == contents => {}
            Ok(expected) => problems.push(unified_diff(&rel, &expected, &contents)),
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
        "{}\nrewrite with: UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test {}",
        problems.join("\n"),
        backend.test
    );
}
