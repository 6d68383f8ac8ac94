//! Recent parent activity, part of what the Dispatch Arbiter sees.

use std::collections::VecDeque;

/// Longest single context entry the arbiter is shown.
pub(crate) const MAX_CONTEXT_ENTRY_CHARS: usize = 2_000;

pub(crate) fn truncate_marked(value: &str, max: usize) -> String {
    if value.chars().count() <= max {
        return value.to_string();
    }
    const MARKER: &str = "...[truncated]";
    let keep: String = value
        .chars()
        .take(max.saturating_sub(MARKER.len()))
        .collect();
    format!("{keep}{MARKER}")
}

/// Recent parent activity (assistant text, tool calls and results), newest kept, for the arbiter's context.
#[derive(Default)]
pub struct ActivityBuffer {
    entries: VecDeque<String>,
}

impl ActivityBuffer {
    const MAX_ENTRIES: usize = 30;
    const MAX_CHARS: usize = 6_000;

    pub fn push(&mut self, entry: String) {
        let entry: String = truncate_marked(&entry, MAX_CONTEXT_ENTRY_CHARS)
            .chars()
            .take(2_000)
            .collect();
        self.entries.push_back(entry);
        while self.entries.len() > Self::MAX_ENTRIES {
            self.entries.pop_front();
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    pub(crate) fn build(&self) -> String {
        let joined = self.entries.iter().cloned().collect::<Vec<_>>().join("\n");
        let len = joined.chars().count();
        if len <= Self::MAX_CHARS {
            return joined;
        }
        const MARKER: &str = "[... older activity truncated ...]";
        let available = Self::MAX_CHARS.saturating_sub(MARKER.len() + 1);
        let tail: String = joined.chars().skip(len - available).collect();
        format!("{MARKER}\n{tail}")
    }
}
