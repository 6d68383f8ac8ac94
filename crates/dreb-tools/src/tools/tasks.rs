//! `tasks_update`: the model's session task list (full replacement each call, at most 20 tasks, at most one
//! in progress). Each accepted list is handed to a sink the runtime turns into the `tasks_update` event.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{definition, parse_params, text_output};

/// Most tasks a list may hold.
pub const MAX_TASKS: usize = 20;

/// One task, as in the `tasks_update` event.
pub use dreb_types::{RpcSessionTask as SessionTask, TaskStatus};

/// Receives every accepted task list (becomes `{"type":"tasks_update","tasks":[...]}`).
pub type TasksSink = Arc<dyn Fn(&[SessionTask]) + Send + Sync>;

#[derive(Deserialize)]
struct TasksParams {
    tasks: Vec<SessionTask>,
}

pub struct TasksUpdateTool {
    current: Arc<Mutex<Vec<SessionTask>>>,
    sink: TasksSink,
    def: ToolDefinition,
}

pub fn tasks_update_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "tasks": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "Stable identifier (e.g. \"1\", \"setup\", \"fix-auth\")"},
                        "title": {"type": "string", "description": "Brief action-oriented title"},
                        "status": {
                            "anyOf": [
                                {"const": "pending", "type": "string"},
                                {"const": "in_progress", "type": "string"},
                                {"const": "completed", "type": "string"}
                            ],
                            "description": "Task status: pending, in_progress, or completed"
                        }
                    },
                    "required": ["id", "title", "status"]
                },
                "description": "Complete current task list. This is a full replacement — send ALL tasks each time, not just changes."
            }
        },
        "required": ["tasks"]
    })
}

impl TasksUpdateTool {
    pub fn new(sink: TasksSink) -> Self {
        TasksUpdateTool {
            current: Arc::new(Mutex::new(Vec::new())),
            sink,
            def: definition(
                "tasks_update",
                "Create or update the session task list. Send the complete current task list each time — this is a full replacement, not a patch. Use this to track progress on multi-step work.",
                tasks_update_schema(),
            ),
        }
    }

    /// The last accepted list (in memory only, as in the reference).
    pub fn tasks(&self) -> Vec<SessionTask> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[async_trait]
impl Tool for TasksUpdateTool {
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
        let p: TasksParams = parse_params("tasks_update", params)?;
        let tasks = p.tasks;
        // Violations are reported as ordinary (non-error) results, like the reference.
        if tasks.len() > MAX_TASKS {
            return Ok(text_output(
                format!(
                    "Error: Task list too long ({} tasks). Maximum is 20. Break work into higher-level steps.",
                    tasks.len()
                ),
                None,
            ));
        }
        let in_progress: Vec<&SessionTask> = tasks
            .iter()
            .filter(|t| t.status == TaskStatus::InProgress)
            .collect();
        if in_progress.len() > 1 {
            let ids: Vec<&str> = in_progress.iter().map(|t| t.id.as_str()).collect();
            return Ok(text_output(
                format!(
                    "Error: At most one task can be in_progress at a time. Found {}: {}",
                    in_progress.len(),
                    ids.join(", ")
                ),
                None,
            ));
        }
        let completed = tasks
            .iter()
            .filter(|t| t.status == TaskStatus::Completed)
            .count();
        let current_title = in_progress.first().map(|t| t.title.clone());
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = tasks.clone();
        (self.sink)(&tasks);
        let mut text = format!(
            "Tasks updated: {} total, {completed} completed",
            tasks.len()
        );
        let mut details = json!({"taskCount": tasks.len(), "completed": completed});
        if let Some(title) = current_title {
            text.push_str(&format!(", in progress: {title}"));
            details["inProgress"] = json!(title);
        }
        Ok(text_output(text, Some(details)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_util::{noop_update, text_of};

    fn task(id: &str, status: &str) -> Value {
        json!({"id": id, "title": format!("Task {id}"), "status": status})
    }

    #[tokio::test]
    async fn reports_and_emits() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let tool = TasksUpdateTool::new(Arc::new(move |t: &[SessionTask]| {
            s.lock().unwrap().push(t.to_vec())
        }));
        let params = json!({"tasks": [task("1", "completed"), task("2", "in_progress"), task("3", "pending")]});
        let out = tool
            .execute("c", params, CancellationToken::new(), noop_update())
            .await
            .unwrap();
        assert_eq!(
            text_of(&out),
            "Tasks updated: 3 total, 1 completed, in progress: Task 2"
        );
        assert_eq!(
            out.details.unwrap(),
            json!({"taskCount": 3, "completed": 1, "inProgress": "Task 2"})
        );
        let emitted = seen.lock().unwrap();
        assert_eq!(emitted.len(), 1);
        assert_eq!(
            serde_json::to_value(&emitted[0]).unwrap(),
            json!([
                task("1", "completed"),
                task("2", "in_progress"),
                task("3", "pending")
            ])
        );
        assert_eq!(tool.tasks().len(), 3);
    }

    #[tokio::test]
    async fn rejects_violations_without_emitting() {
        let seen = Arc::new(Mutex::new(0));
        let s = seen.clone();
        let tool = TasksUpdateTool::new(Arc::new(move |_: &[SessionTask]| *s.lock().unwrap() += 1));
        let many: Vec<Value> = (0..21).map(|i| task(&i.to_string(), "pending")).collect();
        let out = tool
            .execute(
                "c",
                json!({"tasks": many}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap();
        assert_eq!(
            text_of(&out),
            "Error: Task list too long (21 tasks). Maximum is 20. Break work into higher-level steps."
        );
        let two = json!({"tasks": [task("a", "in_progress"), task("b", "in_progress")]});
        let out = tool
            .execute("c", two, CancellationToken::new(), noop_update())
            .await
            .unwrap();
        assert_eq!(
            text_of(&out),
            "Error: At most one task can be in_progress at a time. Found 2: a, b"
        );
        assert!(out.details.is_none());
        assert_eq!(*seen.lock().unwrap(), 0);
        let none = tool
            .execute(
                "c",
                json!({"tasks": []}),
                CancellationToken::new(),
                noop_update(),
            )
            .await
            .unwrap();
        assert_eq!(text_of(&none), "Tasks updated: 0 total, 0 completed");
    }
}
