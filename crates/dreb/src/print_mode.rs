//! `-p/--print` and `--mode json`: one-shot runs on the same runtime. The prompts (piped stdin, `@file` arguments
//! and the first positional message make the first, as in the reference; each other message one more) are sent one
//! after another; `--mode json` writes the session
//! header and then every event as a JSON line on stdout, text mode writes the final reply's text. The exit code is 1
//! when the last reply failed or was aborted (its error on stderr), else 0.

use dreb_agent::AgentMessage;
use dreb_ai::{AssistantBlock, StopReason};
use dreb_protocol::PromptParams;
use dreb_protocol::handlers::PromptingHandler as _;
use dreb_protocol::support::RequestContext;
use dreb_runtime::Runtime;

use crate::file_args::OneShotInput;

/// What a one-shot run writes on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintFormat {
    /// The last reply's text.
    Text,
    /// The session header, then every event, as JSON lines.
    Json,
}

/// Discards every frame (text mode prints only the final reply).
pub struct Discard;

impl dreb_protocol::FrameSink for Discard {
    fn send_frame(&self, _frame: Vec<u8>) {}
}

/// The prompts of a run: the first with the `@file` images (see [`crate::file_args`]), the others text only.
pub fn prompts(input: OneShotInput) -> Vec<PromptParams> {
    let first = input.first.map(|(message, images)| PromptParams {
        message,
        images: (!images.is_empty()).then_some(images),
        streaming_behavior: None,
    });
    first
        .into_iter()
        .chain(input.rest.into_iter().map(|message| PromptParams {
            message,
            images: None,
            streaming_behavior: None,
        }))
        .collect()
}

/// Send each prompt and wait for the session to settle; the exit code.
pub async fn run(runtime: &Runtime, format: PrintFormat, prompts: Vec<PromptParams>) -> i32 {
    for params in prompts {
        if let Err(e) = runtime
            .prompt(&RequestContext::detached(None), params)
            .await
        {
            eprintln!("Error: {e}");
            return 1;
        }
        runtime.wait_until_settled().await;
    }
    let messages = runtime.agent().messages();
    let last = messages.iter().rev().find_map(|m| match m {
        AgentMessage::Assistant(a) => Some(a),
        _ => None,
    });
    let Some(last) = last else {
        return 0;
    };
    if matches!(last.stop_reason, StopReason::Error | StopReason::Aborted) {
        let text = last.error_message.clone().unwrap_or_else(|| {
            format!(
                "Request {}",
                if last.stop_reason == StopReason::Error {
                    "error"
                } else {
                    "aborted"
                }
            )
        });
        eprintln!("Error: {text}");
        return 1;
    }
    if format == PrintFormat::Text {
        for block in &last.content {
            if let AssistantBlock::Text(t) = block {
                println!("{}", t.text);
            }
        }
    }
    0
}
