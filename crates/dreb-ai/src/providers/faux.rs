//! The `faux` provider: **offline and scripted**. It never touches the network and needs no API key; it plays a
//! [`Scenario`](crate::scenario::Scenario) turn by turn, so `dreb --mode rpc --provider faux` works anywhere.
//!
//! The default scenario answers every prompt with a short text, one real `ls` tool call on the working directory,
//! and — once the tool result is back — a final answer. Set `DREB_FAUX_SCENARIO=<file.json>` to play another
//! scenario (same format as the mock LLM server).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cost::{calculate_cost, tokens};
use crate::output::{Output, ProviderError, ProviderResult};
use crate::scenario::{Reply, RequestSummary, Scenario, ScenarioPlayer, ScriptedStop};
use crate::types::{Context, Message, StopReason, ThinkingContent};

/// The scenario `faux` plays unless told otherwise.
pub fn default_scenario() -> Scenario {
    serde_json::from_str(
        r#"{
          "turns": [
            { "when": { "afterToolResult": true }, "repeat": true,
              "text": ["Those are the files ", "in the working directory. ", "(This reply comes from the offline faux provider.)"] },
            { "repeat": true,
              "text": ["Let me look at ", "the working directory."],
              "toolCalls": [{ "name": "ls", "arguments": { "path": "." } }] }
          ],
          "fallback": "error"
        }"#,
    )
    .expect("built-in faux scenario is valid")
}

/// Loads a scenario file; errors name the file.
pub fn load_scenario(path: &std::path::Path) -> Result<Scenario, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("Failed to read faux scenario {}: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("Invalid faux scenario {}: {e}", path.display()))
}

/// What a scenario sees of a context.
pub fn summarize(ctx: &Context) -> RequestSummary {
    let last_user_text = ctx
        .messages
        .iter()
        .rev()
        .find_map(|m| {
            if let Message::User(u) = m {
                Some(u.content.text())
            } else {
                None
            }
        })
        .unwrap_or_default();
    RequestSummary {
        last_user_text,
        last_is_tool_result: matches!(ctx.messages.last(), Some(Message::ToolResult(_))),
    }
}

/// Shared scenario state of one `Providers` instance.
#[derive(Clone)]
pub(crate) struct FauxState {
    player: Arc<Mutex<Result<ScenarioPlayer, String>>>,
    counter: Arc<AtomicU64>,
}

impl FauxState {
    pub(crate) fn new(scenario: Result<Scenario, String>) -> Self {
        FauxState {
            player: Arc::new(Mutex::new(scenario.map(ScenarioPlayer::new))),
            counter: Arc::new(AtomicU64::new(0)),
        }
    }

    pub(crate) fn from_env() -> Self {
        match std::env::var_os("DREB_FAUX_SCENARIO") {
            Some(p) => Self::new(load_scenario(std::path::Path::new(&p))),
            None => Self::new(Ok(default_scenario())),
        }
    }
}

pub(crate) async fn run(out: &mut Output, ctx: &Context, state: &FauxState) -> ProviderResult {
    let n = state.counter.fetch_add(1, Ordering::Relaxed) + 1;
    let reply = {
        let mut guard = state.player.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_mut() {
            Ok(p) => p.next(&summarize(ctx)),
            Err(e) => return Err(ProviderError::Message(e.clone())),
        }
    };
    let turn = match reply {
        Reply::Turn(t) => t,
        Reply::Exhausted => return Err(ProviderError::msg("500 faux scenario exhausted")),
    };
    let sleep = |ms: u64| tokio::time::sleep(Duration::from_millis(ms));
    if turn.first_byte_delay_ms > 0 {
        out.wait(sleep(turn.first_byte_delay_ms)).await?;
    }
    if let Some(f) = &turn.fault {
        let (kind, message) = f.kind();
        let body = f.body.clone().unwrap_or_else(|| {
            serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
                .to_string()
        });
        return Err(ProviderError::Message(format!("{} {}", f.status, body)));
    }
    out.start();
    out.msg.response_id = Some(
        turn.response_id
            .clone()
            .unwrap_or_else(|| format!("faux-{n}")),
    );
    let usage = turn.usage();
    out.msg.usage.input = tokens(usage.input);
    out.msg.usage.cache_read = tokens(usage.cache_read);
    out.msg.usage.cache_write = tokens(usage.cache_write);
    let mut deltas = 0usize;
    let cut = turn.cut_after;
    macro_rules! step {
        () => {
            if turn.delta_delay_ms > 0 {
                out.wait(sleep(turn.delta_delay_ms)).await?;
            } else {
                // Unpaced: still hand each event over before making the next, so a slow consumer holds this
                // provider back (as a socket would) instead of every partial copy piling up here.
                out.wait(std::future::ready(())).await?;
            }
            if cut.is_some_and(|c| deltas >= c) {
                return Err(ProviderError::msg(
                    "Stream ended without message_delta — connection likely dropped",
                ));
            }
            deltas += 1;
        };
    }
    if !turn.thinking.is_empty() {
        let i = out.thinking_start(ThinkingContent {
            thinking: String::new(),
            thinking_signature: turn.thinking_signature.clone(),
            redacted: None,
            ..Default::default()
        });
        for d in &turn.thinking {
            step!();
            out.thinking_delta(i, d);
        }
        out.thinking_end(i);
    }
    if !turn.text.is_empty() {
        let i = out.text_start();
        for d in &turn.text {
            step!();
            out.text_delta(i, d);
        }
        out.text_end(i);
    }
    for (k, call) in turn.tool_calls.iter().enumerate() {
        let id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("faux_call_{n}_{k}"));
        let i = out.toolcall_start(id, call.name.clone(), Default::default());
        for piece in call.argument_chunks() {
            step!();
            out.toolcall_delta(i, &piece);
        }
        out.toolcall_end(i);
    }
    if cut.is_some_and(|c| deltas >= c) {
        return Err(ProviderError::msg(
            "Stream ended without message_delta — connection likely dropped",
        ));
    }
    let u = &mut out.msg.usage;
    u.output = tokens(usage.output.unwrap_or(deltas as u64));
    u.total_tokens = u.input + u.output + u.cache_read + u.cache_write;
    calculate_cost(&out.model, &mut out.msg.usage);
    out.msg.stop_reason = match turn.stop_reason() {
        ScriptedStop::Stop => StopReason::Stop,
        ScriptedStop::Length => StopReason::Length,
        ScriptedStop::ToolUse => StopReason::ToolUse,
    };
    Ok(())
}
