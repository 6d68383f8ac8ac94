//! Golden test of the docs backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/docs/`). `checked_in_output_matches_protocol_spec` is the drift gate
//! for the output of `protocol/rpc.yaml`.
//! The golden is Markdown; `docs_cover_every_doc_error_and_example` checks that nothing of the spec is left out.
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test docs`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use dreb_codegen::{BANNER, GeneratedFile, docs, load_spec};

const PREFIX: &str = "docs";

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
    let files = docs::generate(&ir);
    let golden = manifest_dir().join("tests/golden/docs");
    let update = std::env::var_os("UPDATE_GOLDENS").is_some();
    let mut problems = Vec::new();
    let mut produced = BTreeSet::new();
    for GeneratedFile { path, contents } in &files {
        assert!(
            contents.starts_with(&format!("<!-- {BANNER} -->\n")),
            "{} lacks the banner",
            path.display()
        );
        let rel = path
            .strip_prefix(PREFIX)
            .expect("docs output lives in docs/")
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
        "{}\nrewrite with: UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test docs",
        problems.join("\n")
    );
}

/// Whitespace collapsed, table escapes and heading markers undone, so prose is comparable whether it sits in a
/// paragraph or a cell, and whatever level its headings were nested to.
fn normalize(text: &str) -> String {
    text.lines()
        .map(|line| line.trim_start_matches('#'))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\\|", "|")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every doc string, every error text and every example of `ir` appears in `md`.
fn assert_covers(ir: &dreb_codegen::Ir, md: &str) {
    use dreb_codegen::ir::{MessageBody, TypeKind};
    let md = normalize(md);
    let mut docs: Vec<String> = Vec::new();
    let mut examples: Vec<&serde_json::Value> = Vec::new();
    docs.extend(ir.protocol.doc.clone());
    docs.extend(ir.envelope.doc.clone());
    let mut errors: Vec<String> = ir.envelope.errors.iter().map(|e| e.text.clone()).collect();
    for e in &ir.envelope.examples {
        docs.extend(e.doc.clone());
        examples.extend(e.request.iter().chain(e.response.iter()));
    }
    let field_docs = |fields: &[dreb_codegen::ir::Field], docs: &mut Vec<String>| {
        for f in fields {
            docs.extend(
                f.doc
                    .clone()
                    .into_iter()
                    .chain(f.since.clone())
                    .chain(f.note.clone()),
            );
        }
    };
    for t in &ir.types {
        docs.extend(
            t.doc
                .clone()
                .into_iter()
                .chain(t.since.clone())
                .chain(t.note.clone()),
        );
        examples.extend(t.examples.iter());
        match &t.kind {
            TypeKind::Struct(s) => field_docs(&s.fields, &mut docs),
            TypeKind::Enum(e) => docs.extend(e.values.iter().filter_map(|v| v.doc.clone())),
            _ => {}
        }
    }
    for c in &ir.commands {
        docs.extend(
            c.doc
                .clone()
                .into_iter()
                .chain(c.since.clone())
                .chain(c.note.clone()),
        );
        field_docs(&c.params, &mut docs);
        for e in &c.errors {
            errors.push(e.text.clone());
            docs.extend(e.when.clone());
        }
        for e in &c.examples {
            docs.extend(e.note.clone());
            examples.extend(
                e.request
                    .iter()
                    .chain(e.response.iter())
                    .chain(e.events.iter()),
            );
        }
    }
    for m in ir.events.iter().chain(ir.inputs.iter()) {
        docs.extend(
            m.doc
                .clone()
                .into_iter()
                .chain(m.since.clone())
                .chain(m.note.clone()),
        );
        if let MessageBody::Fields(fields) = &m.body {
            field_docs(fields, &mut docs);
        }
        examples.extend(m.examples.iter());
    }
    let mut missing = Vec::new();
    for d in docs {
        if !md.contains(&normalize(&d)) {
            missing.push(format!("doc: {d}"));
        }
    }
    for e in errors {
        if !md.contains(&normalize(&e.replace('\n', "\\n"))) {
            missing.push(format!("error text: {e}"));
        }
    }
    for x in examples {
        if !md.contains(&normalize(&serde_json::to_string(x).unwrap())) {
            missing.push(format!("example: {x}"));
        }
    }
    assert!(
        missing.is_empty(),
        "missing from the docs:\n{}",
        missing.join("\n")
    );
}

#[test]
fn docs_cover_every_doc_error_and_example() {
    let ir = load_spec(manifest_dir().join("tests/fixtures/basic.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let files = docs::generate(&ir);
    assert_eq!(files.len(), 1);
    assert_covers(&ir, &files[0].contents);
}

/// Drift gate: the checked-in output for `protocol/rpc.yaml` is what the backend generates now.
#[test]
fn checked_in_output_matches_protocol_spec() {
    let root = dreb_codegen::repo_root();
    let ir = load_spec(root.join(dreb_codegen::SPEC_PATH)).unwrap_or_else(|e| panic!("{e}"));
    let mut problems = Vec::new();
    for GeneratedFile { path, contents } in docs::generate(&ir) {
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

#[test]
fn protocol_docs_cover_every_doc_error_and_example() {
    let root = dreb_codegen::repo_root();
    let ir = load_spec(root.join(dreb_codegen::SPEC_PATH)).unwrap_or_else(|e| panic!("{e}"));
    assert_covers(&ir, &docs::generate(&ir)[0].contents);
}
