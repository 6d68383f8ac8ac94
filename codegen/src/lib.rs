//! The protocol code generator's CLI and its checked-in backends: `protocol/rpc.yaml` → typed IR → TypeScript,
//! Python, JSON Schema and docs.
//!
//! - Loading, validation and the IR live in `dreb-codegen-core` (re-exported here: [`load_spec`], [`ir`],
//!   [`validate`]); the Rust emitter that `crates/dreb-protocol/build.rs` runs lives in `dreb-codegen-rust`.
//! - [`generate_all`] runs the backends whose output is checked in; [`GENERATED_DIRS`] are the folders they own.
//!
//! Regenerate every checked-in file with [`REGENERATE_COMMAND`].

use std::path::PathBuf;

pub mod docs;
pub mod drift;
pub mod jsonschema;
pub mod python;
pub mod typescript;

pub use dreb_codegen_core::{
    BANNER, EXTENSION_SPEC_PATH, GeneratedFile, Ir, REGENERATE_COMMAND, SPEC_PATH, SPEC_PATHS,
    SpecError, banner_comment, ir, load_spec, load_spec_str, validate,
};

/// Folders (relative to the repository root) that hold generated files only: the drift check fails on any file
/// in them that no backend writes. Generated files elsewhere (next to hand-written ones) are recognised by the
/// banner instead.
pub const GENERATED_DIRS: &[&str] = &[
    "clients/typescript/src/generated",
    "clients/typescript/test/generated",
    "protocol/schema",
];

/// The backends whose output is checked in. To add one: declare its `mod` above and add its `generate` here.
const CHECKED_IN_BACKENDS: &[fn(&Ir) -> Vec<GeneratedFile>] = &[
    typescript::generate,
    python::generate,
    jsonschema::generate,
    docs::generate,
];

/// Runs every checked-in backend and concatenates their files (in backend order).
pub fn generate_all(ir: &Ir) -> Vec<GeneratedFile> {
    CHECKED_IN_BACKENDS
        .iter()
        .flat_map(|backend| backend(ir))
        .collect()
}

/// The repository root as seen from this crate's sources (`codegen/..`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}
