//! Test kit for the loop and the runtime's tests (feature `testing`): a scripted [`LlmClient`], configurable test
//! tools, and helpers to record and redact event sequences.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use dreb_ai::{
    AssistantBlock, AssistantEventStream, AssistantMessage, AssistantMessageEvent, Context,
    DoneReason, ErrorReason, InputKind, LlmClient, Model, ModelCost, StopReason, StreamOptions,
    TextContent, ThinkingContent, ThinkingLevel, ToolCall, ToolDefinition, Usage,
};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::agent::{Agent, now_ms};
use crate::event::AgentEvent;
use crate::llm_call::STREAM_ENDED_WITHOUT_TERMINAL;
use crate::tool::{Tool, ToolError, ToolOutput, ToolUpdateFn};

/// A model for tests: provider `mock`, id `mock-model`, api `openai-completions`, no reasoning, 64k output.
pub fn test_model() -> Model {
    Model {
        id: "mock-model".into(),
        name: "Mock Model".into(),
        api: "openai-completions".into(),
        provider: "mock".into(),
        base_url: "http://127.0.0.1:9/v1".into(),
        reasoning: false,
        input: vec![InputKind::Text],
        cost: ModelCost::default(),
        context_window: 128_000,
        max_tokens: 64_000,
        headers: None,
        wire_model_id: None,
        auth_mode: None,
        compat: None,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Scripted LLM.

#[derive(Debug, Clone)]
enum Step {
    Start,
    TextStart,
    TextDelta(String),
    TextEnd,
    ThinkingStart,
    ThinkingDelta(String),
    ThinkingEnd,
    ToolStart { id: String, name: String },
    ToolDelta(String),
    ToolEnd(Map<String, Value>),
    Usage(Usage),
    Sleep(Duration),
    WaitForCancel,
    Done(Option<DoneReason>),
    Fail(String),
    EndAbruptly,
    Raw(Box<AssistantMessageEvent>),
}

/// One scripted response: a sequence of stream steps, materialised against the requested model when streamed.
/// Every script should end with [`Script::done`], [`Script::fail`], [`Script::drop_connection`] or
/// [`Script::end_abruptly`].
#[derive(Debug, Clone)]
pub struct Script {
    steps: Vec<Step>,
}

impl Default for Script {
    fn default() -> Self {
        Script::new()
    }
}

impl Script {
    /// A response that begins with a `start` event.
    pub fn new() -> Self {
        Script {
            steps: vec![Step::Start],
        }
    }

    /// A response that never sends `start` (e.g. a request rejected up front).
    pub fn without_start() -> Self {
        Script { steps: Vec::new() }
    }

    /// Pre-built events streamed as they are (benchmarks, exotic orders).
    pub fn events(events: Vec<AssistantMessageEvent>) -> Self {
        Script {
            steps: events.into_iter().map(|e| Step::Raw(Box::new(e))).collect(),
        }
    }

    /// The common case: a text answer.
    pub fn reply(text: &str) -> Self {
        Script::new().text(text).done()
    }

    /// A text block streamed word by word.
    pub fn text(self, text: &str) -> Self {
        let deltas: Vec<String> = split_words(text);
        self.text_deltas(&deltas.iter().map(String::as_str).collect::<Vec<_>>())
    }

    pub fn text_deltas(mut self, deltas: &[&str]) -> Self {
        self.steps.push(Step::TextStart);
        self.steps
            .extend(deltas.iter().map(|d| Step::TextDelta((*d).to_owned())));
        self.steps.push(Step::TextEnd);
        self
    }

    pub fn thinking(mut self, text: &str) -> Self {
        self.steps.push(Step::ThinkingStart);
        self.steps
            .extend(split_words(text).into_iter().map(Step::ThinkingDelta));
        self.steps.push(Step::ThinkingEnd);
        self
    }

    /// A tool call whose JSON arguments arrive in two fragments.
    pub fn tool_call(mut self, id: &str, name: &str, args: Value) -> Self {
        let json = args.to_string();
        let mid = json
            .char_indices()
            .map(|(i, _)| i)
            .nth(json.chars().count() / 2)
            .unwrap_or(0);
        self.steps.push(Step::ToolStart {
            id: id.into(),
            name: name.into(),
        });
        self.steps.push(Step::ToolDelta(json[..mid].to_owned()));
        self.steps.push(Step::ToolDelta(json[mid..].to_owned()));
        self.steps
            .push(Step::ToolEnd(args.as_object().cloned().unwrap_or_default()));
        self
    }

    /// A tool call whose JSON arguments arrive in the given fragments (`args` is the parsed result).
    pub fn tool_call_deltas(mut self, id: &str, name: &str, args: Value, deltas: &[&str]) -> Self {
        self.steps.push(Step::ToolStart {
            id: id.into(),
            name: name.into(),
        });
        self.steps
            .extend(deltas.iter().map(|d| Step::ToolDelta((*d).to_owned())));
        self.steps
            .push(Step::ToolEnd(args.as_object().cloned().unwrap_or_default()));
        self
    }

    /// Sets the usage reported from here on.
    pub fn usage(mut self, input: i64, output: i64) -> Self {
        self.steps.push(Step::Usage(Usage {
            input,
            output,
            total_tokens: input + output,
            ..Default::default()
        }));
        self
    }

    /// Pauses the stream (ends early as aborted if cancelled meanwhile).
    pub fn sleep(mut self, d: Duration) -> Self {
        self.steps.push(Step::Sleep(d));
        self
    }

    /// Blocks until the request is cancelled, then ends as aborted ("Request was aborted").
    pub fn wait_for_cancel(mut self) -> Self {
        self.steps.push(Step::WaitForCancel);
        self
    }

    /// Ends with `done`: `toolUse` if the message has tool calls, else `stop`.
    pub fn done(mut self) -> Self {
        self.steps.push(Step::Done(None));
        self
    }

    /// Ends with `done` and the given reason (e.g. `Length`).
    pub fn done_with(mut self, reason: DoneReason) -> Self {
        self.steps.push(Step::Done(Some(reason)));
        self
    }

    /// Ends with an `error` event carrying `message`.
    pub fn fail(mut self, message: &str) -> Self {
        self.steps.push(Step::Fail(message.to_owned()));
        self
    }

    /// Ends with the error a provider reports when the connection drops mid-stream.
    pub fn drop_connection(self) -> Self {
        self.fail(STREAM_ENDED_WITHOUT_TERMINAL)
    }

    /// Ends the stream with no terminal event at all (a broken provider).
    pub fn end_abruptly(mut self) -> Self {
        self.steps.push(Step::EndAbruptly);
        self
    }
}

fn split_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in text.chars() {
        if ch == ' ' && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(ch);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// What the loop sent for one request.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub model_id: String,
    pub context: Context,
    pub api_key: Option<String>,
    pub max_tokens: Option<u64>,
    pub thinking: ThinkingLevel,
}

/// An [`LlmClient`] answering from a queue of [`Script`]s. A request whose token is already cancelled ends as
/// aborted without consuming a script; with the queue empty, a request fails with a clear error.
#[derive(Default)]
pub struct ScriptedLlm {
    scripts: Mutex<VecDeque<Script>>,
    requests: Mutex<Vec<RecordedRequest>>,
}

impl ScriptedLlm {
    pub fn new() -> Arc<Self> {
        Arc::new(ScriptedLlm::default())
    }

    pub fn with_scripts(scripts: impl IntoIterator<Item = Script>) -> Arc<Self> {
        let llm = ScriptedLlm::new();
        for s in scripts {
            llm.push(s);
        }
        llm
    }

    pub fn push(&self, script: Script) {
        self.scripts.lock().unwrap().push_back(script);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub fn remaining(&self) -> usize {
        self.scripts.lock().unwrap().len()
    }
}

impl LlmClient for ScriptedLlm {
    fn stream(
        &self,
        model: &Model,
        context: &Context,
        options: StreamOptions,
    ) -> AssistantEventStream {
        let number = {
            let mut reqs = self.requests.lock().unwrap();
            reqs.push(RecordedRequest {
                model_id: model.id.clone(),
                context: context.clone(),
                api_key: options.api_key.clone(),
                max_tokens: options.max_tokens,
                thinking: options.thinking,
            });
            reqs.len()
        };
        let steps: VecDeque<Step> = if options.cancel.is_cancelled() {
            VecDeque::new()
        } else {
            match self.scripts.lock().unwrap().pop_front() {
                Some(s) => s.steps.into(),
                None => {
                    VecDeque::from([Step::Fail("ScriptedLlm: no scripted response left".into())])
                }
            }
        };
        let mut partial = AssistantMessage::empty(model, now_ms());
        partial.response_id = Some(format!("resp_{number}"));
        let state = Player {
            steps,
            partial,
            cancel: options.cancel,
            finished: false,
        };
        Box::pin(futures::stream::unfold(state, |mut p| async move {
            let ev = p.next_event().await?;
            Some((ev, p))
        }))
    }
}

struct Player {
    steps: VecDeque<Step>,
    partial: AssistantMessage,
    cancel: CancellationToken,
    finished: bool,
}

impl Player {
    fn last_index(&self) -> usize {
        self.partial.content.len().saturating_sub(1)
    }

    fn aborted(&mut self) -> AssistantMessageEvent {
        self.finished = true;
        let mut error = self.partial.clone();
        error.stop_reason = StopReason::Aborted;
        error.error_message = Some(dreb_ai::ABORTED_MESSAGE.into());
        AssistantMessageEvent::Error {
            reason: ErrorReason::Aborted,
            error,
        }
    }

    async fn next_event(&mut self) -> Option<AssistantMessageEvent> {
        loop {
            if self.finished {
                return None;
            }
            if self.cancel.is_cancelled() {
                return Some(self.aborted());
            }
            let step = self.steps.pop_front()?;
            let p = &mut self.partial;
            let ev = match step {
                Step::Start => AssistantMessageEvent::Start { partial: p.clone() },
                Step::TextStart => {
                    p.content.push(AssistantBlock::Text(TextContent {
                        text: String::new(),
                        text_signature: None,
                        ..Default::default()
                    }));
                    AssistantMessageEvent::TextStart {
                        content_index: self.last_index(),
                        partial: self.partial.clone(),
                    }
                }
                Step::TextDelta(d) => {
                    if let Some(AssistantBlock::Text(t)) = p.content.last_mut() {
                        t.text.push_str(&d);
                    }
                    AssistantMessageEvent::TextDelta {
                        content_index: self.last_index(),
                        delta: d,
                        partial: self.partial.clone(),
                    }
                }
                Step::TextEnd => {
                    let content = match p.content.last() {
                        Some(AssistantBlock::Text(t)) => t.text.clone(),
                        _ => String::new(),
                    };
                    AssistantMessageEvent::TextEnd {
                        content_index: self.last_index(),
                        content,
                        partial: self.partial.clone(),
                    }
                }
                Step::ThinkingStart => {
                    p.content.push(AssistantBlock::Thinking(ThinkingContent {
                        thinking: String::new(),
                        thinking_signature: None,
                        redacted: None,
                        ..Default::default()
                    }));
                    AssistantMessageEvent::ThinkingStart {
                        content_index: self.last_index(),
                        partial: self.partial.clone(),
                    }
                }
                Step::ThinkingDelta(d) => {
                    if let Some(AssistantBlock::Thinking(t)) = p.content.last_mut() {
                        t.thinking.push_str(&d);
                    }
                    AssistantMessageEvent::ThinkingDelta {
                        content_index: self.last_index(),
                        delta: d,
                        partial: self.partial.clone(),
                    }
                }
                Step::ThinkingEnd => {
                    let content = match p.content.last() {
                        Some(AssistantBlock::Thinking(t)) => t.thinking.clone(),
                        _ => String::new(),
                    };
                    AssistantMessageEvent::ThinkingEnd {
                        content_index: self.last_index(),
                        content,
                        partial: self.partial.clone(),
                    }
                }
                Step::ToolStart { id, name } => {
                    p.content.push(AssistantBlock::ToolCall(ToolCall {
                        id,
                        name,
                        arguments: Map::new(),
                        partial_args: Some(String::new()),
                        partial_json: None,
                        index: None,
                        thought_signature: None,
                        ..Default::default()
                    }));
                    AssistantMessageEvent::ToolcallStart {
                        content_index: self.last_index(),
                        partial: self.partial.clone(),
                    }
                }
                Step::ToolDelta(d) => {
                    if let Some(AssistantBlock::ToolCall(c)) = p.content.last_mut() {
                        c.partial_args.get_or_insert_with(String::new).push_str(&d);
                    }
                    AssistantMessageEvent::ToolcallDelta {
                        content_index: self.last_index(),
                        delta: d,
                        partial: self.partial.clone(),
                    }
                }
                Step::ToolEnd(args) => {
                    let mut call = None;
                    if let Some(AssistantBlock::ToolCall(c)) = p.content.last_mut() {
                        c.arguments = args;
                        c.partial_args = None;
                        call = Some(c.clone());
                    }
                    let tool_call = call?;
                    AssistantMessageEvent::ToolcallEnd {
                        content_index: self.last_index(),
                        tool_call,
                        partial: self.partial.clone(),
                    }
                }
                Step::Usage(u) => {
                    p.usage = u;
                    continue;
                }
                Step::Sleep(d) => {
                    tokio::select! {
                        _ = tokio::time::sleep(d) => {}
                        _ = self.cancel.cancelled() => {}
                    }
                    continue;
                }
                Step::WaitForCancel => {
                    self.cancel.cancelled().await;
                    continue;
                }
                Step::Done(reason) => {
                    let has_tools = p
                        .content
                        .iter()
                        .any(|b| matches!(b, AssistantBlock::ToolCall(_)));
                    let reason = reason.unwrap_or(if has_tools {
                        DoneReason::ToolUse
                    } else {
                        DoneReason::Stop
                    });
                    p.stop_reason = match reason {
                        DoneReason::Stop => StopReason::Stop,
                        DoneReason::Length => StopReason::Length,
                        DoneReason::ToolUse => StopReason::ToolUse,
                    };
                    self.finished = true;
                    AssistantMessageEvent::Done {
                        reason,
                        message: p.clone(),
                    }
                }
                Step::Fail(message) => {
                    p.stop_reason = StopReason::Error;
                    p.error_message = Some(message);
                    self.finished = true;
                    AssistantMessageEvent::Error {
                        reason: ErrorReason::Error,
                        error: p.clone(),
                    }
                }
                Step::EndAbruptly => {
                    self.finished = true;
                    return None;
                }
                Step::Raw(ev) => *ev,
            };
            return Some(ev);
        }
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Test tools.

/// What a [`TestTool`] does when executed.
#[derive(Clone)]
pub enum Behavior {
    /// Returns `"<name> ran with <args JSON>"`.
    Echo,
    /// Fails with this message.
    Fail(String),
    /// Waits for cancellation, then fails with "Operation aborted".
    WaitForCancel,
    /// Sends each text as a cumulative partial result, then returns the last one.
    Updates(Vec<String>),
    /// Returns this text with `endTurn: true`.
    EndTurn(String),
    /// Sleeps, then echoes (ends early with "Operation aborted" on cancellation).
    SleepThenEcho(Duration),
    /// Waits until the gate is opened, then echoes (deterministic ordering between parallel tools).
    WaitForGate(Arc<Notify>),
    /// Like `Updates`, then opens the gate.
    UpdatesThenOpen(Vec<String>, Arc<Notify>),
}

/// A tool for tests with a JSON Schema and a scripted behaviour.
pub struct TestTool {
    definition: ToolDefinition,
    behavior: Behavior,
}

impl TestTool {
    pub fn new(name: &str, parameters: Value, behavior: Behavior) -> Arc<Self> {
        Arc::new(TestTool {
            definition: ToolDefinition {
                name: name.into(),
                description: format!("test tool {name}"),
                parameters,
            },
            behavior,
        })
    }

    /// A tool taking `{"text": string}`.
    pub fn with_text_param(name: &str, behavior: Behavior) -> Arc<Self> {
        TestTool::new(
            name,
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
            behavior,
        )
    }
}

#[async_trait]
impl Tool for TestTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let name = &self.definition.name;
        match &self.behavior {
            Behavior::Echo => Ok(ToolOutput::text(format!("{name} ran with {params}"))),
            Behavior::Fail(message) => Err(ToolError::new(message.clone())),
            Behavior::WaitForCancel => {
                cancel.cancelled().await;
                Err(ToolError::new("Operation aborted"))
            }
            Behavior::Updates(texts) => Ok(send_updates(texts, &on_update)),
            Behavior::UpdatesThenOpen(texts, gate) => {
                let out = send_updates(texts, &on_update);
                gate.notify_one();
                Ok(out)
            }
            Behavior::WaitForGate(gate) => {
                gate.notified().await;
                Ok(ToolOutput::text(format!("{name} ran with {params}")))
            }
            Behavior::EndTurn(text) => Ok(ToolOutput {
                end_turn: true,
                ..ToolOutput::text(text.clone())
            }),
            Behavior::SleepThenEcho(d) => {
                tokio::select! {
                    _ = tokio::time::sleep(*d) => Ok(ToolOutput::text(format!("{name} ran with {params}"))),
                    _ = cancel.cancelled() => Err(ToolError::new("Operation aborted")),
                }
            }
        }
    }
}

fn send_updates(texts: &[String], on_update: &ToolUpdateFn) -> ToolOutput {
    let mut last = ToolOutput::default();
    for t in texts {
        last = ToolOutput::text(t.clone());
        on_update(last.clone());
    }
    last
}

// ---------------------------------------------------------------------------------------------------------------
// Event recording.

/// Records every event of `agent` (synchronously, in order).
pub fn record_events(agent: &Agent) -> Arc<Mutex<Vec<AgentEvent>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = log.clone();
    agent.subscribe_fn(move |e| sink.lock().unwrap().push(e.clone()));
    log
}

/// Replaces run-dependent values (`timestamp`, `durationMs`) anywhere in a JSON value.
pub fn redact_volatile(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match key.as_str() {
                    "timestamp" if v.is_number() => *v = Value::from("[timestamp]"),
                    "durationMs" if v.is_number() => *v = Value::from("[duration]"),
                    _ => redact_volatile(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_volatile),
        _ => {}
    }
}

/// One JSON line per event (the exact wire serialisation), with volatile values redacted.
pub fn event_lines(events: &[AgentEvent]) -> String {
    events
        .iter()
        .map(|e| {
            let mut v = serde_json::to_value(e).expect("events serialise");
            redact_volatile(&mut v);
            serde_json::to_string(&v).expect("json")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
