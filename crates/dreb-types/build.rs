//! Generates the spec's shared data types (the closure of `selection.rs`'s roots) from `protocol/rpc.yaml` into
//! `OUT_DIR/types.rs` (included by `src/lib.rs`). `DREB_PROTOCOL_SPEC=<path>` overrides the spec, as for
//! `dreb-protocol`, whose build script re-exports the same selection.

use std::path::PathBuf;

include!("selection.rs");

fn main() {
    let (_, ir) = dreb_codegen_core::build_script::load_spec_for_build();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=selection.rs");
    let selection = dreb_codegen_rust::Selection::closure(&ir, DATA_TYPE_ROOTS)
        .unwrap_or_else(|e| panic!("selection.rs: {e}"));
    let module =
        dreb_codegen_rust::generate_types(&ir, &selection).unwrap_or_else(|e| panic!("{e}"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("types.rs");
    std::fs::write(&out, module).expect("write OUT_DIR/types.rs");
}
