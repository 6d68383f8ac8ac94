//! A session tool built on first use. Start-up registers the session's own tools by name; their definitions (JSON
//! schemas, the subagent tool's list of agent types read from disk) are built when a run or a listing first needs
//! them, not before the first response (building them was a quarter of start-up's instructions).

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

type Build = Box<dyn Fn() -> Arc<dyn Tool> + Send + Sync>;

pub(crate) struct LazyTool {
    name: String,
    build: Build,
    tool: OnceLock<Arc<dyn Tool>>,
}

impl LazyTool {
    /// `build` must make the tool named `name`; it runs once, on the first call that needs the tool.
    pub(crate) fn new(
        name: impl Into<String>,
        build: impl Fn() -> Arc<dyn Tool> + Send + Sync + 'static,
    ) -> Self {
        LazyTool {
            name: name.into(),
            build: Box::new(build),
            tool: OnceLock::new(),
        }
    }

    fn tool(&self) -> &Arc<dyn Tool> {
        self.tool.get_or_init(|| {
            let tool = (self.build)();
            debug_assert_eq!(tool.definition().name, self.name);
            tool
        })
    }
}

#[async_trait]
impl Tool for LazyTool {
    fn definition(&self) -> &ToolDefinition {
        self.tool().definition()
    }

    fn name(&self) -> &str {
        &self.name
    }

    async fn execute(
        &self,
        tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        self.tool()
            .execute(tool_call_id, params, cancel, on_update)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn builds_once_when_first_needed_and_answers_as_the_tool_does() {
        let built = Arc::new(AtomicUsize::new(0));
        let counter = built.clone();
        let ctx = dreb_tools::ToolContext::new(std::env::temp_dir());
        let lazy = LazyTool::new("tasks_update", move || {
            counter.fetch_add(1, Ordering::SeqCst);
            dreb_tools::create_tool("tasks_update", &ctx).unwrap()
        });
        assert_eq!(lazy.name(), "tasks_update");
        assert_eq!(built.load(Ordering::SeqCst), 0, "the name needs no build");

        let eager = dreb_tools::create_tool(
            "tasks_update",
            &dreb_tools::ToolContext::new(std::env::temp_dir()),
        )
        .unwrap();
        assert_eq!(lazy.definition(), eager.definition());
        let params = serde_json::json!({"tasks": [{"title": "a", "status": "pending"}]});
        let mut outputs = Vec::new();
        for tool in [&lazy as &dyn Tool, eager.as_ref()] {
            let out = tool
                .execute(
                    "c",
                    params.clone(),
                    CancellationToken::new(),
                    Arc::new(|_| {}),
                )
                .await
                .map(|out| serde_json::to_value(&out.content).unwrap())
                .map_err(|e| e.message);
            outputs.push(out);
        }
        assert_eq!(outputs[0], outputs[1]);
        assert_eq!(built.load(Ordering::SeqCst), 1, "built once");
    }
}
