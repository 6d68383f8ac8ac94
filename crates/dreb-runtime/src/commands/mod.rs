//! Command implementations, one module per group of the spec.

mod models;
mod not_yet;
mod prompting;
mod sessions;
mod settings;
mod state;
