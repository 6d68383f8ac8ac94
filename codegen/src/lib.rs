//! The protocol code generator's CLI and its checked-in backends: each spec (`protocol/rpc.yaml`,
//! `protocol/extension.yaml`) → typed IR → TypeScript, Python, JSON Schema and docs.
//!
//! - Loading, validation and the IR live in `dreb-codegen-core` (re-exported here: [`load_spec`], [`ir`],
//!   [`validate`]); the Rust emitter that `crates/dreb-protocol/build.rs` runs lives in `dreb-codegen-rust`.
//! - [`SPECS`] lists each spec with the backends whose output is checked in; [`generate_all`] runs them all;
//!   [`GENERATED_DIRS`] are the folders they own.
//!
//! Regenerate every checked-in file with [`REGENERATE_COMMAND`].

use std::path::{Path, PathBuf};

pub mod docs;
pub mod drift;
pub mod jsonschema;
pub mod python;
pub mod typescript;

pub use dreb_codegen_core::{
    BANNER, BANNERS, EXTENSION_BANNER, EXTENSION_SPEC_PATH, GeneratedFile, Ir, REGENERATE_COMMAND,
    SPEC_PATH, SPEC_PATHS, SpecError, banner_comment, banner_comment_of, ir, load_spec,
    load_spec_str, validate,
};

/// Folders (relative to the repository root) that hold generated files only: the drift check fails on any file
/// in them that no backend writes. Generated files elsewhere (next to hand-written ones) are recognised by the
/// banner instead.
pub const GENERATED_DIRS: &[&str] = &[
    "clients/typescript/src/generated",
    "clients/typescript/test/generated",
    "clients/extension-host/src/generated",
    "protocol/schema",
];

/// A backend: the files it writes for one spec.
pub type Backend = fn(&Ir) -> Vec<GeneratedFile>;

/// A spec of the repository and the backends whose output is checked in.
pub struct Spec {
    /// The spec's path relative to the repository root.
    pub path: &'static str,
    /// Its backends, in output order.
    pub backends: &'static [Backend],
}

/// Every spec with its checked-in backends. To add a backend: declare its `mod` above and add its `generate` to
/// its spec here.
pub const SPECS: &[Spec] = &[
    Spec {
        path: SPEC_PATH,
        backends: &[
            typescript::generate,
            python::generate,
            jsonschema::generate,
            docs::generate,
        ],
    },
    Spec {
        path: EXTENSION_SPEC_PATH,
        backends: &[
            typescript::generate_extension,
            python::generate_extension,
            jsonschema::generate_extension,
            docs::generate_extension,
        ],
    },
];

impl Spec {
    /// Runs this spec's backends on its IR and concatenates their files (in backend order).
    pub fn generate(&self, ir: &Ir) -> Vec<GeneratedFile> {
        self.backends
            .iter()
            .flat_map(|backend| backend(ir))
            .collect()
    }
}

/// Loads every spec under `root` and runs its backends: every checked-in generated file, in [`SPECS`] order.
pub fn generate_all(root: &Path) -> Result<Vec<GeneratedFile>, SpecError> {
    let mut files = Vec::new();
    for spec in SPECS {
        files.extend(spec.generate(&load_spec(root.join(spec.path))?));
    }
    Ok(files)
}

/// The repository root as seen from this crate's sources (`codegen/..`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}
