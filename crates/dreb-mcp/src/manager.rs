//! Every MCP server of a session: started in parallel in the background (the first response never waits), their
//! tools for the agent, their prompts for `get_commands` and `prompt`, their status, reconnect / disable, stop.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::config::{ConfigProblem, ServerConfig, Transport};
use crate::env::McpEnv;
use crate::server::{McpServer, ServerPrompt, ServerState, lock};
use crate::tool::{McpTool, tool_name};

/// One server's line in `get_resources`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    pub name: String,
    pub state: ServerState,
    pub transport: &'static str,
    pub scope: &'static str,
    pub tool_count: usize,
    pub prompt_count: usize,
}

/// A server prompt offered as a slash command.
#[derive(Debug, Clone)]
pub struct PromptCommand {
    /// `mcp__<server>__<prompt>`.
    pub command: String,
    pub server: String,
    pub prompt: ServerPrompt,
}

/// Why a reconnect / enable / disable could not be done.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManageError {
    #[error("MCP server not found: {0}")]
    NotFound(String),
}

pub struct McpManager {
    env: Arc<McpEnv>,
    /// `true` once [`McpManager::start`] took the configuration (what waits for servers waits for this first).
    configured: tokio::sync::watch::Sender<bool>,
    servers: Mutex<Vec<Arc<McpServer>>>,
    problems: Mutex<Vec<ConfigProblem>>,
}

impl McpManager {
    pub fn new(env: McpEnv) -> Self {
        McpManager {
            env: Arc::new(env),
            configured: tokio::sync::watch::Sender::new(false),
            servers: Mutex::new(Vec::new()),
            problems: Mutex::new(Vec::new()),
        }
    }

    /// Take `configs` (servers that are not disabled start at once, each on its own task).
    pub fn start(&self, configs: Vec<ServerConfig>, problems: Vec<ConfigProblem>) {
        for p in &problems {
            tracing::warn!(
                "MCP configuration ({}) {}: {}",
                p.scope.as_str(),
                p.name,
                p.error
            );
        }
        *lock(&self.problems) = problems;
        let servers: Vec<Arc<McpServer>> = configs
            .into_iter()
            .map(|c| McpServer::new(c, self.env.clone()))
            .collect();
        for s in &servers {
            if !s.is_disabled() {
                let s = s.clone();
                tokio::spawn(async move { s.connect().await });
            }
        }
        *lock(&self.servers) = servers;
        self.configured.send_replace(true);
    }

    /// Wait until the configuration was taken (see [`McpManager::start`]).
    pub async fn configured(&self) {
        let _ = self.configured.subscribe().wait_for(|c| *c).await;
    }

    pub fn is_empty(&self) -> bool {
        lock(&self.servers).is_empty()
    }

    fn servers(&self) -> Vec<Arc<McpServer>> {
        lock(&self.servers).clone()
    }

    /// Wait until every server finished its connection attempt, at most `bound`. Whether all did.
    pub async fn ready(&self, bound: Duration) -> bool {
        let all = async {
            self.configured().await;
            let servers = self.servers();
            futures::future::join_all(servers.iter().map(|s| s.settled())).await;
        };
        tokio::time::timeout(bound, all).await.is_ok()
    }

    /// The agent tools of the ready servers, in server order.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        let mut out = Vec::new();
        for s in self.servers() {
            if s.state() != ServerState::Ready {
                continue;
            }
            for t in s.tools() {
                out.push(Arc::new(McpTool::new(s.clone(), &t)));
            }
        }
        out
    }

    /// The prompts of the ready servers, as slash commands.
    pub fn prompt_commands(&self) -> Vec<PromptCommand> {
        let mut out = Vec::new();
        for s in self.servers() {
            if s.state() != ServerState::Ready {
                continue;
            }
            for p in s.prompts() {
                out.push(PromptCommand {
                    command: tool_name(s.name(), &p.name),
                    server: s.name().to_string(),
                    prompt: p,
                });
            }
        }
        out
    }

    /// Expand `/<command> <args>` when it names a server prompt: the prompt's text, or the error to show.
    /// `None`: not an MCP prompt.
    pub async fn expand_prompt(&self, command: &str, args: &str) -> Option<Result<String, String>> {
        if !command.starts_with("mcp__") {
            return None;
        }
        let found = self
            .prompt_commands()
            .into_iter()
            .find(|p| p.command == command)?;
        let server = self.find(&found.server)?;
        let arguments = match prompt_arguments(&found.prompt, args) {
            Ok(a) => a,
            Err(e) => return Some(Err(e)),
        };
        Some(server.get_prompt(&found.prompt.name, arguments).await)
    }

    /// The server named `name`.
    pub fn server(&self, name: &str) -> Option<Arc<McpServer>> {
        self.find(name)
    }

    fn find(&self, name: &str) -> Option<Arc<McpServer>> {
        self.servers().into_iter().find(|s| s.name() == name)
    }

    pub fn statuses(&self) -> Vec<ServerStatus> {
        self.servers()
            .iter()
            .map(|s| {
                let state = s.state();
                let ready = state == ServerState::Ready;
                ServerStatus {
                    name: s.name().to_string(),
                    transport: match s.config().transport {
                        Transport::Stdio { .. } => "stdio",
                        Transport::Http { .. } => "http",
                    },
                    scope: s.config().scope.as_str(),
                    tool_count: if ready { s.tools().len() } else { 0 },
                    prompt_count: if ready { s.prompts().len() } else { 0 },
                    state,
                }
            })
            .collect()
    }

    pub fn problems(&self) -> Vec<ConfigProblem> {
        lock(&self.problems).clone()
    }

    /// Reconnect `name` now (also a failed one inside its back-off); its new status.
    pub async fn reconnect(&self, name: &str) -> Result<ServerStatus, ManageError> {
        let server = self
            .find(name)
            .ok_or_else(|| ManageError::NotFound(name.to_string()))?;
        if server.is_disabled() {
            server.set_enabled(true).await;
        } else {
            server.connect().await;
        }
        Ok(self.status_of(name))
    }

    pub async fn set_enabled(
        &self,
        name: &str,
        enabled: bool,
    ) -> Result<ServerStatus, ManageError> {
        let server = self
            .find(name)
            .ok_or_else(|| ManageError::NotFound(name.to_string()))?;
        if enabled == server.is_disabled() {
            server.set_enabled(enabled).await;
        }
        Ok(self.status_of(name))
    }

    fn status_of(&self, name: &str) -> ServerStatus {
        self.statuses()
            .into_iter()
            .find(|s| s.name == name)
            .expect("a listed server has a status")
    }

    /// Stop every server (their process groups included).
    pub async fn shutdown(&self) {
        self.configured.send_replace(false);
        let servers = std::mem::take(&mut *lock(&self.servers));
        futures::future::join_all(servers.iter().map(|s| s.shutdown())).await;
    }
}

/// A prompt's arguments from a command line: `key=value` words by name, other words in the declared order; the
/// last declared argument takes the rest of the line. Quotes group words.
fn prompt_arguments(prompt: &ServerPrompt, args: &str) -> Result<Map<String, Value>, String> {
    let words = split_words(args);
    let mut out = Map::new();
    let mut positional = Vec::new();
    for w in words {
        match w.split_once('=') {
            Some((k, v)) if prompt.arguments.iter().any(|(n, _)| n == k) => {
                out.insert(k.to_string(), Value::String(v.to_string()));
            }
            _ => positional.push(w),
        }
    }
    let free: Vec<&String> = prompt
        .arguments
        .iter()
        .map(|(n, _)| n)
        .filter(|n| !out.contains_key(n.as_str()))
        .collect();
    let mut positional = positional.into_iter();
    for (i, name) in free.iter().enumerate() {
        let value = if i + 1 == free.len() {
            let rest: Vec<String> = positional.by_ref().collect();
            (!rest.is_empty()).then(|| rest.join(" "))
        } else {
            positional.next()
        };
        if let Some(v) = value {
            out.insert((*name).clone(), Value::String(v));
        }
    }
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .filter(|(n, required)| *required && !out.contains_key(n))
        .map(|(n, _)| n.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "MCP prompt {} needs: {}",
            prompt.name,
            missing.join(", ")
        ));
    }
    Ok(out)
}

fn split_words(s: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut has = false;
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                has = true;
            }
            (None, c) if c.is_whitespace() => {
                if has || !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                    has = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if has || !cur.is_empty() {
        words.push(cur);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prompt(args: &[(&str, bool)]) -> ServerPrompt {
        ServerPrompt {
            name: "p".into(),
            description: None,
            arguments: args.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
        }
    }

    #[test]
    fn arguments_by_name_by_position_and_the_rest_of_the_line() {
        let p = prompt(&[("city", true), ("state", false)]);
        assert_eq!(
            Value::Object(prompt_arguments(&p, "Paris").unwrap()),
            json!({"city": "Paris"})
        );
        assert_eq!(
            Value::Object(prompt_arguments(&p, "\"New York\" NY state").unwrap()),
            json!({"city": "New York", "state": "NY state"})
        );
        assert_eq!(
            Value::Object(prompt_arguments(&p, "state=TX Austin").unwrap()),
            json!({"city": "Austin", "state": "TX"})
        );
        assert_eq!(
            prompt_arguments(&p, "").unwrap_err(),
            "MCP prompt p needs: city"
        );
        assert!(
            prompt_arguments(&prompt(&[]), "ignored words")
                .unwrap()
                .is_empty()
        );
    }
}
