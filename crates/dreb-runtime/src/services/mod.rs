//! The services of a session and the [`Runtime`] handle to them. Each independent concern is one type that owns
//! its state behind its own lock (or task) and is reached through its methods: the submodules here, and the owners
//! that live beside the code that drives them (`RunPhase`, `BackgroundAgents`, `NestedContext`, the agent, the hook
//! bus, the outbox). A service calls no command and no other service (the MCP one only reads the tool set's
//! filter); a command (or the event bridge) that needs several calls each in turn. See `docs/adr/0015-services-own-their-state.md`.

use std::path::PathBuf;
use std::sync::{Arc, Weak};

use dreb_agent::Agent;
use dreb_protocol::Outbox;
use tokio_util::sync::CancellationToken;

use crate::background::BackgroundAgents;
use crate::commands::daily_cost::DailyCostCache;
use crate::nested_context::NestedContext;
use crate::run_phase::RunPhase;
use bash::BashRuns;
use dialogs::Dialogs;
use extensions::Extensions;
use mcp::Mcp;
use models::Models;
use prompt_queue::PromptQueue;
use resources::ResourceStore;
use session_store::SessionStore;
use settings::Settings;
use tasks::TaskList;
use tool_set::ToolSet;

pub(crate) mod bash;
pub(crate) mod dialogs;
pub(crate) mod extensions;
pub(crate) mod mcp;
pub(crate) mod model_json;
pub(crate) mod models;
pub(crate) mod naming;
pub(crate) mod prompt_queue;
pub(crate) mod resources;
pub(crate) mod session_store;
pub(crate) mod settings;
pub(crate) mod tasks;
pub(crate) mod tool_set;

/// The session's services, each the owner of one concern's state (see the module docs). Shared by every clone
/// of a [`Runtime`]; the agent's hooks, the event bridge and the tools that call back into the session hold it
/// weakly.
pub struct Services {
    pub(crate) cwd: PathBuf,
    pub(crate) agent_dir: PathBuf,
    /// Every frame of this session (events here, responses by the serving layer) goes through it.
    pub(crate) outbox: Outbox,
    /// Where extensions, MCP and the built-in guards plug in (see `dreb-hooks`).
    pub(crate) hooks: Arc<dreb_hooks::HookBus>,
    pub(crate) agent: Agent,
    /// The run's lifecycle: ending, retry chain, compaction, branch summaries, overflow recovery.
    pub(crate) phase: RunPhase,
    pub(crate) stop: CancellationToken,
    /// `--ui dashboard`: events leave out `message_update`'s cumulative copies of the reply.
    pub(crate) dashboard_projection: bool,
    pub(crate) settings: Settings,
    pub(crate) models: Models,
    pub(crate) sessions: SessionStore,
    pub(crate) resources: ResourceStore,
    pub(crate) tools: ToolSet,
    pub(crate) queue: PromptQueue,
    pub(crate) bash: BashRuns,
    pub(crate) tasks: TaskList,
    /// The extension-UI dialogs; their frames go through `outbox`.
    pub(crate) dialogs: Dialogs,
    /// Children launched by the subagent tool.
    pub(crate) background: BackgroundAgents,
    /// The extension processes (see `dreb-extensions`).
    pub(crate) extensions: Extensions,
    /// The MCP servers (see `dreb-mcp`).
    pub(crate) mcp: Mcp,
    /// Trusted subfolders' AGENTS.md / CLAUDE.md already added to tool results.
    pub(crate) nested_context: NestedContext,
    /// `get_state`'s model, serialised once per model.
    pub(crate) model_json: model_json::ModelJsonCache,
    /// `get_daily_cost`'s cache.
    pub(crate) daily_cost: DailyCostCache,
    /// The count of tool calls until an unnamed session is named (see `session_naming`).
    pub(crate) naming: naming::SessionNaming,
    /// Serialises `buddy_hatch` / `buddy_reroll` (each reads, then rewrites, the buddy file).
    pub(crate) buddy: tokio::sync::Mutex<()>,
}

/// The live session: a cheap-clone handle to its `Services` (its public API is in `crate::runtime`).
#[derive(Clone)]
pub struct Runtime {
    services: Arc<Services>,
}

/// The handle to a session's services (start-up; what holds them weakly, upgraded).
impl From<Arc<Services>> for Runtime {
    fn from(services: Arc<Services>) -> Runtime {
        Runtime { services }
    }
}

/// A handle that does not keep the session alive (the agent's hooks, the event bridge, the tools).
pub(crate) fn downgrade(rt: &Runtime) -> Weak<Services> {
    Arc::downgrade(&rt.services)
}

impl std::ops::Deref for Runtime {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}
