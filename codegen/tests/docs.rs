//! Golden test of the docs backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/docs/`), and of its extension flavour
//! (the backend of `docs/extension-protocol.md`) on the two-way fixture
//! (`tests/fixtures/calls.yaml` → `tests/golden/docs_extension/`). The drift gate for the
//! output of the specs (`protocol/rpc.yaml`, `protocol/extension.yaml`) is `tests/drift.rs`.
//! The golden is Markdown; `docs_cover_every_doc_error_and_example` checks that nothing of the spec is left out.
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test docs`.

mod common;

use common::{Backend, assert_fixture_matches_golden};
use dreb_codegen::{BANNER, EXTENSION_BANNER, docs, load_spec};

fn manifest_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn backend() -> Backend {
    Backend {
        name: "docs",
        test: "docs",
        fixture: "basic.yaml",
        prefix: "docs",
        banner_start: format!("<!-- {BANNER} -->\n"),
        generate: docs::generate,
    }
}

#[test]
fn fixture_matches_golden() {
    assert_fixture_matches_golden(&backend());
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
    for c in ir.commands.iter().chain(&ir.calls) {
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

#[test]
fn protocol_docs_cover_every_doc_error_and_example() {
    let root = dreb_codegen::repo_root();
    let ir = load_spec(root.join(dreb_codegen::SPEC_PATH)).unwrap_or_else(|e| panic!("{e}"));
    assert_covers(&ir, &docs::generate(&ir)[0].contents);
}

#[test]
fn extension_docs_cover_every_doc_error_and_example() {
    let root = dreb_codegen::repo_root();
    let ir =
        load_spec(root.join(dreb_codegen::EXTENSION_SPEC_PATH)).unwrap_or_else(|e| panic!("{e}"));
    let md = &docs::generate_extension(&ir)[0].contents;
    assert!(md.starts_with(&format!("<!-- {} -->\n", dreb_codegen::EXTENSION_BANNER)));
    assert!(md.contains("\n## Call reference\n") && md.contains("\n## Command reference\n"));
    assert_covers(&ir, md);
}

#[test]
fn contents_link_repeated_headings_by_their_numbered_anchors() {
    // The fixture's calls and events both have a `Lifecycle` group: the second heading is `#lifecycle-1`.
    let ir = load_spec(manifest_dir().join("tests/fixtures/calls.yaml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let md = &docs::generate_extension(&ir)[0].contents;
    let contents = &md[md.find("## Contents").unwrap()..md.find("## Framing").unwrap()];
    assert!(
        contents.contains("- [Call reference](#call-reference)\n  - [Hooks](#hooks)\n  - [Lifecycle](#lifecycle)\n"),
        "{contents}"
    );
    assert!(
        contents.contains("- [Event reference](#event-reference)\n  - [Lifecycle](#lifecycle-1)\n"),
        "{contents}"
    );
    assert!(!contents.contains("Input reference"), "{contents}");
}

/// The extension flavour (the output of `protocol/extension.yaml`) on the two-way fixture
/// (`tests/fixtures/calls.yaml` → `tests/golden/docs_extension/`).
fn extension_backend() -> Backend {
    Backend {
        name: "docs_extension",
        test: "docs",
        fixture: "calls.yaml",
        prefix: "docs",
        banner_start: format!("<!-- {EXTENSION_BANNER} -->\n"),
        generate: docs::generate_extension,
    }
}

#[test]
fn extension_fixture_matches_golden() {
    assert_fixture_matches_golden(&extension_backend());
}
