//! The summary requests and the compaction result.

use dreb_ai::{
    Context, LlmClient, Message, Model, StopReason, StreamOptions, ThinkingLevel, UserContent,
    UserMessage,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::CompactionSettings;
use crate::prepare::CompactionPreparation;
use crate::prompts;
use crate::serialize::serialize_conversation;

/// Why a summary could not be produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryError {
    /// The request was cancelled (`abort_compaction`, `abort`).
    Aborted,
    /// The provider failed; the text is ready to show (`Summarization failed: ...`).
    Failed(String),
}

impl std::fmt::Display for SummaryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SummaryError::Aborted => f.write_str("Compaction cancelled"),
            SummaryError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SummaryError {}

/// The model and credentials a summary is generated with (the session's current model).
#[derive(Clone)]
pub struct SummaryLlm<'a> {
    pub client: &'a dyn LlmClient,
    pub model: &'a Model,
    pub api_key: Option<String>,
    pub cancel: CancellationToken,
}

/// The `compact` command's result (`CompactionResult` on the wire) and the fields of the `compaction` entry;
/// `details` is `{readFiles, modifiedFiles}`.
pub use dreb_types::CompactionResult;

/// One non-streaming completion: the text of the final assistant message.
pub(crate) async fn complete(
    llm: &SummaryLlm<'_>,
    system_prompt: &str,
    user_text: String,
    max_tokens: u64,
    thinking: ThinkingLevel,
) -> Result<String, SummaryError> {
    let context = Context {
        system_prompt: Some(system_prompt.to_string()),
        messages: vec![Message::User(UserMessage {
            role: Default::default(),
            content: UserContent::Text(user_text),
            timestamp: now_ms(),
        })],
        tools: Vec::new(),
    };
    let options = StreamOptions {
        api_key: llm.api_key.clone(),
        max_tokens: Some(max_tokens),
        thinking,
        cancel: llm.cancel.clone(),
        ..Default::default()
    };
    match dreb_ai::final_message(llm.client.stream(llm.model, &context, options)).await {
        Some(Ok(message)) => return Ok(message.text()),
        Some(Err(error)) => {
            if error.stop_reason == StopReason::Aborted || llm.cancel.is_cancelled() {
                return Err(SummaryError::Aborted);
            }
            let reason = error
                .error_message
                .unwrap_or_else(|| "unknown error".to_string());
            return Err(SummaryError::Failed(format!(
                "Summarization failed: {reason}"
            )));
        }
        None => {}
    }
    if llm.cancel.is_cancelled() {
        Err(SummaryError::Aborted)
    } else {
        Err(SummaryError::Failed(
            "Summarization failed: the stream ended without a result".to_string(),
        ))
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn with_focus(instructions: &str, custom_instructions: Option<&str>) -> String {
    match custom_instructions.map(str::trim).filter(|c| !c.is_empty()) {
        Some(focus) => format!("{instructions}\n\nAdditional focus: {focus}"),
        None => instructions.to_string(),
    }
}

/// Summarise `messages` (optionally updating `previous_summary`).
pub async fn generate_summary(
    llm: &SummaryLlm<'_>,
    messages: &[Value],
    previous_summary: Option<&str>,
    custom_instructions: Option<&str>,
    settings: &CompactionSettings,
) -> Result<String, SummaryError> {
    let instructions = if previous_summary.is_some() {
        prompts::UPDATE_INSTRUCTIONS
    } else {
        prompts::SUMMARY_INSTRUCTIONS
    };
    let mut prompt = format!(
        "<conversation>\n{}\n</conversation>\n\n",
        serialize_conversation(messages)
    );
    if let Some(prev) = previous_summary {
        prompt.push_str(&format!(
            "<previous-summary>\n{prev}\n</previous-summary>\n\n"
        ));
    }
    prompt.push_str(&with_focus(instructions, custom_instructions));
    let max_tokens = settings.reserve_tokens * 8 / 10;
    let thinking = if llm.model.reasoning {
        ThinkingLevel::High
    } else {
        ThinkingLevel::Off
    };
    complete(llm, prompts::SYSTEM_PROMPT, prompt, max_tokens, thinking).await
}

async fn generate_turn_prefix_summary(
    llm: &SummaryLlm<'_>,
    messages: &[Value],
    settings: &CompactionSettings,
) -> Result<String, SummaryError> {
    let prompt = format!(
        "<conversation>\n{}\n</conversation>\n\n{}",
        serialize_conversation(messages),
        prompts::TURN_PREFIX_INSTRUCTIONS
    );
    complete(
        llm,
        prompts::SYSTEM_PROMPT,
        prompt,
        settings.reserve_tokens / 2,
        ThinkingLevel::Off,
    )
    .await
}

/// Run a prepared compaction: the summary request(s) and the result to store as a `compaction` entry.
pub async fn compact(
    prep: &CompactionPreparation,
    llm: &SummaryLlm<'_>,
    custom_instructions: Option<&str>,
    settings: &CompactionSettings,
) -> Result<CompactionResult, SummaryError> {
    let previous = prep.previous_summary.as_deref();
    let mut summary = if prep.is_split_turn && !prep.turn_prefix_messages.is_empty() {
        let history = async {
            if prep.messages_to_summarize.is_empty() {
                // Nothing new before the turn: carry the previous summary forward rather than dropping it.
                Ok(previous.unwrap_or(prompts::NO_PRIOR_HISTORY).to_string())
            } else {
                generate_summary(
                    llm,
                    &prep.messages_to_summarize,
                    previous,
                    custom_instructions,
                    settings,
                )
                .await
            }
        };
        let prefix = generate_turn_prefix_summary(llm, &prep.turn_prefix_messages, settings);
        let (history, prefix) = futures::join!(history, prefix);
        format!("{}{}{}", history?, prompts::SPLIT_TURN_SEPARATOR, prefix?)
    } else {
        generate_summary(
            llm,
            &prep.messages_to_summarize,
            previous,
            custom_instructions,
            settings,
        )
        .await?
    };
    summary.push_str(&prep.file_ops.summary_suffix());
    Ok(CompactionResult {
        summary,
        first_kept_entry_id: prep.first_kept_entry_id.clone(),
        tokens_before: i64::try_from(prep.tokens_before).unwrap_or(i64::MAX),
        details: Some(prep.file_ops.details()),
    })
}
