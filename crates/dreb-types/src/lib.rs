//! The spec's shared data types, generated from `protocol/rpc.yaml` at build time: models, messages and content
//! blocks, usage and cost, the stream deltas of an assistant message, and the lists of values (thinking levels,
//! queue modes, ...). No RPC: commands, events, the handler trait and dispatch stay in `dreb-protocol`, which
//! re-exports these types instead of generating them a second time, so each wire type exists once.
//!
//! Which types are here is `selection.rs` (roots, closed under references); [`TYPES`] lists them.

pub mod support;
mod values;

#[allow(clippy::all, missing_docs, unused_qualifications)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/types.rs"));
}

pub use generated::*;
pub use support::{JsNumber, Tristate};
