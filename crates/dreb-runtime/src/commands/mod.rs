//! Command implementations, one module per group of the spec.

mod bash;
mod buddy;
mod compaction;
mod daily_cost;
pub(crate) mod dialogs;
mod discovery;
mod export;
pub(crate) mod extras;
mod model_select;
mod models;
pub(crate) mod performance;
mod prompting;
mod retry;
mod sessions;
mod settings;
pub(crate) mod snapshot;
mod state;

pub(crate) use discovery::{home_dir, resolve_entry};
pub(crate) use prompting::builtin_slash_command;
pub(crate) use state::git_branch;
