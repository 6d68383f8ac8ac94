//! `get_state`'s model as JSON, kept while the agent's model stays the same.

use std::sync::Arc;

use dreb_agent::available_thinking_levels;
use dreb_ai::Model;

/// The agent's current model with its JSON and its thinking levels, computed once per model.
pub(crate) struct ModelEntry {
    pub(crate) model: Model,
    pub(crate) json: Box<[u8]>,
    pub(crate) levels: Vec<dreb_ai::ThinkingLevel>,
}

/// The [`ModelEntry`] of the model `get_state` last saw: `get_state` is polled often and the model rarely
/// changes, so it is cloned and serialised once instead of on every call. Compared with the agent's model on every
/// use, so a change made anywhere is seen at once.
#[derive(Default)]
pub(crate) struct ModelJsonCache {
    entry: std::sync::Mutex<Option<Arc<ModelEntry>>>,
}

impl ModelJsonCache {
    /// The entry of the agent's current model (`None` without one).
    pub(crate) fn current(&self, agent: &dreb_agent::Agent) -> Option<Arc<ModelEntry>> {
        agent.with_state(|s| {
            let model = s.model.as_ref()?;
            let mut entry = crate::sync::lock(&self.entry);
            if let Some(e) = entry.as_ref().filter(|e| e.model == *model) {
                return Some(e.clone());
            }
            let e = Arc::new(ModelEntry {
                json: serde_json::to_vec(model).ok()?.into_boxed_slice(),
                levels: available_thinking_levels(model),
                model: model.clone(),
            });
            *entry = Some(e.clone());
            Some(e)
        })
    }
}
