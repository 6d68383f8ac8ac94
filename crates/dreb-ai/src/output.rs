//! The partial assistant message a provider builds while streaming, and the events it emits.
//!
//! Every event carries a copy of the partial as it stands after the event (the protocol requires it), so the cost
//! of one delta is the append plus that copy; nothing else grows with the message length. A consumer that keeps the
//! content itself ([`StreamOptions::deltas_without_content`](crate::StreamOptions::deltas_without_content), the
//! agent loop) spares that copy for text and thinking deltas, so their cost no longer grows with the message.
//!
//! Events go through a small bounded channel: a provider that reads faster than its consumer waits (before reading
//! more input) instead of queueing partial copies without bound.

use std::collections::VecDeque;
use std::future::Future;

use futures::channel::mpsc;
use futures::{FutureExt, SinkExt, StreamExt};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::cost::{calculate_cost, now_ms};
use crate::partial_json::{StreamingArgs, parse_streaming_json};
use crate::provider::AssistantEventStream;
use crate::types::{
    AssistantBlock, AssistantMessage, AssistantMessageEvent as Ev, DoneReason, ErrorReason, Model,
    StopReason, TextContent, ThinkingContent, ToolCall,
};

/// Text of the error message when the request is cancelled.
pub const ABORTED_MESSAGE: &str = "Request was aborted";

/// Where a tool call's raw argument text is kept while it streams: in the field the reference's provider for the
/// API shows in its partials, or out of sight when that provider shows none (Gemini sends whole calls).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawArgsField {
    PartialArgs,
    PartialJson,
    Hidden,
}

impl RawArgsField {
    pub(crate) fn for_api(api: &str) -> Self {
        match api {
            crate::types::api::ANTHROPIC_MESSAGES
            | crate::types::api::OPENAI_RESPONSES
            | crate::types::api::AZURE_OPENAI_RESPONSES => RawArgsField::PartialJson,
            crate::types::api::GOOGLE_GENERATIVE_AI => RawArgsField::Hidden,
            _ => RawArgsField::PartialArgs,
        }
    }
}

/// A streaming tool call's parser state, and its raw text when that is hidden.
struct ArgsState {
    index: usize,
    parser: StreamingArgs,
    hidden_raw: String,
}

/// Why a provider run failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ProviderError {
    Aborted,
    Message(String),
}

impl ProviderError {
    pub(crate) fn msg(s: impl Into<String>) -> Self {
        ProviderError::Message(s.into())
    }
}

pub(crate) type ProviderResult = Result<(), ProviderError>;

pub(crate) struct Output {
    pub(crate) msg: AssistantMessage,
    pub(crate) model: Model,
    tx: mpsc::Sender<Ev>,
    /// Events produced while handling one input event; flushed before the next input is awaited.
    pending: VecDeque<Ev>,
    cancel: CancellationToken,
    started: bool,
    /// Incremental argument parsers of streaming tool calls.
    args: Vec<ArgsState>,
    raw_field: RawArgsField,
    /// Text and thinking deltas carry their partial without content (see
    /// [`StreamOptions::deltas_without_content`](crate::StreamOptions::deltas_without_content)).
    pub(crate) deltas_without_content: bool,
    /// The content may have changed other than by appending a delta since the consumer last saw it: the next delta
    /// carries a full partial.
    content_touched: bool,
}

/// Events buffered between a provider and its consumer.
const CHANNEL_CAPACITY: usize = 16;

impl Output {
    pub(crate) fn new(model: &Model, tx: mpsc::Sender<Ev>, cancel: CancellationToken) -> Self {
        Output {
            msg: AssistantMessage::empty(model, now_ms()),
            model: model.clone(),
            tx,
            pending: VecDeque::new(),
            cancel,
            started: false,
            args: Vec::new(),
            raw_field: RawArgsField::for_api(model.api.as_str()),
            deltas_without_content: false,
            content_touched: false,
        }
    }

    /// Hands pending events to the consumer, waiting while the channel is full.
    async fn flush(&mut self) {
        while let Some(ev) = self.pending.pop_front() {
            if self.tx.send(ev).await.is_err() {
                // Nobody listens any more; the run ends on its own.
                self.pending.clear();
            }
        }
    }

    /// Runs `fut` unless the request is cancelled first; cancellation drops `fut` (closing its connection).
    /// Pending events are delivered first.
    pub(crate) async fn wait<T>(
        &mut self,
        fut: impl Future<Output = T>,
    ) -> Result<T, ProviderError> {
        if !self.pending.is_empty() {
            let cancel = self.cancel.clone();
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ProviderError::Aborted),
                _ = self.flush() => {}
            }
        }
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(ProviderError::Aborted),
            v = fut => Ok(v),
        }
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    fn send(&mut self, ev: Ev) {
        self.pending.push_back(ev);
    }

    fn partial(&self) -> AssistantMessage {
        self.msg.clone()
    }

    /// The partial of a text or thinking delta just appended: without content when the consumer keeps it (its last
    /// partial plus this delta is the content), a full copy otherwise.
    fn delta_partial(&mut self) -> AssistantMessage {
        if self.deltas_without_content && !self.content_touched {
            self.msg.clone_without_content()
        } else {
            self.content_touched = false;
            self.msg.clone()
        }
    }

    /// The content blocks, for a change no event reports by itself (the next delta then carries a full partial).
    pub(crate) fn content_mut(&mut self) -> &mut Vec<AssistantBlock> {
        self.content_touched = true;
        &mut self.msg.content
    }

    pub(crate) fn start(&mut self) {
        if !self.started {
            self.started = true;
            self.send(Ev::Start {
                partial: self.partial(),
            });
        }
    }

    pub(crate) fn recompute_cost(&mut self) {
        calculate_cost(&self.model, &mut self.msg.usage);
    }

    pub(crate) fn last_index(&self) -> usize {
        self.msg.content.len().saturating_sub(1)
    }

    // ---- text ----
    pub(crate) fn text_start(&mut self) -> usize {
        self.text_start_at(None)
    }

    /// [`Output::text_start`] with the wire's content block index shown on the block until it ends (anthropic).
    pub(crate) fn text_start_at(&mut self, index: Option<i64>) -> usize {
        self.msg.content.push(AssistantBlock::Text(TextContent {
            text: String::new(),
            text_signature: None,
            index,
            ..Default::default()
        }));
        let i = self.last_index();
        self.send(Ev::TextStart {
            content_index: i,
            partial: self.partial(),
        });
        i
    }

    pub(crate) fn text_delta(&mut self, i: usize, delta: &str) {
        if let Some(AssistantBlock::Text(t)) = self.msg.content.get_mut(i) {
            t.text.push_str(delta);
            let partial = self.delta_partial();
            self.send(Ev::TextDelta {
                content_index: i,
                delta: delta.to_string(),
                partial,
            });
        }
    }

    pub(crate) fn text_mut(&mut self, i: usize) -> Option<&mut TextContent> {
        self.content_touched = true;
        match self.msg.content.get_mut(i) {
            Some(AssistantBlock::Text(t)) => Some(t),
            _ => None,
        }
    }

    /// Drops the block's scratch index and emits `text_end`.
    pub(crate) fn text_end(&mut self, i: usize) {
        if let Some(AssistantBlock::Text(t)) = self.msg.content.get_mut(i) {
            t.index = None;
            let content = t.text.clone();
            self.send(Ev::TextEnd {
                content_index: i,
                content,
                partial: self.partial(),
            });
        }
    }

    // ---- thinking ----
    pub(crate) fn thinking_start(&mut self, block: ThinkingContent) -> usize {
        self.msg.content.push(AssistantBlock::Thinking(block));
        let i = self.last_index();
        self.send(Ev::ThinkingStart {
            content_index: i,
            partial: self.partial(),
        });
        i
    }

    pub(crate) fn thinking_delta(&mut self, i: usize, delta: &str) {
        if let Some(AssistantBlock::Thinking(t)) = self.msg.content.get_mut(i) {
            t.thinking.push_str(delta);
            let partial = self.delta_partial();
            self.send(Ev::ThinkingDelta {
                content_index: i,
                delta: delta.to_string(),
                partial,
            });
        }
    }

    pub(crate) fn thinking_mut(&mut self, i: usize) -> Option<&mut ThinkingContent> {
        self.content_touched = true;
        match self.msg.content.get_mut(i) {
            Some(AssistantBlock::Thinking(t)) => Some(t),
            _ => None,
        }
    }

    /// Drops the block's scratch index and emits `thinking_end`.
    pub(crate) fn thinking_end(&mut self, i: usize) {
        if let Some(AssistantBlock::Thinking(t)) = self.msg.content.get_mut(i) {
            t.index = None;
            let content = t.thinking.clone();
            self.send(Ev::ThinkingEnd {
                content_index: i,
                content,
                partial: self.partial(),
            });
        }
    }

    // ---- tool calls ----
    /// Starts a streamed tool call; its raw argument text is shown (as `partialArgs` or `partialJson`) until it ends.
    pub(crate) fn toolcall_start(
        &mut self,
        id: String,
        name: String,
        arguments: Map<String, Value>,
    ) -> usize {
        self.toolcall_start_at(id, name, arguments, None)
    }

    /// [`Output::toolcall_start`] with the wire's content block index shown on the block until it ends (anthropic).
    pub(crate) fn toolcall_start_at(
        &mut self,
        id: String,
        name: String,
        arguments: Map<String, Value>,
        index: Option<i64>,
    ) -> usize {
        let raw = Some(String::new());
        let (partial_args, partial_json) = match self.raw_field {
            RawArgsField::PartialArgs => (raw, None),
            RawArgsField::PartialJson => (None, raw),
            RawArgsField::Hidden => (None, None),
        };
        self.msg.content.push(AssistantBlock::ToolCall(ToolCall {
            id,
            name,
            arguments,
            partial_args,
            partial_json,
            index,
            thought_signature: None,
            ..Default::default()
        }));
        let i = self.last_index();
        self.send(Ev::ToolcallStart {
            content_index: i,
            partial: self.partial(),
        });
        i
    }

    pub(crate) fn toolcall_mut(&mut self, i: usize) -> Option<&mut ToolCall> {
        self.content_touched = true;
        match self.msg.content.get_mut(i) {
            Some(AssistantBlock::ToolCall(t)) => Some(t),
            _ => None,
        }
    }

    /// Position in `args` of call `i`'s state, created on first use.
    fn args_position(&mut self, i: usize) -> usize {
        if let Some(p) = self.args.iter().position(|a| a.index == i) {
            return p;
        }
        self.args.push(ArgsState {
            index: i,
            parser: StreamingArgs::default(),
            hidden_raw: String::new(),
        });
        self.args.len() - 1
    }

    /// Replaces the raw argument text of call `i` (a wire that re-sends the whole text).
    pub(crate) fn set_raw_args(&mut self, i: usize, text: String) {
        self.content_touched = true;
        let field = self.raw_field;
        if field == RawArgsField::Hidden {
            let p = self.args_position(i);
            self.args[p].hidden_raw = text;
        } else if let Some(t) = self.toolcall_mut(i) {
            *raw_slot(t, field) = Some(text);
        }
    }

    /// Takes the raw argument text of call `i` (it no longer shows on the block).
    pub(crate) fn take_raw_args(&mut self, i: usize) -> Option<String> {
        self.content_touched = true;
        let hidden = self
            .args
            .iter()
            .position(|a| a.index == i)
            .map(|p| self.args.remove(p).hidden_raw);
        let field = self.raw_field;
        match self.toolcall_mut(i) {
            Some(t) if field != RawArgsField::Hidden => raw_slot(t, field).take(),
            _ => hidden,
        }
    }

    /// Appends argument text, re-parses the arguments leniently and emits `toolcall_delta`.
    pub(crate) fn toolcall_delta(&mut self, i: usize, delta: &str) {
        if !matches!(self.msg.content.get(i), Some(AssistantBlock::ToolCall(_))) {
            return;
        }
        let field = self.raw_field;
        let p = self.args_position(i);
        let state = &mut self.args[p];
        if let Some(AssistantBlock::ToolCall(t)) = self.msg.content.get_mut(i) {
            // Split borrows: the raw text and the arguments are separate fields of the call.
            let ToolCall {
                arguments,
                partial_args,
                partial_json,
                ..
            } = t;
            let raw: &mut String = match field {
                RawArgsField::Hidden => &mut state.hidden_raw,
                RawArgsField::PartialJson => partial_json.get_or_insert_with(String::new),
                RawArgsField::PartialArgs => partial_args.get_or_insert_with(String::new),
            };
            raw.push_str(delta);
            state.parser.update(arguments, raw, delta);
        }
        self.send(Ev::ToolcallDelta {
            content_index: i,
            delta: delta.to_string(),
            partial: self.partial(),
        });
    }

    /// Finalises the arguments from the raw text (when any arrived), drops the scratch fields, emits `toolcall_end`.
    pub(crate) fn toolcall_end(&mut self, i: usize) {
        let raw = self.take_raw_args(i);
        if let Some(AssistantBlock::ToolCall(t)) = self.msg.content.get_mut(i) {
            if let Some(raw) = raw
                && !raw.is_empty()
            {
                t.arguments = parse_streaming_json(&raw);
            }
            t.index = None;
            let call = t.clone();
            self.send(Ev::ToolcallEnd {
                content_index: i,
                tool_call: call,
                partial: self.partial(),
            });
        }
    }

    /// Emits the terminal event: `done` on success, else `error` with `stopReason` error/aborted.
    pub(crate) async fn finish(mut self, result: ProviderResult) {
        let result = match result {
            Ok(()) if self.cancel.is_cancelled() => Err(ProviderError::Aborted),
            r => r,
        };
        match result {
            Ok(()) => {
                let reason = match self.msg.stop_reason {
                    StopReason::Length => DoneReason::Length,
                    StopReason::ToolUse => DoneReason::ToolUse,
                    _ => DoneReason::Stop,
                };
                self.send(Ev::Done {
                    reason,
                    message: self.msg.clone(),
                });
            }
            Err(e) => {
                let aborted = e == ProviderError::Aborted || self.cancel.is_cancelled();
                self.msg.stop_reason = if aborted {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                };
                // Like the reference: block indices go, unfinished calls keep their raw argument text.
                for block in &mut self.msg.content {
                    match block {
                        AssistantBlock::ToolCall(t) => t.index = None,
                        AssistantBlock::Text(t) => t.index = None,
                        AssistantBlock::Thinking(t) => t.index = None,
                    }
                }
                self.msg.error_message = Some(match e {
                    ProviderError::Aborted => ABORTED_MESSAGE.to_string(),
                    ProviderError::Message(m) => m,
                });
                let reason = if aborted {
                    ErrorReason::Aborted
                } else {
                    ErrorReason::Error
                };
                self.send(Ev::Error {
                    reason,
                    error: self.msg.clone(),
                });
            }
        }
        // On cancellation undelivered deltas are dropped; block starts and ends (the open block is closed on abort)
        // and the terminal event always go out.
        if self.cancel.is_cancelled() {
            self.pending.retain(|ev| {
                !matches!(
                    ev,
                    Ev::TextDelta { .. } | Ev::ThinkingDelta { .. } | Ev::ToolcallDelta { .. }
                )
            });
        }
        self.flush().await;
    }
}

/// Runs a provider future and returns its events as a stream. The producer is polled by the stream itself (no
/// spawned task), so dropping the stream drops the request.
pub(crate) fn event_stream<F>(
    model: &Model,
    cancel: CancellationToken,
    run: impl FnOnce(Output) -> F,
) -> AssistantEventStream
where
    F: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
    let out = Output::new(model, tx, cancel);
    let producer = run(out).into_stream().filter_map(|()| async { None::<Ev> });
    Box::pin(futures::stream::select(rx, producer))
}

/// The visible raw-argument field of a call.
fn raw_slot(t: &mut ToolCall, field: RawArgsField) -> &mut Option<String> {
    match field {
        RawArgsField::PartialJson => &mut t.partial_json,
        _ => &mut t.partial_args,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(partial: &AssistantMessage) -> Option<&str> {
        match partial.content.first() {
            Some(AssistantBlock::Text(t)) => Some(&t.text),
            _ => None,
        }
    }

    /// Every event `out` produced, in order.
    async fn drain(mut out: Output, mut rx: mpsc::Receiver<Ev>) -> Vec<Ev> {
        let sender = async move { out.flush().await };
        let (_, events) = tokio::join!(sender, async {
            let mut events = Vec::new();
            while let Some(ev) = rx.next().await {
                events.push(ev);
            }
            events
        });
        events
    }

    fn output(deltas_without_content: bool) -> (Output, mpsc::Receiver<Ev>) {
        let model = crate::registry::builtin_models().remove(0);
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let mut out = Output::new(&model, tx, CancellationToken::new());
        out.deltas_without_content = deltas_without_content;
        (out, rx)
    }

    #[tokio::test]
    async fn deltas_carry_full_partials_unless_the_consumer_keeps_the_content() {
        for without in [false, true] {
            let (mut out, rx) = output(without);
            out.start();
            let i = out.text_start();
            out.text_delta(i, "Hel");
            out.text_delta(i, "lo");
            // A change no event reports: the next delta carries the content again, then deltas alone.
            out.text_mut(i).unwrap().text_signature = Some("sig".into());
            out.text_delta(i, ",");
            out.text_delta(i, " you");
            out.text_end(i);
            let events = drain(out, rx).await;
            let deltas: Vec<Option<&str>> = events
                .iter()
                .filter_map(|ev| match ev {
                    Ev::TextDelta { partial, .. } => Some(text_of(partial)),
                    _ => None,
                })
                .collect();
            if without {
                assert_eq!(deltas, [None, None, Some("Hello,"), None]);
            } else {
                assert_eq!(
                    deltas,
                    [
                        Some("Hel"),
                        Some("Hello"),
                        Some("Hello,"),
                        Some("Hello, you")
                    ]
                );
            }
            let Some(Ev::TextEnd { partial, .. }) = events.last() else {
                panic!("text_end last: {events:?}");
            };
            assert_eq!(text_of(partial), Some("Hello, you"));
        }
    }

    #[tokio::test]
    async fn a_delta_after_a_direct_content_change_carries_the_content() {
        let (mut out, rx) = output(true);
        out.start();
        let i = out.thinking_start(ThinkingContent {
            thinking: String::new(),
            thinking_signature: None,
            redacted: None,
            ..Default::default()
        });
        out.thinking_delta(i, "a");
        out.content_mut().clear();
        out.content_mut()
            .push(AssistantBlock::Thinking(ThinkingContent {
                thinking: "xa".into(),
                thinking_signature: None,
                redacted: None,
                ..Default::default()
            }));
        out.thinking_delta(0, "b");
        let events = drain(out, rx).await;
        let partials: Vec<usize> = events
            .iter()
            .filter_map(|ev| match ev {
                Ev::ThinkingDelta { partial, .. } => Some(partial.content.len()),
                _ => None,
            })
            .collect();
        assert_eq!(partials, [0, 1]);
    }
}
