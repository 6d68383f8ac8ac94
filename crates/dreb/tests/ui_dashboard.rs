//! `--ui dashboard` through the binary: `message_update` events (the process's own and those relayed from background
//! children) leave out the cumulative `message` and `assistantMessageEvent.partial`; responses and every other event
//! stay complete. Without the flag (or with another `--ui`) both copies are written.

mod common;

use common::{Dreb, Env, is_response};
use dreb_mock_llm::Scenario;
use serde_json::{Value, json};

/// A scenario whose replies are `n` text deltas of `"word "` after a short thinking block.
fn words(n: usize) -> Env {
    let scenario: Scenario = serde_json::from_value(json!({
        "turns": [{"repeat": true, "thinking": ["Let me ", "think."], "text": vec!["word "; n]}]
    }))
    .unwrap();
    Env::with_scenario(scenario)
}

fn prompt(dreb: &mut Dreb, id: &str, message: &str) -> Vec<Value> {
    dreb.exchange(&json!({"id": id, "type": "prompt", "message": message}))
}

fn updates(frames: &[Value]) -> Vec<&Value> {
    frames
        .iter()
        .filter(|f| f["type"] == "message_update")
        .collect()
}

fn assert_lean(update: &Value) {
    assert!(update.get("message").is_none(), "{update}");
    let stream_event = update["assistantMessageEvent"].as_object().expect("object");
    assert!(!stream_event.contains_key("partial"), "{update}");
    assert!(stream_event.contains_key("type"), "{update}");
    assert!(stream_event.contains_key("contentIndex"), "{update}");
}

fn assert_full(update: &Value) {
    let partial = &update["assistantMessageEvent"]["partial"];
    assert_eq!(partial["role"], "assistant", "{update}");
    assert_eq!(update["message"], *partial, "{update}");
}

/// The text of the `message_end` assistant message.
fn final_text(frames: &[Value]) -> String {
    let end = frames
        .iter()
        .rev()
        .find(|f| f["type"] == "message_end" && f["message"]["role"] == "assistant")
        .expect("assistant message_end");
    end["message"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect()
}

/// Bytes of the `message_update` lines as written (compact JSON + LF).
fn update_bytes(frames: &[Value]) -> usize {
    updates(frames)
        .iter()
        .map(|f| serde_json::to_string(f).unwrap().len() + 1)
        .sum()
}

#[test]
fn dashboard_message_updates_carry_only_the_deltas() {
    let env = words(40);
    let mut dreb = env.spawn(&["--ui", "dashboard"]);
    let frames = prompt(&mut dreb, "p1", "Write words");
    let updates = updates(&frames);
    assert!(updates.len() >= 40, "{frames:?}");
    for update in &updates {
        assert_lean(update);
        assert!(serde_json::to_string(update).unwrap().len() < 512);
    }
    // The deltas still rebuild the reply, and the end events carry the whole text.
    let text_deltas: String = updates
        .iter()
        .filter(|u| u["assistantMessageEvent"]["type"] == "text_delta")
        .map(|u| u["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text_deltas, "word ".repeat(40));
    let thinking_deltas: String = updates
        .iter()
        .filter(|u| u["assistantMessageEvent"]["type"] == "thinking_delta")
        .map(|u| u["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(thinking_deltas, "Let me think.");
    let text_end = updates
        .iter()
        .find(|u| u["assistantMessageEvent"]["type"] == "text_end")
        .unwrap();
    assert_eq!(
        text_end["assistantMessageEvent"]["content"],
        "word ".repeat(40)
    );
    assert_eq!(final_text(&frames), "word ".repeat(40));
    let agent_end = frames.last().unwrap();
    assert_eq!(agent_end["type"], "agent_end");
    assert_eq!(agent_end["messages"].as_array().unwrap().len(), 2);

    // Responses are never projected: the snapshot has the whole transcript, right after its barrier.
    let frames = dreb.exchange(&json!({"id": "snap-1", "type": "get_dashboard_snapshot"}));
    let at = frames.iter().position(is_response).unwrap();
    assert_eq!(
        frames[at - 1],
        json!({"type": "dashboard_snapshot_barrier", "snapshotId": "snap-1"})
    );
    let messages = frames[at]["data"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(
        messages[1]["content"][1]["text"],
        "word ".repeat(40),
        "{:#}",
        messages[1]
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn dashboard_tool_call_updates_keep_the_tool_call() {
    let env = Env::new();
    let mut dreb = env.spawn(&["--ui", "dashboard"]);
    let frames = prompt(&mut dreb, "p1", "[[tool=bash:echo dash]]");
    let updates = updates(&frames);
    updates.iter().for_each(|u| assert_lean(u));
    let args: String = updates
        .iter()
        .filter(|u| u["assistantMessageEvent"]["type"] == "toolcall_delta")
        .map(|u| u["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&args).unwrap(),
        json!({"command": "echo dash"})
    );
    let tool_end = updates
        .iter()
        .find(|u| u["assistantMessageEvent"]["type"] == "toolcall_end")
        .unwrap();
    let tool_call = &tool_end["assistantMessageEvent"]["toolCall"];
    assert_eq!(tool_call["type"], "toolCall");
    assert_eq!(tool_call["name"], "bash");
    assert_eq!(tool_call["arguments"], json!({"command": "echo dash"}));
    // The rest of the run is unprojected: the tool ran and its result and the follow-up reply are complete.
    let result = frames
        .iter()
        .find(|f| f["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(result["result"]["content"][0]["text"], "dash");
    assert_eq!(final_text(&frames), "Tool finished; done.");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn other_ui_values_keep_both_copies() {
    for extra in [&[][..], &["--ui", "rpc"][..], &["--ui", "agent"][..]] {
        let env = words(5);
        let mut dreb = env.spawn(extra);
        let frames = prompt(&mut dreb, "p1", "Write words");
        let updates = updates(&frames);
        assert!(updates.len() >= 5, "{extra:?}: {frames:?}");
        updates.iter().for_each(|u| assert_full(u));
        let last_delta = updates
            .iter()
            .rfind(|u| u["assistantMessageEvent"]["type"] == "text_delta")
            .unwrap();
        assert_eq!(
            last_delta["message"]["content"][1]["text"],
            "word ".repeat(5),
            "{extra:?}"
        );
        let (code, _, _) = dreb.finish();
        assert_eq!(code, 0);
    }
}

/// The projection makes the bytes of a streamed reply linear in its length; without it they grow quadratically.
#[test]
fn dashboard_bytes_grow_linearly_with_the_reply() {
    let measure = |n: usize, extra: &[&str]| {
        let env = words(n);
        let mut dreb = env.spawn(extra);
        let bytes = update_bytes(&prompt(&mut dreb, "p1", "Write words"));
        let (code, _, _) = dreb.finish();
        assert_eq!(code, 0);
        bytes
    };
    let (lean_short, lean_long) = (
        measure(100, &["--ui", "dashboard"]),
        measure(200, &["--ui", "dashboard"]),
    );
    let (full_short, full_long) = (measure(100, &[]), measure(200, &[]));
    let lean_growth = lean_long as f64 / lean_short as f64;
    let full_growth = full_long as f64 / full_short as f64;
    assert!(lean_growth < 2.5, "{lean_short} → {lean_long}");
    assert!(full_growth > 2.5, "{full_short} → {full_long}");
    assert!(lean_long * 10 < full_long, "{lean_long} vs {full_long}");
}

/// The parent's first request calls the subagent tool; the child answers its task (the reference mock's rules).
fn delegating(task: &str) -> Env {
    let scenario: Scenario = serde_json::from_value(json!({
        "turns": [{
            "when": {"lastUserContains": "Delegate", "afterToolResult": false},
            "toolCalls": [{"name": "subagent", "arguments": {"task": task}}]
        }]
    }))
    .unwrap();
    Env::with_scenario(scenario)
}

/// Frames until the child's `background_agent_end` and the end of the parent run that received its result: the run
/// the result started, or the first run when the child finished before it ended and the result was steered into it.
fn run_background_child(dreb: &mut Dreb) -> Vec<Value> {
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Delegate this"}));
    let (mut ended, mut resumed) = (false, false);
    dreb.read_until(|f| {
        ended |= f["type"] == "background_agent_end";
        resumed |= f["type"] == "agent_end"
            && f["messages"].as_array().is_some_and(|messages| {
                messages.iter().any(|m| {
                    m["content"][0]["text"]
                        .as_str()
                        .is_some_and(|t| t.starts_with("<background-agent-complete>"))
                })
            });
        ended && resumed
    })
}

fn child_events<'a>(frames: &'a [Value], kind: &str) -> Vec<&'a Value> {
    frames
        .iter()
        .filter(|f| f["type"] == "background_agent_event" && f["event"]["type"] == kind)
        .map(|f| &f["event"])
        .collect()
}

#[test]
fn relayed_child_updates_are_projected_in_dashboard_mode() {
    let env = delegating("Child task. Reply with just: child-done");
    let mut dreb = env.spawn(&["--ui", "dashboard"]);
    let frames = run_background_child(&mut dreb);
    let child_updates = child_events(&frames, "message_update");
    assert!(!child_updates.is_empty(), "{frames:?}");
    child_updates.iter().for_each(|u| assert_lean(u));
    let deltas: String = child_updates
        .iter()
        .filter(|u| u["assistantMessageEvent"]["type"] == "text_delta")
        .map(|u| u["assistantMessageEvent"]["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "child-done");
    // The child's other events are relayed whole.
    let child_end = child_events(&frames, "message_end");
    let last = child_end.last().unwrap();
    assert_eq!(last["message"]["content"][0]["text"], "child-done");
    updates(&frames).iter().for_each(|u| assert_lean(u));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn relayed_child_updates_are_whole_without_the_flag() {
    let env = delegating("Child task. Reply with just: child-done");
    let mut dreb = env.spawn(&[]);
    let frames = run_background_child(&mut dreb);
    let child_updates = child_events(&frames, "message_update");
    assert!(!child_updates.is_empty(), "{frames:?}");
    child_updates.iter().for_each(|u| assert_full(u));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

/// Measurement for docs/benchmarks.md (bytes, not time, so any build profile gives the same numbers):
/// `cargo test -p dreb --test ui_dashboard -- --ignored --nocapture measure`.
#[test]
#[ignore]
fn measure_bytes_per_streamed_reply() {
    println!(
        "| deltas | reply bytes | full: all events | full: message_update | dashboard: all events | dashboard: message_update | ratio (all) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for n in [100, 1_000, 4_000] {
        let scenario: Scenario = serde_json::from_value(json!({
            "turns": [{"repeat": true, "text": vec!["0123456789abcde "; n]}]
        }))
        .unwrap();
        let env = Env::with_scenario(scenario);
        let mut sizes = Vec::new();
        for extra in [&[][..], &["--ui", "dashboard"][..]] {
            let mut dreb = env.spawn(extra);
            let frames = prompt(&mut dreb, "p1", "Write");
            let events: Vec<Value> = frames.into_iter().filter(|f| !is_response(f)).collect();
            let all: usize = events
                .iter()
                .map(|f| serde_json::to_string(f).unwrap().len() + 1)
                .sum();
            sizes.push((all, update_bytes(&events)));
            let (code, _, _) = dreb.finish();
            assert_eq!(code, 0);
        }
        let ((full_all, full_upd), (lean_all, lean_upd)) = (sizes[0], sizes[1]);
        println!(
            "| {n} | {} | {full_all} | {full_upd} | {lean_all} | {lean_upd} | {:.1}x |",
            16 * n,
            full_all as f64 / lean_all as f64
        );
    }
}
