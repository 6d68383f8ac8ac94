//! The runtime's event frames as ACP `session/update`s: streamed text and thinking as chunks, each tool call as a
//! `tool_call` followed by `tool_call_update`s, the task list as a `plan`. Also remembers what the prompt's answer
//! needs (how the last reply ended) and which tool call a permission dialog belongs to.

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, ImageContent, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionInfoUpdate, SessionUpdate, Terminal, TerminalId, TextContent, ToolCall, ToolCallContent,
    ToolCallId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::{Map, Value};

use crate::tools;

/// How the last assistant reply of a run ended (its `stopReason`, and the error text when it failed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastReply {
    pub stop_reason: String,
    pub error: Option<String>,
}

#[derive(Debug, Clone)]
struct Call {
    name: String,
    args: Map<String, Value>,
}

pub struct Translator {
    cwd: PathBuf,
    calls: HashMap<String, Call>,
    /// The tool call executing now (started, not ended): the one a permission dialog is about.
    running: Option<String>,
    last_reply: Option<LastReply>,
    /// The client's terminal each `bash` call runs in (shown as the call's first content).
    terminals: HashMap<String, TerminalId>,
    /// What each `write` call's file held before it ran (`None`: a new file), for its diff.
    priors: HashMap<String, Option<String>>,
}

impl Translator {
    pub fn new(cwd: PathBuf) -> Translator {
        Translator {
            cwd,
            calls: HashMap::new(),
            running: None,
            last_reply: None,
            terminals: HashMap::new(),
            priors: HashMap::new(),
        }
    }

    /// The call's command runs in the client's terminal: shown in the call from now on.
    pub fn attach_terminal(&mut self, id: &str, terminal: TerminalId) -> Option<SessionUpdate> {
        self.terminals.insert(id.to_string(), terminal);
        self.content_update(id)
    }

    /// The previous content of a `write` call's file: its diff is now whole.
    pub fn prior_text(&mut self, id: &str, text: Option<String>) -> Option<SessionUpdate> {
        self.priors.insert(id.to_string(), text);
        self.content_update(id)
    }

    fn content_update(&self, id: &str) -> Option<SessionUpdate> {
        if !self.calls.contains_key(id) {
            // Announced later, with it.
            return None;
        }
        let content = self.with_extras(id, Vec::new());
        (!content.is_empty()).then(|| {
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                ToolCallId::new(id),
                ToolCallUpdateFields::new().content(content),
            ))
        })
    }

    /// Forgets the previous prompt's reply (a new prompt starts).
    pub fn begin_prompt(&mut self) {
        self.last_reply = None;
    }

    pub fn last_reply(&self) -> Option<&LastReply> {
        self.last_reply.as_ref()
    }

    /// The running tool call, as the `toolCall` of a permission request.
    pub fn running_call(&self) -> Option<ToolCallUpdate> {
        let id = self.running.as_ref()?;
        let call = self.calls.get(id)?;
        Some(ToolCallUpdate::new(
            ToolCallId::new(id.as_str()),
            ToolCallUpdateFields::new()
                .title(tools::title(&call.name, &call.args))
                .kind(tools::kind(&call.name))
                .raw_input(Value::Object(call.args.clone())),
        ))
    }

    /// The updates one event frame becomes (often none).
    pub fn frame(&mut self, frame: &Value) -> Vec<SessionUpdate> {
        let str_of = |k: &str| str_field(frame, k);
        match str_of("type") {
            "message_update" => frame
                .get("assistantMessageEvent")
                .map(|e| self.stream_event(e))
                .unwrap_or_default(),
            "message_end" => {
                let message = frame.get("message").unwrap_or(&Value::Null);
                if message.get("role").and_then(Value::as_str) == Some("assistant") {
                    self.last_reply = Some(LastReply {
                        stop_reason: message
                            .get("stopReason")
                            .and_then(Value::as_str)
                            .unwrap_or("stop")
                            .to_string(),
                        error: message
                            .get("errorMessage")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                    });
                }
                Vec::new()
            }
            "tool_execution_start" => {
                let id = str_of("toolCallId").to_string();
                let name = str_of("toolName").to_string();
                let args = object(frame.get("args"));
                self.running = Some(id.clone());
                let known = self.calls.contains_key(&id);
                self.calls.insert(id.clone(), Call { name, args });
                let update = self.describe(&id, ToolCallStatus::InProgress);
                if known {
                    vec![SessionUpdate::ToolCallUpdate(update)]
                } else {
                    // Not streamed (a provider without tool call deltas): announce it now.
                    vec![SessionUpdate::ToolCall(
                        ToolCall::try_from(update).expect("describe sets a title"),
                    )]
                }
            }
            "tool_execution_update" => {
                let id = str_of("toolCallId");
                let content = result_content(frame.get("partialResult"));
                // A command in the client's terminal: the editor shows its output there.
                if content.is_empty()
                    || !self.calls.contains_key(id)
                    || self.terminals.contains_key(id)
                {
                    return Vec::new();
                }
                let content = self.with_extras(id, content);
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    ToolCallId::new(id),
                    ToolCallUpdateFields::new().content(content),
                ))]
            }
            "tool_execution_end" => {
                let id = str_of("toolCallId").to_string();
                if self.running.as_deref() == Some(id.as_str()) {
                    self.running = None;
                }
                let failed = frame.get("isError").and_then(Value::as_bool) == Some(true);
                let result = frame.get("result");
                let first_line = result
                    .and_then(|r| r.pointer("/details/firstChangedLine"))
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok());
                let content = self.with_extras(&id, result_content(result));
                let mut fields = ToolCallUpdateFields::new()
                    .status(if failed {
                        ToolCallStatus::Failed
                    } else {
                        ToolCallStatus::Completed
                    })
                    .content(content)
                    .raw_output(result.cloned());
                if let (Some(call), Some(_)) = (self.calls.get(&id), first_line) {
                    fields = fields.locations(tools::locations(
                        &call.name, &call.args, &self.cwd, first_line,
                    ));
                }
                self.calls.remove(&id);
                self.terminals.remove(&id);
                self.priors.remove(&id);
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    ToolCallId::new(id),
                    fields,
                ))]
            }
            "tasks_update" => vec![SessionUpdate::Plan(plan(frame.get("tasks")))],
            // The session's name (set by the agent's title generator, an extension or a command) is its title.
            "session_name_changed" => vec![SessionUpdate::SessionInfoUpdate(
                SessionInfoUpdate::new().title(str_of("name").to_string()),
            )],
            _ => Vec::new(),
        }
    }

    fn stream_event(&mut self, event: &Value) -> Vec<SessionUpdate> {
        let delta = || {
            event
                .get("delta")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
        };
        match event.get("type").and_then(Value::as_str).unwrap_or("") {
            "text_delta" => delta()
                .map(|d| vec![SessionUpdate::AgentMessageChunk(text_chunk(d))])
                .unwrap_or_default(),
            "thinking_delta" => delta()
                .map(|d| vec![SessionUpdate::AgentThoughtChunk(text_chunk(d))])
                .unwrap_or_default(),
            // With the lean frames the ACP runtime writes, a call's id and name arrive with `toolcall_end`; a
            // frame that carries its partial announces it while its arguments still stream.
            "toolcall_start" => {
                let index = event.get("contentIndex").and_then(Value::as_u64);
                let block = index.and_then(|i| event.pointer(&format!("/partial/content/{i}")));
                let (Some(id), Some(name)) = (
                    block.and_then(|b| b.get("id")).and_then(Value::as_str),
                    block.and_then(|b| b.get("name")).and_then(Value::as_str),
                ) else {
                    return Vec::new();
                };
                self.calls.insert(
                    id.to_string(),
                    Call {
                        name: name.to_string(),
                        args: Map::new(),
                    },
                );
                vec![SessionUpdate::ToolCall(
                    ToolCall::new(ToolCallId::new(id), name)
                        .kind(tools::kind(name))
                        .status(ToolCallStatus::Pending),
                )]
            }
            "toolcall_end" => {
                let Some(call) = event.get("toolCall") else {
                    return Vec::new();
                };
                let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                let name = call.get("name").and_then(Value::as_str).unwrap_or("");
                if id.is_empty() {
                    return Vec::new();
                }
                let known = self.calls.contains_key(id);
                self.calls.insert(
                    id.to_string(),
                    Call {
                        name: name.to_string(),
                        args: object(call.get("arguments")),
                    },
                );
                let update = self.describe(id, ToolCallStatus::Pending);
                if known {
                    vec![SessionUpdate::ToolCallUpdate(update)]
                } else {
                    vec![SessionUpdate::ToolCall(
                        ToolCall::try_from(update).expect("describe sets a title"),
                    )]
                }
            }
            _ => Vec::new(),
        }
    }

    /// Everything known about a call: title, kind, status, raw input, files, and the diff of an edit.
    fn describe(&self, id: &str, status: ToolCallStatus) -> ToolCallUpdate {
        let call = &self.calls[id];
        let mut fields = ToolCallUpdateFields::new()
            .title(tools::title(&call.name, &call.args))
            .kind(tools::kind(&call.name))
            .status(status)
            .raw_input(Value::Object(call.args.clone()))
            .locations(tools::locations(&call.name, &call.args, &self.cwd, None));
        let extras = self.with_extras(id, Vec::new());
        if !extras.is_empty() {
            fields = fields.content(extras);
        }
        ToolCallUpdate::new(ToolCallId::new(id), fields)
    }

    /// `content` replaces the call's whole content in ACP: a command's terminal and an edit's or write's diff
    /// stay in front of it.
    fn with_extras(&self, id: &str, content: Vec<ToolCallContent>) -> Vec<ToolCallContent> {
        let terminal = self
            .terminals
            .get(id)
            .map(|t| ToolCallContent::Terminal(Terminal::new(t.clone())));
        let diff = self
            .calls
            .get(id)
            .and_then(|c| tools::diff(&c.name, &c.args, &self.cwd, self.priors.get(id)));
        terminal.into_iter().chain(diff).chain(content).collect()
    }
}

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn object(v: Option<&Value>) -> Map<String, Value> {
    v.and_then(Value::as_object).cloned().unwrap_or_default()
}

pub fn text_chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// Our content blocks (`text`, `image`) as ACP content blocks; other block types are not shown.
pub fn content_blocks(blocks: &Value) -> Vec<ContentBlock> {
    match blocks {
        Value::String(s) => vec![ContentBlock::Text(TextContent::new(s.as_str()))],
        Value::Array(items) => items
            .iter()
            .filter_map(|b| match b.get("type").and_then(Value::as_str)? {
                "text" => Some(ContentBlock::Text(TextContent::new(
                    b.get("text").and_then(Value::as_str)?,
                ))),
                "image" => Some(ContentBlock::Image(ImageContent::new(
                    b.get("data").and_then(Value::as_str)?,
                    b.get("mimeType").and_then(Value::as_str)?,
                ))),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// A tool result's `content` as tool call content.
pub fn result_content(result: Option<&Value>) -> Vec<ToolCallContent> {
    result
        .and_then(|r| r.get("content"))
        .map(content_blocks)
        .unwrap_or_default()
        .into_iter()
        .map(ToolCallContent::from)
        .collect()
}

/// The task list as a plan (ACP plans are whole replacements, as `tasks_update` is).
pub fn plan(tasks: Option<&Value>) -> Plan {
    let entries = tasks
        .and_then(Value::as_array)
        .map(|tasks| {
            tasks
                .iter()
                .map(|t| {
                    let status = match t.get("status").and_then(Value::as_str) {
                        Some("completed") => PlanEntryStatus::Completed,
                        Some("in_progress") => PlanEntryStatus::InProgress,
                        _ => PlanEntryStatus::Pending,
                    };
                    let title = t.get("title").and_then(Value::as_str).unwrap_or("");
                    PlanEntry::new(title, PlanEntryPriority::Medium, status)
                })
                .collect()
        })
        .unwrap_or_default();
    Plan::new(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn updates(t: &mut Translator, frames: &[Value]) -> Vec<Value> {
        frames
            .iter()
            .flat_map(|f| t.frame(f))
            .map(|u| serde_json::to_value(u).unwrap())
            .collect()
    }

    #[test]
    fn a_streamed_edit_becomes_a_tool_call_with_its_diff() {
        let mut t = Translator::new("/w".into());
        let out = updates(
            &mut t,
            &[
                json!({"type": "message_update", "assistantMessageEvent": {"type": "thinking_delta", "contentIndex": 0, "delta": "hm"}}),
                json!({"type": "message_update", "assistantMessageEvent": {"type": "toolcall_start", "contentIndex": 0,
                    "partial": {"content": [{"type": "toolCall", "id": "c1", "name": "edit", "arguments": {}}]}}}),
                json!({"type": "message_update", "assistantMessageEvent": {"type": "toolcall_end", "contentIndex": 0,
                    "toolCall": {"type": "toolCall", "id": "c1", "name": "edit", "arguments": {"path": "a.txt", "oldText": "x", "newText": "y"}}}}),
                json!({"type": "tool_execution_start", "toolCallId": "c1", "toolName": "edit", "args": {"path": "a.txt", "oldText": "x", "newText": "y"}}),
                json!({"type": "tool_execution_end", "toolCallId": "c1", "toolName": "edit", "isError": false,
                    "result": {"content": [{"type": "text", "text": "ok"}], "details": {"firstChangedLine": 2}}}),
            ],
        );
        let kinds: Vec<_> = out.iter().map(|u| u["sessionUpdate"].clone()).collect();
        assert_eq!(
            kinds,
            [
                "agent_thought_chunk",
                "tool_call",
                "tool_call_update",
                "tool_call_update",
                "tool_call_update"
            ]
        );
        assert_eq!(out[1]["kind"], "edit");
        assert_eq!(out[2]["title"], "Edit a.txt");
        assert_eq!(out[2]["content"][0]["type"], "diff");
        assert_eq!(out[2]["content"][0]["path"], "/w/a.txt");
        assert_eq!(out[3]["status"], "in_progress");
        assert_eq!(out[4]["status"], "completed");
        assert_eq!(out[4]["content"][0]["type"], "diff");
        assert_eq!(out[4]["content"][1]["content"]["text"], "ok");
        assert_eq!(out[4]["locations"][0]["line"], 2);
    }

    #[test]
    fn a_lean_tool_call_is_announced_at_its_end() {
        let mut t = Translator::new("/w".into());
        let out = updates(
            &mut t,
            &[
                json!({"type": "message_update", "assistantMessageEvent": {"type": "toolcall_start", "contentIndex": 0}}),
                json!({"type": "message_update", "assistantMessageEvent": {"type": "toolcall_end", "contentIndex": 0,
                    "toolCall": {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "ls"}}}}),
                json!({"type": "tool_execution_start", "toolCallId": "c2", "toolName": "bash", "args": {"command": "ls"}}),
            ],
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["sessionUpdate"], "tool_call");
        assert_eq!(out[0]["title"], "ls");
        assert_eq!(out[0]["kind"], "execute");
        assert_eq!(out[0]["rawInput"], json!({"command": "ls"}));
        assert_eq!(out[1]["status"], "in_progress");
    }

    #[test]
    fn the_running_call_and_the_last_reply_are_tracked() {
        let mut t = Translator::new("/w".into());
        t.frame(&json!({"type": "tool_execution_start", "toolCallId": "b", "toolName": "bash", "args": {"command": "rm -rf x"}}));
        let call = serde_json::to_value(t.running_call().unwrap()).unwrap();
        assert_eq!(call["toolCallId"], "b");
        assert_eq!(call["title"], "rm -rf x");
        t.frame(&json!({"type": "tool_execution_end", "toolCallId": "b", "toolName": "bash", "isError": true, "result": {"content": []}}));
        assert!(t.running_call().is_none());
        t.frame(&json!({"type": "message_end", "message": {"role": "assistant", "stopReason": "length"}}));
        assert_eq!(t.last_reply().unwrap().stop_reason, "length");
    }

    #[test]
    fn a_new_session_name_is_its_title() {
        let mut t = Translator::new("/w".into());
        let out = updates(
            &mut t,
            &[json!({"type": "session_name_changed", "name": "Fix the parser"})],
        );
        assert_eq!(
            out,
            [json!({"sessionUpdate": "session_info_update", "title": "Fix the parser"})]
        );
    }

    #[test]
    fn tasks_become_a_plan() {
        let mut t = Translator::new("/w".into());
        let out = updates(
            &mut t,
            &[
                json!({"type": "tasks_update", "tasks": [{"id": "a", "title": "A", "status": "completed"}, {"id": "b", "title": "B", "status": "in_progress"}]}),
            ],
        );
        assert_eq!(out[0]["sessionUpdate"], "plan");
        assert_eq!(out[0]["entries"][0]["status"], "completed");
        assert_eq!(out[0]["entries"][1]["content"], "B");
    }
}
