//! Command implementations, one module per group of the spec.

mod bash;
mod compaction;
mod export;
mod models;
mod not_yet;
mod prompting;
mod retry;
mod sessions;
mod settings;
pub(crate) mod snapshot;
mod state;
