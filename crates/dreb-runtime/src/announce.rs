//! The notices the session gives the hook handlers about itself (`session_start`, `session_shutdown`,
//! `model_select`).

use dreb_agent::Agent;
use dreb_ai::Model;
use dreb_hooks::{HookBus, Notice, SessionStartReason};

/// Tell the hook handlers the session (re)started.
pub(crate) async fn session_start(hooks: &HookBus, reason: SessionStartReason) {
    hooks.notify(Notice::SessionStart(reason)).await;
}

/// Tell the hook handlers the session ends (shutdown, reload).
pub(crate) async fn session_shutdown(hooks: &HookBus) {
    hooks.notify(Notice::SessionShutdown).await;
}

/// Tell the hook handlers the agent's model changed from `previous`.
pub(crate) async fn model_select(hooks: &HookBus, agent: &Agent, previous: Option<&Model>) {
    if !hooks.has_listeners() {
        return;
    }
    let Some(model) = agent.model() else {
        return;
    };
    let name = |m: &Model| format!("{}/{}", m.provider, m.id);
    let previous = previous.map(name);
    hooks
        .notify(Notice::ModelSelect {
            model: &name(&model),
            previous: previous.as_deref(),
        })
        .await;
}
