//! The commands: each spec group's generated handler trait (`dreb_protocol::<Group>Handler`, see
//! `docs/adr/0014-group-handler-traits.md`) is implemented for [`Runtime`](crate::services::Runtime) in one
//! `impl` block, in the module of its group; the methods are the commands, each returning its generated
//! `dreb_protocol::errors::<Command>Error`. They read and change the session through its services
//! (`self.sessions`, `self.models`, ...: `crate::services`); a helper several commands share is a free function of
//! the module that does the work, taking the handle or the services it needs (no inherent `impl Runtime` here).
//!
//! | group | module |
//! |---|---|
//! | Prompting, Queue modes | `prompting` |
//! | State, Version | `state` (the snapshot capture in `snapshot`, the cost scan in `daily_cost`) |
//! | Model | `model_select` |
//! | Thinking | `models` |
//! | Buddy | `buddy` |
//! | Compaction | `compaction` |
//! | Retry | `retry` |
//! | Bash | `bash` |
//! | Session, Session listing, Session tree | `sessions` (the performance log in `performance`) |
//! | Discovery | `discovery` (`reload`'s blocking part too) |
//! | Background agents | `crate::background::commands` |
//! | Settings, Context trust | `settings` |

pub(crate) mod bash;
pub(crate) mod buddy;
pub(crate) mod compaction;
pub(crate) mod daily_cost;
pub(crate) mod dialogs;
pub(crate) mod discovery;
pub(crate) mod model_select;
pub(crate) mod models;
pub(crate) mod performance;
pub(crate) mod prompting;
pub(crate) mod retry;
pub(crate) mod sessions;
pub(crate) mod settings;
pub(crate) mod snapshot;
pub(crate) mod state;

pub(crate) use discovery::{discover_agent_types, home_dir, resolve_entry};
pub(crate) use prompting::builtin_slash_command;
pub(crate) use state::git_branch;
