//! Background subagents: the registry of launched children, their lifecycle (launch, relay, completion delivery to
//! the parent agent), the parent's guardrails while they run, and the three RPC commands that reach them.

pub(crate) mod activity;
pub mod agent_types;
pub mod arbiter;
pub mod child;
mod commands;
mod rehydrate;
pub mod routing_guide;
pub(crate) mod session;
pub mod tool;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::sync::lock;
use child::ControlClient;

/// Why [`BackgroundAgents::control`] has no channel to an agent (the agent's id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoControl {
    Unknown(String),
    NoLongerRunning(String),
    NotStartedYet(String),
}

/// Launched entries are dropped from the registry this long after they finished (rehydrated ones are kept: they
/// come from disk anyway).
const PRUNE_AFTER_MS: i64 = 5 * 60 * 1000;

/// What the model sees if it starts writing a completion notice itself while agents still run.
const SENTINEL: &str = "<background-agent-complete>";

/// One registry entry.
pub(crate) type AgentInfo = dreb_protocol::RpcBackgroundAgentInfo;
use dreb_protocol::BackgroundAgentStatus;

struct Entry {
    info: AgentInfo,
    /// When a finished launched entry may be pruned.
    prune_at_ms: Option<i64>,
    abort: Option<CancellationToken>,
    control: Option<Arc<ControlClient>>,
    /// The live child process (its group leader), until it has exited and been reaped.
    pid: Option<u32>,
}

/// Parent-side guardrail state (turns used while agents run, one pause notice, one sentinel steer per message).
#[derive(Default)]
struct Guardrail {
    turns_used: u64,
    running_at_turn_start: bool,
    pause_notified: bool,
    sentinel_steered: bool,
}

/// The session's background agents.
pub(crate) struct BackgroundAgents {
    entries: Mutex<Vec<Entry>>,
    /// Bounds how many children run at once (`backgroundAgents.maxConcurrentSubagents`).
    gate: Arc<Semaphore>,
    guard: Mutex<Guardrail>,
    /// Recent parent activity, part of what the Dispatch Arbiter sees.
    pub activity: Mutex<activity::ActivityBuffer>,
    /// The `dreb` executable children run.
    pub binary: PathBuf,
}

pub(crate) fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub(crate) fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

/// A fresh 12-hex id (agent ids and session directory names).
pub(crate) fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

impl BackgroundAgents {
    pub fn new(max_concurrent: usize, binary: PathBuf) -> Self {
        BackgroundAgents {
            entries: Mutex::new(Vec::new()),
            gate: Arc::new(Semaphore::new(max_concurrent.max(1))),
            guard: Mutex::new(Guardrail::default()),
            activity: Mutex::new(activity::ActivityBuffer::default()),
            binary,
        }
    }

    /// Every entry (running and recently finished), oldest first; stale finished ones are pruned first.
    pub fn list(&self) -> Vec<AgentInfo> {
        let now = now_ms();
        let mut entries = lock(&self.entries);
        entries.retain(|e| e.prune_at_ms.is_none_or(|at| now < at));
        entries.iter().map(|e| e.info.clone()).collect()
    }

    pub fn running(&self) -> Vec<AgentInfo> {
        lock(&self.entries)
            .iter()
            .filter(|e| e.info.status == BackgroundAgentStatus::Running)
            .map(|e| e.info.clone())
            .collect()
    }

    fn running_count(&self) -> usize {
        lock(&self.entries)
            .iter()
            .filter(|e| e.info.status == BackgroundAgentStatus::Running)
            .count()
    }

    fn register(&self, info: AgentInfo, abort: Option<CancellationToken>) {
        lock(&self.entries).push(Entry {
            info,
            prune_at_ms: None,
            abort,
            control: None,
            pid: None,
        });
    }

    fn update(&self, agent_id: &str, f: impl FnOnce(&mut Entry)) {
        if let Some(e) = lock(&self.entries)
            .iter_mut()
            .find(|e| e.info.agent_id == agent_id)
        {
            f(e);
        }
    }

    /// The control channel of a running child, or why there is none.
    pub fn control(&self, agent_id: &str) -> Result<Arc<ControlClient>, NoControl> {
        let entries = lock(&self.entries);
        let Some(entry) = entries.iter().find(|e| e.info.agent_id == agent_id) else {
            return Err(NoControl::Unknown(agent_id.into()));
        };
        if entry.info.status != BackgroundAgentStatus::Running {
            return Err(NoControl::NoLongerRunning(agent_id.into()));
        }
        entry
            .control
            .clone()
            .ok_or_else(|| NoControl::NotStartedYet(agent_id.into()))
    }

    /// Stop every running child: its entry is marked failed and its completion is delivered as cancelled. Live
    /// children get SIGTERM right away (not only from their tasks), so a shutdown that follows cannot outrun it.
    pub fn abort_all(&self) {
        for entry in lock(&self.entries).iter_mut() {
            if let Some(token) = entry.abort.take() {
                token.cancel();
                if entry.info.status == BackgroundAgentStatus::Running {
                    entry.info.status = BackgroundAgentStatus::Failed;
                }
            }
            if let Some(pid) = entry.pid {
                child::signal_group(pid, nix::sys::signal::Signal::SIGTERM);
            }
            entry.control = None;
        }
    }

    /// Wait until every child process has exited and been reaped, or `timeout` passed; then SIGKILL what is left.
    pub async fn wait_for_children(&self, timeout: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let live: Vec<u32> = lock(&self.entries).iter().filter_map(|e| e.pid).collect();
            if live.is_empty() {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                for pid in live {
                    child::signal_group(pid, nix::sys::signal::Signal::SIGKILL);
                }
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    fn reset_guardrail(&self) {
        let mut g = lock(&self.guard);
        g.turns_used = 0;
        g.pause_notified = false;
    }
}
