//! Context compaction and branch summaries.
//!
//! Works on session entries as raw JSON values (the v3 session-file lines of the current branch, root first), so
//! it depends on nothing but the entry format and the LLM client, and stays exact for entry kinds it does not know.
//! The flow mirrors the reference: estimate → decide → pick a cut point that never separates a tool call from its
//! result → summarise what is cut (one LLM call, plus one for the prefix of a split turn) → a `compaction` entry.

pub mod branch;
pub mod estimate;
pub mod prepare;
pub mod prompts;
pub mod serialize;
pub mod summarize;

pub use branch::{
    BranchSummary, BranchSummaryPreparation, collect_branch_entries, generate_branch_summary,
    prepare_branch_summary,
};
pub use estimate::{
    ContextEstimate, estimate_context_tokens, estimate_message_tokens, should_compact,
};
pub use prepare::{
    CompactionPreparation, CutPoint, FileOperations, find_cut_point, prepare_compaction,
};
pub use summarize::{CompactionResult, SummaryError, SummaryLlm, compact, generate_summary};

/// Compaction settings (`compaction.*` in settings.json), with the reference's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactionSettings {
    pub enabled: bool,
    /// Tokens kept free for the next response; compaction triggers above `contextWindow - reserveTokens`.
    pub reserve_tokens: u64,
    /// Recent context kept verbatim after a compaction.
    pub keep_recent_tokens: u64,
}

impl Default for CompactionSettings {
    fn default() -> Self {
        CompactionSettings {
            enabled: true,
            reserve_tokens: 16384,
            keep_recent_tokens: 20000,
        }
    }
}

impl CompactionSettings {
    /// The settings for a model with a `context_window`-token window: the reserve and the recent context kept are at
    /// most a quarter of the window each. The reference keeps them fixed (16,384 and 20,000), which for an 8k local
    /// model means a reserve larger than the window and a compaction after every turn.
    pub fn scaled_to(self, context_window: u64) -> Self {
        if context_window == 0 {
            return self;
        }
        let quarter = context_window / 4;
        CompactionSettings {
            reserve_tokens: self.reserve_tokens.min(quarter),
            keep_recent_tokens: self.keep_recent_tokens.min(quarter),
            ..self
        }
    }
}

/// Length of a string as JavaScript counts it (UTF-16 code units): the reference's estimates divide these by 4.
pub(crate) fn js_len(s: &str) -> u64 {
    s.encode_utf16().count() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_and_kept_context_are_capped_at_a_quarter_of_the_window() {
        let s = CompactionSettings::default();
        let small = s.scaled_to(8192);
        assert_eq!(
            (small.reserve_tokens, small.keep_recent_tokens),
            (2048, 2048)
        );
        assert!(!should_compact(6000, 8192, &small));
        assert!(should_compact(6200, 8192, &small));
        // Large windows keep the reference's figures; an unknown window changes nothing.
        assert_eq!(s.scaled_to(200_000), s);
        assert_eq!(s.scaled_to(0), s);
        let mid = s.scaled_to(64_000);
        assert_eq!(
            (mid.reserve_tokens, mid.keep_recent_tokens),
            (16_000, 16_000)
        );
    }
}
