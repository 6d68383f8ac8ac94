//! Shared helpers for the cross-crate suites in `tests/tests/`.
//!
//! The conformance helpers are driven by the spec the protocol crate was generated from
//! ([`dreb_protocol::SPEC_FILE`]): every documented example is a test case. Request replay goes through
//! [`dreb_protocol::dispatch`] and is generic over any [`CommandService`], so the same cases run against the
//! [`SpecReplay`] double here and against the real runtime's handler later.

pub mod conformance;
