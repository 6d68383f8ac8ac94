//! Deciding what a compaction summarises and what it keeps.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::CompactionSettings;
use crate::estimate::{estimate_context_tokens, estimate_message_tokens};

fn entry_type(entry: &Value) -> &str {
    entry.get("type").and_then(Value::as_str).unwrap_or("")
}

fn message_role(entry: &Value) -> Option<&str> {
    if entry_type(entry) != "message" {
        return None;
    }
    entry.get("message")?.get("role")?.as_str()
}

/// The agent message an entry contributes to the context, if any (messages, custom messages and summaries).
pub fn entry_message(entry: &Value) -> Option<Value> {
    let get = |k: &str| entry.get(k).cloned().unwrap_or(Value::Null);
    let timestamp = entry
        .get("timestamp")
        .and_then(Value::as_str)
        .and_then(chrono_ms)
        .map(Value::from)
        .unwrap_or(Value::Null);
    match entry_type(entry) {
        "message" => entry.get("message").cloned(),
        "custom_message" => {
            let mut m = json!({"role": "custom", "customType": get("customType"), "content": get("content"), "display": get("display")});
            if let Some(d) = entry.get("details") {
                m["details"] = d.clone();
            }
            m["timestamp"] = timestamp;
            Some(m)
        }
        "branch_summary" => Some(
            json!({"role": "branchSummary", "summary": get("summary"), "fromId": get("fromId"), "timestamp": timestamp}),
        ),
        "compaction" => Some(
            json!({"role": "compactionSummary", "summary": get("summary"), "tokensBefore": get("tokensBefore"), "timestamp": timestamp}),
        ),
        _ => None,
    }
}

/// Milliseconds since the epoch of an ISO-8601 UTC timestamp such as `2026-12-01T06:29:04.331Z`.
fn chrono_ms(iso: &str) -> Option<i64> {
    // Session timestamps are always `YYYY-MM-DDTHH:MM:SS(.mmm)Z`; parse them without a date crate.
    let b = iso.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[10] != b'T' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| iso.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let ms = if b.get(19) == Some(&b'.') {
        num(20..23).unwrap_or(0)
    } else {
        0
    };
    // Days from civil (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms)
}

/// Where the kept part of the branch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutPoint {
    /// Index (into the branch entries) of the first entry kept verbatim.
    pub first_kept_entry_index: usize,
    /// When the cut falls inside a turn: index of the entry that starts that turn.
    pub turn_start_index: Option<usize>,
}

impl CutPoint {
    pub fn is_split_turn(&self) -> bool {
        self.turn_start_index.is_some()
    }
}

/// Entries a cut may start at: never a tool result, so a tool call always stays with its result.
fn is_valid_cut_point(entry: &Value) -> bool {
    match entry_type(entry) {
        "branch_summary" | "custom_message" => true,
        "message" => matches!(
            message_role(entry),
            Some(
                "user"
                    | "assistant"
                    | "bashExecution"
                    | "custom"
                    | "branchSummary"
                    | "compactionSummary"
            )
        ),
        _ => false,
    }
}

fn turn_start_index(entries: &[Value], from: usize, start: usize) -> Option<usize> {
    (start..=from).rev().find(|&i| {
        let e = &entries[i];
        matches!(entry_type(e), "branch_summary" | "custom_message")
            || matches!(message_role(e), Some("user" | "bashExecution"))
    })
}

/// Pick the cut point in `entries[start..end]` that keeps at least `keep_recent_tokens` of recent messages.
pub fn find_cut_point(
    entries: &[Value],
    start: usize,
    end: usize,
    keep_recent_tokens: u64,
) -> CutPoint {
    let cut_points: Vec<usize> = (start..end)
        .filter(|&i| is_valid_cut_point(&entries[i]))
        .collect();
    let Some(&first) = cut_points.first() else {
        return CutPoint {
            first_kept_entry_index: start,
            turn_start_index: None,
        };
    };
    let mut cut = first;
    let mut accumulated = 0;
    for i in (start..end).rev() {
        let Some(message) = (entry_type(&entries[i]) == "message")
            .then(|| entries[i].get("message"))
            .flatten()
        else {
            continue;
        };
        accumulated += estimate_message_tokens(message);
        if accumulated >= keep_recent_tokens {
            if let Some(&c) = cut_points.iter().find(|&&c| c >= i) {
                cut = c;
            }
            break;
        }
    }
    // Keep the non-message entries (model changes, labels, ...) that lead up to the cut.
    while cut > start {
        let prev = &entries[cut - 1];
        if matches!(entry_type(prev), "compaction" | "message") {
            break;
        }
        cut -= 1;
    }
    let at_user = message_role(&entries[cut]) == Some("user");
    let turn_start_index = if at_user {
        None
    } else {
        turn_start_index(entries, cut, start)
    };
    CutPoint {
        first_kept_entry_index: cut,
        turn_start_index,
    }
}

/// Files the summarised part of the conversation read and changed, carried from one compaction to the next.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOperations {
    pub read: BTreeSet<String>,
    pub written: BTreeSet<String>,
    pub edited: BTreeSet<String>,
}

impl FileOperations {
    /// Record the file tool calls of assistant messages.
    pub fn add_messages(&mut self, messages: &[Value]) {
        for m in messages {
            if m.get("role").and_then(Value::as_str) != Some("assistant") {
                continue;
            }
            let Some(blocks) = m.get("content").and_then(Value::as_array) else {
                continue;
            };
            for b in blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
            {
                let args = b.get("arguments");
                let Some(path) = args
                    .and_then(|a| a.get("path").or_else(|| a.get("file_path")))
                    .and_then(Value::as_str)
                else {
                    continue;
                };
                let set = match b.get("name").and_then(Value::as_str) {
                    Some("read") => &mut self.read,
                    Some("write") => &mut self.written,
                    Some("edit") => &mut self.edited,
                    _ => continue,
                };
                set.insert(path.to_string());
            }
        }
    }

    /// Carry over the lists of an earlier compaction or branch summary (`details.readFiles/modifiedFiles`).
    pub fn add_details(&mut self, details: &Value) {
        let list = |k: &str| {
            details
                .get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
        };
        self.read.extend(list("readFiles").map(str::to_string));
        self.edited
            .extend(list("modifiedFiles").map(str::to_string));
    }

    /// `(read-only files, modified files)`, each sorted.
    pub fn lists(&self) -> (Vec<String>, Vec<String>) {
        let modified: BTreeSet<String> = self.edited.union(&self.written).cloned().collect();
        let read_only = self.read.difference(&modified).cloned().collect();
        (read_only, modified.into_iter().collect())
    }

    /// `details` object stored on compaction and branch-summary entries.
    pub fn details(&self) -> Value {
        let (read, modified) = self.lists();
        json!({"readFiles": read, "modifiedFiles": modified})
    }

    /// The file lists appended to a summary text (empty when there are none).
    pub fn summary_suffix(&self) -> String {
        let (read, modified) = self.lists();
        let mut sections = Vec::new();
        if !read.is_empty() {
            sections.push(format!("<read-files>\n{}\n</read-files>", read.join("\n")));
        }
        if !modified.is_empty() {
            sections.push(format!(
                "<modified-files>\n{}\n</modified-files>",
                modified.join("\n")
            ));
        }
        if sections.is_empty() {
            String::new()
        } else {
            format!("\n\n{}", sections.join("\n\n"))
        }
    }
}

/// Everything a compaction needs, computed from the current branch without any LLM call.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionPreparation {
    pub first_kept_entry_id: String,
    /// Messages summarised into the main summary (from the previous compaction up to the cut or turn start).
    pub messages_to_summarize: Vec<Value>,
    /// For a split turn: the turn's messages before the cut, summarised separately.
    pub turn_prefix_messages: Vec<Value>,
    pub is_split_turn: bool,
    pub tokens_before: u64,
    pub previous_summary: Option<String>,
    pub file_ops: FileOperations,
}

/// Plan a compaction of `branch` (the entries from the root to the leaf). `None` when there is nothing to
/// compact: the branch is empty or already ends with a compaction.
pub fn prepare_compaction(
    branch: &[Value],
    settings: &CompactionSettings,
) -> Option<CompactionPreparation> {
    let last = branch.last()?;
    if entry_type(last) == "compaction" {
        return None;
    }
    let prev_compaction = branch.iter().rposition(|e| entry_type(e) == "compaction");
    let boundary_start = prev_compaction.map(|i| i + 1).unwrap_or(0);
    let boundary_end = branch.len();

    let usage_messages: Vec<Value> = branch[prev_compaction.unwrap_or(0)..boundary_end]
        .iter()
        .filter_map(entry_message)
        .collect();
    let tokens_before = estimate_context_tokens(&usage_messages).tokens;

    let cut = find_cut_point(
        branch,
        boundary_start,
        boundary_end,
        settings.keep_recent_tokens,
    );
    let first_kept_entry_id = branch[cut.first_kept_entry_index]
        .get("id")?
        .as_str()?
        .to_string();
    let history_end = cut.turn_start_index.unwrap_or(cut.first_kept_entry_index);
    let messages_to_summarize: Vec<Value> = branch[boundary_start..history_end]
        .iter()
        .filter_map(entry_message)
        .collect();
    let turn_prefix_messages: Vec<Value> = match cut.turn_start_index {
        Some(t) => branch[t..cut.first_kept_entry_index]
            .iter()
            .filter_map(entry_message)
            .collect(),
        None => Vec::new(),
    };

    let mut file_ops = FileOperations::default();
    let mut previous_summary = None;
    if let Some(i) = prev_compaction {
        let prev = &branch[i];
        previous_summary = prev
            .get("summary")
            .and_then(Value::as_str)
            .map(str::to_string);
        let from_hook = prev
            .get("fromHook")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if let (false, Some(details)) = (from_hook, prev.get("details")) {
            file_ops.add_details(details);
        }
    }
    file_ops.add_messages(&messages_to_summarize);
    file_ops.add_messages(&turn_prefix_messages);

    Some(CompactionPreparation {
        first_kept_entry_id,
        messages_to_summarize,
        turn_prefix_messages,
        is_split_turn: cut.is_split_turn(),
        tokens_before,
        previous_summary,
        file_ops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_branch(jsonl: &str, leaf: &str) -> Vec<Value> {
        let entries: Vec<Value> = jsonl
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let mut path = Vec::new();
        let mut cur = Some(leaf.to_string());
        while let Some(id) = cur {
            let e = entries
                .iter()
                .find(|e| e["id"] == id.as_str())
                .unwrap()
                .clone();
            cur = e["parentId"].as_str().map(str::to_string);
            path.push(e);
        }
        path.reverse();
        path
    }

    /// The reference compacted this branch with keepRecentTokens 8 and recorded firstKeptEntryId c9367ade and
    /// tokensBefore 102 (fixture `d-branched-compacted.jsonl`).
    #[test]
    fn matches_the_reference_compaction_of_fixture_d() {
        let jsonl = include_str!("../tests/fixtures/d-branched-compacted.jsonl");
        let branch = load_branch(jsonl, "2a423e29");
        let settings = CompactionSettings {
            keep_recent_tokens: 8,
            ..Default::default()
        };
        let prep = prepare_compaction(&branch, &settings).unwrap();
        assert_eq!(prep.first_kept_entry_id, "c9367ade");
        assert_eq!(prep.tokens_before, 102);
        assert!(!prep.is_split_turn);
        let texts: Vec<_> = prep
            .messages_to_summarize
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(texts, ["user", "assistant"]);
        assert_eq!(
            prep.file_ops.details(),
            json!({"readFiles": [], "modifiedFiles": []})
        );

        // Already compacted: nothing to do.
        let compacted = load_branch(jsonl, "c11fc5fa");
        assert!(prepare_compaction(&compacted, &settings).is_none());

        // After the compaction, the next one summarises from the previous summary on.
        let after = load_branch(jsonl, "e5e15a27");
        let prep = prepare_compaction(&after, &settings).unwrap();
        assert!(prep.previous_summary.unwrap().starts_with("## Goal"));
        assert_eq!(prep.first_kept_entry_id, "ce751cbe");
    }

    #[test]
    fn never_cuts_between_a_tool_call_and_its_result() {
        let msg = |id: &str, m: Value| json!({"type":"message","id":id,"parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":m});
        let branch = vec![
            msg(
                "u1",
                json!({"role":"user","content":"first question, quite long text here"}),
            ),
            msg(
                "a1",
                json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"src/a.rs"}}],"stopReason":"toolUse"}),
            ),
            msg(
                "t1",
                json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x".repeat(400)}],"isError":false}),
            ),
            msg(
                "a2",
                json!({"role":"assistant","content":[{"type":"toolCall","id":"c2","name":"edit","arguments":{"path":"src/b.rs"}}],"stopReason":"toolUse"}),
            ),
            msg(
                "t2",
                json!({"role":"toolResult","toolCallId":"c2","toolName":"edit","content":[{"type":"text","text":"ok"}],"isError":false}),
            ),
        ];
        // Keeping ~2 tokens: the accumulation stops at the edit call (t2 is 1 token, a2 is 6), a valid cut point.
        let cut = find_cut_point(&branch, 0, branch.len(), 2);
        let kept = &branch[cut.first_kept_entry_index];
        assert_ne!(kept["message"]["role"], "toolResult");
        // Keeping ~100 tokens: the big read result is reached; cut at the assistant that called edit (a split turn).
        let cut = find_cut_point(&branch, 0, branch.len(), 100);
        assert_eq!(branch[cut.first_kept_entry_index]["id"], "a2");
        assert_eq!(cut.turn_start_index, Some(0));

        let prep = prepare_compaction(
            &branch,
            &CompactionSettings {
                keep_recent_tokens: 100,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(prep.is_split_turn);
        assert!(prep.messages_to_summarize.is_empty());
        assert_eq!(prep.turn_prefix_messages.len(), 3);
        assert_eq!(
            prep.file_ops.lists(),
            (vec!["src/a.rs".to_string()], vec![])
        );
    }

    #[test]
    fn file_lists_carry_previous_details_and_subtract_modified_from_read() {
        let mut ops = FileOperations::default();
        ops.add_details(&json!({"readFiles": ["a", "b"], "modifiedFiles": ["c"]}));
        ops.add_messages(&[json!({"role":"assistant","content":[{"type":"toolCall","id":"1","name":"write","arguments":{"path":"a"}}]})]);
        assert_eq!(
            ops.lists(),
            (
                vec!["b".to_string()],
                vec!["a".to_string(), "c".to_string()]
            )
        );
        assert_eq!(
            ops.summary_suffix(),
            "\n\n<read-files>\nb\n</read-files>\n\n<modified-files>\na\nc\n</modified-files>"
        );
    }

    #[test]
    fn iso_timestamps_convert_to_epoch_ms() {
        assert_eq!(chrono_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(
            chrono_ms("2026-12-01T06:29:03.910Z"),
            Some(1_796_106_543_910)
        );
    }
}
