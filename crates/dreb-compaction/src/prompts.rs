//! Instructions for the summariser (our own wording, in the reference's structure).

pub const SYSTEM_PROMPT: &str = "You summarize coding-assistant conversations so that the work can continue \
from the summary alone. You are given a transcript between a user and an AI coding assistant. Do NOT continue the \
conversation and do NOT answer any question in it. Output ONLY the structured summary, in the requested format.";

pub const SUMMARY_INSTRUCTIONS: &str =
    "Write a structured summary of the conversation above that another assistant \
can pick up from. Use exactly these sections:

## Goal
What the user is trying to achieve.

## Constraints & Preferences
Requirements, conventions and preferences the user stated.

## Progress
### Done
- Work that is finished (with file paths).
### In Progress
- Work that was started but not finished.
### Blocked
- Anything waiting on an answer or failing.

## Key Decisions
- Choices made and why.

## Next Steps
1. What to do next, in order.

## Critical Context
Exact names, values, error messages and file locations needed to continue.

Be concise; keep concrete details (paths, identifiers, commands) verbatim.";

pub const UPDATE_INSTRUCTIONS: &str = "A summary of the earlier conversation is given in <previous-summary>. The \
transcript above is what happened since. Write an updated summary with the same sections as before:

## Goal
## Constraints & Preferences
## Progress
### Done
### In Progress
### Blocked
## Key Decisions
## Next Steps
## Critical Context

Keep everything from the previous summary that still holds, add what is new, move items from In Progress to Done \
when they were finished, and rewrite Next Steps for the current state. Be concise; keep concrete details verbatim.";

pub const TURN_PREFIX_INSTRUCTIONS: &str = "The transcript above is the beginning of a turn that is too long to keep \
in full; its end is kept verbatim after this summary. Summarize the beginning so the end makes sense:

## Original Request
What the user asked for in this turn.

## Early Progress
What was done so far in this turn (files read or changed, findings).

## Context for Suffix
What the reader needs to understand the rest of the turn.

Be concise; keep concrete details verbatim.";

pub const BRANCH_INSTRUCTIONS: &str =
    "The transcript above is a conversation branch the user is leaving. Summarize \
it so the conversation can continue elsewhere with what was learned:

## Goal
## Constraints & Preferences
## Progress
### Done
### In Progress
### Blocked
## Key Decisions
## Next Steps

Be concise; keep concrete details (paths, identifiers, commands) verbatim.";

/// Placed before every branch summary stored in the session (the reference writes the same words).
pub const BRANCH_SUMMARY_PREAMBLE: &str = "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n";

/// Joined between the history summary and the split-turn prefix summary.
pub const SPLIT_TURN_SEPARATOR: &str = "\n\n---\n\n**Turn Context (split turn):**\n\n";

/// Stands in for the history summary when a split turn has nothing before it.
pub const NO_PRIOR_HISTORY: &str = "No prior history.";
