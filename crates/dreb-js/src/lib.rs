//! JavaScript value semantics that the reference's wire texts and session files depend on.
//!
//! The reference is TypeScript: every number it prints went through `Number#toString` (in a template literal, a
//! `String(x)` coercion or `JSON.stringify`). One implementation here ([`number`], on `ryu-js`) replaces the
//! hand-written formatters the crates used to carry, whose rules disagreed (`1e20` came out as
//! `9223372036854775807` in one of them).

pub mod json;
pub mod number;

pub use number::{number_to_string, serialize_number};
