//! Generates the extension protocol module from `protocol/extension.yaml` into `OUT_DIR/protocol.rs` (included
//! by `src/lib.rs`). A spec problem fails the build with every problem listed. `DREB_EXTENSION_SPEC=<path>`
//! overrides the spec.

use std::path::PathBuf;

fn main() {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-env-changed=DREB_EXTENSION_SPEC");
    let spec = match std::env::var_os("DREB_EXTENSION_SPEC") {
        Some(p) => PathBuf::from(p),
        None => manifest.join("../../protocol/extension.yaml"),
    };
    println!("cargo:rerun-if-changed={}", spec.display());
    println!("cargo:rerun-if-changed=build.rs");
    let ir = match dreb_codegen_core::load_spec(&spec) {
        Ok(ir) => ir,
        Err(e) => panic!(
            "protocol/extension.yaml is not valid (run `cargo run -p dreb-codegen -- check`):\n{e}"
        ),
    };
    // Lets tests load exactly the spec these types were generated from.
    let spec_abs = spec.canonicalize().unwrap_or(spec.clone());
    println!(
        "cargo:rustc-env=DREB_EXTENSION_SPEC_FILE={}",
        spec_abs.display()
    );
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("protocol.rs");
    let module = dreb_codegen_rust::generate_with_banner(&ir, dreb_codegen_core::EXTENSION_BANNER)
        .unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&out, module).expect("write OUT_DIR/protocol.rs");
}
