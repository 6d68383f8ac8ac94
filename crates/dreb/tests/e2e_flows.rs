//! End-to-end flows through the real binary and the mock LLM over HTTP: auto-retry after a 529 (all four wires,
//! giving up, abort_retry), manual, automatic and overflow compaction (all four wires' overflow errors, file lists,
//! abort_compaction), `ask_user` dialogs (answered, timed out, cancelled, aborted, malformed, one at a time, settled
//! at shutdown), the permission gate, a follow-up during a tool call, and commands sent right after `agent_end`.
//! Settings and models come from the temp agent dir, exactly as a host would set them up.

mod common;

use common::{Dreb, Env, Frame, is_response, read_jsonl};
use dreb_mock_llm::Scenario;
use serde_json::{Value, json};

const MODELS: &str = "models-all-wires.json";

fn scenario(v: Value) -> Scenario {
    serde_json::from_value(v).expect("scenario")
}

fn text_of(message: &Value) -> String {
    message["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect()
}

fn of_type(frames: &[Frame], t: &str) -> Vec<Frame> {
    frames.iter().filter(|f| f["type"] == t).cloned().collect()
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn index_of(frames: &[Frame], t: &str) -> usize {
    frames
        .iter()
        .position(|f| f["type"] == t)
        .unwrap_or_else(|| panic!("no {t} in {frames:#?}"))
}

/// Sends `cmd` and returns its (successful) response; events read meanwhile stay in `dreb.seen`.
fn ok_response(dreb: &mut Dreb, cmd: Value) -> Value {
    dreb.send(&cmd);
    let r = dreb
        .read_until(|f| is_response(f) && f["id"] == cmd["id"])
        .pop()
        .unwrap();
    assert_eq!(r["success"], true, "{r}");
    r
}

/// The prompt `id` got exactly one response among `frames`, a success. (Not necessarily the first frame: see
/// `the_prompt_acknowledgement_comes_before_agent_start`.)
fn assert_prompt_accepted(frames: &[Frame], id: &str) {
    let responses: Vec<&Frame> = frames
        .iter()
        .filter(|f| is_response(f) && f["id"] == id)
        .collect();
    assert_eq!(
        responses,
        [&json!({"id": id, "type": "response", "command": "prompt", "success": true})],
        "{frames:#?}"
    );
}

fn session_file(dreb: &mut Dreb) -> std::path::PathBuf {
    let state = ok_response(dreb, json!({"id": "state", "type": "get_state"}));
    state["data"]["sessionFile"].as_str().unwrap().into()
}

/// Final assistant messages of the whole run (`message_end` frames with role assistant).
fn assistant_ends(frames: &[Frame]) -> Vec<Value> {
    of_type(frames, "message_end")
        .into_iter()
        .map(|f| f["message"].clone())
        .filter(|m| m["role"] == "assistant")
        .collect()
}

// ---------------------------------------------------------------------------------------------------------------
// auto-retry

/// The mock answers 529 three times (the provider's own transport retries use them up), then streams "recovered":
/// the session retries once, with the reference events around the second run.
fn auto_retry_after_529(provider: &str, model: &str) {
    let fault = || json!({"fault": {"status": 529, "retryAfterMs": 1}});
    let env = Env::with_setup(
        MODELS,
        scenario(
            json!({"turns": [fault(), fault(), fault(), {"text": ["recov", "ered"]}], "fallback": "error"}),
        ),
        &json!({"retry": {"baseDelayMs": 1}}),
    );
    let mut dreb = env.spawn_raw(
        &["--mode", "rpc", "--provider", provider, "--model", model],
        &[],
    );
    let first = dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "hello"}));
    assert_prompt_accepted(&first, "p1");
    let failed = assistant_ends(&first);
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0]["stopReason"], "error");
    let rest = dreb.read_until(|f| f["type"] == "agent_end");

    // agent_end of the failed run, then auto_retry_start, a second run, auto_retry_end before its agent_end.
    let start = &rest[0];
    assert_eq!(start["type"], "auto_retry_start", "{rest:#?}");
    assert_eq!(
        keys(start),
        ["type", "attempt", "maxAttempts", "delayMs", "errorMessage"]
    );
    assert_eq!(start["attempt"], 1);
    assert_eq!(start["maxAttempts"], 3);
    assert_eq!(start["delayMs"], 1);
    let error = start["errorMessage"].as_str().unwrap();
    // Each wire words it like its SDK (Google: the JSON body), but all carry the status and the reason.
    assert!(
        error.contains("529") && error.contains("Overloaded"),
        "{error}"
    );
    assert_eq!(error, failed[0]["errorMessage"].as_str().unwrap());
    assert_eq!(rest[1]["type"], "agent_start", "{rest:#?}");
    let retry_end = index_of(&rest, "auto_retry_end");
    assert_eq!(
        rest[retry_end],
        json!({"type": "auto_retry_end", "success": true, "attempt": 1})
    );
    assert_eq!(rest[retry_end - 1]["type"], "message_end");
    assert_eq!(text_of(&rest[retry_end - 1]["message"]), "recovered");
    assert!(
        retry_end < rest.len() - 1,
        "auto_retry_end precedes agent_end"
    );
    // The retry run adds only the good reply; the failed one left the context.
    let end = rest.last().unwrap();
    assert_eq!(end["messages"].as_array().unwrap().len(), 1, "{end:#}");
    let messages = ok_response(&mut dreb, json!({"id": "m1", "type": "get_messages"}));
    let context = messages["data"]["messages"].as_array().unwrap();
    let roles: Vec<&str> = context
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"], "{context:#?}");
    assert_eq!(context[1]["stopReason"], "stop");

    let state = ok_response(&mut dreb, json!({"id": "s1", "type": "get_state"}));
    assert_eq!(state["data"]["isRetrying"], false);
    // The failed attempt stays in the session file.
    let entries = read_jsonl(std::path::Path::new(
        state["data"]["sessionFile"].as_str().unwrap(),
    ));
    assert!(
        entries
            .iter()
            .any(|e| e["message"]["stopReason"] == "error")
    );
    assert_eq!(
        env.mock.requests().len(),
        4,
        "3 transport attempts + 1 retry"
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn auto_retry_after_a_529_over_anthropic_messages() {
    auto_retry_after_529("mock-anthropic", "mock-claude");
}

#[test]
fn auto_retry_after_a_529_over_openai_completions() {
    auto_retry_after_529("mock", "mock-model");
}

#[test]
fn auto_retry_after_a_529_over_openai_responses() {
    auto_retry_after_529("mock-responses", "mock-gpt");
}

#[test]
fn auto_retry_after_a_529_over_google_generative_ai() {
    auto_retry_after_529("mock-google", "mock-gemini");
}

/// Reads until `agent_end` has been seen `runs` times in all and a frame of type `last` arrived.
fn read_runs_and(dreb: &mut Dreb, runs: usize, last: &str) -> Vec<Frame> {
    let mut seen_last = false;
    let mut frames = Vec::new();
    while !(seen_last && of_type(&dreb.seen, "agent_end").len() >= runs) {
        let f = dreb.next_frame().expect("EOF");
        seen_last |= f["type"] == last;
        frames.push(f);
    }
    frames
}

#[test]
fn auto_retry_gives_up_after_three_attempts() {
    let env = Env::with_setup(
        MODELS,
        scenario(
            json!({"turns": [{"repeat": true, "fault": {"status": 529, "retryAfterMs": 1}}], "fallback": "error"}),
        ),
        &json!({"retry": {"baseDelayMs": 1}}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "hello"}));
    read_runs_and(&mut dreb, 4, "auto_retry_end");
    let starts: Vec<(i64, i64, i64)> = of_type(&dreb.seen, "auto_retry_start")
        .iter()
        .map(|s| {
            (
                s["attempt"].as_i64().unwrap(),
                s["maxAttempts"].as_i64().unwrap(),
                s["delayMs"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(starts, [(1, 3, 1), (2, 3, 2), (3, 3, 4)]);
    let ends = of_type(&dreb.seen, "auto_retry_end");
    assert_eq!(ends.len(), 1);
    assert_eq!(keys(&ends[0]), ["type", "success", "attempt", "finalError"]);
    assert_eq!(ends[0]["success"], false);
    assert_eq!(ends[0]["attempt"], 3);
    assert!(
        ends[0]["finalError"].as_str().unwrap().starts_with("529"),
        "{}",
        ends[0]
    );
    assert_eq!(of_type(&dreb.seen, "agent_start").len(), 4);
    let state = ok_response(&mut dreb, json!({"id": "s1", "type": "get_state"}));
    assert_eq!(state["data"]["isRetrying"], false);
    // The last failure stays in the context; all four are in the file.
    let messages = ok_response(&mut dreb, json!({"id": "m1", "type": "get_messages"}));
    let context = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(context.len(), 2, "{context:#?}");
    assert_eq!(context[1]["stopReason"], "error");
    let file = session_file(&mut dreb);
    let errors = read_jsonl(&file)
        .iter()
        .filter(|e| e["message"]["stopReason"] == "error")
        .count();
    assert_eq!(errors, 4);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn abort_retry_during_the_backoff() {
    let env = Env::with_setup(
        MODELS,
        scenario(
            json!({"turns": [{"repeat": true, "fault": {"status": 529, "retryAfterMs": 1}}], "fallback": "error"}),
        ),
        &json!({"retry": {"baseDelayMs": 600000}}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "hello"}));
    let start = dreb
        .read_until(|f| f["type"] == "auto_retry_start")
        .pop()
        .unwrap();
    assert_eq!(start["delayMs"], 600000);
    let state = ok_response(&mut dreb, json!({"id": "s1", "type": "get_state"}));
    assert_eq!(state["data"]["isRetrying"], true);
    assert_eq!(state["data"]["retryAttempt"], 1);
    dreb.send(&json!({"id": "ar", "type": "abort_retry"}));
    let frames = dreb.read_until(|f| f["type"] == "auto_retry_end");
    let mut frames = frames;
    if !frames.iter().any(|f| f["id"] == "ar") {
        frames.extend(dreb.read_until(|f| f["id"] == "ar"));
    }
    assert_eq!(
        frames.iter().find(|f| f["id"] == "ar").unwrap(),
        &json!({"id": "ar", "type": "response", "command": "abort_retry", "success": true})
    );
    assert_eq!(
        of_type(&frames, "auto_retry_end"),
        vec![
            json!({"type": "auto_retry_end", "success": false, "attempt": 1, "finalError": "Retry cancelled"})
        ]
    );
    let state = ok_response(&mut dreb, json!({"id": "s2", "type": "get_state"}));
    assert_eq!(state["data"]["isRetrying"], false);
    assert_eq!(state["data"]["retryAttempt"], 0);
    assert_eq!(of_type(&dreb.seen, "agent_start").len(), 1, "no retry run");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// compaction

/// The summary request is recognised by the `<conversation>` block the compactor sends.
fn summary_turn(text: &str) -> Value {
    json!({"when": {"lastUserContains": "<conversation>"}, "repeat": true, "text": [text]})
}

#[test]
fn compact_command_answers_the_result_and_writes_the_entry() {
    let env = Env::with_setup(
        MODELS,
        scenario(json!({"turns": [
            summary_turn("## Goal\nsay hi"),
            {"repeat": true, "text": ["hello ", "there"]}
        ], "fallback": "error"})),
        &json!({"compaction": {"keepRecentTokens": 1}}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "first question"}));
    dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "second question"}));
    let before = dreb.seen.len();
    let compact = ok_response(
        &mut dreb,
        json!({"id": "c1", "type": "compact", "customInstructions": "Focus on greetings"}),
    );
    assert_eq!(compact["command"], "compact");
    let result = &compact["data"];
    assert_eq!(
        keys(result),
        ["summary", "firstKeptEntryId", "tokensBefore", "details"]
    );
    assert!(
        result["summary"]
            .as_str()
            .unwrap()
            .starts_with("## Goal\nsay hi"),
        "{result}\nrequests: {:#?}\nframes: {:#?}",
        env.mock
            .requests()
            .iter()
            .map(|r| r.body["messages"].clone())
            .collect::<Vec<_>>(),
        dreb.seen
    );
    assert!(result["tokensBefore"].as_i64().unwrap() > 0);
    assert_eq!(
        result["details"],
        json!({"readFiles": [], "modifiedFiles": []})
    );
    // Manual compaction is answered, not announced.
    assert_eq!(
        dreb.seen.len(),
        before + 1,
        "only the response: {:#?}",
        &dreb.seen[before..]
    );

    // keepRecentTokens 1 splits the last turn: the history and the turn's beginning are summarised in two
    // requests over HTTP (in either order), with the custom instructions on the history summary.
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 4);
    let summaries: Vec<String> = requests[2..].iter().map(|r| r.body.to_string()).collect();
    assert!(summaries.iter().all(|s| s.contains("<conversation>")));
    assert!(
        summaries
            .iter()
            .any(|s| s.contains("first question") && s.contains("Focus on greetings")),
        "{summaries:#?}"
    );
    assert!(
        summaries
            .iter()
            .any(|s| s.contains("second question") && !s.contains("first question")),
        "{summaries:#?}"
    );

    let file = session_file(&mut dreb);
    let entries = read_jsonl(&file);
    let compactions: Vec<&Value> = entries
        .iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    assert_eq!(compactions.len(), 1, "{entries:#?}");
    assert_eq!(compactions[0]["summary"], result["summary"]);
    assert_eq!(
        compactions[0]["firstKeptEntryId"],
        result["firstKeptEntryId"]
    );
    assert_eq!(compactions[0]["tokensBefore"], result["tokensBefore"]);
    assert!(
        entries
            .iter()
            .any(|e| e["id"] == result["firstKeptEntryId"]),
        "the kept entry is in the file"
    );

    // Compacting again right away: the leaf is the compaction.
    dreb.send(&json!({"id": "c2", "type": "compact"}));
    let again = dreb.read_until(|f| f["id"] == "c2").pop().unwrap();
    assert_eq!(again["success"], false, "{again}");
    assert!(
        again["error"]
            .as_str()
            .unwrap()
            .contains("Already compacted"),
        "{again}"
    );

    // The live context starts with the summary, and the next LLM call carries it.
    let messages = ok_response(&mut dreb, json!({"id": "m1", "type": "get_messages"}));
    assert_eq!(messages["data"]["messages"][0]["role"], "compactionSummary");
    dreb.exchange(&json!({"id": "p3", "type": "prompt", "message": "third question"}));
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 5);
    let after = requests[4].body.to_string();
    assert!(after.contains("say hi") && after.contains("third question"));
    assert!(!after.contains("first question"), "compacted away: {after}");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn compaction_details_list_the_files_the_tools_touched() {
    let env = Env::with_setup(
        MODELS,
        scenario(json!({"turns": [
            summary_turn("## Goal\nfiles"),
            {"when": {"lastUserContains": "work on files", "afterToolResult": false}, "toolCalls": [
                {"name": "read", "arguments": {"path": "notes.txt"}},
                {"name": "write", "arguments": {"path": "out.txt", "content": "written\n"}}
            ]},
            {"when": {"afterToolResult": true}, "text": ["files done"]},
            {"repeat": true, "text": ["ok"]}
        ], "fallback": "error"})),
        &json!({"compaction": {"keepRecentTokens": 1}}),
    );
    std::fs::write(env.cwd().join("notes.txt"), "some notes\n").unwrap();
    let mut dreb = env.spawn(&[]);
    let run = dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "work on files"}));
    let ends = of_type(&run, "tool_execution_end");
    assert_eq!(ends.len(), 2);
    assert!(ends.iter().all(|e| e["isError"] == false), "{ends:#?}");
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("out.txt")).unwrap(),
        "written\n"
    );
    dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "anything else"}));
    let compact = ok_response(&mut dreb, json!({"id": "c1", "type": "compact"}));
    assert_eq!(
        compact["data"]["details"],
        json!({"readFiles": ["notes.txt"], "modifiedFiles": ["out.txt"]})
    );
    // The summary text ends with the same lists.
    let summary = compact["data"]["summary"].as_str().unwrap();
    assert!(
        summary.ends_with(
            "\n\n<read-files>\nnotes.txt\n</read-files>\n\n<modified-files>\nout.txt\n</modified-files>"
        ),
        "{summary}"
    );
    let file = session_file(&mut dreb);
    let entries = read_jsonl(&file);
    let entry = entries.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(entry["details"], compact["data"]["details"]);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn auto_compaction_on_a_small_context_window() {
    // mock-small: contextWindow 20000; the reserve (16384 by default) is capped at a quarter of the window → compaction
    // above 15000 context tokens.
    let env = Env::with_setup(
        MODELS,
        scenario(json!({"turns": [
            summary_turn("## Goal\nauto"),
            {"text": ["big"], "usage": {"input": 15100, "output": 5}}
        ], "fallback": "error"})),
        &json!({"compaction": {"keepRecentTokens": 1}}),
    );
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-small",
        ],
        &[],
    );
    let run = dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "fill the context"}));
    assert_prompt_accepted(&run, "p1");
    let after = dreb.read_until(|f| f["type"] == "auto_compaction_end");
    assert_eq!(
        after[0],
        json!({"type": "auto_compaction_start", "reason": "threshold"}),
        "auto_compaction_start follows agent_end: {after:#?}"
    );
    let end = after.last().unwrap();
    assert_eq!(keys(end), ["type", "result", "aborted", "willRetry"]);
    assert_eq!(end["aborted"], false);
    assert_eq!(end["willRetry"], false);
    assert!(
        end["result"]["summary"]
            .as_str()
            .unwrap()
            .contains("## Goal\nauto"),
        "{end}"
    );
    assert!(end["result"]["tokensBefore"].as_i64().unwrap() > 0);

    let state = ok_response(&mut dreb, json!({"id": "s1", "type": "get_state"}));
    assert_eq!(state["data"]["isCompacting"], false);
    let entries = read_jsonl(std::path::Path::new(
        state["data"]["sessionFile"].as_str().unwrap(),
    ));
    let compaction = entries
        .iter()
        .find(|e| e["type"] == "compaction")
        .expect("compaction entry");
    assert_eq!(compaction["summary"], end["result"]["summary"]);
    let messages = ok_response(&mut dreb, json!({"id": "m1", "type": "get_messages"}));
    assert_eq!(messages["data"]["messages"][0]["role"], "compactionSummary");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

/// The provider's 400 body goes through the wire's own error formatting before the overflow detector sees it.
fn context_overflow_compacts_and_retries(provider: &str, model: &str, body: Value) {
    let overflow = json!({"fault": {"status": 400, "body": body.to_string()}});
    let env = Env::with_setup(
        MODELS,
        scenario(json!({"turns": [
            summary_turn("## Goal\noverflow"),
            {"text": ["earlier answer"]},
            overflow,
            {"text": ["after ", "compaction"]}
        ], "fallback": "error"})),
        &json!({"compaction": {"keepRecentTokens": 1}, "retry": {"enabled": false}}),
    );
    let mut dreb = env.spawn_raw(
        &["--mode", "rpc", "--provider", provider, "--model", model],
        &[],
    );
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "first"}));
    let failed = dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "second"}));
    let error = assistant_ends(&failed).pop().unwrap();
    assert_eq!(error["stopReason"], "error");
    let rest = dreb.read_until(|f| f["type"] == "agent_end");
    assert_eq!(
        rest[0],
        json!({"type": "auto_compaction_start", "reason": "overflow"}),
        "{rest:#?}"
    );
    let end = &rest[index_of(&rest, "auto_compaction_end")];
    assert_eq!(end["willRetry"], true);
    assert_eq!(end["aborted"], false);
    assert!(
        end["result"]["summary"]
            .as_str()
            .unwrap()
            .contains("## Goal\noverflow")
    );
    assert!(index_of(&rest, "auto_compaction_end") < index_of(&rest, "agent_start"));
    assert_eq!(
        text_of(&assistant_ends(&rest).pop().unwrap()),
        "after compaction"
    );
    // The overflow error left the context but stays in the file.
    let messages = ok_response(&mut dreb, json!({"id": "m1", "type": "get_messages"}));
    let context = messages["data"]["messages"].as_array().unwrap();
    assert_eq!(context[0]["role"], "compactionSummary");
    assert!(
        !context.iter().any(|m| m["stopReason"] == "error"),
        "{context:#?}"
    );
    let file = session_file(&mut dreb);
    assert!(
        read_jsonl(&file)
            .iter()
            .any(|e| e["message"]["stopReason"] == "error")
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn context_overflow_over_anthropic_messages() {
    context_overflow_compacts_and_retries(
        "mock-anthropic",
        "mock-claude",
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 200000 tokens > 199999 maximum"}}),
    );
}

#[test]
fn context_overflow_over_openai_completions() {
    context_overflow_compacts_and_retries(
        "mock",
        "mock-model",
        json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 200000 tokens.", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
    );
}

#[test]
fn context_overflow_over_openai_responses() {
    context_overflow_compacts_and_retries(
        "mock-responses",
        "mock-gpt",
        json!({"error": {"message": "Your input exceeds the context window of this model. Please adjust your input and try again.", "type": "invalid_request_error", "code": "context_length_exceeded"}}),
    );
}

#[test]
fn context_overflow_over_google_generative_ai() {
    context_overflow_compacts_and_retries(
        "mock-google",
        "mock-gemini",
        json!({"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}),
    );
}

#[test]
fn abort_compaction_cancels_a_running_compact() {
    let env = Env::with_setup(
        MODELS,
        scenario(json!({"turns": [
            {"when": {"lastUserContains": "<conversation>"}, "repeat": true, "firstByteDelayMs": 600000, "text": ["never"]},
            {"repeat": true, "text": ["ok"]}
        ], "fallback": "error"})),
        &json!({"compaction": {"keepRecentTokens": 1}}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "hello"}));
    dreb.send(&json!({"id": "c1", "type": "compact"}));
    // isCompacting turns true once the compaction started; no timing involved, only polling the state.
    let mut compacting = false;
    for n in 0..10_000 {
        let state = ok_response(
            &mut dreb,
            json!({"id": format!("s{n}"), "type": "get_state"}),
        );
        if state["data"]["isCompacting"] == true {
            compacting = true;
            break;
        }
    }
    assert!(compacting, "get_state reports isCompacting");
    dreb.send(&json!({"id": "ac", "type": "abort_compaction"}));
    let mut frames = dreb.read_until(|f| f["id"] == "c1");
    if !frames.iter().any(|f| f["id"] == "ac") {
        frames.extend(dreb.read_until(|f| f["id"] == "ac"));
    }
    assert_eq!(
        frames.iter().find(|f| f["id"] == "c1").unwrap(),
        &json!({"id": "c1", "type": "response", "command": "compact", "success": false, "error": "Command failed: Compaction cancelled"})
    );
    assert_eq!(
        frames.iter().find(|f| f["id"] == "ac").unwrap()["success"],
        true
    );
    let state = ok_response(&mut dreb, json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["isCompacting"], false);
    let file = session_file(&mut dreb);
    assert!(!read_jsonl(&file).iter().any(|e| e["type"] == "compaction"));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn set_auto_compaction_off_skips_the_threshold_compaction() {
    let env = Env::with_setup(
        MODELS,
        scenario(json!({"turns": [
            summary_turn("## Goal\nauto"),
            {"repeat": true, "text": ["big"], "usage": {"input": 10000, "output": 5}}
        ], "fallback": "error"})),
        &json!({"compaction": {"keepRecentTokens": 1}}),
    );
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-small",
        ],
        &[],
    );
    ok_response(
        &mut dreb,
        json!({"id": "a1", "type": "set_auto_compaction", "enabled": false}),
    );
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "fill the context"}));
    dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "and again"}));
    let state = ok_response(&mut dreb, json!({"id": "s1", "type": "get_state"}));
    assert_eq!(state["data"]["autoCompactionEnabled"], false);
    assert!(of_type(&dreb.seen, "auto_compaction_start").is_empty());
    assert_eq!(env.mock.requests().len(), 2, "no summary request");
    // The switch is persisted.
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(env.agent_dir().join("settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(settings["compaction"]["enabled"], false, "{settings:#}");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// ask_user dialogs

/// The mock calls `tool` with `args` for the prompt, then says "done" after the tool result (other requests get
/// the reference mock's replies).
fn tool_env(tool: &str, args: Value, settings: Value) -> Env {
    Env::with_setup(
        MODELS,
        scenario(json!({"turns": [
            {"when": {"afterToolResult": false}, "toolCalls": [{"name": tool, "arguments": args}]},
            {"when": {"afterToolResult": true}, "text": ["done"]}
        ]})),
        &settings,
    )
}

fn ask_args(extra: Value) -> Value {
    let mut args =
        json!({"questions": [{"question": "Which database?", "options": ["sqlite", "postgres"]}]});
    if let (Some(a), Value::Object(e)) = (args.as_object_mut(), extra) {
        a.extend(e);
    }
    args
}

/// Prompts and returns the first dialog request.
fn prompt_until_dialog(dreb: &mut Dreb) -> Value {
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "go"}));
    dreb.read_until(|f| f["type"] == "extension_ui_request")
        .pop()
        .unwrap()
}

/// The only `tool_execution_end` seen so far: (result text, isError).
fn tool_end(dreb: &Dreb) -> (String, bool) {
    let ends = of_type(&dreb.seen, "tool_execution_end");
    assert_eq!(ends.len(), 1, "{ends:#?}");
    (text_of(&ends[0]["result"]), ends[0]["isError"] == true)
}

/// Sends a `get_state` and checks it is the very next frame: nothing else (no handled event) came out.
fn assert_quiet(dreb: &mut Dreb) {
    dreb.send(&json!({"id": "quiet", "type": "get_state"}));
    let next = dreb.next_frame().expect("a frame");
    assert_eq!(next["id"], "quiet", "unexpected frame {next:#}");
}

#[test]
fn ask_user_answered_by_the_host() {
    let env = tool_env("ask_user", ask_args(json!({})), json!({}));
    let mut dreb = env.spawn(&[]);
    let request = prompt_until_dialog(&mut dreb);
    let id = request["id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 36, "a uuid: {id}");
    // Exactly the tool's questions; no timeout or expiresAt when none was asked for.
    assert_eq!(
        request,
        json!({"type": "extension_ui_request", "id": id, "method": "ask", "title": "Question",
               "questions": [{"question": "Which database?", "options": ["sqlite", "postgres"]}]})
    );
    // The tool is running while the dialog is open.
    assert!(!of_type(&dreb.seen, "tool_execution_start").is_empty());

    // The pending dialog is listed in the dashboard snapshot exactly as emitted.
    let snap = ok_response(
        &mut dreb,
        json!({"id": "d1", "type": "get_dashboard_snapshot"}),
    );
    assert_eq!(snap["data"]["pendingExtensionUiRequests"], json!([request]));

    dreb.send(&json!({"type": "extension_ui_response", "id": id, "answers": [{"selected": ["sqlite"], "customText": "with WAL"}]}));
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    let handled = of_type(&frames, "extension_ui_response_handled");
    assert_eq!(
        handled,
        vec![json!({"type": "extension_ui_response_handled", "id": id})]
    );
    // Settled before the tool finished.
    assert!(
        index_of(&frames, "extension_ui_response_handled")
            < index_of(&frames, "tool_execution_end")
    );
    let (text, is_error) = tool_end(&dreb);
    assert!(!is_error);
    assert!(
        text.contains("sqlite") && text.contains("with WAL"),
        "{text}"
    );
    assert_eq!(text_of(&assistant_ends(&frames).pop().unwrap()), "done");
    // The answer reached the model.
    let requests = env.mock.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].body.to_string().contains("sqlite"));

    // A second answer for the settled id is ignored.
    dreb.send(&json!({"type": "extension_ui_response", "id": id, "cancelled": true}));
    assert_quiet(&mut dreb);
    let snap = ok_response(
        &mut dreb,
        json!({"id": "d2", "type": "get_dashboard_snapshot"}),
    );
    assert_eq!(snap["data"]["pendingExtensionUiRequests"], json!([]));
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

/// A closed ask stops the run: no second LLM call, no final "done".
fn assert_stopped_without_answer(env: &Env, dreb: &Dreb, frames: &[Frame]) {
    let (text, _) = tool_end(dreb);
    assert_eq!(text, "The questions closed without an answer.");
    assert_eq!(env.mock.requests().len(), 1, "the run was stopped");
    assert!(
        !assistant_ends(frames).iter().any(|m| text_of(m) == "done"),
        "{frames:#?}"
    );
}

#[test]
fn ask_user_times_out() {
    // 5 s is the tool's smallest timeout; the dialog settles itself, no answer is sent.
    let env = tool_env(
        "ask_user",
        ask_args(json!({"timeoutSeconds": 5})),
        json!({}),
    );
    let mut dreb = env.spawn(&[]);
    let request = prompt_until_dialog(&mut dreb);
    let id = request["id"].as_str().unwrap().to_string();
    assert_eq!(request["timeout"], 5000);
    assert!(request["expiresAt"].as_i64().unwrap() > 0, "{request:#}");
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    assert_eq!(
        of_type(&frames, "extension_ui_response_handled"),
        vec![json!({"type": "extension_ui_response_handled", "id": id})]
    );
    assert_stopped_without_answer(&env, &dreb, &frames);
    // A late answer is ignored; the agent still serves.
    dreb.send(
        &json!({"type": "extension_ui_response", "id": id, "answers": [{"selected": ["sqlite"]}]}),
    );
    assert_quiet(&mut dreb);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn ask_user_cancelled_by_the_host() {
    let env = tool_env("ask_user", ask_args(json!({})), json!({}));
    let mut dreb = env.spawn(&[]);
    let id = prompt_until_dialog(&mut dreb)["id"]
        .as_str()
        .unwrap()
        .to_string();
    dreb.send(&json!({"type": "extension_ui_response", "id": id, "cancelled": true}));
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    assert_eq!(
        of_type(&frames, "extension_ui_response_handled"),
        vec![json!({"type": "extension_ui_response_handled", "id": id})]
    );
    assert_stopped_without_answer(&env, &dreb, &frames);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn abort_while_ask_user_is_pending_settles_the_dialog() {
    let env = tool_env("ask_user", ask_args(json!({})), json!({}));
    let mut dreb = env.spawn(&[]);
    let id = prompt_until_dialog(&mut dreb)["id"]
        .as_str()
        .unwrap()
        .to_string();
    dreb.send(&json!({"id": "a1", "type": "abort"}));
    let mut frames = dreb.read_until(|f| f["type"] == "agent_end");
    if !frames.iter().any(|f| f["id"] == "a1") {
        frames.extend(dreb.read_until(|f| f["id"] == "a1"));
    }
    assert_eq!(
        frames.iter().find(|f| f["id"] == "a1").unwrap(),
        &json!({"id": "a1", "type": "response", "command": "abort", "success": true})
    );
    assert_eq!(
        of_type(&frames, "extension_ui_response_handled"),
        vec![json!({"type": "extension_ui_response_handled", "id": id})]
    );
    assert_stopped_without_answer(&env, &dreb, &frames);
    let snap = ok_response(
        &mut dreb,
        json!({"id": "d1", "type": "get_dashboard_snapshot"}),
    );
    assert_eq!(snap["data"]["pendingExtensionUiRequests"], json!([]));
    // The next prompt runs normally.
    let next =
        dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "Reply with just: again"}));
    assert_eq!(text_of(&assistant_ends(&next).pop().unwrap()), "again");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn ask_user_malformed_answer_settles_the_dialog_and_the_run_goes_on() {
    let env = tool_env("ask_user", ask_args(json!({})), json!({}));
    let mut dreb = env.spawn(&[]);
    let id = prompt_until_dialog(&mut dreb)["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A select-style answer to an ask: no `answers` array.
    dreb.send(&json!({"type": "extension_ui_response", "id": id, "value": "sqlite"}));
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    assert_eq!(
        of_type(&frames, "extension_ui_response_handled"),
        vec![json!({"type": "extension_ui_response_handled", "id": id})]
    );
    let (text, _) = tool_end(&dreb);
    assert_eq!(
        text,
        "The questions could not be delivered because the interactive UI or response protocol failed. Continue without this input."
    );
    assert_eq!(text_of(&assistant_ends(&frames).pop().unwrap()), "done");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn ask_user_all_skipped_is_an_answer() {
    let env = tool_env("ask_user", ask_args(json!({})), json!({}));
    let mut dreb = env.spawn(&[]);
    let id = prompt_until_dialog(&mut dreb)["id"]
        .as_str()
        .unwrap()
        .to_string();
    dreb.send(&json!({"type": "extension_ui_response", "id": id, "answers": [{"selected": [], "skipped": true}]}));
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    assert_eq!(of_type(&frames, "extension_ui_response_handled").len(), 1);
    assert_eq!(env.mock.requests().len(), 2, "the run continued");
    assert_eq!(text_of(&assistant_ends(&frames).pop().unwrap()), "done");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

/// A mock whose every prompt gets one reply with two `ask_user` calls ("First?", then "Second?"), then "done".
fn two_asks_env() -> Env {
    let question = |q: &str| json!({"questions": [{"question": q, "options": ["yes", "no"]}]});
    Env::with_setup(
        MODELS,
        scenario(json!({"turns": [
            {"when": {"afterToolResult": false}, "repeat": true, "toolCalls": [
                {"name": "ask_user", "arguments": question("First?")},
                {"name": "ask_user", "arguments": question("Second?")}
            ]},
            {"when": {"afterToolResult": true}, "repeat": true, "text": ["done"]}
        ]})),
        &json!({}),
    )
}

/// Runs one prompt of [`two_asks_env`], answering each ask with its own question; returns the questions in the
/// order they were shown.
fn answer_two_asks(dreb: &mut Dreb, n: usize) -> Vec<String> {
    dreb.send(&json!({"id": format!("p{n}"), "type": "prompt", "message": "go"}));
    let first = dreb
        .read_until(|f| f["type"] == "extension_ui_request")
        .pop()
        .unwrap();
    // The second ask waits: nothing else comes out while the first is open.
    assert_quiet(dreb);
    let q1 = first["questions"][0]["question"]
        .as_str()
        .unwrap()
        .to_string();
    dreb.send(&json!({"type": "extension_ui_response", "id": first["id"], "answers": [{"selected": [], "customText": format!("answer to {q1}")}]}));
    let frames = dreb.read_until(|f| f["type"] == "extension_ui_request");
    let second = frames.last().unwrap().clone();
    let q2 = second["questions"][0]["question"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(q1, q2);
    assert_eq!(
        of_type(&frames, "extension_ui_response_handled"),
        vec![json!({"type": "extension_ui_response_handled", "id": first["id"]})],
        "the first is settled before the second is shown"
    );
    dreb.send(&json!({"type": "extension_ui_response", "id": second["id"], "answers": [{"selected": [], "customText": format!("answer to {q2}")}]}));
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    assert_eq!(of_type(&frames, "extension_ui_response_handled").len(), 1);
    // Each tool result carries the answer to its own question.
    let ends = of_type(&frames, "tool_execution_end");
    let ends: Vec<String> = if ends.len() == 2 {
        ends.iter().map(|e| text_of(&e["result"])).collect()
    } else {
        // The first tool may have finished before the frames read here.
        let all = of_type(&dreb.seen, "tool_execution_end");
        all[all.len() - 2..]
            .iter()
            .map(|e| text_of(&e["result"]))
            .collect()
    };
    for q in ["First?", "Second?"] {
        assert!(
            ends.iter()
                .any(|t| t.contains(q) && t.contains(&format!("answer to {q}"))),
            "{ends:#?}"
        );
    }
    assert_eq!(text_of(&assistant_ends(&frames).pop().unwrap()), "done");
    vec![q1, q2]
}

#[test]
fn two_asks_in_one_reply_are_shown_one_at_a_time() {
    let env = two_asks_env();
    let mut dreb = env.spawn(&[]);
    let mut shown = answer_two_asks(&mut dreb, 0);
    shown.sort();
    assert_eq!(shown, ["First?", "Second?"]);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

/// The reference starts parallel tool calls in order and queues their asks FIFO, so the user sees the questions in
/// the order the model asked them. Repeated, since the order is a race.
#[test]
fn two_asks_in_one_reply_are_shown_in_call_order() {
    let env = two_asks_env();
    let mut dreb = env.spawn(&[]);
    for n in 0..30 {
        assert_eq!(
            answer_two_asks(&mut dreb, n),
            ["First?", "Second?"],
            "prompt {n}"
        );
    }
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn closing_stdin_settles_a_pending_ask() {
    let env = tool_env("ask_user", ask_args(json!({})), json!({}));
    let mut dreb = env.spawn(&[]);
    let id = prompt_until_dialog(&mut dreb)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, rest, stderr) = dreb.finish();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        of_type(&rest, "extension_ui_response_handled"),
        vec![json!({"type": "extension_ui_response_handled", "id": id})],
        "{rest:#?}"
    );
    assert_eq!(env.mock.requests().len(), 1, "no LLM call after shutdown");
}

// ---------------------------------------------------------------------------------------------------------------
// permission gate

/// The gate on, with `timeout_ms` (0: wait for the answer), and a `build` dir for `rm -rf build` to remove.
fn gate_env(command: &str, timeout_ms: u64) -> Env {
    let env = tool_env(
        "bash",
        json!({"command": command}),
        json!({"permissionGate": {"enabled": true, "timeoutMs": timeout_ms}}),
    );
    std::fs::create_dir_all(env.cwd().join("build")).unwrap();
    env
}

#[test]
fn permission_gate_blocks_a_dangerous_command_the_host_refuses() {
    let env = gate_env("rm -rf build", 0);
    let mut dreb = env.spawn(&[]);
    let request = prompt_until_dialog(&mut dreb);
    let id = request["id"].as_str().unwrap().to_string();
    assert_eq!(
        request,
        json!({"type": "extension_ui_request", "id": id, "method": "select",
               "title": "Allow dangerous command?\n\nrm -rf build", "options": ["Allow", "Block"]}),
        "timeoutMs 0: no timeout on the wire"
    );
    dreb.send(&json!({"type": "extension_ui_response", "id": id, "value": "Block"}));
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    assert_eq!(
        of_type(&frames, "extension_ui_response_handled"),
        vec![json!({"type": "extension_ui_response_handled", "id": id})]
    );
    let (text, is_error) = tool_end(&dreb);
    assert!(is_error);
    assert_eq!(
        text,
        "Dangerous command (recursive delete) blocked by the user."
    );
    assert!(env.cwd().join("build").is_dir(), "the command did not run");
    // The refusal is a tool error the model sees; the run goes on.
    assert_eq!(text_of(&assistant_ends(&frames).pop().unwrap()), "done");
    assert!(
        env.mock.requests()[1]
            .body
            .to_string()
            .contains("blocked by the user")
    );
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn permission_gate_blocks_when_the_host_cancels() {
    let env = gate_env("rm -rf build", 0);
    let mut dreb = env.spawn(&[]);
    let id = prompt_until_dialog(&mut dreb)["id"]
        .as_str()
        .unwrap()
        .to_string();
    dreb.send(&json!({"type": "extension_ui_response", "id": id, "cancelled": true}));
    dreb.read_until(|f| f["type"] == "agent_end");
    let (text, is_error) = tool_end(&dreb);
    assert!(is_error);
    // A host's cancel is the user's refusal.
    assert_eq!(
        text,
        "Dangerous command (recursive delete) blocked by the user."
    );
    assert!(env.cwd().join("build").is_dir());
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn permission_gate_blocks_an_unanswered_command_at_its_timeout() {
    let env = gate_env("rm -rf build", 10);
    let mut dreb = env.spawn(&[]);
    let request = prompt_until_dialog(&mut dreb);
    assert_eq!(request["timeout"], 10);
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    assert_eq!(
        of_type(&frames, "extension_ui_response_handled"),
        vec![json!({"type": "extension_ui_response_handled", "id": request["id"]})]
    );
    let (text, is_error) = tool_end(&dreb);
    assert!(is_error);
    assert_eq!(
        text,
        "Dangerous command (recursive delete) blocked: the user did not confirm it."
    );
    assert!(env.cwd().join("build").is_dir());
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn abort_while_the_permission_gate_asks_blocks_the_command() {
    let env = gate_env("rm -rf build", 0);
    let mut dreb = env.spawn(&[]);
    let request = prompt_until_dialog(&mut dreb);
    // The open question is listed in the dashboard snapshot.
    let snap = ok_response(
        &mut dreb,
        json!({"id": "d1", "type": "get_dashboard_snapshot"}),
    );
    assert_eq!(snap["data"]["pendingExtensionUiRequests"], json!([request]));
    dreb.send(&json!({"id": "a1", "type": "abort"}));
    let mut frames = dreb.read_until(|f| f["type"] == "agent_end");
    if !frames.iter().any(|f| f["id"] == "a1") {
        frames.extend(dreb.read_until(|f| f["id"] == "a1"));
    }
    assert_eq!(
        of_type(&frames, "extension_ui_response_handled"),
        vec![json!({"type": "extension_ui_response_handled", "id": request["id"]})]
    );
    let (text, is_error) = tool_end(&dreb);
    assert!(is_error);
    assert_eq!(
        text,
        "Dangerous command (recursive delete) blocked: the user did not confirm it."
    );
    assert!(env.cwd().join("build").is_dir());
    assert_eq!(env.mock.requests().len(), 1, "the run was aborted");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn permission_gate_runs_a_command_the_host_allows() {
    let env = gate_env("rm -rf build && echo removed", 0);
    let mut dreb = env.spawn(&[]);
    let id = prompt_until_dialog(&mut dreb)["id"]
        .as_str()
        .unwrap()
        .to_string();
    dreb.send(&json!({"type": "extension_ui_response", "id": id, "value": "Allow"}));
    dreb.read_until(|f| f["type"] == "agent_end");
    let (text, is_error) = tool_end(&dreb);
    assert!(!is_error, "{text}");
    assert_eq!(text.trim(), "removed");
    assert!(!env.cwd().join("build").exists());
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// follow-up

#[test]
fn follow_up_sent_during_a_tool_call_runs_after_the_reply() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    // The tool waits for a file the test creates once the follow-up was accepted: no timing involved.
    dreb.send(&json!({"id": "p1", "type": "prompt", "message": "Wait [[tool=bash:while [ ! -e go ]; do sleep 0.02; done; echo hi]]"}));
    dreb.read_until(|f| f["type"] == "tool_execution_start");
    let queued = ok_response(
        &mut dreb,
        json!({"id": "p2", "type": "prompt", "message": "Reply with just: later", "streamingBehavior": "followUp"}),
    );
    assert_eq!(
        queued,
        json!({"id": "p2", "type": "response", "command": "prompt", "success": true})
    );
    let state = ok_response(&mut dreb, json!({"id": "s1", "type": "get_state"}));
    assert_eq!(state["data"]["pendingMessageCount"], 1, "{state}");
    std::fs::write(env.cwd().join("go"), "").unwrap();
    let frames = dreb.read_until(|f| f["type"] == "agent_end");
    // One run: the reply to the tool result, then the follow-up and its answer.
    assert!(of_type(&frames, "agent_start").is_empty());
    let end = frames.last().unwrap();
    let messages = end["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "toolResult",
            "assistant",
            "user",
            "assistant"
        ],
        "{messages:#?}"
    );
    assert_eq!(text_of(&messages[3]), "Tool finished; done.");
    assert_eq!(text_of(&messages[4]), "Reply with just: later");
    assert_eq!(text_of(&messages[5]), "later");
    assert_eq!(env.mock.requests().len(), 3);
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

// ---------------------------------------------------------------------------------------------------------------
// idle after agent_end

/// A host that reads `agent_end` treats the agent as idle: the reference clears its streaming flag before it emits
/// `agent_end`, so a command sent at once sees an idle agent. Each test repeats the exchange 200 times, since the
/// window is small; `check` runs right after `agent_end` of run `n`.
fn right_after_agent_end(mut check: impl FnMut(&mut Dreb, usize)) {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    for n in 0..200 {
        dreb.send(&json!({"id": format!("p{n}"), "type": "prompt", "message": format!("Reply with just: r{n}")}));
        dreb.read_until(|f| f["type"] == "agent_end");
        check(&mut dreb, n);
    }
    // Every prompt was accepted (a refused one has a second, failed response).
    let refused: Vec<&Value> = dreb
        .seen
        .iter()
        .filter(|f| is_response(f) && f["success"] == false)
        .collect();
    assert!(refused.is_empty(), "{refused:#?}");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

/// The reply to a command sent right after `agent_end`.
fn answer(dreb: &mut Dreb, cmd: Value) -> Value {
    dreb.send(&cmd);
    dreb.read_until(|f| is_response(f) && f["id"] == cmd["id"])
        .pop()
        .unwrap()
}

#[test]
fn prompts_sent_right_after_agent_end_are_accepted() {
    right_after_agent_end(|_, _| {});
}

#[test]
fn get_state_right_after_agent_end_reports_idle() {
    right_after_agent_end(|dreb, n| {
        let state = answer(dreb, json!({"id": format!("s{n}"), "type": "get_state"}));
        assert_eq!(state["data"]["isStreaming"], false, "after run {n}");
    });
}

#[test]
fn navigate_tree_right_after_agent_end_succeeds() {
    let mut target = None;
    right_after_agent_end(|dreb, n| {
        if target.is_none() {
            let fm = answer(dreb, json!({"id": "fm", "type": "get_fork_messages"}));
            target = Some(fm["data"]["messages"][0]["entryId"].clone());
            return;
        }
        let nav = answer(
            dreb,
            json!({"id": format!("n{n}"), "type": "navigate_tree", "targetId": target}),
        );
        assert_eq!(nav["success"], true, "after run {n}: {nav}");
    });
}

#[test]
fn bash_right_after_agent_end_is_recorded_at_once() {
    right_after_agent_end(|dreb, n| {
        let bash = answer(
            dreb,
            json!({"id": format!("b{n}"), "type": "bash", "command": format!("echo b{n}")}),
        );
        assert_eq!(bash["success"], true, "{bash}");
        let messages = answer(dreb, json!({"id": format!("m{n}"), "type": "get_messages"}));
        let last = messages["data"]["messages"]
            .as_array()
            .unwrap()
            .last()
            .cloned()
            .unwrap();
        assert_eq!(last["role"], "bashExecution", "after run {n}: {last:#}");
        assert_eq!(last["command"], format!("echo b{n}"));
    });
}

/// The reference writes the prompt's acknowledgement one microtask after the command, before the run's first
/// event; hosts and recordings rely on `response` coming before `agent_start`. Repeated, since it is a race.
#[test]
fn the_prompt_acknowledgement_comes_before_agent_start() {
    let env = Env::new();
    let mut dreb = env.spawn(&[]);
    for n in 0..200 {
        dreb.send(&json!({"id": format!("p{n}"), "type": "prompt", "message": format!("Reply with just: r{n}")}));
        let frames = dreb.read_until(|f| f["type"] == "agent_end");
        assert!(
            is_response(&frames[0]) && frames[0]["id"] == format!("p{n}"),
            "prompt {n}: {:#?}",
            &frames[..2]
        );
    }
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn context_usage_is_re_estimated_after_compact() {
    let env = Env::with_setup(
        MODELS,
        scenario(json!({"turns": [
            summary_turn("## Goal\nsay hi"),
            {"repeat": true, "text": ["hello ", "there"], "usage": {"input": 90000}}
        ], "fallback": "error"})),
        &json!({"compaction": {"keepRecentTokens": 1}}),
    );
    let mut dreb = env.spawn(&[]);
    dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "first question"}));
    dreb.exchange(&json!({"id": "p2", "type": "prompt", "message": "second question"}));
    let usage = |dreb: &mut Dreb, id: &str| {
        ok_response(dreb, json!({"id": id, "type": "get_state"}))["data"]["contextUsage"].clone()
    };
    let before = usage(&mut dreb, "s1");
    assert!(before["tokens"].as_i64().unwrap() >= 90000, "{before}");
    ok_response(&mut dreb, json!({"id": "c1", "type": "compact"}));
    // The kept reply's usage counted the context the summary replaced: the figure is an estimate of what is left.
    let after = usage(&mut dreb, "s2");
    let tokens = after["tokens"].as_i64().unwrap();
    assert!(tokens > 0 && tokens < 1000, "{after}");
    assert!(after["percent"].as_f64().unwrap() < before["percent"].as_f64().unwrap());
    let stats = ok_response(&mut dreb, json!({"id": "st", "type": "get_session_stats"}));
    assert_eq!(stats["data"]["contextUsage"]["tokens"], tokens);
    // The next reply measures the context again.
    dreb.exchange(&json!({"id": "p3", "type": "prompt", "message": "third question"}));
    let again = usage(&mut dreb, "s3");
    assert!(again["tokens"].as_i64().unwrap() >= 90000, "{again}");
    let (code, _, _) = dreb.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_small_context_window_does_not_compact_after_every_turn() {
    // mock-small: contextWindow 20000. With the reference's fixed 16384-token reserve, a 10000-token context would
    // compact after every turn; the reserve scaled to the window (5000) leaves it alone.
    let env = Env::with_setup(
        MODELS,
        scenario(json!({"turns": [
            summary_turn("## Goal\nunexpected"),
            {"repeat": true, "text": ["ok"], "usage": {"input": 10000, "output": 5}}
        ], "fallback": "error"})),
        &json!({}),
    );
    let mut dreb = env.spawn_raw(
        &[
            "--mode",
            "rpc",
            "--provider",
            "mock",
            "--model",
            "mock-small",
        ],
        &[],
    );
    for id in ["p1", "p2"] {
        let run = dreb.exchange(&json!({"id": id, "type": "prompt", "message": "a question"}));
        assert_prompt_accepted(&run, id);
        if !run.iter().any(|f| f["type"] == "agent_end") {
            dreb.read_until(|f| f["type"] == "agent_end");
        }
    }
    let state = ok_response(&mut dreb, json!({"id": "s", "type": "get_state"}));
    assert!(state["data"]["contextUsage"]["tokens"].as_i64().unwrap() >= 10000);
    let mut frames = dreb.seen.clone();
    let (code, rest, _) = dreb.finish();
    assert_eq!(code, 0);
    frames.extend(rest);
    let compactions = of_type(&frames, "auto_compaction_start");
    assert!(compactions.is_empty(), "no compaction: {compactions:?}");
}

// ---------------------------------------------------------------------------------------------------------------
// Tool events

#[test]
fn suggest_next_reaches_the_host_with_its_command() {
    let env = tool_env(
        "suggest_next",
        json!({"command": "/skill:mach6-review 42", "summary": "Review the change"}),
        json!({}),
    );
    let mut dreb = env.spawn(&[]);
    let frames = dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "go"}));
    assert_eq!(
        of_type(&frames, "suggest_next"),
        [json!({"type": "suggest_next", "command": "/skill:mach6-review 42"})]
    );
}

#[test]
fn tasks_update_reaches_the_host_and_get_state() {
    let tasks = json!([
        {"id": "inspect", "title": "Inspect the implementation", "status": "completed"},
        {"id": "fix", "title": "Fix the parser", "status": "in_progress"}
    ]);
    let env = tool_env("tasks_update", json!({"tasks": tasks}), json!({}));
    let mut dreb = env.spawn(&[]);
    let frames = dreb.exchange(&json!({"id": "p1", "type": "prompt", "message": "go"}));
    assert_eq!(
        of_type(&frames, "tasks_update"),
        [json!({"type": "tasks_update", "tasks": tasks})]
    );
    let state = dreb.exchange(&json!({"id": "s", "type": "get_state"}));
    assert_eq!(state.last().unwrap()["data"]["tasks"], tasks);
}
