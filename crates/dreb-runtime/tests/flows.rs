//! Compaction, auto-compaction, auto-retry, RPC bash and the dashboard snapshot, driven through the `RpcHandler`
//! with the scripted offline `faux` provider and a `SpecSink` (every frame checked against the spec).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dreb_ai::Providers;
use dreb_ai::scenario::Scenario;
use dreb_protocol::support::RequestContext;
use dreb_protocol::*;
use dreb_runtime::{Runtime, RuntimeOptions};

mod common;
use common::SpecSink;
use serde_json::{Value, json};
use tempfile::TempDir;

struct Harness {
    rt: Runtime,
    sink: Arc<SpecSink>,
    _dirs: (TempDir, TempDir),
    cwd: PathBuf,
}

fn ctx() -> RequestContext {
    RequestContext::detached(None)
}

/// A runtime on `faux` playing `scenario`, with `settings` as the global settings.json.
fn start(scenario: Value, settings: Value) -> Harness {
    start_with(scenario, settings, false)
}

fn start_with(scenario: Value, settings: Value, no_session: bool) -> Harness {
    start_configured(scenario, settings, |o| o.no_session = no_session)
}

/// [`start`] with the options edited by `configure` before start-up.
fn start_configured(
    scenario: Value,
    settings: Value,
    configure: impl FnOnce(&mut RuntimeOptions),
) -> Harness {
    let agent_dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(agent_dir.path().join("settings.json"), settings.to_string()).unwrap();
    let scenario: Scenario = serde_json::from_value(scenario).unwrap();
    let sink = Arc::new(SpecSink::default());
    let mut options = RuntimeOptions {
        cwd: cwd.path().to_path_buf(),
        agent_dir: agent_dir.path().to_path_buf(),
        provider: Some("faux".into()),
        session_dir: Some(agent_dir.path().join("sessions")),
        providers: Some(Providers::new().with_faux_scenario(scenario)),
        ..Default::default()
    };
    configure(&mut options);
    let rt = Runtime::start(options, sink.clone()).unwrap();
    let cwd_path = cwd.path().to_path_buf();
    Harness {
        rt,
        sink,
        _dirs: (agent_dir, cwd),
        cwd: cwd_path,
    }
}

/// Poll until `f` holds (the bound only guards against a hung test; nothing is timed).
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..6000 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("timed out waiting for {what}");
}

fn types(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|f| f["type"].as_str().unwrap_or("").to_string())
        .collect()
}

fn of_type(frames: &[Value], t: &str) -> Vec<Value> {
    frames.iter().filter(|f| f["type"] == t).cloned().collect()
}

fn file_entries(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Frames written after a test's last read are checked here (not while a failing test is already unwinding).
impl Drop for Harness {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.sink.assert_spec();
        }
    }
}

impl Harness {
    async fn prompt(&self, text: &str) {
        self.rt
            .prompt(
                &ctx(),
                PromptParams {
                    message: text.into(),
                    images: None,
                    streaming_behavior: None,
                },
            )
            .await
            .unwrap();
    }

    async fn state(&self) -> RpcSessionState {
        self.rt.get_state(&ctx(), GetStateParams {}).await.unwrap()
    }

    fn messages(&self) -> Vec<Value> {
        serde_json::to_value(self.rt.agent().messages())
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    }

    fn frames(&self) -> Vec<Value> {
        self.sink.frames()
    }

    async fn wait_for(&self, what: &str, f: impl Fn(&[Value]) -> bool) {
        until(what, || f(&self.sink.frames())).await;
    }
}

fn roles(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("").to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------------------------------
// compaction

fn summary_turn(text: &str) -> Value {
    json!({"when": {"lastUserContains": "<conversation>"}, "repeat": true, "text": [text]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_writes_the_entry_rebuilds_messages_and_answers_the_result() {
    let h = start(
        json!({"turns": [summary_turn("## Goal\nsay hi"), {"repeat": true, "text": ["hello ", "there"]}], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}}),
    );
    h.prompt("first question").await;
    h.rt.wait_for_idle().await;
    h.prompt("second question").await;
    h.rt.wait_for_idle().await;
    h.sink.clear();

    let result =
        h.rt.compact(
            &ctx(),
            CompactParams {
                custom_instructions: Some("Focus on greetings".into()),
            },
        )
        .await
        .unwrap();
    let wire = serde_json::to_value(&result).unwrap();
    assert!(
        wire["summary"]
            .as_str()
            .unwrap()
            .starts_with("## Goal\nsay hi"),
        "{wire}"
    );
    assert_eq!(
        wire["details"],
        json!({"readFiles": [], "modifiedFiles": []})
    );
    assert!(wire["tokensBefore"].as_i64().unwrap() > 0);
    let keys: Vec<&str> = wire
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["summary", "firstKeptEntryId", "tokensBefore", "details"]
    );
    // Manual compaction emits no events.
    assert!(of_type(&h.frames(), "auto_compaction_start").is_empty());

    let entries = file_entries(&h.rt.session_file().unwrap());
    let compaction = entries
        .iter()
        .find(|e| e["type"] == "compaction")
        .expect("compaction entry written");
    assert_eq!(compaction["summary"], wire["summary"]);
    assert_eq!(compaction["firstKeptEntryId"], wire["firstKeptEntryId"]);
    assert_eq!(compaction["fromHook"], false);
    assert!(entries.iter().any(|e| e["id"] == wire["firstKeptEntryId"]));

    let messages = h.messages();
    assert_eq!(messages[0]["role"], "compactionSummary");
    assert_eq!(messages[0]["summary"], wire["summary"]);
    assert!(!h.state().await.is_compacting);

    // Compacting again right away: the leaf is the compaction.
    let err =
        h.rt.compact(
            &ctx(),
            CompactParams {
                custom_instructions: None,
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.wire_text(), "Command failed: Already compacted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_compaction_cancels_a_running_compact() {
    let h = start(
        json!({"turns": [
            {"when": {"lastUserContains": "<conversation>"}, "firstByteDelayMs": 60000, "text": ["never"]},
            {"repeat": true, "text": ["ok"]}
        ], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}}),
    );
    h.prompt("hello").await;
    h.rt.wait_for_idle().await;
    let rt = h.rt.clone();
    let compact = tokio::spawn(async move {
        rt.compact(
            &ctx(),
            CompactParams {
                custom_instructions: None,
            },
        )
        .await
    });
    let mut compacting = false;
    for _ in 0..6000 {
        if h.state().await.is_compacting {
            compacting = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(compacting, "get_state reports isCompacting");
    h.rt.abort_compaction(&ctx(), AbortCompactionParams {})
        .await
        .unwrap();
    let err = compact.await.unwrap().unwrap_err();
    assert_eq!(err.wire_text(), "Command failed: Compaction cancelled");
    assert!(!h.state().await.is_compacting);
    let entries = file_entries(&h.rt.session_file().unwrap());
    assert!(!entries.iter().any(|e| e["type"] == "compaction"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_compaction_runs_above_the_threshold() {
    // faux: contextWindow 128000, reserve 16384 → compaction above 111616 context tokens.
    let h = start(
        json!({"turns": [
            summary_turn("## Goal\nauto"),
            {"text": ["big"], "usage": {"input": 120000, "output": 5}}
        ], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}}),
    );
    h.prompt("fill the context").await;
    h.wait_for("auto_compaction_end", |f| {
        !of_type(f, "auto_compaction_end").is_empty()
    })
    .await;
    let frames = h.frames();
    let t = types(&frames);
    let end_idx = t.iter().position(|x| x == "agent_end").unwrap();
    assert_eq!(t[end_idx + 1], "auto_compaction_start");
    assert_eq!(
        frames[end_idx + 1],
        json!({"type": "auto_compaction_start", "reason": "threshold"})
    );
    let end = &of_type(&frames, "auto_compaction_end")[0];
    assert_eq!(end["aborted"], false);
    assert_eq!(end["willRetry"], false);
    // keepRecentTokens 1 splits the only turn: the turn prefix is summarised after "No prior history.".
    assert!(
        end["result"]["summary"]
            .as_str()
            .unwrap()
            .contains("## Goal\nauto"),
        "{end}"
    );
    assert!(end.get("errorMessage").is_none());
    let keys: Vec<&str> = end
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["type", "result", "aborted", "willRetry"]);
    until("compaction flag cleared", || true).await;
    assert!(!h.state().await.is_compacting);
    assert!(
        file_entries(&h.rt.session_file().unwrap())
            .iter()
            .any(|e| e["type"] == "compaction")
    );
    assert_eq!(h.messages()[0]["role"], "compactionSummary");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_compaction_respects_set_auto_compaction() {
    let h = start(
        json!({"turns": [{"text": ["big"], "usage": {"input": 120000, "output": 5}}, {"repeat": true, "text": ["x"]}], "fallback": "error"}),
        json!({}),
    );
    h.rt.set_auto_compaction(&ctx(), SetAutoCompactionParams { enabled: false })
        .await
        .unwrap();
    h.prompt("fill the context").await;
    h.rt.wait_for_idle().await;
    h.prompt("again").await;
    h.rt.wait_for_idle().await;
    assert!(of_type(&h.frames(), "auto_compaction_start").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overflow_compacts_once_and_retries() {
    let overflow = json!({"fault": {"status": 400, "body": "prompt is too long: 200000 tokens > 128000 maximum"}});
    let h = start(
        json!({"turns": [
            summary_turn("## Goal\noverflow"),
            {"text": ["earlier answer"]},
            overflow,
            {"text": ["after compaction"]},
        ], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}, "retry": {"enabled": false}}),
    );
    h.prompt("first").await;
    h.rt.wait_for_idle().await;
    h.prompt("second").await;
    h.wait_for("the retried answer", |f| {
        f.iter().any(|x| {
            x["type"] == "message_end" && x["message"]["content"][0]["text"] == "after compaction"
        })
    })
    .await;
    let frames = h.frames();
    assert_eq!(
        of_type(&frames, "auto_compaction_start"),
        vec![json!({"type": "auto_compaction_start", "reason": "overflow"})]
    );
    let end = &of_type(&frames, "auto_compaction_end")[0];
    assert_eq!(end["willRetry"], true);
    assert_eq!(end["aborted"], false);
    h.rt.wait_for_idle().await;
    // The overflow error left the context (it stays in the file).
    let messages = h.messages();
    assert!(
        !messages.iter().any(|m| m["stopReason"] == "error"),
        "{messages:?}"
    );
    let entries = file_entries(&h.rt.session_file().unwrap());
    assert!(
        entries
            .iter()
            .any(|e| e["message"]["stopReason"] == "error")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_overflow_after_the_retry_gives_up() {
    let overflow = json!({"fault": {"status": 400, "body": "prompt is too long: 200000 tokens > 128000 maximum"}});
    let h = start(
        json!({"turns": [
            summary_turn("## Goal\noverflow"),
            {"text": ["earlier answer"]},
            overflow.clone(),
            overflow,
        ], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}, "retry": {"enabled": false}}),
    );
    h.prompt("first").await;
    h.rt.wait_for_idle().await;
    h.prompt("second").await;
    h.wait_for("two auto_compaction_end", |f| {
        of_type(f, "auto_compaction_end").len() == 2
    })
    .await;
    let ends = of_type(&h.frames(), "auto_compaction_end");
    assert_eq!(ends[0]["willRetry"], true);
    assert_eq!(
        ends[1],
        json!({"type": "auto_compaction_end", "aborted": false, "willRetry": false,
               "errorMessage": "Context overflow recovery failed after one compact-and-retry attempt. Try reducing context or switching to a larger-context model."})
    );
    assert_eq!(of_type(&h.frames(), "auto_compaction_start").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_compaction_cancels_an_auto_compaction() {
    let h = start(
        json!({"turns": [
            {"when": {"lastUserContains": "<conversation>"}, "firstByteDelayMs": 600000, "text": ["never"]},
            {"text": ["big"], "usage": {"input": 120000, "output": 5}}
        ], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}}),
    );
    h.prompt("fill the context").await;
    h.wait_for("auto_compaction_start", |f| {
        !of_type(f, "auto_compaction_start").is_empty()
    })
    .await;
    assert!(h.state().await.is_compacting);
    h.rt.abort_compaction(&ctx(), AbortCompactionParams {})
        .await
        .unwrap();
    h.wait_for("auto_compaction_end", |f| {
        !of_type(f, "auto_compaction_end").is_empty()
    })
    .await;
    assert_eq!(
        of_type(&h.frames(), "auto_compaction_end")[0],
        json!({"type": "auto_compaction_end", "aborted": true, "willRetry": false})
    );
    assert!(!h.state().await.is_compacting);
    assert!(
        !file_entries(&h.rt.session_file().unwrap())
            .iter()
            .any(|e| e["type"] == "compaction")
    );
}

/// A reply that reports 120000 input tokens at its start and then stalls until aborted.
fn big_stalled_turn() -> Value {
    json!({"text": ["big", "never"], "deltaDelayMs": 600000, "usage": {"input": 120000, "output": 5}})
}

/// Prompt, wait for the assistant's `message_start`, then abort: an aborted reply above the threshold.
async fn abort_a_big_reply(h: &Harness) {
    h.prompt("fill the context").await;
    h.wait_for("assistant message_start", |f| {
        f.iter()
            .any(|x| x["type"] == "message_start" && x["message"]["role"] == "assistant")
    })
    .await;
    h.rt.abort(&ctx(), AbortParams {}).await.unwrap();
    h.rt.wait_for_idle().await;
    let last = h.messages().last().cloned().unwrap();
    assert_eq!(last["stopReason"], "aborted");
    assert_eq!(last["usage"]["input"], 120000);
    // `agent_end` skips aborted replies.
    assert!(of_type(&h.frames(), "auto_compaction_start").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_prompt_check_compacts_before_the_prompt_after_an_aborted_reply() {
    let h = start(
        json!({"turns": [
            summary_turn("## Goal\npre-prompt"),
            big_stalled_turn(),
            {"text": ["after compaction"]}
        ], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}}),
    );
    abort_a_big_reply(&h).await;
    h.sink.clear();

    h.prompt("next question").await;
    h.wait_for("the prompt's agent_end", |f| {
        !of_type(f, "agent_end").is_empty()
    })
    .await;
    let frames = h.frames();
    let t = types(&frames);
    let start_idx = t.iter().position(|x| x == "auto_compaction_start").unwrap();
    let end_idx = t.iter().position(|x| x == "auto_compaction_end").unwrap();
    let agent_start = t.iter().position(|x| x == "agent_start").unwrap();
    assert!(start_idx < end_idx && end_idx < agent_start, "{t:?}");
    assert_eq!(
        frames[start_idx],
        json!({"type": "auto_compaction_start", "reason": "threshold"})
    );
    let end = &frames[end_idx];
    assert_eq!(end["aborted"], false);
    assert_eq!(end["willRetry"], false);
    assert!(
        end["result"]["summary"]
            .as_str()
            .unwrap()
            .contains("## Goal\npre-prompt"),
        "{end}"
    );
    // Exactly one compaction: none after this run's `agent_end` either.
    h.rt.wait_for_idle().await;
    assert_eq!(of_type(&h.frames(), "auto_compaction_start").len(), 1);
    assert!(!h.state().await.is_compacting);

    // The prompt went out on the compacted context.
    let messages = h.messages();
    assert_eq!(
        roles(&messages).first().map(String::as_str),
        Some("compactionSummary")
    );
    let last_two: Vec<&Value> = messages.iter().rev().take(2).collect();
    assert_eq!(last_two[0]["content"][0]["text"], "after compaction");
    assert_eq!(last_two[1]["content"][0]["text"], "next question");
    // In the file the compaction comes before the new prompt.
    let entries = file_entries(&h.rt.session_file().unwrap());
    let compaction = entries
        .iter()
        .position(|e| e["type"] == "compaction")
        .unwrap();
    let prompt = entries
        .iter()
        .position(|e| e["message"]["content"][0]["text"] == "next question")
        .unwrap();
    assert!(compaction < prompt);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_prompt_check_catches_a_context_grown_while_compaction_was_off() {
    let h = start(
        json!({"turns": [
            summary_turn("## Goal\nre-enabled"),
            {"text": ["big"], "usage": {"input": 120000, "output": 5}},
            {"text": ["answer"]}
        ], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}}),
    );
    h.rt.set_auto_compaction(&ctx(), SetAutoCompactionParams { enabled: false })
        .await
        .unwrap();
    h.prompt("fill the context").await;
    h.rt.wait_for_idle().await;
    assert!(of_type(&h.frames(), "auto_compaction_start").is_empty());
    h.rt.set_auto_compaction(&ctx(), SetAutoCompactionParams { enabled: true })
        .await
        .unwrap();

    h.prompt("next").await;
    h.wait_for("the answer", |f| {
        f.iter()
            .any(|x| x["type"] == "message_end" && x["message"]["content"][0]["text"] == "answer")
    })
    .await;
    let t = types(&h.frames());
    let compaction_end = t.iter().position(|x| x == "auto_compaction_end").unwrap();
    let agent_starts: Vec<usize> = t
        .iter()
        .enumerate()
        .filter(|(_, x)| *x == "agent_start")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(agent_starts.len(), 2);
    assert!(
        agent_starts[0] < compaction_end && compaction_end < agent_starts[1],
        "{t:?}"
    );
    assert_eq!(h.messages()[0]["role"], "compactionSummary");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_prompt_check_recovers_from_an_overflow_left_while_compaction_was_off() {
    let overflow = json!({"fault": {"status": 400, "body": "prompt is too long: 200000 tokens > 128000 maximum"}});
    let h = start(
        json!({"turns": [
            summary_turn("## Goal\noverflow before prompt"),
            {"text": ["earlier answer"]},
            overflow,
            {"text": ["fits now"]}
        ], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}, "retry": {"enabled": false}}),
    );
    h.prompt("first").await;
    h.rt.wait_for_idle().await;
    h.rt.set_auto_compaction(&ctx(), SetAutoCompactionParams { enabled: false })
        .await
        .unwrap();
    h.prompt("too big").await;
    h.rt.wait_for_idle().await;
    assert!(of_type(&h.frames(), "auto_compaction_start").is_empty());
    h.rt.set_auto_compaction(&ctx(), SetAutoCompactionParams { enabled: true })
        .await
        .unwrap();
    h.sink.clear();

    h.prompt("next").await;
    h.wait_for("the answer", |f| {
        f.iter()
            .any(|x| x["type"] == "message_end" && x["message"]["content"][0]["text"] == "fits now")
    })
    .await;
    h.rt.wait_for_idle().await;
    let frames = h.frames();
    assert_eq!(
        of_type(&frames, "auto_compaction_start"),
        vec![json!({"type": "auto_compaction_start", "reason": "overflow"})]
    );
    let end = &of_type(&frames, "auto_compaction_end")[0];
    assert_eq!(end["willRetry"], true);
    // The prompt is the continuation: one run, no separate continue.
    assert_eq!(of_type(&frames, "agent_start").len(), 1);
    let messages = h.messages();
    assert!(
        !messages.iter().any(|m| m["stopReason"] == "error"),
        "the overflow error left the context: {messages:?}"
    );
    assert_eq!(messages[0]["role"], "compactionSummary");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_pre_prompt_compaction_still_sends_the_prompt() {
    let h = start(
        json!({"turns": [
            {"when": {"lastUserContains": "<conversation>"}, "firstByteDelayMs": 600000, "text": ["never"]},
            big_stalled_turn(),
            {"text": ["uncompacted answer"]}
        ], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}}),
    );
    abort_a_big_reply(&h).await;
    h.sink.clear();

    // Acknowledged at once, while the compaction runs.
    h.prompt("next question").await;
    assert!(h.state().await.is_compacting);
    h.wait_for("auto_compaction_start", |f| {
        !of_type(f, "auto_compaction_start").is_empty()
    })
    .await;
    assert!(of_type(&h.frames(), "agent_start").is_empty());
    h.rt.abort_compaction(&ctx(), AbortCompactionParams {})
        .await
        .unwrap();
    h.wait_for("the answer", |f| {
        f.iter().any(|x| {
            x["type"] == "message_end" && x["message"]["content"][0]["text"] == "uncompacted answer"
        })
    })
    .await;
    assert_eq!(
        of_type(&h.frames(), "auto_compaction_end"),
        vec![json!({"type": "auto_compaction_end", "aborted": true, "willRetry": false})]
    );
    h.rt.wait_for_idle().await;
    assert!(
        !file_entries(&h.rt.session_file().unwrap())
            .iter()
            .any(|e| e["type"] == "compaction")
    );
    assert_ne!(h.messages()[0]["role"], "compactionSummary");
}

async fn prompt_with_id(h: &Harness, id: &str, text: &str) {
    let ctx = RequestContext::detached(Some(json!(id)));
    let params = PromptParams {
        message: text.into(),
        images: None,
        streaming_behavior: None,
    };
    h.rt.prompt(&ctx, params).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_that_cannot_start_after_its_compaction_gets_a_late_failure_response() {
    let h = start(
        json!({"turns": [
            {"when": {"lastUserContains": "<conversation>"}, "firstByteDelayMs": 600000, "text": ["never"]},
            big_stalled_turn(),
            {"text": ["second", "stalls"], "deltaDelayMs": 600000}
        ], "fallback": "error"}),
        json!({"compaction": {"keepRecentTokens": 1}}),
    );
    abort_a_big_reply(&h).await;
    h.sink.clear();
    prompt_with_id(&h, "first", "compacts first").await;
    h.wait_for("auto_compaction_start", |f| {
        !of_type(f, "auto_compaction_start").is_empty()
    })
    .await;
    // A compaction is already running: this one does not start another and goes straight to the model.
    prompt_with_id(&h, "second", "overtakes").await;
    h.wait_for("agent_start", |f| !of_type(f, "agent_start").is_empty())
        .await;
    h.rt.abort_compaction(&ctx(), AbortCompactionParams {})
        .await
        .unwrap();
    h.wait_for("the late response", |f| !of_type(f, "response").is_empty())
        .await;
    assert_eq!(
        of_type(&h.frames(), "response"),
        vec![
            json!({"id": "first", "type": "response", "command": "prompt", "success": false,
            "error": "Agent is already processing a prompt. Use steer() or followUp() to queue messages, or wait for completion."})
        ]
    );
    assert_eq!(of_type(&h.frames(), "auto_compaction_start").len(), 1);
    h.rt.abort(&ctx(), AbortParams {}).await.unwrap();
}

// ---------------------------------------------------------------------------------------------------------------
// auto-retry

fn overloaded() -> Value {
    json!({"fault": {"status": 529}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_retry_after_a_529_then_success() {
    let h = start(
        json!({"turns": [overloaded(), {"text": ["recovered"]}], "fallback": "error"}),
        json!({"retry": {"baseDelayMs": 1}}),
    );
    h.prompt("hello").await;
    h.wait_for("auto_retry_end", |f| {
        !of_type(f, "auto_retry_end").is_empty()
    })
    .await;
    h.rt.wait_for_idle().await;
    h.wait_for("second agent_end", |f| of_type(f, "agent_end").len() == 2)
        .await;
    let frames = h.frames();
    let t = types(&frames);
    let first_end = t.iter().position(|x| x == "agent_end").unwrap();
    let start_idx = t.iter().position(|x| x == "auto_retry_start").unwrap();
    let retry_end = t.iter().position(|x| x == "auto_retry_end").unwrap();
    let second_start = t.iter().rposition(|x| x == "agent_start").unwrap();
    let last_end = t.iter().rposition(|x| x == "agent_end").unwrap();
    assert_eq!(start_idx, first_end + 1, "{t:?}");
    assert!(
        second_start > start_idx && retry_end > second_start && retry_end < last_end,
        "{t:?}"
    );
    // auto_retry_end follows the successful message_end directly.
    assert_eq!(t[retry_end - 1], "message_end");
    let start_frame = &frames[start_idx];
    assert_eq!(start_frame["attempt"], 1);
    assert_eq!(start_frame["maxAttempts"], 3);
    assert_eq!(start_frame["delayMs"], 1);
    assert!(
        start_frame["errorMessage"]
            .as_str()
            .unwrap()
            .starts_with("529 "),
        "{start_frame}"
    );
    let keys: Vec<&str> = start_frame
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["type", "attempt", "maxAttempts", "delayMs", "errorMessage"]
    );
    assert_eq!(
        frames[retry_end],
        json!({"type": "auto_retry_end", "success": true, "attempt": 1})
    );

    // The error reply left the context but stays in the file.
    assert_eq!(roles(&h.messages()), ["user", "assistant"]);
    assert_eq!(h.messages()[1]["stopReason"], "stop");
    let entries = file_entries(&h.rt.session_file().unwrap());
    assert!(
        entries
            .iter()
            .any(|e| e["message"]["stopReason"] == "error")
    );
    let state = h.state().await;
    assert!(!state.is_retrying);
    assert_eq!(state.retry_attempt, 0);
}

/// Over real HTTP (the mock LLM on loopback, Anthropic wire): the provider's own transport retries come first;
/// when they are used up the 529 reply is retried by the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_retry_over_http_after_the_transport_retries() {
    let fault = || json!({"fault": {"status": 529, "retryAfterMs": 1}});
    let scenario: Scenario =
        serde_json::from_value(json!({"turns": [fault(), fault(), fault(), {"text": ["over ", "http"]}], "fallback": "error"}))
            .unwrap();
    let mock = dreb_mock_llm::MockLlm::start(scenario).unwrap();
    let agent_dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        agent_dir.path().join("settings.json"),
        json!({"retry": {"baseDelayMs": 1}}).to_string(),
    )
    .unwrap();
    let models = json!({"providers": {"mock": {"baseUrl": mock.base_url(), "api": "anthropic-messages", "apiKey": "test-key",
        "models": [{"id": "mock-model"}]}}});
    std::fs::write(agent_dir.path().join("models.json"), models.to_string()).unwrap();
    let sink = Arc::new(SpecSink::default());
    let options = RuntimeOptions {
        cwd: cwd.path().to_path_buf(),
        agent_dir: agent_dir.path().to_path_buf(),
        provider: Some("mock".into()),
        model: Some("mock-model".into()),
        session_dir: Some(agent_dir.path().join("sessions")),
        ..Default::default()
    };
    let rt = Runtime::start(options, sink.clone()).unwrap();
    rt.prompt(
        &ctx(),
        PromptParams {
            message: "hello".into(),
            images: None,
            streaming_behavior: None,
        },
    )
    .await
    .unwrap();
    until("auto_retry_end", || {
        !of_type(&sink.frames(), "auto_retry_end").is_empty()
    })
    .await;
    rt.wait_for_idle().await;
    let frames = sink.frames();
    let start = &of_type(&frames, "auto_retry_start")[0];
    assert_eq!(start["attempt"], 1);
    assert_eq!(
        start["errorMessage"],
        "529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"
    );
    assert_eq!(
        of_type(&frames, "auto_retry_end")[0],
        json!({"type": "auto_retry_end", "success": true, "attempt": 1})
    );
    assert_eq!(
        mock.requests().len(),
        4,
        "3 transport attempts, then the session retry"
    );
    let last = rt.agent().messages().last().cloned().unwrap();
    assert_eq!(
        serde_json::to_value(&last).unwrap()["content"][0]["text"],
        "over http"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_max_delay_setting_caps_server_requested_delays() {
    // settings retry.maxDelayMs reaches the providers: a 2 s server delay against a 1 s cap fails at once, and the
    // session-level retry (which matches "retry delay") takes over.
    let scenario: Scenario = serde_json::from_value(json!({"turns": [
        {"fault": {"status": 529, "retryAfterMs": 2000}},
        {"text": ["after the session retry"]}
    ], "fallback": "error"}))
    .unwrap();
    let mock = dreb_mock_llm::MockLlm::start(scenario).unwrap();
    let agent_dir = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(
        agent_dir.path().join("settings.json"),
        json!({"retry": {"baseDelayMs": 1, "maxDelayMs": 1000}}).to_string(),
    )
    .unwrap();
    let models = json!({"providers": {"mock": {"baseUrl": mock.base_url(), "api": "anthropic-messages", "apiKey": "test-key",
        "models": [{"id": "mock-model"}]}}});
    std::fs::write(agent_dir.path().join("models.json"), models.to_string()).unwrap();
    let sink = Arc::new(SpecSink::default());
    let options = RuntimeOptions {
        cwd: cwd.path().to_path_buf(),
        agent_dir: agent_dir.path().to_path_buf(),
        provider: Some("mock".into()),
        model: Some("mock-model".into()),
        session_dir: Some(agent_dir.path().join("sessions")),
        ..Default::default()
    };
    let rt = Runtime::start(options, sink.clone()).unwrap();
    rt.prompt(
        &ctx(),
        PromptParams {
            message: "hello".into(),
            images: None,
            streaming_behavior: None,
        },
    )
    .await
    .unwrap();
    until("auto_retry_end", || {
        !of_type(&sink.frames(), "auto_retry_end").is_empty()
    })
    .await;
    rt.wait_for_idle().await;
    let frames = sink.frames();
    let start = &of_type(&frames, "auto_retry_start")[0];
    let error = start["errorMessage"].as_str().unwrap();
    assert!(
        error.starts_with("Server requested 2s retry delay (max: 1s). 529 "),
        "{error}"
    );
    assert_eq!(
        mock.requests().len(),
        2,
        "no transport retry, one session retry"
    );
    assert_eq!(
        of_type(&frames, "auto_retry_end")[0],
        json!({"type": "auto_retry_end", "success": true, "attempt": 1})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_retry_gives_up_after_three_attempts() {
    let h = start(
        json!({"turns": [{"repeat": true, "fault": {"status": 529}}], "fallback": "error"}),
        json!({"retry": {"baseDelayMs": 1}}),
    );
    h.prompt("hello").await;
    h.wait_for("auto_retry_end", |f| {
        !of_type(f, "auto_retry_end").is_empty()
    })
    .await;
    h.rt.wait_for_idle().await;
    let frames = h.frames();
    let starts = of_type(&frames, "auto_retry_start");
    let attempts: Vec<(i64, i64)> = starts
        .iter()
        .map(|s| {
            (
                s["attempt"].as_i64().unwrap(),
                s["delayMs"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(attempts, [(1, 1), (2, 2), (3, 4)]);
    let end = &of_type(&frames, "auto_retry_end")[0];
    assert_eq!(end["success"], false);
    assert_eq!(end["attempt"], 3);
    assert!(end["finalError"].as_str().unwrap().starts_with("529 "));
    assert_eq!(of_type(&frames, "agent_end").len(), 4);
    let state = h.state().await;
    assert!(!state.is_retrying);
    assert_eq!(state.retry_attempt, 0);
    // The last failure stays in the context; all four are in the file.
    assert_eq!(roles(&h.messages()), ["user", "assistant"]);
    let errors = file_entries(&h.rt.session_file().unwrap())
        .iter()
        .filter(|e| e["message"]["stopReason"] == "error")
        .count();
    assert_eq!(errors, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_retry_during_the_backoff() {
    let h = start(
        json!({"turns": [overloaded(), {"text": ["never needed"]}], "fallback": "error"}),
        json!({"retry": {"baseDelayMs": 600000}}),
    );
    h.prompt("hello").await;
    h.wait_for("auto_retry_start", |f| {
        !of_type(f, "auto_retry_start").is_empty()
    })
    .await;
    h.rt.wait_for_idle().await;
    let state = h.state().await;
    assert!(state.is_retrying);
    assert_eq!(state.retry_attempt, 1);
    assert_eq!(
        of_type(&h.frames(), "auto_retry_start")[0]["delayMs"],
        600000
    );
    // In the backoff the snapshot shows the persisted branch, failed attempt included.
    let snap =
        h.rt.get_dashboard_snapshot(&ctx(), GetDashboardSnapshotParams {})
            .await
            .unwrap();
    assert_eq!(
        roles(
            serde_json::to_value(&snap.messages)
                .unwrap()
                .as_array()
                .unwrap()
        ),
        ["user", "assistant"]
    );
    assert_eq!(roles(&h.messages()), ["user"]);

    h.rt.abort_retry(&ctx(), AbortRetryParams {}).await.unwrap();
    h.wait_for("auto_retry_end", |f| {
        !of_type(f, "auto_retry_end").is_empty()
    })
    .await;
    assert_eq!(
        of_type(&h.frames(), "auto_retry_end")[0],
        json!({"type": "auto_retry_end", "success": false, "attempt": 1, "finalError": "Retry cancelled"})
    );
    let state = h.state().await;
    assert!(!state.is_retrying);
    assert_eq!(state.retry_attempt, 0);
    assert_eq!(
        of_type(&h.frames(), "agent_start").len(),
        1,
        "no retry run started"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_cancels_the_retry_backoff() {
    let h = start(
        json!({"turns": [overloaded()], "fallback": "error"}),
        json!({"retry": {"baseDelayMs": 600000}}),
    );
    h.prompt("hello").await;
    h.wait_for("auto_retry_start", |f| {
        !of_type(f, "auto_retry_start").is_empty()
    })
    .await;
    h.rt.abort(&ctx(), AbortParams {}).await.unwrap();
    h.wait_for("auto_retry_end", |f| {
        !of_type(f, "auto_retry_end").is_empty()
    })
    .await;
    assert_eq!(
        of_type(&h.frames(), "auto_retry_end")[0]["finalError"],
        "Retry cancelled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_retry_off_leaves_the_error() {
    let h = start(
        json!({"turns": [overloaded()], "fallback": "error"}),
        json!({}),
    );
    h.rt.set_auto_retry(&ctx(), SetAutoRetryParams { enabled: false })
        .await
        .unwrap();
    h.prompt("hello").await;
    h.rt.wait_for_idle().await;
    assert!(of_type(&h.frames(), "auto_retry_start").is_empty());
    assert_eq!(roles(&h.messages()), ["user", "assistant"]);
}

// ---------------------------------------------------------------------------------------------------------------
// bash

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_when_idle_records_the_execution_at_once_without_events() {
    let h = start(
        json!({"turns": [{"text": ["hi"]}], "fallback": "error"}),
        json!({"shellCommandPrefix": "GREETING=prefixed"}),
    );
    // The session file is written from the first assistant reply on.
    h.prompt("hello").await;
    h.rt.wait_for_idle().await;
    h.sink.clear();
    let result =
        h.rt.bash(
            &ctx(),
            BashParams {
                command: "echo \"$GREETING\"; exit 3".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"output": "prefixed\n", "exitCode": 3, "cancelled": false, "truncated": false})
    );
    assert!(h.frames().is_empty(), "no event for bash: {:?}", h.frames());
    let messages = h.messages();
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "bashExecution");
    assert_eq!(
        last["command"], "echo \"$GREETING\"; exit 3",
        "stored without the prefix"
    );
    assert_eq!(last["exitCode"], 3);
    assert!(last.get("excludeFromContext").is_none());
    let entries = file_entries(&h.rt.session_file().unwrap());
    assert!(
        entries
            .iter()
            .any(|e| e["message"]["role"] == "bashExecution")
    );

    // Runs in the process cwd, not the session cwd.
    let pwd =
        h.rt.bash(
            &ctx(),
            BashParams {
                command: "pwd".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        pwd.output.trim(),
        std::env::current_dir().unwrap().to_string_lossy()
    );
    assert_ne!(pwd.output.trim(), h.cwd.to_string_lossy());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bash_while_streaming_is_deferred_to_the_next_prompt() {
    let h = start(
        json!({"turns": [
            {"firstByteDelayMs": 600000, "text": ["never"]},
            {"repeat": true, "text": ["next"]}
        ], "fallback": "error"}),
        json!({}),
    );
    h.prompt("go").await;
    // The reply is held back, so the run streams until it is aborted.
    h.wait_for("the prompt in the conversation", |f| {
        f.iter().any(|x| x["type"] == "message_end")
    })
    .await;
    let result =
        h.rt.bash(
            &ctx(),
            BashParams {
                command: "echo during".into(),
            },
        )
        .await
        .unwrap();
    assert_eq!(result.output, "during\n");
    assert!(h.rt.agent().is_streaming());
    assert!(!roles(&h.messages()).contains(&"bashExecution".to_string()));
    h.rt.abort(&ctx(), AbortParams {}).await.unwrap();
    assert!(
        !roles(&h.messages()).contains(&"bashExecution".to_string()),
        "not flushed by the run's end"
    );
    let in_file = |h: &Harness| {
        file_entries(&h.rt.session_file().unwrap())
            .iter()
            .any(|e| e["message"]["role"] == "bashExecution")
    };
    assert!(!in_file(&h));
    h.prompt("after").await;
    h.rt.wait_for_idle().await;
    assert_eq!(
        roles(&h.messages()),
        ["user", "assistant", "bashExecution", "user", "assistant"]
    );
    assert!(in_file(&h));
}

fn process_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // A zombie waits for a reaper that may not exist in a container; it is not running.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_bash_kills_the_command_and_its_children() {
    let h = start(json!({"turns": [], "fallback": "error"}), json!({}));
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let command = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
    let rt = h.rt.clone();
    let run = tokio::spawn(async move { rt.bash(&ctx(), BashParams { command }).await });
    until("the child pid", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n'))
    })
    .await;
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!process_gone(pid));
    h.rt.abort_bash(&ctx(), AbortBashParams {}).await.unwrap();
    let result = run.await.unwrap().unwrap();
    assert!(result.cancelled);
    assert_eq!(result.exit_code, None);
    until("the child to be gone", || process_gone(pid)).await;
    let last = h.messages().last().cloned().unwrap();
    assert_eq!(last["role"], "bashExecution");
    assert_eq!(last["cancelled"], true);
    assert!(last.get("exitCode").is_none());
}

// ---------------------------------------------------------------------------------------------------------------
// dashboard snapshot

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_barrier_and_response_go_out_in_one_write() {
    let h = start(
        json!({"turns": [{"repeat": true, "text": ["hi"]}], "fallback": "error"}),
        json!({}),
    );
    h.prompt("hello").await;
    h.rt.wait_for_idle().await;
    h.sink.clear();
    // As the serving layer calls it: the response goes through the session's outbox.
    let id = RequestContext::attached(
        Some(json!("snapshot-7")),
        "get_dashboard_snapshot",
        h.rt.outbox(),
        None,
    );
    let snap =
        h.rt.get_dashboard_snapshot(&id, GetDashboardSnapshotParams {})
            .await
            .unwrap();
    assert!(id.reply.is_sent(), "the snapshot writes its own response");
    assert_eq!(snap.snapshot_id, "snapshot-7");
    assert!(!snap.state.is_streaming);
    assert_eq!(snap.messages.len(), 2);
    assert!(snap.background_agents.is_empty() && snap.pending_extension_ui_requests.is_empty());

    // Barrier and response, adjacent: nothing else was written while the outbox was held.
    let lines = h.frames();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[0],
        json!({"type": "dashboard_snapshot_barrier", "snapshotId": "snapshot-7"})
    );
    assert_eq!(lines[1]["id"], "snapshot-7");
    assert_eq!(lines[1]["type"], "response");
    assert_eq!(lines[1]["command"], "get_dashboard_snapshot");
    assert_eq!(lines[1]["success"], true);
    assert_eq!(lines[1]["data"], serde_json::to_value(&snap).unwrap());

    // Without an id: a fresh UUID, repeated by the barrier.
    h.sink.clear();
    let no_id = RequestContext::attached(None, "get_dashboard_snapshot", h.rt.outbox(), None);
    let snap =
        h.rt.get_dashboard_snapshot(&no_id, GetDashboardSnapshotParams {})
            .await
            .unwrap();
    assert_eq!(snap.snapshot_id.len(), 36);
    let frames = h.frames();
    assert_eq!(frames[0]["snapshotId"], snap.snapshot_id.as_str());
    assert!(frames[1].get("id").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_while_streaming_has_the_live_messages() {
    let h = start(
        json!({"turns": [{"firstByteDelayMs": 600000, "text": ["never"]}], "fallback": "error"}),
        json!({}),
    );
    h.prompt("hello").await;
    h.wait_for("the prompt in the conversation", |f| {
        f.iter().any(|x| x["type"] == "message_end")
    })
    .await;
    let snap =
        h.rt.get_dashboard_snapshot(&ctx(), GetDashboardSnapshotParams {})
            .await
            .unwrap();
    assert!(snap.state.is_streaming);
    // Live: the prompt is there although nothing was persisted yet (the file starts with the first reply).
    assert_eq!(
        roles(
            serde_json::to_value(&snap.messages)
                .unwrap()
                .as_array()
                .unwrap()
        ),
        ["user"]
    );
    h.rt.abort(&ctx(), AbortParams {}).await.unwrap();
}

// ---------------------------------------------------------------------------------------------------------------
// export_html

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_html_writes_the_page_to_the_given_path() {
    let h = start(
        json!({"turns": [{"text": ["exported reply"]}], "fallback": "error"}),
        json!({}),
    );
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("session.html");
    let params = || ExportHtmlParams {
        output_path: Some(target.to_string_lossy().into_owned()),
    };
    let err = h.rt.export_html(&ctx(), params()).await.unwrap_err();
    assert_eq!(
        err.wire_text(),
        "Command failed: Nothing to export yet - start a conversation first"
    );
    h.prompt("please export").await;
    h.rt.wait_for_idle().await;
    let result = h.rt.export_html(&ctx(), params()).await.unwrap();
    assert_eq!(result.path, target.to_string_lossy());
    let html = std::fs::read_to_string(&target).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("exported reply") && html.contains("please export"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_html_refuses_an_in_memory_session() {
    let h = start_with(json!({"turns": [], "fallback": "error"}), json!({}), true);
    let err =
        h.rt.export_html(&ctx(), ExportHtmlParams { output_path: None })
            .await
            .unwrap_err();
    assert_eq!(
        err.wire_text(),
        "Command failed: Cannot export in-memory session to HTML"
    );
}

// ---------------------------------------------------------------------------------------------------------------
// naming an unnamed session (the reference's tab title in RPC mode)

/// Two tool calls, then a reply; the naming call (recognised by its request) answers with a quoted title.
fn naming_scenario() -> Value {
    json!({"turns": [
        {"when": {"lastUserContains": "What the user asked:"}, "text": ["\"Fix the login ", "timeout\"\n"]},
        {"toolCalls": [{"name": "ls", "arguments": {}}]},
        {"toolCalls": [{"name": "ls", "arguments": {}}]},
        {"text": ["done"]}
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unnamed_session_is_named_after_its_tool_calls() {
    let h = start(naming_scenario(), json!({"tabTitle": {"triggerAfter": 2}}));
    h.prompt("Why does the login time out?").await;
    h.wait_for("the session is named", |frames| {
        frames.iter().any(|f| f["type"] == "session_name_changed")
    })
    .await;
    let named = of_type(&h.frames(), "session_name_changed");
    assert_eq!(
        named,
        [json!({"type": "session_name_changed", "name": "Fix the login timeout"})]
    );
    h.rt.wait_for_run_end(Duration::from_secs(30)).await;
    assert_eq!(
        h.state().await.session_name.as_deref(),
        Some("Fix the login timeout")
    );
    let file = h.rt.session_file().unwrap();
    let infos: Vec<Value> = file_entries(&file)
        .into_iter()
        .filter(|e| e["type"] == "session_info")
        .collect();
    assert_eq!(infos.len(), 1, "{infos:?}");
    assert_eq!(infos[0]["name"], "Fix the login timeout");
    // The run itself went on as scripted: the naming call took its own turn.
    let last = h.messages().last().cloned().unwrap();
    assert_eq!(last["content"][0]["text"], "done", "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naming_is_off_when_settings_say_so_and_never_renames() {
    // Turned off.
    let off = start(
        naming_scenario(),
        json!({"tabTitle": {"enabled": false, "triggerAfter": 2}}),
    );
    off.prompt("Why does the login time out?").await;
    off.rt.wait_for_run_end(Duration::from_secs(30)).await;
    // Named by the host before the threshold: the name stays.
    let named = start(naming_scenario(), json!({"tabTitle": {"triggerAfter": 2}}));
    named
        .rt
        .set_session_name(
            &ctx(),
            SetSessionNameParams {
                name: "Mine".into(),
            },
        )
        .await
        .unwrap();
    named.prompt("Why does the login time out?").await;
    named.rt.wait_for_run_end(Duration::from_secs(30)).await;
    // Print mode (`cli`) never names its session.
    let print = start_configured(
        naming_scenario(),
        json!({"tabTitle": {"triggerAfter": 2}}),
        |o| o.ui = Some("cli".into()),
    );
    print.prompt("Why does the login time out?").await;
    print.rt.wait_for_run_end(Duration::from_secs(30)).await;
    assert_eq!(print.state().await.session_name, None);
    for h in [&off, &named, &print] {
        let frames = h.frames();
        assert!(
            of_type(&frames, "session_name_changed")
                .iter()
                .all(|f| f["name"] == "Mine"),
            "{:?}",
            of_type(&frames, "session_name_changed")
        );
        let last = h.messages().last().cloned().unwrap();
        assert_eq!(last["content"][0]["text"], "done", "{last}");
        // No naming call was made: the turn scripted for it is still there for a prompt that matches it.
        h.prompt("What the user asked: nothing, this checks the script")
            .await;
        h.rt.wait_for_run_end(Duration::from_secs(30)).await;
        let last = h.messages().last().cloned().unwrap();
        assert_eq!(
            last["content"][0]["text"], "\"Fix the login timeout\"\n",
            "{last}"
        );
    }
    assert_eq!(named.state().await.session_name.as_deref(), Some("Mine"));
    assert_eq!(off.state().await.session_name, None);
}
