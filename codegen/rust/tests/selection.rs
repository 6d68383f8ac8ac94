//! The split output: a selection of shared types (`generate_types`) and the protocol module without them
//! (`generate_protocol`), on the `basic.yaml` fixture. Together they define every shared type exactly once; the
//! real pair (`dreb-types` + `dreb-protocol` for `rpc.yaml`) is compiled by the workspace build.

use dreb_codegen_rust::{Selection, UnknownRoot, generate, generate_protocol, generate_types};

fn spec() -> dreb_codegen_core::Ir {
    dreb_codegen_core::load_spec(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/fixtures/basic.yaml"
    ))
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Names of the shared types a module defines (`pub struct X`, `pub enum X`, `pub type X`).
fn defined(module: &str, ir: &dreb_codegen_core::Ir) -> Vec<String> {
    ir.types
        .iter()
        .map(|t| t.name.clone())
        .filter(|n| {
            ["struct", "enum", "type"].iter().any(|k| {
                module.contains(&format!("pub {k} {n} "))
                    || module.contains(&format!("pub {k} {n}<"))
                    || module.contains(&format!("pub {k} {n} ="))
            })
        })
        .collect()
}

#[test]
fn closure_follows_references_in_spec_order() {
    let ir = spec();
    let sel = Selection::closure(&ir, &["UserContent", "Level"]).unwrap();
    assert_eq!(
        sel.names(),
        [
            "Level",
            "TextContent",
            "ImageContent",
            "Content",
            "UserContent"
        ]
    );
    assert!(sel.contains("Content") && !sel.contains("State"));
    assert_eq!(
        Selection::closure(&ir, &["Nope"]).unwrap_err(),
        UnknownRoot("Nope".into())
    );
}

#[test]
fn split_defines_every_shared_type_once() {
    let ir = spec();
    let sel = Selection::closure(&ir, &["UserContent", "Level"]).unwrap();
    let types = generate_types(&ir, &sel).unwrap();
    let protocol = generate_protocol(&ir, &sel, "::shared_types").unwrap();
    let whole = generate(&ir).unwrap();

    let in_types = defined(&types, &ir);
    let in_protocol = defined(&protocol, &ir);
    assert_eq!(in_types, sel.names());
    assert!(
        in_protocol.iter().all(|n| !sel.contains(n)),
        "{in_protocol:?}"
    );
    let mut both: Vec<String> = in_types.into_iter().chain(in_protocol).collect();
    both.sort();
    let mut all = defined(&whole, &ir);
    all.sort();
    assert_eq!(both, all);

    // The types module has no RPC; the protocol module re-exports the selection and its const markers.
    assert!(types.contains("pub const TYPES: &[&str] = &["));
    for rpc in [
        "RpcHandler",
        "RequestContext",
        "pub enum Command",
        "pub mod wire",
    ] {
        assert!(!types.contains(rpc), "{rpc} in the types module");
    }
    assert!(types.contains("const_tag!(TextContentType = \"text\")"));
    assert!(protocol.contains("pub use ::shared_types::{"));
    assert!(protocol.contains("pub use ::shared_types::consts::*;"));
    assert!(!protocol.contains("const_tag!(TextContentType"));
}
