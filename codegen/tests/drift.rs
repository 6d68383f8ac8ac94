//! Drift gate: every checked-in generated file must equal what the backends produce from `protocol/rpc.yaml`
//! now. On failure it prints a unified diff per file and the regenerate command.

mod common;

#[test]
fn checked_in_files_match_the_spec() {
    let root = dreb_codegen::repo_root();
    let spec = root.join(dreb_codegen::SPEC_PATH);
    let ir = dreb_codegen::load_spec(&spec).unwrap_or_else(|e| {
        panic!("{e}\n(`cargo run -p dreb-codegen -- check` lists the same problems)")
    });
    let files = dreb_codegen::generate_all(&ir);
    let mut problems = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for file in &files {
        if !seen.insert(file.path.clone()) {
            problems.push(format!("{} is generated twice", file.path.display()));
            continue;
        }
        if !file.contents.contains(dreb_codegen::BANNER) {
            problems.push(format!(
                "{} does not carry the generated-file banner",
                file.path.display()
            ));
        }
        match std::fs::read_to_string(root.join(&file.path)) {
            Ok(on_disk) if on_disk == file.contents => {}
            Ok(on_disk) => {
                problems.push(common::unified_diff(&file.path, &on_disk, &file.contents))
            }
            Err(e) => problems.push(format!("{} is missing ({e})", file.path.display())),
        }
    }
    assert!(
        problems.is_empty(),
        "generated files are out of date with {}; run `{}` and commit the result\n\n{}",
        dreb_codegen::SPEC_PATH,
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
