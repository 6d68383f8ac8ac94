//! `AgentMessage`: the LLM roles plus the app roles the runtime adds, and their default LLM conversion.
//!
//! Field names and order follow the reference's wire JSON (protocol-behaviour §4.3); unset optional fields are
//! absent, never `null`.

use dreb_ai::{Message, TextContent, TimestampMs, UserBlock, UserContent, UserMessage};

/// The app roles (the spec's types): output of a user `!command` run through the RPC `bash` command
/// (`excludeFromContext` for `!!` commands: shown and stored, never sent to the model), a message injected by the
/// app or an extension (e.g. `system_warning`), and the branch and compaction summaries.
pub use dreb_types::{
    BashExecutionMessage, BranchSummaryMessage, CompactionSummaryMessage, CustomMessage,
};

/// Every message the loop carries: the three LLM roles plus the app roles (the spec's `AgentMessage`, written
/// untagged as each message writes its `role`, parsed tag first). It is open: a role this version does not know
/// is `AgentMessage::Unknown` (raw JSON), which no LLM context takes. `timestamp()`, `as_assistant()` and
/// `user_text()` are in `dreb_types`' `values.rs`.
pub use dreb_types::AgentMessage;

/// Prefix/suffix wrapped around a compaction summary when it is sent to the model.
pub const COMPACTION_SUMMARY_PREFIX: &str = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n";
pub const COMPACTION_SUMMARY_SUFFIX: &str = "\n</summary>";
/// Prefix/suffix wrapped around a branch summary when it is sent to the model.
pub const BRANCH_SUMMARY_PREFIX: &str =
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n";
pub const BRANCH_SUMMARY_SUFFIX: &str = "</summary>";

/// The text a `bashExecution` message becomes in the LLM context.
pub fn bash_execution_to_text(m: &BashExecutionMessage) -> String {
    let mut text = format!("Ran `{}`\n", m.command);
    if m.output.is_empty() {
        text.push_str("(no output)");
    } else {
        text.push_str(&format!("```\n{}\n```", m.output));
    }
    if m.cancelled {
        text.push_str("\n\n(command cancelled)");
    } else if let Some(code) = m.exit_code.filter(|c| *c != 0) {
        text.push_str(&format!("\n\nCommand exited with code {code}"));
    }
    if m.truncated
        && let Some(path) = &m.full_output_path
    {
        text.push_str(&format!("\n\n[Output truncated. Full output: {path}]"));
    }
    text
}

fn user_text_message(text: String, timestamp: TimestampMs) -> Message {
    Message::User(UserMessage {
        role: Default::default(),
        content: UserContent::Blocks(vec![UserBlock::Text(TextContent {
            text,
            text_signature: None,
            ..Default::default()
        })]),
        timestamp,
    })
}

/// The reference's conversion of agent messages to LLM messages (runtime-behaviour §1b.5): LLM roles pass through,
/// app roles become user messages, `bashExecution` with `excludeFromContext` is dropped.
pub fn default_convert_to_llm(messages: &[AgentMessage]) -> Vec<Message> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::User(u) => Some(Message::User(u.clone())),
            AgentMessage::Assistant(a) => Some(Message::Assistant(a.clone())),
            AgentMessage::ToolResult(t) => Some(Message::ToolResult(t.clone())),
            AgentMessage::BashExecution(b) => {
                if b.exclude_from_context == Some(true) {
                    None
                } else {
                    Some(user_text_message(bash_execution_to_text(b), b.timestamp))
                }
            }
            AgentMessage::Custom(c) => {
                let content = match &c.content {
                    UserContent::Text(s) => {
                        UserContent::Blocks(vec![UserBlock::Text(TextContent {
                            text: s.clone(),
                            text_signature: None,
                            ..Default::default()
                        })])
                    }
                    blocks => blocks.clone(),
                };
                Some(Message::User(UserMessage {
                    role: Default::default(),
                    content,
                    timestamp: c.timestamp,
                }))
            }
            AgentMessage::BranchSummary(s) => Some(user_text_message(
                format!(
                    "{BRANCH_SUMMARY_PREFIX}{}{BRANCH_SUMMARY_SUFFIX}",
                    s.summary
                ),
                s.timestamp,
            )),
            AgentMessage::CompactionSummary(s) => Some(user_text_message(
                format!(
                    "{COMPACTION_SUMMARY_PREFIX}{}{COMPACTION_SUMMARY_SUFFIX}",
                    s.summary
                ),
                s.timestamp,
            )),
            AgentMessage::Unknown(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_roles_round_trip_with_reference_key_order() {
        let lines = [
            r#"{"role":"bashExecution","command":"echo hi","output":"hi\n","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1796106538184}"#,
            r#"{"role":"bashExecution","command":"sleep 9","output":"","cancelled":true,"truncated":false,"timestamp":1,"excludeFromContext":true}"#,
            r#"{"role":"custom","customType":"system_warning","content":"[System Warning] x","display":true,"timestamp":2}"#,
            r#"{"role":"custom","customType":"ext","content":[{"type":"text","text":"a"}],"display":false,"details":{"k":1},"timestamp":3}"#,
            r#"{"role":"branchSummary","summary":"did things","fromId":"abcd1234","timestamp":4}"#,
            r#"{"role":"compactionSummary","summary":"sum","tokensBefore":1234,"timestamp":5}"#,
            r#"{"role":"user","content":"hi","timestamp":6}"#,
            r#"{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"x"}],"details":{},"isError":true,"timestamp":7}"#,
        ];
        for line in lines {
            let m: AgentMessage = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&m).unwrap(), line);
        }
    }

    #[test]
    fn default_conversion_matches_reference_texts() {
        let msgs: Vec<AgentMessage> = vec![
            serde_json::from_str(r#"{"role":"bashExecution","command":"false","output":"","exitCode":1,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/o","timestamp":1}"#).unwrap(),
            serde_json::from_str(r#"{"role":"bashExecution","command":"x","output":"o","cancelled":false,"truncated":false,"timestamp":1,"excludeFromContext":true}"#).unwrap(),
            serde_json::from_str(r#"{"role":"custom","customType":"t","content":"hello","display":true,"timestamp":2}"#).unwrap(),
            serde_json::from_str(r#"{"role":"branchSummary","summary":"S\n","fromId":"f","timestamp":3}"#).unwrap(),
            serde_json::from_str(r#"{"role":"compactionSummary","summary":"C","tokensBefore":1,"timestamp":4}"#).unwrap(),
        ];
        let out = default_convert_to_llm(&msgs);
        let texts: Vec<String> = out
            .iter()
            .map(|m| match m {
                Message::User(u) => u.content.text(),
                _ => panic!("expected user"),
            })
            .collect();
        assert_eq!(
            texts,
            vec![
                "Ran `false`\n(no output)\n\nCommand exited with code 1\n\n[Output truncated. Full output: /tmp/o]".to_string(),
                "hello".to_string(),
                "The following is a summary of a branch that this conversation came back from:\n\n<summary>\nS\n</summary>"
                    .to_string(),
                "The conversation history before this point was compacted into the following summary:\n\n<summary>\nC\n</summary>"
                    .to_string(),
            ]
        );
        let custom = serde_json::to_string(&out[1]).unwrap();
        assert_eq!(
            custom,
            r#"{"role":"user","content":[{"type":"text","text":"hello"}],"timestamp":2}"#
        );
    }
}
