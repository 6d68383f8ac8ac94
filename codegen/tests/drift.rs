//! Drift gate: every checked-in generated file must equal what the backends produce from the specs
//! (`protocol/rpc.yaml`, `protocol/extension.yaml`) now, and no file the generator no longer writes may be left in
//! a generated location. On failure it prints a unified diff per stale file, the missing and extra files, and the
//! regenerate command.

mod common;

use dreb_codegen::drift::{Drift, check};

#[test]
fn checked_in_files_match_the_spec() {
    let root = dreb_codegen::repo_root();
    let files = dreb_codegen::generate_all(&root).unwrap_or_else(|e| {
        panic!("{e}\n(`cargo run -p dreb-codegen -- check` lists the same problems)")
    });
    let problems: Vec<String> = check(&root, &files)
        .into_iter()
        .map(|p| match p {
            Drift::Stale {
                path,
                on_disk,
                generated,
            } => common::unified_diff(&path, &on_disk, &generated),
            Drift::Missing(p) => format!("{} is missing", p.display()),
            Drift::Extra(p) => format!(
                "{} is in a generated location but no longer generated; delete it",
                p.display()
            ),
            Drift::Duplicate(p) => format!("{} is generated twice", p.display()),
            Drift::NoBanner(p) => {
                format!("{} does not carry the generated-file banner", p.display())
            }
        })
        .collect();
    assert!(
        problems.is_empty(),
        "generated files are out of date with {}; run `{}` and commit the result\n\n{}",
        dreb_codegen::SPEC_PATHS.join(" / "),
        dreb_codegen::REGENERATE_COMMAND,
        problems.join("\n")
    );
}

#[test]
fn the_diff_names_the_file_and_the_change() {
    // The failure message is the product of this gate; make sure it is readable.
    let d = common::unified_diff(std::path::Path::new("a/b.ts"), "x\ny\n", "x\nz\n");
    assert!(
        d.contains("a/b.ts (checked in)") && d.contains("-y") && d.contains("+z"),
        "{d}"
    );
}
