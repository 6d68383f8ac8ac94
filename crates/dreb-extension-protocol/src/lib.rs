//! The dreb extension protocol in Rust: the types generated from `protocol/extension.yaml` at build time (the
//! protocol between the runtime and an extension process).
//!
//! - Calls (the runtime sends them, the extension answers): `<Call>Params` per call, the [`Call`] enum, the
//!   [`CallResult`] enum of success `data`, and [`CallSpec`], which types each params struct with its result.
//! - Commands (the extension sends them, the runtime answers): `<Command>Params`, [`Command`], [`ResponseData`]
//!   and [`CommandSpec`]. The generated [`RpcHandler`]/[`CommandService`] traits serve them too.
//! - Events (the runtime sends them, no answer): `<Event>Event` structs and the open [`Event`] enum.
//! - Wire names in [`wire`], envelope error texts in [`error_text`].
//!
//! Framing, the request envelope and the generic helpers are the RPC protocol's: the generated code relies on
//! [`dreb_protocol::support`], re-exported here as [`support`].

pub use dreb_protocol::support;

#[allow(clippy::all, missing_docs, unused_qualifications)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/protocol.rs"));
}

/// Absolute path of the spec file this crate was generated from (for spec-driven tests).
pub const SPEC_FILE: &str = env!("DREB_EXTENSION_SPEC_FILE");

pub use generated::*;
