//! Summary generation against a scripted LLM client, checked against the reference's recorded entries.

use std::sync::Mutex;

use dreb_ai::*;
use dreb_compaction::*;
use futures::stream;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Replies with the next scripted outcome and records every request.
#[derive(Default)]
struct ScriptedClient {
    replies: Mutex<Vec<Result<String, String>>>,
    requests: Mutex<Vec<(Context, StreamOptions)>>,
}

impl ScriptedClient {
    fn new(replies: Vec<Result<&str, &str>>) -> Self {
        let replies = replies
            .into_iter()
            .rev()
            .map(|r| r.map(str::to_string).map_err(str::to_string))
            .collect();
        ScriptedClient {
            replies: Mutex::new(replies),
            requests: Mutex::default(),
        }
    }
}

impl LlmClient for ScriptedClient {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantEventStream {
        self.requests
            .lock()
            .unwrap()
            .push((context.clone(), options.clone()));
        let mut msg = AssistantMessage::empty(model, 0);
        let reply = self
            .replies
            .lock()
            .unwrap()
            .pop()
            .expect("unexpected request");
        if options.cancel.is_cancelled() {
            msg.stop_reason = StopReason::Aborted;
            msg.error_message = Some("Request was aborted".into());
            return Box::pin(stream::iter([AssistantMessageEvent::Error {
                reason: ErrorReason::Aborted,
                error: msg,
            }]));
        }
        let last = match reply {
            Ok(text) => {
                msg.content.push(AssistantBlock::Text(TextContent {
                    text,
                    text_signature: None,
                    ..Default::default()
                }));
                AssistantMessageEvent::Done {
                    reason: DoneReason::Stop,
                    message: msg.clone(),
                }
            }
            Err(e) => {
                msg.stop_reason = StopReason::Error;
                msg.error_message = Some(e);
                AssistantMessageEvent::Error {
                    reason: ErrorReason::Error,
                    error: msg.clone(),
                }
            }
        };
        Box::pin(stream::iter([
            AssistantMessageEvent::Start {
                partial: AssistantMessage::empty(model, 0),
            },
            last,
        ]))
    }
}

fn model(reasoning: bool) -> Model {
    serde_json::from_value(json!({
        "id": "mock-model", "name": "Mock", "api": "openai-completions", "provider": "mock",
        "baseUrl": "http://127.0.0.1:1/v1", "reasoning": reasoning, "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000, "maxTokens": 16384
    }))
    .unwrap()
}

fn load(jsonl: &str) -> Vec<Value> {
    jsonl
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn branch(entries: &[Value], leaf: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cur = Some(leaf.to_string());
    while let Some(id) = cur {
        let e = entries.iter().find(|e| e["id"] == id.as_str()).unwrap();
        cur = e["parentId"].as_str().map(str::to_string);
        out.push(e.clone());
    }
    out.reverse();
    out
}

fn user_text(ctx: &Context) -> String {
    match &ctx.messages[0] {
        Message::User(u) => u.content.text(),
        other => panic!("expected a user message, got {other:?}"),
    }
}

#[tokio::test]
async fn compaction_reproduces_the_reference_entry_of_fixture_d() {
    let entries = load(include_str!("fixtures/d-branched-compacted.jsonl"));
    let recorded = entries
        .iter()
        .find(|e| e["type"] == "compaction")
        .unwrap()
        .clone();
    let settings = CompactionSettings {
        keep_recent_tokens: 8,
        ..Default::default()
    };
    let prep = prepare_compaction(&branch(&entries, "2a423e29"), &settings).unwrap();

    let client = ScriptedClient::new(vec![Ok(recorded["summary"].as_str().unwrap())]);
    let m = model(false);
    let llm = SummaryLlm {
        client: &client,
        model: &m,
        api_key: Some("k".into()),
        cancel: CancellationToken::new(),
    };
    let result = compact(&prep, &llm, Some("Focus on the answers"), &settings)
        .await
        .unwrap();

    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({
            "summary": recorded["summary"], "firstKeptEntryId": recorded["firstKeptEntryId"],
            "tokensBefore": recorded["tokensBefore"], "details": recorded["details"],
        })
    );

    let requests = client.requests.lock().unwrap();
    assert_eq!(requests.len(), 1);
    let (ctx, opts) = &requests[0];
    assert!(
        ctx.system_prompt
            .as_deref()
            .unwrap()
            .contains("Do NOT continue the conversation")
    );
    assert!(ctx.tools.is_empty());
    let text = user_text(ctx);
    assert!(text.starts_with(
        "<conversation>\n[User]: Reply with just: gamma\n\n[Assistant]: gamma\n</conversation>"
    ));
    assert!(text.ends_with("Additional focus: Focus on the answers"));
    assert_eq!(opts.max_tokens, Some(13107));
    assert_eq!(opts.thinking, ThinkingLevel::Off);
    assert_eq!(opts.api_key.as_deref(), Some("k"));
}

#[tokio::test]
async fn second_compaction_updates_the_previous_summary_with_high_reasoning() {
    let entries = load(include_str!("fixtures/d-branched-compacted.jsonl"));
    let settings = CompactionSettings {
        keep_recent_tokens: 3,
        ..Default::default()
    };
    let prep = prepare_compaction(&branch(&entries, "e5e15a27"), &settings).unwrap();
    assert!(!prep.is_split_turn);
    let client = ScriptedClient::new(vec![Ok("updated")]);
    let m = model(true);
    let llm = SummaryLlm {
        client: &client,
        model: &m,
        api_key: None,
        cancel: CancellationToken::new(),
    };
    let result = compact(&prep, &llm, None, &settings).await.unwrap();
    assert_eq!(result.summary, "updated");
    {
        let requests = client.requests.lock().unwrap();
        let text = user_text(&requests[0].0);
        assert!(text.contains("<previous-summary>\n## Goal: answer short one-word questions."));
        assert_eq!(requests[0].1.thinking, ThinkingLevel::High);
    }

    // Cutting inside the last turn with nothing new before it keeps the previous summary as the history part.
    let settings = CompactionSettings {
        keep_recent_tokens: 1,
        ..Default::default()
    };
    let prep = prepare_compaction(&branch(&entries, "e5e15a27"), &settings).unwrap();
    assert!(prep.is_split_turn && prep.messages_to_summarize.is_empty());
    let client = ScriptedClient::new(vec![Ok("PREFIX")]);
    let llm = SummaryLlm {
        client: &client,
        model: &m,
        api_key: None,
        cancel: CancellationToken::new(),
    };
    let result = compact(&prep, &llm, None, &settings).await.unwrap();
    assert!(
        result
            .summary
            .starts_with("## Goal: answer short one-word questions.")
    );
    assert!(
        result
            .summary
            .ends_with("**Turn Context (split turn):**\n\nPREFIX")
    );
}

#[tokio::test]
async fn split_turn_summarises_history_and_prefix_separately() {
    let msg = |id: &str, parent: Option<&str>, m: Value| json!({"type":"message","id":id,"parentId":parent,"timestamp":"2026-01-01T00:00:00.000Z","message":m});
    let path = vec![
        msg(
            "u0",
            None,
            json!({"role":"user","content":"earlier request","timestamp":0}),
        ),
        msg(
            "a0",
            Some("u0"),
            json!({"role":"assistant","content":[{"type":"text","text":"done earlier"}],"stopReason":"stop"}),
        ),
        msg(
            "u1",
            Some("a0"),
            json!({"role":"user","content":"now edit things","timestamp":0}),
        ),
        msg(
            "a1",
            Some("u1"),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"big.rs"}}],"stopReason":"toolUse"}),
        ),
        msg(
            "t1",
            Some("a1"),
            json!({"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"z".repeat(800)}],"isError":false}),
        ),
        msg(
            "a2",
            Some("t1"),
            json!({"role":"assistant","content":[{"type":"toolCall","id":"c2","name":"write","arguments":{"path":"out.rs"}}],"stopReason":"toolUse"}),
        ),
        msg(
            "t2",
            Some("a2"),
            json!({"role":"toolResult","toolCallId":"c2","toolName":"write","content":[{"type":"text","text":"ok"}],"isError":false}),
        ),
    ];
    let settings = CompactionSettings {
        keep_recent_tokens: 50,
        ..Default::default()
    };
    let prep = prepare_compaction(&path, &settings).unwrap();
    assert!(prep.is_split_turn);
    assert_eq!(prep.first_kept_entry_id, "a2");

    let client = ScriptedClient::new(vec![Ok("HISTORY"), Ok("PREFIX")]);
    let m = model(false);
    let llm = SummaryLlm {
        client: &client,
        model: &m,
        api_key: None,
        cancel: CancellationToken::new(),
    };
    let result = compact(&prep, &llm, None, &settings).await.unwrap();
    assert_eq!(
        result.summary,
        "HISTORY\n\n---\n\n**Turn Context (split turn):**\n\nPREFIX\n\n<read-files>\nbig.rs\n</read-files>"
    );
    assert_eq!(
        result.details,
        Some(json!({"readFiles": ["big.rs"], "modifiedFiles": []}))
    );
    let requests = client.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].1.max_tokens, Some(8192));
}

#[tokio::test]
async fn provider_failure_and_abort_are_reported() {
    let entries = load(include_str!("fixtures/d-branched-compacted.jsonl"));
    let settings = CompactionSettings {
        keep_recent_tokens: 8,
        ..Default::default()
    };
    let prep = prepare_compaction(&branch(&entries, "2a423e29"), &settings).unwrap();
    let m = model(false);

    let client = ScriptedClient::new(vec![Err("500 Internal Server Error")]);
    let llm = SummaryLlm {
        client: &client,
        model: &m,
        api_key: None,
        cancel: CancellationToken::new(),
    };
    let err = compact(&prep, &llm, None, &settings).await.unwrap_err();
    assert_eq!(
        err,
        SummaryError::Failed("Summarization failed: 500 Internal Server Error".into())
    );

    let client = ScriptedClient::new(vec![Ok("never")]);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let llm = SummaryLlm {
        client: &client,
        model: &m,
        api_key: None,
        cancel,
    };
    assert_eq!(
        compact(&prep, &llm, None, &settings).await.unwrap_err(),
        SummaryError::Aborted
    );
}

#[tokio::test]
async fn branch_summary_reproduces_the_reference_entry_of_fixture_f() {
    let entries = load(include_str!("fixtures/f-branch-summary.jsonl"));
    let recorded = entries
        .iter()
        .find(|e| e["type"] == "branch_summary")
        .unwrap()
        .clone();
    let lookup = |id: &str| entries.iter().find(|e| e["id"] == id);
    // The reference navigated from leaf b2fd8c7f to user entry be8243d0; the summary hangs off its parent.
    let abandoned = collect_branch_entries(lookup, Some("b2fd8c7f"), "be8243d0");
    let ids: Vec<_> = abandoned
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["b2fd8c7f"]);
    assert_eq!(recorded["fromId"], "ff445428");

    let prep = prepare_branch_summary(&abandoned, 128000 - 16384);
    let client = ScriptedClient::new(vec![Ok("The abandoned branch asked for two and got two.")]);
    let m = model(false);
    let llm = SummaryLlm {
        client: &client,
        model: &m,
        api_key: None,
        cancel: CancellationToken::new(),
    };
    let custom = "[[deltas=1]][[text=The abandoned branch asked for two and got two.]]";
    let summary = generate_branch_summary(&prep, &llm, Some(custom), false)
        .await
        .unwrap();
    assert_eq!(summary.summary, recorded["summary"].as_str().unwrap());
    assert_eq!(summary.details, recorded["details"]);

    let requests = client.requests.lock().unwrap();
    assert!(user_text(&requests[0].0).ends_with(&format!("Additional focus: {custom}")));
    assert_eq!(requests[0].1.max_tokens, Some(2048));
}

#[test]
fn branch_budget_keeps_newest_messages_first() {
    let msg = |id: &str, text: String| json!({"type":"message","id":id,"message":{"role":"user","content":text}});
    let entries = vec![
        msg("1", "a".repeat(400)),
        msg("2", "b".repeat(40)),
        msg("3", "c".repeat(40)),
    ];
    let prep = prepare_branch_summary(&entries, 25);
    let texts: Vec<_> = prep
        .messages
        .iter()
        .map(|m| m["content"].as_str().unwrap().chars().next().unwrap())
        .collect();
    assert_eq!(texts, ['b', 'c']);
    assert_eq!(prep.total_tokens, 20);
}
