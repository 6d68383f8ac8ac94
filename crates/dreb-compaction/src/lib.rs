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

/// Length of a string as JavaScript counts it (UTF-16 code units): the reference's estimates divide these by 4.
pub(crate) fn js_len(s: &str) -> u64 {
    s.encode_utf16().count() as u64
}
