//! `suggest_next` (register a command for the user to run next; ends the turn) and `wait` (do nothing; ends the
//! turn).

use std::sync::Arc;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{definition, parse_params, text_block};

/// Receives each suggested command (becomes `{"type":"suggest_next","command":...}`).
pub type SuggestSink = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Deserialize)]
struct SuggestParams {
    command: Option<String>,
    summary: Option<String>,
}

pub struct SuggestNextTool {
    sink: SuggestSink,
    def: ToolDefinition,
}

pub fn suggest_next_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The suggested command for the user to run next (e.g. /skill:mach6-push, /compact, npm run build)"},
            "summary": {"type": "string", "description": "Brief markdown summary of the work done this turn. Displayed to the user as the final message before the suggestion."}
        },
        "required": ["command"]
    })
}

impl SuggestNextTool {
    pub fn new(sink: SuggestSink) -> Self {
        SuggestNextTool {
            sink,
            def: definition(
                "suggest_next",
                "Suggest a command for the user to run next. Shows as ghost text in the prompt that the user can Tab-accept.",
                suggest_next_schema(),
            ),
        }
    }
}

fn end_turn(text: String, details: Option<Value>) -> ToolOutput {
    ToolOutput {
        content: vec![text_block(text)],
        details,
        end_turn: true,
    }
}

#[async_trait]
impl Tool for SuggestNextTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        _cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let p: SuggestParams = parse_params("suggest_next", params)?;
        let command: String = p
            .command
            .unwrap_or_default()
            .chars()
            .filter(|c| !c.is_control() || *c > '\u{7f}')
            .collect();
        let command = command.trim().to_string();
        if command.is_empty() {
            return Ok(end_turn("Error: command is empty".into(), None));
        }
        (self.sink)(&command);
        let summary = p
            .summary
            .map(|s| {
                let s = s.replace("\\n", "\n");
                let s: String = s
                    .chars()
                    .filter(|&c| c == '\n' || !(c <= '\u{1f}' || c == '\u{7f}'))
                    .collect();
                s.trim().to_string()
            })
            .filter(|s| !s.is_empty());
        let mut details = json!({"suggestion": command});
        if let Some(s) = summary {
            details["summary"] = json!(s);
        }
        Ok(end_turn(
            format!("Suggestion registered: {command}"),
            Some(details),
        ))
    }
}

#[derive(Deserialize)]
struct WaitParams {
    reason: Option<String>,
}

pub struct WaitTool {
    def: ToolDefinition,
}

pub fn wait_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "Optional reason for waiting (e.g. 'background subagent still running')"}
        }
    })
}

impl Default for WaitTool {
    fn default() -> Self {
        WaitTool {
            def: definition(
                "wait",
                "Do nothing and end your turn. Use this only when explicitly told to wait or when background subagents are running and you have no other work. It does not wait for GitHub CI; use watch_github_ci for that.",
                wait_schema(),
            ),
        }
    }
}

#[async_trait]
impl Tool for WaitTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        _cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let p: WaitParams = parse_params("wait", params)?;
        let reason = p
            .reason
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty());
        let text = match &reason {
            Some(r) => format!("Waiting: {r}"),
            None => "Waiting…".to_string(),
        };
        let mut details = json!({"runningAgents": []});
        if let Some(r) = reason {
            details["reason"] = json!(r);
        }
        Ok(end_turn(text, Some(details)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_util::{noop_update, text_of};
    use std::sync::Mutex;

    #[tokio::test]
    async fn suggest_registers_and_ends_turn() {
        let seen = Arc::new(Mutex::new(Vec::<String>::new()));
        let s = seen.clone();
        let tool = SuggestNextTool::new(Arc::new(move |c: &str| {
            s.lock().unwrap().push(c.to_string())
        }));
        let out = tool
            .execute(
                "c",
                json!({"command": " npm test\u{7} ", "summary": "Did it.\\nAll good\u{1}"}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap();
        assert!(out.end_turn);
        assert_eq!(text_of(&out), "Suggestion registered: npm test");
        assert_eq!(
            out.details.unwrap(),
            json!({"suggestion": "npm test", "summary": "Did it.\nAll good"})
        );
        assert_eq!(*seen.lock().unwrap(), vec!["npm test".to_string()]);
        let empty = tool
            .execute(
                "c",
                json!({"command": "\u{1} "}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap();
        assert_eq!(text_of(&empty), "Error: command is empty");
        assert!(empty.end_turn);
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn wait_ends_turn() {
        let tool = WaitTool::default();
        let out = tool
            .execute("c", json!({}), CancellationToken::new(), noop_update())
            .await
            .unwrap();
        assert_eq!(text_of(&out), "Waiting…");
        assert!(out.end_turn);
        let out = tool
            .execute(
                "c",
                json!({"reason": " ci "}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap();
        assert_eq!(text_of(&out), "Waiting: ci");
    }
}
