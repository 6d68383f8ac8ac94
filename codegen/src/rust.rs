//! Rust backend (protocol module for `crates/dreb-protocol`, generated at build time).

use crate::ir::Ir;

/// Emits the Rust protocol module.
pub fn generate(_ir: &Ir) -> String {
    String::new()
}
