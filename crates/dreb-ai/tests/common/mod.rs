//! Shared helpers: models pointed at the mock server, contexts, and event collection.
#![allow(dead_code)]

use dreb_ai::*;
use dreb_mock_llm::MockLlm;
use futures::StreamExt;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Anthropic,
    OpenAiCompletions,
    OpenAiResponses,
    Google,
}

pub const ALL: [Wire; 4] = [
    Wire::Anthropic,
    Wire::OpenAiCompletions,
    Wire::OpenAiResponses,
    Wire::Google,
];

impl Wire {
    pub fn api(self) -> &'static str {
        match self {
            Wire::Anthropic => api::ANTHROPIC_MESSAGES,
            Wire::OpenAiCompletions => api::OPENAI_COMPLETIONS,
            Wire::OpenAiResponses => api::OPENAI_RESPONSES,
            Wire::Google => api::GOOGLE_GENERATIVE_AI,
        }
    }

    pub fn base_url(self, mock: &MockLlm) -> String {
        match self {
            Wire::Anthropic => mock.base_url(),
            Wire::OpenAiCompletions | Wire::OpenAiResponses => format!("{}/v1", mock.base_url()),
            Wire::Google => format!("{}/v1beta", mock.base_url()),
        }
    }

    /// The path the provider must POST to.
    pub fn path(self, model_id: &str) -> String {
        match self {
            Wire::Anthropic => "/v1/messages".into(),
            Wire::OpenAiCompletions => "/v1/chat/completions".into(),
            Wire::OpenAiResponses => "/v1/responses".into(),
            Wire::Google => format!("/v1beta/models/{model_id}:streamGenerateContent?alt=sse"),
        }
    }

    /// The terminal event a cut stream misses.
    pub fn missing_terminal(self) -> &'static str {
        match self {
            Wire::Anthropic => "message_delta",
            Wire::OpenAiCompletions => "finish_reason",
            Wire::OpenAiResponses => "response.completed",
            Wire::Google => "finishReason",
        }
    }
}

pub fn model(wire: Wire, mock: &MockLlm, id: &str, reasoning: bool) -> Model {
    Model {
        id: id.into(),
        name: id.into(),
        api: wire.api().into(),
        provider: "test-provider".into(),
        base_url: wire.base_url(mock),
        reasoning,
        input: vec![InputKind::Text, InputKind::Image],
        cost: ModelCost {
            input: dreb_ai::JsNumber(3.0),
            output: dreb_ai::JsNumber(15.0),
            cache_read: dreb_ai::JsNumber(0.3),
            cache_write: dreb_ai::JsNumber(3.75),
        },
        context_window: 200_000,
        max_tokens: 64_000,
        headers: None,
        wire_model_id: None,
        auth_mode: None,
        compat: None,
    }
}

pub fn user(text: &str) -> Message {
    Message::User(UserMessage {
        role: Default::default(),
        content: UserContent::Text(text.into()),
        timestamp: 1,
    })
}

pub fn bash_tool() -> ToolDefinition {
    ToolDefinition {
        name: "bash".into(),
        description: "Run a shell command".into(),
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    }
}

pub fn context(text: &str) -> Context {
    Context {
        system_prompt: Some("You are a test.".into()),
        messages: vec![user(text)],
        tools: vec![bash_tool()],
    }
}

pub fn options(thinking: ThinkingLevel) -> StreamOptions {
    StreamOptions {
        api_key: Some("test-key".into()),
        thinking,
        ..Default::default()
    }
}

pub fn providers() -> Providers {
    Providers::new().with_http_retries(0)
}

pub async fn collect(stream: AssistantEventStream) -> Vec<AssistantMessageEvent> {
    stream.collect().await
}

pub fn kind(e: &AssistantMessageEvent) -> String {
    serde_json::to_value(e).unwrap()["type"]
        .as_str()
        .unwrap()
        .to_string()
}

pub fn kinds(events: &[AssistantMessageEvent]) -> Vec<String> {
    events.iter().map(kind).collect()
}

/// The final message of a `done` event (panics with the events otherwise).
pub fn done(events: &[AssistantMessageEvent]) -> AssistantMessage {
    match events.last() {
        Some(AssistantMessageEvent::Done { message, .. }) => message.clone(),
        other => panic!("expected done, got {other:?}\nall: {:?}", kinds(events)),
    }
}

/// The final message of an `error` event.
pub fn failed(events: &[AssistantMessageEvent]) -> (ErrorReason, AssistantMessage) {
    match events.last() {
        Some(AssistantMessageEvent::Error { reason, error }) => (*reason, error.clone()),
        other => panic!("expected error, got {other:?}\nall: {:?}", kinds(events)),
    }
}

pub fn assert_one_terminal(events: &[AssistantMessageEvent]) {
    let n = events.iter().filter(|e| e.is_terminal()).count();
    assert_eq!(n, 1, "exactly one terminal event: {:?}", kinds(events));
    assert!(events.last().unwrap().is_terminal());
}

pub fn text_deltas(events: &[AssistantMessageEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            AssistantMessageEvent::TextDelta { delta, .. } => Some(delta.clone()),
            _ => None,
        })
        .collect()
}

pub fn scenario(v: Value) -> dreb_mock_llm::Scenario {
    serde_json::from_value(v).expect("valid scenario")
}

/// A tool result message answering `call`.
pub fn tool_result(call: &ToolCall, text: &str) -> Message {
    Message::ToolResult(ToolResultMessage {
        role: Default::default(),
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: vec![UserBlock::Text(TextContent {
            text: text.into(),
            text_signature: None,
            ..Default::default()
        })],
        details: None,
        is_error: false,
        timestamp: 2,
    })
}
