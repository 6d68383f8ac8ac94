//! Branch summaries: what `navigate_tree` with `summarize: true` attaches when leaving a branch.

use std::collections::HashSet;

use serde_json::Value;

use crate::estimate::estimate_message_tokens;
use crate::prepare::{FileOperations, entry_message};
use crate::prompts;
use crate::serialize::serialize_conversation;
use crate::summarize::{SummaryError, SummaryLlm, complete};

/// Output budget of a branch summary.
const BRANCH_SUMMARY_MAX_TOKENS: u64 = 2048;

/// Entries on the branch being left: from just below the deepest common ancestor of `old_leaf` and `target` down
/// to `old_leaf`, oldest first. `lookup` returns an entry by id.
pub fn collect_branch_entries<'a>(
    lookup: impl Fn(&str) -> Option<&'a Value>,
    old_leaf: Option<&str>,
    target: &str,
) -> Vec<Value> {
    let parent = |e: &Value| {
        e.get("parentId")
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let mut target_path = HashSet::new();
    let mut cur = Some(target.to_string());
    while let Some(id) = cur {
        if !target_path.insert(id.clone()) {
            break; // a cycle in a corrupt file
        }
        cur = lookup(&id).and_then(parent);
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut cur = old_leaf.map(str::to_string);
    while let Some(id) = cur {
        if target_path.contains(&id) || !seen.insert(id.clone()) {
            break;
        }
        let Some(entry) = lookup(&id) else { break };
        out.push(entry.clone());
        cur = parent(entry);
    }
    out.reverse();
    out
}

/// What a branch summary covers.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchSummaryPreparation {
    /// Messages to summarise, oldest first (tool results left out), newest kept first when over budget.
    pub messages: Vec<Value>,
    pub file_ops: FileOperations,
    pub total_tokens: u64,
}

/// Select the messages of `entries` (oldest first) that fit in `token_budget` (0 = unlimited), newest first.
pub fn prepare_branch_summary(entries: &[Value], token_budget: u64) -> BranchSummaryPreparation {
    let mut file_ops = FileOperations::default();
    // File operations come from the whole branch, even the part that does not fit the budget.
    for e in entries {
        let ty = e.get("type").and_then(Value::as_str);
        if ty == Some("branch_summary")
            && e.get("fromHook").and_then(Value::as_bool) != Some(true)
            && let Some(d) = e.get("details")
        {
            file_ops.add_details(d);
        }
        if let Some(m) = entry_message(e) {
            file_ops.add_messages(std::slice::from_ref(&m));
        }
    }
    let mut messages = Vec::new();
    let mut total = 0;
    for e in entries.iter().rev() {
        let Some(m) = entry_message(e) else { continue };
        if m.get("role").and_then(Value::as_str) == Some("toolResult") {
            continue;
        }
        let tokens = estimate_message_tokens(&m);
        if token_budget > 0 && total + tokens > token_budget {
            let is_summary = matches!(
                e.get("type").and_then(Value::as_str),
                Some("compaction" | "branch_summary")
            );
            // A summary of even older history is worth keeping while there is room for most of it.
            if is_summary && (total as f64) < token_budget as f64 * 0.9 {
                messages.push(m);
                total += tokens;
            }
            break;
        }
        messages.push(m);
        total += tokens;
    }
    messages.reverse();
    BranchSummaryPreparation {
        messages,
        file_ops,
        total_tokens: total,
    }
}

/// A generated branch summary: the `branch_summary` entry's `summary` and `details`.
#[derive(Debug, Clone, PartialEq)]
pub struct BranchSummary {
    pub summary: String,
    pub details: Value,
}

/// Summarise the abandoned branch. `replace_instructions` makes `custom_instructions` replace the default ones.
pub async fn generate_branch_summary(
    prep: &BranchSummaryPreparation,
    llm: &SummaryLlm<'_>,
    custom_instructions: Option<&str>,
    replace_instructions: bool,
) -> Result<BranchSummary, SummaryError> {
    let custom = custom_instructions.map(str::trim).filter(|c| !c.is_empty());
    let instructions = match (custom, replace_instructions) {
        (Some(c), true) => c.to_string(),
        (Some(c), false) => format!("{}\n\nAdditional focus: {c}", prompts::BRANCH_INSTRUCTIONS),
        (None, _) => prompts::BRANCH_INSTRUCTIONS.to_string(),
    };
    let text = if prep.messages.is_empty() {
        "No content to summarize".to_string()
    } else {
        let prompt = format!(
            "<conversation>\n{}\n</conversation>\n\n{instructions}",
            serialize_conversation(&prep.messages)
        );
        complete(
            llm,
            prompts::SYSTEM_PROMPT,
            prompt,
            BRANCH_SUMMARY_MAX_TOKENS,
            dreb_ai::ThinkingLevel::Off,
        )
        .await?
    };
    Ok(BranchSummary {
        summary: format!(
            "{}{}{}",
            prompts::BRANCH_SUMMARY_PREAMBLE,
            text,
            prep.file_ops.summary_suffix()
        ),
        details: prep.file_ops.details(),
    })
}
