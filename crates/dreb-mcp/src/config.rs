//! Which MCP servers a session starts: the `mcpServers` objects users already keep for other agents, read from
//! the global settings, the project's `.mcp.json` and the project settings (later sources win for a name), with
//! `${VAR}` / `${VAR:-default}` expansion in `command`, `args`, `env`, `cwd`, `url` and `headers`.
//!
//! Project-level servers (`.mcp.json`, project settings) start only in a trusted project: a repository must not
//! launch processes before the user trusted it (the context-trust rule extensions follow too).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Where a server's configuration came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigScope {
    /// `mcpServers` of the global settings (`~/.dreb/agent/settings.json`).
    User,
    /// `<cwd>/.mcp.json`.
    McpJson,
    /// `mcpServers` of the project settings (`<cwd>/.dreb/settings.json`).
    Project,
    /// Given by the front end's client (ACP's `session/new`): the user chose them in their editor.
    Client,
}

impl ConfigScope {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigScope::User => "user",
            ConfigScope::McpJson => "mcp.json",
            ConfigScope::Project => "project",
            ConfigScope::Client => "client",
        }
    }

    fn is_project(self) -> bool {
        matches!(self, ConfigScope::McpJson | ConfigScope::Project)
    }
}

/// How the runtime talks to a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on its stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        /// Relative paths are resolved against the session's cwd.
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub transport: Transport,
    pub scope: ConfigScope,
    /// `"disabled": true` in the configuration: listed, never started (until enabled by command).
    pub disabled: bool,
    /// Longest wait for one tool call, from the entry's `timeout` (ms); the manager's default otherwise.
    pub tool_timeout_ms: Option<u64>,
}

/// A configuration entry that was not used, and why (reported in the server list and the log).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigProblem {
    pub name: String,
    pub scope: ConfigScope,
    pub error: String,
}

/// What configuration is read from.
#[derive(Debug, Clone, Default)]
pub struct ConfigInput {
    /// `mcpServers` of the global settings.
    pub user: Option<Value>,
    /// `mcpServers` of the project settings.
    pub project: Option<Value>,
    /// Servers the front end's client gave (an `mcpServers` object); they win over the configured ones.
    pub client: Option<Value>,
    /// The project's `.mcp.json` (its whole content; servers are under `mcpServers`).
    pub mcp_json_path: Option<PathBuf>,
    /// Whether the context-trust policy grants the project (project servers start only then).
    pub project_trusted: bool,
    pub cwd: PathBuf,
}

/// The servers to start, in a stable order (by name), and the entries that could not be used. Project entries of
/// an untrusted project are skipped with a problem that says so.
pub fn load(
    input: &ConfigInput,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Vec<ServerConfig>, Vec<ConfigProblem>) {
    let mut servers: BTreeMap<String, ServerConfig> = BTreeMap::new();
    let mut problems = Vec::new();
    let mcp_json = input
        .mcp_json_path
        .as_deref()
        .and_then(|p| read_mcp_json(p, &mut problems));
    let sources = [
        (ConfigScope::User, input.user.clone()),
        (ConfigScope::McpJson, mcp_json),
        (ConfigScope::Project, input.project.clone()),
        (ConfigScope::Client, input.client.clone()),
    ];
    for (scope, value) in sources {
        let Some(value) = value else { continue };
        let Value::Object(entries) = value else {
            problems.push(ConfigProblem {
                name: String::new(),
                scope,
                error: "mcpServers must be an object of server name to configuration".into(),
            });
            continue;
        };
        for (name, entry) in entries {
            if scope.is_project() && !input.project_trusted {
                problems.push(ConfigProblem {
                    name,
                    scope,
                    error: "not started: project MCP servers start only in a trusted project (context.trustedFolders)"
                        .into(),
                });
                continue;
            }
            match parse_entry(&name, &entry, scope, &input.cwd, env) {
                Ok(config) => {
                    servers.insert(name, config);
                }
                Err(error) => problems.push(ConfigProblem { name, scope, error }),
            }
        }
    }
    (servers.into_values().collect(), problems)
}

fn read_mcp_json(path: &Path, problems: &mut Vec<ConfigProblem>) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(mut root)) => root.remove("mcpServers"),
        Ok(_) => {
            problems.push(ConfigProblem {
                name: String::new(),
                scope: ConfigScope::McpJson,
                error: format!("{}: expected a JSON object", path.display()),
            });
            None
        }
        Err(e) => {
            problems.push(ConfigProblem {
                name: String::new(),
                scope: ConfigScope::McpJson,
                error: format!("{}: {e}", path.display()),
            });
            None
        }
    }
}

/// A server name must fit the tool names the model sees (`mcp__<server>__<tool>`).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn parse_entry(
    name: &str,
    entry: &Value,
    scope: ConfigScope,
    cwd: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, String> {
    if !valid_name(name) {
        return Err(format!(
            "invalid server name {name:?}: use letters, digits, '-' and '_' (no \"__\")"
        ));
    }
    let Value::Object(obj) = entry else {
        return Err("expected an object".into());
    };
    let expand = |s: &str| expand_vars(s, env);
    let kind = obj.get("type").and_then(Value::as_str);
    let transport = match (kind, obj.get("url"), obj.get("command")) {
        (Some("http") | Some("streamable-http") | Some("streamableHttp"), Some(url), _)
        | (None, Some(url), None) => {
            let url = url.as_str().ok_or("url must be a string")?;
            Transport::Http {
                url: expand(url)?,
                headers: string_map(obj.get("headers"), "headers", &expand)?,
            }
        }
        (Some("sse"), _, _) => {
            return Err("the legacy SSE transport is not supported: use Streamable HTTP (\"type\": \"http\")".into());
        }
        (Some("stdio") | None, _, Some(command)) => {
            let command = command.as_str().ok_or("command must be a string")?;
            let args = match obj.get("args") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|a| {
                        a.as_str()
                            .ok_or("args must be strings")
                            .map_err(String::from)
                            .and_then(&expand)
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err("args must be an array of strings".into()),
            };
            let cwd_value = match obj.get("cwd") {
                None | Some(Value::Null) => None,
                Some(Value::String(dir)) => Some(cwd.join(expand(dir)?)),
                Some(_) => return Err("cwd must be a string".into()),
            };
            Transport::Stdio {
                command: expand(command)?,
                args,
                env: string_map(obj.get("env"), "env", &expand)?,
                cwd: cwd_value,
            }
        }
        (Some(other), _, _) if !matches!(other, "stdio" | "http") => {
            return Err(format!(
                "unknown transport type {other:?} (expected \"stdio\" or \"http\")"
            ));
        }
        (Some("http"), None, _) => return Err("an http server needs a url".into()),
        _ => return Err("a server needs a command (stdio) or a url (http)".into()),
    };
    let disabled = obj
        .get("disabled")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let tool_timeout_ms = match obj.get("timeout") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or("timeout must be a whole number of milliseconds")?,
        ),
    };
    Ok(ServerConfig {
        name: name.to_string(),
        transport,
        scope,
        disabled,
        tool_timeout_ms,
    })
}

fn string_map(
    value: Option<&Value>,
    what: &str,
    expand: &dyn Fn(&str) -> Result<String, String>,
) -> Result<BTreeMap<String, String>, String> {
    match value {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map_strings(map, what, expand),
        Some(_) => Err(format!("{what} must be an object of strings")),
    }
}

fn map_strings(
    map: &Map<String, Value>,
    what: &str,
    expand: &dyn Fn(&str) -> Result<String, String>,
) -> Result<BTreeMap<String, String>, String> {
    map.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), expand(s)?)),
            _ => Err(format!("{what}.{k} must be a string")),
        })
        .collect()
}

/// `${VAR}` and `${VAR:-default}` from `env`; an unset variable without a default is an error (a server
/// started with an empty token fails later, and less clearly). `$$` is not special; a lone `$` stays.
pub fn expand_vars(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unterminated ${{ in {text:?}"));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        if var.is_empty() || !var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("invalid variable name {var:?} in {text:?}"));
        }
        match (env(var), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(format!("environment variable {var} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("secret".into()),
            "HOME" => Some("/home/u".into()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_with_defaults_and_unset_ones_are_errors() {
        assert_eq!(
            expand_vars("Bearer ${TOKEN}", &env).unwrap(),
            "Bearer secret"
        );
        assert_eq!(
            expand_vars("${MISSING:-x}/${HOME}", &env).unwrap(),
            "x//home/u"
        );
        assert_eq!(expand_vars("a $ b", &env).unwrap(), "a $ b");
        assert_eq!(
            expand_vars("${MISSING}", &env).unwrap_err(),
            "environment variable MISSING is not set"
        );
        assert!(expand_vars("${TOKEN", &env).is_err());
        assert!(expand_vars("${A-B}", &env).is_err());
    }

    #[test]
    fn stdio_and_http_entries_parse_and_later_sources_win() {
        let dir = tempfile::tempdir().unwrap();
        let mcp_json = dir.path().join(".mcp.json");
        std::fs::write(
            &mcp_json,
            json!({"mcpServers": {"web": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}, "fs": {"command": "from-json"}}}).to_string(),
        )
        .unwrap();
        let input = ConfigInput {
            user: Some(
                json!({"fs": {"command": "npx", "args": ["-y", "srv", "${HOME}"], "env": {"K": "${TOKEN}"}, "cwd": "sub", "timeout": 5000}}),
            ),
            project: Some(json!({"fs": {"command": "from-project", "disabled": true}})),
            mcp_json_path: Some(mcp_json),
            project_trusted: true,
            cwd: dir.path().to_path_buf(),
            client: None,
        };
        let (servers, problems) = load(&input, &env);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(servers.len(), 2);
        let fs = &servers[0];
        assert_eq!(fs.name, "fs");
        assert_eq!(fs.scope, ConfigScope::Project);
        assert!(fs.disabled);
        assert!(
            matches!(&fs.transport, Transport::Stdio { command, .. } if command == "from-project")
        );
        let web = &servers[1];
        assert_eq!(
            web.transport,
            Transport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: [("Authorization".to_string(), "Bearer secret".to_string())].into()
            }
        );

        let user_only = ConfigInput {
            project: None,
            mcp_json_path: None,
            ..input.clone()
        };
        let (servers, _) = load(&user_only, &env);
        assert_eq!(
            servers[0].transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "srv".into(), "/home/u".into()],
                env: [("K".to_string(), "secret".to_string())].into(),
                cwd: Some(dir.path().join("sub")),
            }
        );
        assert_eq!(servers[0].tool_timeout_ms, Some(5000));
    }

    #[test]
    fn project_servers_of_an_untrusted_project_are_skipped_with_a_reason() {
        let input = ConfigInput {
            user: Some(json!({"a": {"command": "x"}})),
            project: Some(json!({"b": {"command": "y"}})),
            // A client's servers start in any project and win over a configured one of the same name.
            client: Some(json!({"a": {"command": "from-client"}, "c": {"command": "z"}})),
            project_trusted: false,
            ..Default::default()
        };
        let (servers, problems) = load(&input, &env);
        assert_eq!(
            servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
            ["a", "c"]
        );
        assert_eq!(servers[0].scope, ConfigScope::Client);
        assert!(
            matches!(&servers[0].transport, Transport::Stdio { command, .. } if command == "from-client")
        );
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].name, "b");
        assert!(problems[0].error.contains("trusted project"));
    }

    #[test]
    fn bad_entries_are_reported_and_the_rest_load() {
        let input = ConfigInput {
            user: Some(json!({
                "ok": {"command": "x"},
                "bad__name": {"command": "x"},
                "nothing": {},
                "legacy": {"type": "sse", "url": "http://127.0.0.1/sse"},
                "unset": {"command": "x", "env": {"T": "${NOPE}"}},
                "args": {"command": "x", "args": "no"}
            })),
            ..Default::default()
        };
        let (servers, problems) = load(&input, &env);
        assert_eq!(servers.len(), 1);
        let mut names: Vec<_> = problems.iter().map(|p| p.name.as_str()).collect();
        names.sort();
        assert_eq!(names, ["args", "bad__name", "legacy", "nothing", "unset"]);
    }
}
