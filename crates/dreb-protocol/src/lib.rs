//! The dreb RPC protocol in Rust: types generated from `protocol/rpc.yaml` at build time, the [`RpcHandler`]
//! trait with [`dispatch`], and JSONL framing.
//!
//! - Types: one struct per shared type, `<Command>Params` per command, `<Event>Event` per event with inline
//!   fields; [`Command`], [`ResponseData`], [`Event`] (open) and [`Input`] enums; wire names in [`wire`]. The shared
//!   data types (models, messages, content blocks, usage, the value lists: `dreb_types::TYPES`) are defined in
//!   `dreb-types` and re-exported here, so `dreb_protocol::Model` is `dreb_types::Model`.
//! - Serving: implement the per-group handler traits in [`handlers`] (together they make [`RpcHandler`]; or the
//!   lower-level [`CommandService`]) and call [`dispatch`] for each input line; it returns exactly one [`Response`] per command line, or the [`Input`] message to route.
//! - Framing: [`framing`] reads and writes JSON Lines (LF only, U+2028/U+2029 safe, record size limit).

pub mod envelope;
pub mod framing;
pub mod lane;
pub mod lenient;
pub mod outbox;
pub mod request;
pub mod support;

#[allow(clippy::all, missing_docs, unused_qualifications)]
mod generated {
    include!(concat!(env!("OUT_DIR"), "/protocol.rs"));
}

/// Absolute path of the spec file this crate was generated from (for spec-driven tests).
pub const SPEC_FILE: &str = env!("DREB_PROTOCOL_SPEC_FILE");

pub use envelope::{Decoded, Request, Response, decode, decode_value, record_error_response};
pub use generated::*;
pub use lane::Lane;
pub use outbox::{DeltaFrame, DeltaKey, FrameSink, Held, Outbox, ReadyFuture, Sequencer, Ticket};
pub use request::{Dispatched, Reply, dispatch, handle_request, serve_request};
pub use support::{JsNumber, RequestContext, Tristate};
