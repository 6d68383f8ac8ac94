//! Generates the protocol module from `protocol/rpc.yaml` into `OUT_DIR/protocol.rs` (included by `src/lib.rs`).
//! A spec problem fails the build with every problem listed. `DREB_PROTOCOL_SPEC=<path>` overrides the spec.
//! The shared data types of `dreb-types/selection.rs` are not generated here: the module re-exports them from
//! `dreb-types` (one definition of each wire type).

use std::path::PathBuf;

include!("../dreb-types/selection.rs");

fn main() {
    let (spec, ir) = dreb_codegen_core::build_script::load_spec_for_build();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../dreb-types/selection.rs");
    // Lets tests load exactly the spec these types were generated from.
    let spec_abs = spec.canonicalize().unwrap_or(spec.clone());
    println!(
        "cargo:rustc-env=DREB_PROTOCOL_SPEC_FILE={}",
        spec_abs.display()
    );
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("protocol.rs");
    let selection = dreb_codegen_rust::Selection::closure(&ir, DATA_TYPE_ROOTS)
        .unwrap_or_else(|e| panic!("dreb-types/selection.rs: {e}"));
    let module = dreb_codegen_rust::generate_protocol(&ir, &selection, "::dreb_types")
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&out, module).expect("write OUT_DIR/protocol.rs");
}
