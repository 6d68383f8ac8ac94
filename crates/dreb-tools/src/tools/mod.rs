//! The tool implementations, one module each.

pub mod ask_user;
pub mod bash;
pub mod edit;
pub mod edit_diff;
pub mod find;
pub mod grep;
pub mod ls;
pub mod read;
pub mod suggest_next;
pub mod tasks;
pub mod watch_github_ci;
pub mod write;

#[cfg(test)]
mod tests;

#[cfg(test)]
pub(crate) mod test_util {
    use std::sync::{Arc, Mutex};

    use dreb_agent::{ToolOutput, ToolUpdateFn};
    use dreb_ai::UserBlock;

    pub fn noop_update() -> ToolUpdateFn {
        Arc::new(|_| {})
    }

    /// An update callback that records every partial result.
    pub fn recording_update() -> (ToolUpdateFn, Arc<Mutex<Vec<ToolOutput>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        (Arc::new(move |o| s.lock().unwrap().push(o)), seen)
    }

    /// All text blocks joined with newlines.
    pub fn text_of(o: &ToolOutput) -> String {
        o.content
            .iter()
            .filter_map(|b| match b {
                UserBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}
