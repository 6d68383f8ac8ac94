//! What the build scripts that generate from the spec (`dreb-types`, `dreb-protocol`) share: which spec file
//! they read and how a broken spec fails the build.

use std::path::PathBuf;

use crate::Ir;

/// The environment variable that points a build at another spec file (e.g. a fixture).
pub const SPEC_ENV: &str = "DREB_PROTOCOL_SPEC";

/// Loads the spec for a crate's build script: `DREB_PROTOCOL_SPEC` when set, else the repository's
/// `protocol/rpc.yaml` (two levels above the crate), with the `cargo:rerun-if-*` lines for both. A spec problem
/// fails the build with every problem listed.
pub fn load_spec_for_build() -> (PathBuf, Ir) {
    let manifest =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-env-changed={SPEC_ENV}");
    let spec = match std::env::var_os(SPEC_ENV) {
        Some(p) => PathBuf::from(p),
        None => manifest.join("../../protocol/rpc.yaml"),
    };
    println!("cargo:rerun-if-changed={}", spec.display());
    let ir = crate::load_spec(&spec).unwrap_or_else(|e| {
        panic!("protocol/rpc.yaml is not valid (run `cargo run -p dreb-codegen -- check`):\n{e}")
    });
    (spec, ir)
}
