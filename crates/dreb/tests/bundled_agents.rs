//! The bundled agent types through the binary: the eleven reference names are offered to the model in the
//! subagent tool, `agentModels` settings that name them route their children, and a definition's tool list is
//! what its child gets (`Sandbox` reads only /tmp).

mod common;

use common::{Env, tool_names};
use serde_json::{Value, json};

const REFERENCE_AGENTS: [&str; 11] = [
    "code-reviewer",
    "completeness-checker",
    "developers-advocate",
    "devils-advocate",
    "error-auditor",
    "Explore",
    "feature-dev",
    "independent-assessor",
    "Sandbox",
    "simplifier",
    "test-reviewer",
];

/// The parent's first request (prompt containing `trigger`) calls the subagent tool with `args`; children answer
/// their task text (the reference mock's rules).
fn delegating(trigger: &str, args: Value) -> Env {
    Env::with_scenario(
        serde_json::from_value(json!({
            "turns": [{
                "when": {"lastUserContains": trigger, "afterToolResult": false},
                "toolCalls": [{"name": "subagent", "arguments": args}]
            }]
        }))
        .unwrap(),
    )
}

/// The description of `name` among a recorded request's tools (OpenAI wire).
fn tool_description(body: &Value, name: &str) -> String {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == name)
        .and_then(|t| t["function"]["description"].as_str())
        .unwrap_or_else(|| panic!("no {name} tool"))
        .to_string()
}

/// The body of the first LLM request that carries `task` (the child's).
fn child_request(env: &Env, task: &str) -> Value {
    env.mock
        .requests()
        .into_iter()
        .find(|r| r.body.to_string().contains(task))
        .unwrap()
        .body
}

/// Frames until the child's `background_agent_end`.
fn until_child_ends(dreb: &mut common::Dreb) -> Vec<Value> {
    dreb.read_until(|f| f["type"] == "background_agent_end")
}

#[test]
fn the_subagent_tool_offers_the_eleven_reference_agent_types() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "Reply with just: hi"}));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    let requests = env.mock.requests();
    let description = tool_description(&requests[0].body, "subagent");
    // `'<name>'[ (default)]: <description>`, separated by `; `.
    let agents = description.split_once("Agents: ").unwrap().1;
    let listed: Vec<&str> = agents
        .split("; '")
        .map(|entry| entry.trim_start_matches('\'').split('\'').next().unwrap())
        .collect();
    assert_eq!(listed, REFERENCE_AGENTS, "{description}");
    assert!(description.contains("'Explore' (default): Read-only evidence gathering"));
}

#[test]
fn agent_models_settings_route_a_bundled_agent_type() {
    let env = delegating(
        "Implement",
        json!({"task": "Reply with just: implemented", "agent": "feature-dev"}),
    );
    env.write_settings(
        &json!({"agentModels": {"models": {"feature-dev": ["mock-anthropic/mock-claude"]}}}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Implement it"}));
    let frames = until_child_ends(&mut dreb);
    let end = frames.last().unwrap();
    assert_eq!(end["agentType"], "feature-dev");
    assert_eq!(end["success"], true, "{end}");
    assert_eq!(end["model"], "mock-anthropic/mock-claude");
    // The child ran with feature-dev's tools, which include the editing ones.
    let child = child_request(&env, "Reply with just: implemented");
    let tools = tool_names(&child);
    for t in ["read", "write", "edit", "bash"] {
        assert!(tools.iter().any(|x| x == t), "{t} in {tools:?}");
    }
    assert!(!tools.iter().any(|x| x == "subagent"), "{tools:?}");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_sandbox_child_gets_only_tmp_read_and_the_always_active_tools() {
    let env = delegating(
        "Analyse",
        json!({"task": "Reply with just: sandboxed", "agent": "Sandbox"}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Analyse it"}));
    let frames = until_child_ends(&mut dreb);
    let end = frames.last().unwrap();
    assert_eq!(end["agentType"], "Sandbox");
    assert_eq!(end["success"], true, "{end}");
    // Its preferred models (zai, anthropic) have no credentials here: the parent's model is used.
    assert_eq!(end["model"], "mock/mock-model");
    let child = child_request(&env, "Reply with just: sandboxed");
    let mut tools = tool_names(&child);
    tools.sort();
    assert_eq!(tools, ["search", "skill", "tasks_update", "tmp_read"]);
    // The definition's body is part of the child's system prompt.
    assert!(
        child.to_string().contains("You analyse data in isolation."),
        "{child}"
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}
