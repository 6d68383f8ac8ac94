//! Background subagents end to end: the parent `dreb` process launches real `dreb --mode rpc --ui agent` children
//! through the subagent tool (the mock LLM serves both), relays their events, delivers their results, and lets the
//! host list, steer and abort them.

mod common;

use std::path::PathBuf;

use common::{Dreb, Env, read_jsonl, tool_names};
use dreb_mock_llm::Scenario;
use serde_json::{Value, json};

/// The parent's first request calls the subagent tool with `args`; everything else follows the reference mock's
/// rules (children answer their task text).
fn delegating(trigger: &str, args: Value) -> Env {
    let scenario: Scenario = serde_json::from_value(json!({
        "turns": [{
            "when": {"lastUserContains": trigger, "afterToolResult": false},
            "toolCalls": [{"name": "subagent", "arguments": args}]
        }]
    }))
    .unwrap();
    Env::with_scenario(scenario)
}

/// The first frame of type `ty` (the test fails when there is none).
fn first<'a>(frames: &'a [Value], ty: &str) -> &'a Value {
    frames
        .iter()
        .find(|f| f["type"] == ty)
        .unwrap_or_else(|| panic!("no {ty} frame"))
}

fn response(dreb: &mut Dreb, cmd: Value) -> Value {
    let id = cmd["id"].clone();
    dreb.send(&cmd);
    dreb.read_until(|f| f["type"] == "response" && f["id"] == id)
        .pop()
        .unwrap()
}

fn text_of(message: &Value) -> String {
    message["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default()
}

/// The completion notice in a run's messages (the run it started, or one it was steered into).
fn notice_in(agent_end: &Value) -> Option<String> {
    agent_end["messages"]
        .as_array()?
        .iter()
        .map(text_of)
        .find(|t| t.starts_with("<background-agent-complete>"))
}

fn is_resumed_run_end(f: &Value) -> bool {
    f["type"] == "agent_end" && notice_in(f).is_some()
}

/// Frames until a child's `background_agent_end` and the end of the parent run that received its result (the two
/// come in either order).
fn read_until_resumed(dreb: &mut Dreb) -> Vec<Value> {
    let (mut ended, mut resumed) = (false, false);
    dreb.read_until(|f| {
        ended |= f["type"] == "background_agent_end";
        resumed |= is_resumed_run_end(f);
        ended && resumed
    })
}

/// The completion notice the parent received.
fn notice_of(frames: &[Value]) -> String {
    frames.iter().find_map(notice_in).unwrap()
}

fn session_file_of(dreb: &mut Dreb) -> PathBuf {
    let state = response(dreb, json!({"id": "st", "type": "get_state"}));
    PathBuf::from(state["data"]["sessionFile"].as_str().unwrap())
}

/// A process whose command line contains `marker` still exists.
fn process_with(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(marker))
            .unwrap_or(false)
    })
}

#[test]
fn a_child_runs_in_the_background_and_its_result_resumes_the_parent() {
    let env = delegating(
        "Delegate",
        json!({"task": "Child task. Reply with just: child-done"}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Delegate this"}));
    // The launch turn ends with the tool result (no second LLM call); the child then reports back, which resumes
    // the parent with a new run (its events and background_agent_end in either order).
    let frames = read_until_resumed(&mut dreb);
    let start = frames
        .iter()
        .find(|f| f["type"] == "background_agent_start")
        .expect("background_agent_start");
    let agent_id = start["agentId"].as_str().unwrap().to_string();
    assert_eq!(agent_id.len(), 12);
    assert_eq!(start["agentType"], "Explore");
    assert_eq!(start["taskSummary"], "Explore task");
    let session_dir = PathBuf::from(start["sessionDir"].as_str().unwrap());
    assert!(session_dir.starts_with(env.agent_dir().join("subagent-sessions")));

    let tool_end = first(&frames, "tool_execution_end");
    let tool_text = text_of(&tool_end["result"]);
    assert_eq!(
        tool_text,
        format!(
            "Background agent {agent_id} started (Explore). You will be notified when it completes."
        )
    );
    assert_eq!(tool_end["result"]["endTurn"], true);
    assert_eq!(
        tool_end["result"]["details"],
        json!({"mode": "single", "agentCount": 1})
    );

    // The child's own events are relayed, tagged with its id; its responses are not.
    let relayed: Vec<&Value> = frames
        .iter()
        .filter(|f| f["type"] == "background_agent_event")
        .collect();
    assert!(relayed.iter().all(|f| f["agentId"] == agent_id.as_str()));
    let child_types: Vec<&str> = relayed
        .iter()
        .map(|f| f["event"]["type"].as_str().unwrap())
        .collect();
    assert!(child_types.contains(&"agent_start"), "{child_types:?}");
    assert!(child_types.contains(&"agent_end"), "{child_types:?}");
    assert!(!child_types.contains(&"response"));

    let end = first(&frames, "background_agent_end");
    assert_eq!(end["agentId"], agent_id.as_str());
    assert_eq!(end["success"], true);
    assert_eq!(end["model"], "mock/mock-model");
    let child_file = PathBuf::from(end["sessionFile"].as_str().unwrap());
    assert!(child_file.starts_with(&session_dir));

    // The child's session names its type and its parent.
    let parent_file = session_file_of(&mut dreb);
    let child_entries = read_jsonl(&child_file);
    assert_eq!(child_entries[0]["agentType"], "Explore");
    assert_eq!(
        child_entries[0]["parentSession"],
        parent_file.display().to_string()
    );

    // The result resumed the parent as a new run whose prompt is the completion notice.
    let notice_text = notice_of(&frames);
    assert!(
        notice_text.starts_with(&format!(
            "<background-agent-complete>\nBackground agent {agent_id} (Explore) completed.\n\nExecution metadata: model: mock/mock-model"
        )),
        "{notice_text}"
    );
    assert!(
        notice_text.contains("\n\nchild-done\n\nSession log: "),
        "{notice_text}"
    );
    assert!(notice_text.ends_with("</background-agent-complete>"));

    // The child ran with the agent's prompt and only its tools.
    let requests = env.mock.requests();
    let child_request = requests
        .iter()
        .find(|r| r.body.to_string().contains("Child task. Reply with just"))
        .unwrap();
    let body = child_request.body.to_string();
    assert!(body.contains("You gather evidence for another agent"));
    assert!(!body.contains("\"subagent\""));

    let list = response(
        &mut dreb,
        json!({"id": "l", "type": "list_background_agents"}),
    );
    let agents = list["data"]["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1);
    assert_eq!(agents[0]["status"], "completed");
    assert_eq!(agents[0]["sessionFile"], end["sessionFile"]);
    assert_eq!(agents[0]["cwd"], env.cwd().display().to_string());

    // A finished agent can no longer be steered.
    let steer = response(
        &mut dreb,
        json!({"id": "s", "type": "steer_background_agent", "agentId": agent_id, "message": "more"}),
    );
    assert_eq!(
        steer["error"],
        format!("Command failed: Background agent \"{agent_id}\" is no longer running.")
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);

    // A restart on the parent session finds the finished child again from disk.
    let mut again = env.spawn(&["--session", &parent_file.display().to_string()]);
    let list = response(
        &mut again,
        json!({"id": "l2", "type": "list_background_agents"}),
    );
    let agents = list["data"]["agents"].as_array().unwrap();
    assert_eq!(agents.len(), 1, "{list}");
    let dir_name = session_dir.file_name().unwrap().to_string_lossy();
    assert_eq!(agents[0]["agentId"], format!("rehydrated-{dir_name}"));
    assert_eq!(agents[0]["agentType"], "Explore");
    assert_eq!(agents[0]["status"], "completed");
    assert_eq!(
        agents[0]["taskSummary"],
        "Child task. Reply with just: child-done"
    );
    let (code, _, _) = again.finish();
    assert_eq!(code, 0);
}

#[test]
fn steer_and_pending_reach_a_running_child() {
    let env = delegating(
        "Delegate",
        json!({"task": "[[tool=bash:while [ ! -e go ]; do sleep 0.02; done; echo hi]]"}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Delegate the wait"}));
    let frames = dreb.read_until(|f| {
        f["type"] == "background_agent_event" && f["event"]["type"] == "tool_execution_start"
    });
    let agent_id = first(&frames, "background_agent_start")["agentId"]
        .as_str()
        .unwrap()
        .to_string();

    let builtin = response(
        &mut dreb,
        json!({"id": "b", "type": "steer_background_agent", "agentId": agent_id, "message": "/compact"}),
    );
    assert_eq!(
        builtin["error"],
        "Built-in slash command /compact must be handled by the RPC client; it was not sent to the model."
    );
    let unknown = response(
        &mut dreb,
        json!({"id": "u", "type": "get_background_agent_pending", "agentId": "ffffffffffff"}),
    );
    assert_eq!(
        unknown["error"],
        "Command failed: Unknown background agent \"ffffffffffff\"."
    );

    let steer = response(
        &mut dreb,
        json!({"id": "s", "type": "steer_background_agent", "agentId": agent_id, "message": "Reply with just: steered"}),
    );
    assert_eq!(
        steer,
        json!({"id": "s", "type": "response", "command": "steer_background_agent", "success": true})
    );
    let pending = response(
        &mut dreb,
        json!({"id": "q", "type": "get_background_agent_pending", "agentId": agent_id}),
    );
    assert_eq!(
        pending["data"],
        json!({"steeringMode": "one-at-a-time", "pending": {
            "steering": ["Reply with just: steered"], "followUp": [],
            "steeringMessages": [{"text": "Reply with just: steered"}], "followUpMessages": []}})
    );

    std::fs::write(env.cwd().join("go"), "").unwrap();
    let frames = dreb.read_until(|f| f["type"] == "background_agent_end");
    assert_eq!(frames.last().unwrap()["success"], true);
    // The steering message reached the child before its next LLM call.
    let child_end = frames
        .iter()
        .find(|f| f["type"] == "background_agent_event" && f["event"]["type"] == "agent_end")
        .unwrap();
    let last = child_end["event"]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(text_of(&last), "steered");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

/// A parent whose child runs a command that never ends (its command line carries `marker`).
fn endless_child(marker: &str) -> (Env, Dreb) {
    let env = delegating(
        "Delegate",
        json!({"task": format!("[[tool=bash:while true; do sleep 0.05; done # {marker}]]")}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Delegate forever"}));
    (env, dreb)
}

/// Wait (bounded) until a process whose command line contains `marker` exists (`present`) or is gone.
fn wait_for_process(marker: &str, present: bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while process_with(marker) != present && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    process_with(marker) == present
}

#[test]
fn abort_stops_running_children_and_records_the_cancellation() {
    let marker = format!("bg-abort-{}", std::process::id());
    let (_env, mut dreb) = endless_child(&marker);
    // The parent's run ends and the child's command starts, in either order.
    let (mut parent_done, mut child_busy) = (false, false);
    let frames = dreb.read_until(|f| {
        parent_done |= f["type"] == "agent_end";
        child_busy |=
            f["type"] == "background_agent_event" && f["event"]["type"] == "tool_execution_start";
        parent_done && child_busy
    });
    let agent_id = first(&frames, "background_agent_start")["agentId"]
        .as_str()
        .unwrap()
        .to_string();
    // The command starts just after its tool_execution_start.
    assert!(
        wait_for_process(&marker, true),
        "the child's command never started"
    );

    let abort = response(&mut dreb, json!({"id": "a", "type": "abort"}));
    assert_eq!(abort["success"], true);
    let frames = dreb.read_until(|f| f["type"] == "background_agent_end");
    let end = frames.last().unwrap();
    assert_eq!(end["agentId"], agent_id.as_str());
    assert_eq!(end["success"], false);
    // The cancellation is recorded in the conversation without starting a run.
    let notice = frames
        .iter()
        .find(|f| f["type"] == "message_end")
        .expect("cancellation notice");
    let text = text_of(&notice["message"]);
    assert!(
        text.contains(&format!("Background agent {agent_id} (Explore) cancelled."))
            && text.contains("This agent was cancelled by the user."),
        "{text}"
    );
    assert!(!frames.iter().any(|f| f["type"] == "agent_start"));
    let list = response(
        &mut dreb,
        json!({"id": "l", "type": "list_background_agents"}),
    );
    assert_eq!(list["data"]["agents"][0]["status"], "failed");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    assert!(
        wait_for_process(&marker, false),
        "the child's command outlived it"
    );
}

#[test]
fn parallel_tasks_and_chains() {
    let env = delegating(
        "Fan out",
        json!({"tasks": [
            {"task": "Reply with just: alpha"},
            {"task": "Reply with just: beta", "agent": "code-reviewer"},
            {"task": "Reply with just: never", "cwd": "../outside"}
        ]}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Fan out"}));
    let mut ends = Vec::new();
    let frames = dreb.read_until(|f| {
        if f["type"] == "background_agent_end" {
            ends.push(f.clone());
        }
        ends.len() == 2
    });
    let starts: Vec<&Value> = frames
        .iter()
        .filter(|f| f["type"] == "background_agent_start")
        .collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[0]["taskSummary"], "Explore task 1/3");
    assert_eq!(starts[1]["taskSummary"], "code-reviewer task 2/3");
    let tool_end = first(&frames, "tool_execution_end");
    let text = text_of(&tool_end["result"]);
    assert!(text.starts_with("2 background agents started:\n"), "{text}");
    assert!(
        text.contains("1 task(s) failed to launch:\n  SKIPPED: Reply with just: never — Rejected cwd \"../outside\" — resolves outside parent cwd"),
        "{text}"
    );
    assert!(ends.iter().all(|e| e["success"] == true));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);

    let env = delegating(
        "Chain it",
        json!({"chain": [
            {"task": "Reply with just: one"},
            {"task": "Reply with just: {previous}-two"}
        ]}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Chain it"}));
    let frames = read_until_resumed(&mut dreb);
    let start = first(&frames, "background_agent_start");
    assert_eq!(start["taskSummary"], "2-step chain");
    let end = first(&frames, "background_agent_end");
    assert_eq!(end["success"], true);
    assert_eq!(
        end["steps"],
        json!([
            {"step": 1, "agent": "Explore", "success": true, "model": "mock/mock-model", "thinking": "off"},
            {"step": 2, "agent": "Explore", "success": true, "model": "mock/mock-model", "thinking": "off"}
        ])
    );
    let notice = notice_of(&frames);
    assert!(notice.contains("### Step 1\n## Agent: Explore"), "{notice}");
    assert!(notice.contains("\n\n---\n\n### Step 2\n"), "{notice}");
    assert!(notice.contains("\n\none-two\n"), "{notice}");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn the_parent_pauses_after_its_turn_budget_while_children_run() {
    let env = delegating(
        "Delegate",
        json!({"task": "[[tool=bash:while [ ! -e go ]; do sleep 0.02; done; echo hi]]"}),
    );
    std::fs::write(
        env.agent_dir().join("settings.json"),
        json!({"backgroundAgents": {"parentTurnLimit": 1}}).to_string(),
    )
    .unwrap();
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Delegate the wait"}));
    dreb.read_until(|f| f["type"] == "agent_end");
    // A turn that started with the child running uses the budget; the next LLM call is then skipped.
    dreb.send(
        &json!({"id": "p2", "type": "prompt", "message": "Meanwhile [[tool=bash:echo parent]]"}),
    );
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    let paused = frames
        .iter()
        .find(|f| f["type"] == "parent_paused_for_background_agents")
        .expect("paused event");
    assert_eq!(
        paused,
        &json!({"type": "parent_paused_for_background_agents", "runningAgentCount": 1, "turnsUsed": 1, "turnLimit": 1})
    );
    let roles: Vec<&str> = frames.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "toolResult"]);
    std::fs::write(env.cwd().join("go"), "").unwrap();
    dreb.read_until(|f| f["type"] == "background_agent_end");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn no_subagent_tool_when_subagents_are_disabled() {
    let env = Env::new();
    std::fs::write(
        env.agent_dir().join("settings.json"),
        json!({"backgroundAgents": {"maxConcurrentSubagents": 0}}).to_string(),
    )
    .unwrap();
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hi"}));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    let tools = tool_names(&env.mock.requests()[0].body);
    assert!(!tools.contains(&"subagent".to_string()), "{tools:?}");

    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p", "type": "prompt", "message": "hi"}));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    let tools = tool_names(&env.mock.requests()[0].body);
    // The reference's order: the subagent tool right after the web tools (which follow `ls`).
    let web_fetch = tools.iter().position(|t| t == "web_fetch").unwrap();
    assert_eq!(tools[web_fetch + 1], "subagent", "{tools:?}");
}

/// A routing guide that covers exactly `scope` (every required section, cold-start evidence).
fn routing_guide(scope: &[&str]) -> String {
    const SUBSECTIONS: [&str; 11] = [
        "Capabilities and thinking support",
        "Strengths",
        "Weaknesses and failure modes",
        "Recommended roles and tasks",
        "Discouraged roles and tasks",
        "Tool use, long context, and vision",
        "Latency and cost",
        "Local evidence",
        "External evidence and contrary findings",
        "Confidence and limitations",
        "Sources",
    ];
    let ids: Vec<String> = scope.iter().map(|s| format!("  - {s}")).collect();
    let mut text = format!(
        "---\nschema_version: 1\ngenerated_at: \"2026-11-30T12:00:00Z\"\ncovered_model_ids:\n{}\nlocal_evidence: cold-start\n\
         analyzed_session_directories:\n  - none\nsession_date_range:\n  start: null\n  end: null\n---\n\
         # Model Routing Guide\n\n## Routing safeguards\n\nCheapest adequate model first.\n",
        ids.join("\n")
    );
    for id in scope {
        text.push_str(&format!("\n## Model: {id}\n"));
        for sub in SUBSECTIONS {
            text.push_str(&format!("\n### {sub}\n\nAbout {sub}.\n"));
        }
    }
    text
}

/// The parent delegates; the arbiter call (recognised by its input marker) answers `arbiter_replies` in turn.
fn arbitrated(arbiter_replies: &[&str]) -> Env {
    let mut turns = vec![json!({
        "when": {"lastUserContains": "Delegate", "afterToolResult": false},
        "toolCalls": [{"name": "subagent", "arguments": {"task": "Reply with just: routed"}}]
    })];
    let markers = ["ARBITRATION_INPUT", "not the required object"];
    for (reply, marker) in arbiter_replies.iter().zip(markers) {
        turns.push(json!({"when": {"lastUserContains": marker}, "text": [reply]}));
    }
    let env = Env::with_scenario(serde_json::from_value(json!({"turns": turns})).unwrap());
    let guide = env.agent_dir().join("guide.md");
    std::fs::write(
        &guide,
        routing_guide(&["mock/mock-model", "mock-anthropic/mock-claude"]),
    )
    .unwrap();
    std::fs::write(
        env.agent_dir().join("settings.json"),
        json!({"subagentArbiter": {"enabled": true, "model": "mock/mock-model", "guidePath": guide}}).to_string(),
    )
    .unwrap();
    env
}

const SCOPE: &str = "mock/mock-model,mock-anthropic/mock-claude";

#[test]
fn the_dispatch_arbiter_routes_a_child_before_it_spawns() {
    let env = arbitrated(&[
        r#"{"agent": "code-reviewer", "model": "mock-anthropic/mock-claude", "thinking": "off"}"#,
    ]);
    let mut dreb = env.spawn(&["--models", SCOPE]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Delegate it"}));
    let frames = read_until_resumed(&mut dreb);
    let arbitration_at = frames
        .iter()
        .position(|f| f["type"] == "subagent_arbitration")
        .expect("subagent_arbitration");
    let first_child_event = frames
        .iter()
        .position(|f| f["type"] == "background_agent_event")
        .unwrap();
    assert!(arbitration_at < first_child_event);
    let agent_id = first(&frames, "background_agent_start")["agentId"].clone();
    let record = json!({"type": "subagent_arbitration", "agentId": agent_id, "status": "success",
        "proposed": {"agent": "Explore", "model": "mock/mock-model", "thinking": "off"},
        "final": {"agent": "code-reviewer", "model": "mock-anthropic/mock-claude", "thinking": "off"},
        "changed": ["agent", "model"]});
    assert_eq!(frames[arbitration_at], record);
    let end = first(&frames, "background_agent_end");
    assert_eq!(end["agentType"], "code-reviewer");
    assert_eq!(end["model"], "mock-anthropic/mock-claude");
    assert!(notice_of(&frames).contains("\n\nrouted\n"));

    // The arbiter call: its own system prompt, no tools, the task and the candidates as data.
    let requests = env.mock.requests();
    let call = requests
        .iter()
        .find(|r| r.body.to_string().contains("ARBITRATION_INPUT"))
        .unwrap();
    assert!(
        call.body
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty))
    );
    let body = call.body.to_string();
    assert!(body.contains("Reply with just: routed"));
    assert!(body.contains(r#"\"candidateModels\":[{\"id\":\"mock/mock-model\"},{\"id\":\"mock-anthropic/mock-claude\"}]"#), "{body}");

    // The record is kept on the registry entry and in the parent session (outside the LLM context).
    let list = response(
        &mut dreb,
        json!({"id": "l", "type": "list_background_agents"}),
    );
    let agent = &list["data"]["agents"][0];
    assert_eq!(agent["agentType"], "code-reviewer");
    let mut expected = record.clone();
    expected.as_object_mut().unwrap().remove("type");
    expected.as_object_mut().unwrap().remove("agentId");
    assert_eq!(agent["arbitrations"], json!([expected]));
    let parent_file = session_file_of(&mut dreb);
    let custom: Vec<Value> = read_jsonl(&parent_file)
        .into_iter()
        .filter(|e| e["type"] == "custom" && e["customType"] == "subagent_arbitration")
        .collect();
    assert_eq!(custom.len(), 1);
    assert_eq!(custom[0]["data"], record);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn the_dispatch_arbiter_fails_closed() {
    // Malformed output twice: no child is spawned.
    let env = arbitrated(&["route it to Explore please", "still prose"]);
    let mut dreb = env.spawn(&["--models", SCOPE]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Delegate it"}));
    let frames = read_until_resumed(&mut dreb);
    let record = first(&frames, "subagent_arbitration");
    assert_eq!(record["status"], "failure");
    assert_eq!(record["final"], Value::Null);
    assert_eq!(record["errorCode"], "malformed_output");
    assert_eq!(
        record["errorMessage"],
        "Arbiter returned malformed structured output twice."
    );
    assert!(!frames.iter().any(|f| f["type"] == "background_agent_event"));
    let end = first(&frames, "background_agent_end");
    assert_eq!(end["success"], false);
    assert!(
        notice_of(&frames).contains(
            "Error: Dispatch arbitration failed: Arbiter returned malformed structured output twice."
        ),
        "{}",
        notice_of(&frames)
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);

    // Without an explicit model scope there is nothing to route among.
    let env = arbitrated(&[]);
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Delegate it"}));
    let frames = read_until_resumed(&mut dreb);
    let record = first(&frames, "subagent_arbitration");
    assert_eq!(record["errorCode"], "missing_scope");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_fallback_list_is_resolved_and_probed_in_order() {
    // The probe request ("hi") of the second candidate fails with 401; the third answers.
    let scenario: Scenario = serde_json::from_value(json!({"turns": [
        {"when": {"lastUserContains": "Delegate", "afterToolResult": false},
         "toolCalls": [{"name": "subagent", "arguments": {"agent": "Fallback", "task": "Reply with just: fallback-ok"}}]},
        {"when": {"lastUserContains": "hi"}, "fault": {"status": 401}}
    ]}))
    .unwrap();
    let env = Env::with_scenario(scenario);
    let agents = env.cwd().join(".dreb/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("fallback.md"),
        "---\nname: Fallback\ndescription: Tries its models in order.\ntools: read\n\
         model: mock/no-such-model, mock-anthropic/mock-claude, mock/mock-model\n---\nYou test fallbacks.\n",
    )
    .unwrap();
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Delegate now"}));
    let frames = read_until_resumed(&mut dreb);
    let end = first(&frames, "background_agent_end");
    assert_eq!(end["success"], true);
    assert_eq!(end["model"], "mock/mock-model");
    let notice = notice_of(&frames);
    let expected = "[MODEL FALLBACK: skipped 2 unavailable model(s); using \"mock/mock-model\".]\n\
         - mock/no-such-model: Model \"mock/no-such-model\" not found for provider \"mock\". Use --list-models to see available models.\n\
         - mock-anthropic/mock-claude: ";
    assert!(notice.contains(expected), "{notice}");
    assert!(notice.contains("\n\nfallback-ok\n"), "{notice}");
    // Probes are real requests: the failed one went to the anthropic wire, the good one to the openai wire.
    let probes: Vec<String> = env
        .mock
        .requests()
        .iter()
        .filter(|r| {
            r.body
                .to_string()
                .contains("Reply with the single word OK.")
        })
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(probes.len(), 2, "{probes:?}");
    assert!(probes[0].ends_with("/messages") && probes[1].ends_with("/chat/completions"));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn closing_stdin_stops_running_children() {
    let marker = format!("bg-eof-{}", std::process::id());
    let (_env, mut dreb) = endless_child(&marker);
    dreb.read_until(|f| {
        f["type"] == "background_agent_event" && f["event"]["type"] == "tool_execution_start"
    });
    assert!(
        wait_for_process(&marker, true),
        "the child's command never started"
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
    // The child and its command go with the parent (allowing them a moment to wind down).
    assert!(
        wait_for_process(&marker, false),
        "a child outlived its parent"
    );
}
