//! The tool set: the tool names the session was started with (`--tools` or the default set), the tools it built
//! itself, the active set an extension chose (`set_active_tools`), and `--tools`' filter of the MCP tools. The
//! agent gets the composed set (built-in, extensions', MCP) from `crate::extensions::apply_tools`.

use std::sync::{Arc, Mutex};

use dreb_agent::Tool;

use crate::sync::lock;

pub(crate) struct ToolSet {
    names: Vec<String>,
    builtin: Mutex<Vec<Arc<dyn Tool>>>,
    active: Mutex<Option<Vec<String>>>,
    mcp_filter: Option<Vec<String>>,
}

impl ToolSet {
    /// `names`: the built-in tools requested, in order; `requested`: `--tools` as given (its `mcp__` entries
    /// filter the MCP tools; without `--tools` every MCP tool is offered).
    pub(crate) fn new(names: Vec<String>, requested: Option<&[String]>) -> Self {
        ToolSet {
            names,
            builtin: Mutex::new(Vec::new()),
            active: Mutex::new(None),
            mcp_filter: requested.map(|list| {
                list.iter()
                    .filter(|t| t.starts_with("mcp__"))
                    .cloned()
                    .collect()
            }),
        }
    }

    /// The built-in tool names, in request order.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// The tools the session builds itself, in request order.
    pub(crate) fn builtin(&self) -> Vec<Arc<dyn Tool>> {
        lock(&self.builtin).clone()
    }

    pub(crate) fn set_builtin(&self, tools: Vec<Arc<dyn Tool>>) {
        *lock(&self.builtin) = tools;
    }

    /// `set_active_tools`: only these (by name) from the next run.
    pub(crate) fn set_active(&self, names: Vec<String>) {
        *lock(&self.active) = Some(names);
    }

    /// Keep only the tools of the active set, if an extension chose one.
    pub(crate) fn retain_active(&self, tools: &mut Vec<Arc<dyn Tool>>) {
        if let Some(active) = lock(&self.active).as_ref() {
            tools.retain(|t| active.iter().any(|name| name == t.name()));
        }
    }

    /// Whether the MCP tool `name` is offered: all of them, or with `--tools` those it names
    /// (`mcp__<server>__<tool>`, or `mcp__<server>__*` for all of a server's).
    pub(crate) fn offers_mcp_tool(&self, name: &str) -> bool {
        self.mcp_filter.as_deref().is_none_or(|list| {
            list.iter().any(|f| match f.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => f == name,
            })
        })
    }
}
