//! The bodies of the fuzz targets in `fuzz/` (cargo-fuzz), in the workspace so that `cargo test` can replay the
//! checked-in corpus (`fuzz/corpus/<target>/`) through exactly the code the fuzzer runs.
//!
//! - [`frame_reader`]: arbitrary bytes, in arbitrary chunks, through [`dreb_protocol::framing::JsonlReader`],
//!   compared with a simple reference splitter ([`reference_records`]).
//! - [`decode_dispatch`]: arbitrary bytes as stdin of [`dreb_cli::serve`] with the real runtime (offline `faux`
//!   provider, temp HOME / agent dir / cwd); every stdout line must be a valid frame of the spec and every input
//!   line must get exactly one response (none for `extension_ui_response`).
//!
//! Both panic on a violated invariant: that is what the fuzzer reports as a crash. See `docs/fuzzing.md`.

pub mod decode_dispatch;
pub mod frame_reader;
pub mod reference;

pub use decode_dispatch::decode_dispatch;
pub use frame_reader::frame_reader;
pub use reference::{Segment, reference_records, segments};

/// The corpus directory of a target, `fuzz/corpus/<target>` at the workspace root.
pub fn corpus_dir(target: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}
