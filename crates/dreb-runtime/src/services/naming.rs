//! The count of an unnamed session's tool calls until it is named (the naming itself: `session_naming`).

use std::sync::Mutex;

use crate::sync::lock;

/// Counts the session's tool calls until the naming starts.
#[derive(Default)]
pub(crate) struct SessionNaming {
    state: Mutex<Counter>,
}

#[derive(Default)]
struct Counter {
    tool_calls: u64,
    started: bool,
}

impl SessionNaming {
    /// One more tool call ended; `true` for the one that reaches `threshold` (the naming starts once).
    pub(crate) fn count_tool_call(&self, threshold: u64) -> bool {
        let mut state = lock(&self.state);
        if state.started {
            return false;
        }
        state.tool_calls += 1;
        state.started = state.tool_calls >= threshold;
        state.started
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_starts_the_naming_once() {
        let naming = SessionNaming::default();
        let starts: Vec<bool> = (0..12).map(|_| naming.count_tool_call(3)).collect();
        assert_eq!(starts.iter().filter(|s| **s).count(), 1);
        assert!(starts[2], "the third call reaches 3");
    }
}
