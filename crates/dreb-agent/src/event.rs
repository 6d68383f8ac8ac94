//! `AgentEvent`: what the loop emits, serialising to exactly the reference's JSON (protocol-behaviour §3.1).
//!
//! Serialisation goes through borrowed "wire" mirrors so that key order matches the reference without cloning
//! anything (the nested messages and tool calls are the spec's types and write their own `role` / `type` tags).

use dreb_ai::{
    AssistantMessage, AssistantMessageEvent, DoneReason, ErrorReason, ThinkingLevel, ToolCall,
    ToolResultMessage,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::message::AgentMessage;
use crate::tool::ToolOutput;

/// `agent_start.model`.
pub use dreb_types::ModelRef;

/// An event of the agent loop, in emission order. See runtime-behaviour §1.2 for the sequence.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentEvent {
    AgentStart {
        model: ModelRef,
        thinking_level: ThinkingLevel,
    },
    /// All messages new in this run (prompt included); `[errorMessage]` after a fatal error.
    AgentEnd {
        messages: Vec<AgentMessage>,
    },
    TurnStart,
    TurnEnd {
        message: AssistantMessage,
        tool_results: Vec<ToolResultMessage>,
    },
    MessageStart {
        message: AgentMessage,
    },
    /// A streaming update. The wire `message` is the event's `partial` (the reference sends a copy of it), so it is
    /// stored once; see [`AgentEvent::update_message`].
    MessageUpdate {
        assistant_message_event: AssistantMessageEvent,
    },
    MessageEnd {
        message: AgentMessage,
    },
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Map<String, Value>,
    },
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Map<String, Value>,
        partial_result: ToolOutput,
    },
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolOutput,
        is_error: bool,
    },
    StreamRetry {
        attempt: u32,
        max_attempts: u32,
        error: String,
        discarded_partial: Option<AssistantMessage>,
    },
    LengthRetry {
        attempt: u32,
        max_attempts: u32,
        previous_max_tokens: u64,
        next_max_tokens: u64,
        discarded_partial: Option<AssistantMessage>,
    },
}

impl AgentEvent {
    /// The wire `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            AgentEvent::AgentStart { .. } => "agent_start",
            AgentEvent::AgentEnd { .. } => "agent_end",
            AgentEvent::TurnStart => "turn_start",
            AgentEvent::TurnEnd { .. } => "turn_end",
            AgentEvent::MessageStart { .. } => "message_start",
            AgentEvent::MessageUpdate { .. } => "message_update",
            AgentEvent::MessageEnd { .. } => "message_end",
            AgentEvent::ToolExecutionStart { .. } => "tool_execution_start",
            AgentEvent::ToolExecutionUpdate { .. } => "tool_execution_update",
            AgentEvent::ToolExecutionEnd { .. } => "tool_execution_end",
            AgentEvent::StreamRetry { .. } => "stream_retry",
            AgentEvent::LengthRetry { .. } => "length_retry",
        }
    }

    /// The cumulative partial carried by a `message_update` (its wire `message`).
    pub fn update_message(&self) -> Option<&AssistantMessage> {
        match self {
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => stream_event_message(assistant_message_event),
            _ => None,
        }
    }
}

/// The assistant message an assistant stream event carries (`partial`, `message` of done, `error` of error).
pub fn stream_event_message(ev: &AssistantMessageEvent) -> Option<&AssistantMessage> {
    use AssistantMessageEvent::*;
    match ev {
        Start { partial }
        | TextStart { partial, .. }
        | TextDelta { partial, .. }
        | TextEnd { partial, .. }
        | ThinkingStart { partial, .. }
        | ThinkingDelta { partial, .. }
        | ThinkingEnd { partial, .. }
        | ToolcallStart { partial, .. }
        | ToolcallDelta { partial, .. }
        | ToolcallEnd { partial, .. } => Some(partial),
        Done { message, .. } => Some(message),
        Error { error, .. } => Some(error),
    }
}

/// Takes the message out of a stream event without cloning.
pub(crate) fn into_stream_event_message(ev: AssistantMessageEvent) -> AssistantMessage {
    use AssistantMessageEvent::*;
    match ev {
        Start { partial }
        | TextStart { partial, .. }
        | TextDelta { partial, .. }
        | TextEnd { partial, .. }
        | ThinkingStart { partial, .. }
        | ThinkingDelta { partial, .. }
        | ThinkingEnd { partial, .. }
        | ToolcallStart { partial, .. }
        | ToolcallDelta { partial, .. }
        | ToolcallEnd { partial, .. } => partial,
        Done { message, .. } => message,
        Error { error, .. } => error,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Wire mirrors.

/// An assistant message as nested in a frame (the spec's struct writes its own `role` tag).
type WithRole<'a> = &'a AssistantMessage;

/// Tool results as nested in a frame (each writes its own `role` tag).
type ToolResultsWire<'a> = &'a [ToolResultMessage];

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEventWire<'a> {
    Start {
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<WithRole<'a>>,
    },
    #[serde(rename_all = "camelCase")]
    TextStart {
        content_index: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<WithRole<'a>>,
    },
    #[serde(rename_all = "camelCase")]
    TextDelta {
        content_index: usize,
        delta: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<WithRole<'a>>,
    },
    #[serde(rename_all = "camelCase")]
    TextEnd {
        content_index: usize,
        content: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<WithRole<'a>>,
    },
    #[serde(rename_all = "camelCase")]
    ThinkingStart {
        content_index: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<WithRole<'a>>,
    },
    #[serde(rename_all = "camelCase")]
    ThinkingDelta {
        content_index: usize,
        delta: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<WithRole<'a>>,
    },
    #[serde(rename_all = "camelCase")]
    ThinkingEnd {
        content_index: usize,
        content: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<WithRole<'a>>,
    },
    #[serde(rename = "toolcall_start", rename_all = "camelCase")]
    ToolcallStart {
        content_index: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<WithRole<'a>>,
    },
    #[serde(rename = "toolcall_delta", rename_all = "camelCase")]
    ToolcallDelta {
        content_index: usize,
        delta: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<WithRole<'a>>,
    },
    #[serde(rename = "toolcall_end", rename_all = "camelCase")]
    ToolcallEnd {
        content_index: usize,
        /// The block writes its own `type` tag (`toolCall`).
        tool_call: &'a ToolCall,
        #[serde(skip_serializing_if = "Option::is_none")]
        partial: Option<WithRole<'a>>,
    },
    Done {
        reason: DoneReason,
        message: WithRole<'a>,
    },
    Error {
        reason: ErrorReason,
        error: WithRole<'a>,
    },
}

/// Serialises an [`AssistantMessageEvent`] exactly as the reference's `assistantMessageEvent` (with `role` on every
/// nested message and `type` on `toolCall`). Usable by the runtime for its own frames.
pub struct AssistantEventJson<'a>(pub &'a AssistantMessageEvent);

impl Serialize for AssistantEventJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        stream_wire(self.0, true).serialize(s)
    }
}

/// The wire form of a stream event; `keep_partial: false` leaves out the cumulative `partial` (dashboard UI).
fn stream_wire(ev: &AssistantMessageEvent, keep_partial: bool) -> StreamEventWire<'_> {
    use AssistantMessageEvent as E;
    let w = |partial| keep_partial.then_some(partial);
    match ev {
        E::Start { partial } => StreamEventWire::Start {
            partial: w(partial),
        },
        E::TextStart {
            content_index,
            partial,
        } => StreamEventWire::TextStart {
            content_index: *content_index,
            partial: w(partial),
        },
        E::TextDelta {
            content_index,
            delta,
            partial,
        } => StreamEventWire::TextDelta {
            content_index: *content_index,
            delta,
            partial: w(partial),
        },
        E::TextEnd {
            content_index,
            content,
            partial,
        } => StreamEventWire::TextEnd {
            content_index: *content_index,
            content,
            partial: w(partial),
        },
        E::ThinkingStart {
            content_index,
            partial,
        } => StreamEventWire::ThinkingStart {
            content_index: *content_index,
            partial: w(partial),
        },
        E::ThinkingDelta {
            content_index,
            delta,
            partial,
        } => StreamEventWire::ThinkingDelta {
            content_index: *content_index,
            delta,
            partial: w(partial),
        },
        E::ThinkingEnd {
            content_index,
            content,
            partial,
        } => StreamEventWire::ThinkingEnd {
            content_index: *content_index,
            content,
            partial: w(partial),
        },
        E::ToolcallStart {
            content_index,
            partial,
        } => StreamEventWire::ToolcallStart {
            content_index: *content_index,
            partial: w(partial),
        },
        E::ToolcallDelta {
            content_index,
            delta,
            partial,
        } => StreamEventWire::ToolcallDelta {
            content_index: *content_index,
            delta,
            partial: w(partial),
        },
        E::ToolcallEnd {
            content_index,
            tool_call,
            partial,
        } => StreamEventWire::ToolcallEnd {
            content_index: *content_index,
            tool_call,
            partial: w(partial),
        },
        E::Done { reason, message } => StreamEventWire::Done {
            reason: *reason,
            message,
        },
        E::Error { reason, error } => StreamEventWire::Error {
            reason: *reason,
            error,
        },
    }
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EventWire<'a> {
    #[serde(rename_all = "camelCase")]
    AgentStart {
        model: &'a ModelRef,
        thinking_level: ThinkingLevel,
    },
    AgentEnd {
        messages: &'a [AgentMessage],
    },
    TurnStart,
    #[serde(rename_all = "camelCase")]
    TurnEnd {
        message: WithRole<'a>,
        tool_results: ToolResultsWire<'a>,
    },
    MessageStart {
        message: &'a AgentMessage,
    },
    #[serde(rename_all = "camelCase")]
    MessageUpdate {
        assistant_message_event: StreamEventWire<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<WithRole<'a>>,
    },
    MessageEnd {
        message: &'a AgentMessage,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionStart {
        tool_call_id: &'a str,
        tool_name: &'a str,
        args: &'a Map<String, Value>,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionUpdate {
        tool_call_id: &'a str,
        tool_name: &'a str,
        args: &'a Map<String, Value>,
        partial_result: &'a ToolOutput,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionEnd {
        tool_call_id: &'a str,
        tool_name: &'a str,
        result: &'a ToolOutput,
        is_error: bool,
    },
    #[serde(rename_all = "camelCase")]
    StreamRetry {
        attempt: u32,
        max_attempts: u32,
        error: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        discarded_partial: Option<WithRole<'a>>,
    },
    #[serde(rename_all = "camelCase")]
    LengthRetry {
        attempt: u32,
        max_attempts: u32,
        previous_max_tokens: u64,
        next_max_tokens: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        discarded_partial: Option<WithRole<'a>>,
    },
}

impl Serialize for AgentEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.wire(true).serialize(s)
    }
}

/// Serialises an [`AgentEvent`] with the dashboard projection (`--ui dashboard`): a `message_update` leaves out its
/// top-level `message` and `assistantMessageEvent.partial`, the two cumulative copies of the growing reply that make
/// the stream quadratic in the reply's length. Every other event serialises exactly as [`AgentEvent`] does.
pub struct DashboardEventJson<'a>(pub &'a AgentEvent);

impl Serialize for DashboardEventJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.wire(false).serialize(s)
    }
}

impl AgentEvent {
    /// The borrowed wire mirror; `keep_partials: false` is the dashboard projection of `message_update`.
    fn wire(&self, keep_partials: bool) -> EventWire<'_> {
        match self {
            AgentEvent::AgentStart {
                model,
                thinking_level,
            } => EventWire::AgentStart {
                model,
                thinking_level: *thinking_level,
            },
            AgentEvent::AgentEnd { messages } => EventWire::AgentEnd { messages },
            AgentEvent::TurnStart => EventWire::TurnStart,
            AgentEvent::TurnEnd {
                message,
                tool_results,
            } => EventWire::TurnEnd {
                message,
                tool_results,
            },
            AgentEvent::MessageStart { message } => EventWire::MessageStart { message },
            AgentEvent::MessageUpdate {
                assistant_message_event,
            } => EventWire::MessageUpdate {
                assistant_message_event: stream_wire(assistant_message_event, keep_partials),
                message: if keep_partials {
                    stream_event_message(assistant_message_event)
                } else {
                    None
                },
            },
            AgentEvent::MessageEnd { message } => EventWire::MessageEnd { message },
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => EventWire::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            },
            AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
            } => EventWire::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
            },
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
            } => EventWire::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error: *is_error,
            },
            AgentEvent::StreamRetry {
                attempt,
                max_attempts,
                error,
                discarded_partial,
            } => EventWire::StreamRetry {
                attempt: *attempt,
                max_attempts: *max_attempts,
                error,
                discarded_partial: discarded_partial.as_ref(),
            },
            AgentEvent::LengthRetry {
                attempt,
                max_attempts,
                previous_max_tokens,
                next_max_tokens,
                discarded_partial,
            } => EventWire::LengthRetry {
                attempt: *attempt,
                max_attempts: *max_attempts,
                previous_max_tokens: *previous_max_tokens,
                next_max_tokens: *next_max_tokens,
                discarded_partial: discarded_partial.as_ref(),
            },
        }
    }
}

// Reading events back (test kits, recorded transcripts). The nested messages and tool calls read their own
// `role` / `type` tags; `message_update.message` is the event's partial and is not kept.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum EventIn {
    #[serde(rename_all = "camelCase")]
    AgentStart {
        model: ModelRef,
        thinking_level: ThinkingLevel,
    },
    AgentEnd {
        messages: Vec<AgentMessage>,
    },
    TurnStart,
    #[serde(rename_all = "camelCase")]
    TurnEnd {
        message: AssistantMessage,
        tool_results: Vec<ToolResultMessage>,
    },
    MessageStart {
        message: AgentMessage,
    },
    #[serde(rename_all = "camelCase")]
    MessageUpdate {
        assistant_message_event: AssistantMessageEvent,
    },
    MessageEnd {
        message: AgentMessage,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionStart {
        tool_call_id: String,
        tool_name: String,
        args: Map<String, Value>,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionUpdate {
        tool_call_id: String,
        tool_name: String,
        args: Map<String, Value>,
        partial_result: ToolOutput,
    },
    #[serde(rename_all = "camelCase")]
    ToolExecutionEnd {
        tool_call_id: String,
        tool_name: String,
        result: ToolOutput,
        is_error: bool,
    },
    #[serde(rename_all = "camelCase")]
    StreamRetry {
        attempt: u32,
        max_attempts: u32,
        error: String,
        discarded_partial: Option<AssistantMessage>,
    },
    #[serde(rename_all = "camelCase")]
    LengthRetry {
        attempt: u32,
        max_attempts: u32,
        previous_max_tokens: u64,
        next_max_tokens: u64,
        discarded_partial: Option<AssistantMessage>,
    },
}

impl<'de> Deserialize<'de> for AgentEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match EventIn::deserialize(d)? {
            EventIn::AgentStart {
                model,
                thinking_level,
            } => AgentEvent::AgentStart {
                model,
                thinking_level,
            },
            EventIn::AgentEnd { messages } => AgentEvent::AgentEnd { messages },
            EventIn::TurnStart => AgentEvent::TurnStart,
            EventIn::TurnEnd {
                message,
                tool_results,
            } => AgentEvent::TurnEnd {
                message,
                tool_results,
            },
            EventIn::MessageStart { message } => AgentEvent::MessageStart { message },
            EventIn::MessageUpdate {
                assistant_message_event,
            } => AgentEvent::MessageUpdate {
                assistant_message_event,
            },
            EventIn::MessageEnd { message } => AgentEvent::MessageEnd { message },
            EventIn::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            } => AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            },
            EventIn::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
            } => AgentEvent::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result,
            },
            EventIn::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
            } => AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
            },
            EventIn::StreamRetry {
                attempt,
                max_attempts,
                error,
                discarded_partial,
            } => AgentEvent::StreamRetry {
                attempt,
                max_attempts,
                error,
                discarded_partial,
            },
            EventIn::LengthRetry {
                attempt,
                max_attempts,
                previous_max_tokens,
                next_max_tokens,
                discarded_partial,
            } => AgentEvent::LengthRetry {
                attempt,
                max_attempts,
                previous_max_tokens,
                next_max_tokens,
                discarded_partial,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Re-serialises frames recorded from the reference and compares them byte for byte.
    #[test]
    fn reference_frames_round_trip_byte_identical() {
        let frames = [
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hello","partial":{"role":"assistant","content":[{"type":"text","text":"Hello from"}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1796106531222,"responseId":"chatcmpl-mock-13"}},"message":{"role":"assistant","content":[{"type":"text","text":"Hello from"}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1796106531222,"responseId":"chatcmpl-mock-13"}}"#,
            r#"{"type":"message_update","assistantMessageEvent":{"type":"toolcall_end","contentIndex":0,"toolCall":{"type":"toolCall","id":"call_mock_14","name":"bash","arguments":{"command":"echo hello-from-bash"}},"partial":{"role":"assistant","content":[{"type":"toolCall","id":"call_mock_14","name":"bash","arguments":{"command":"echo hello-from-bash"}}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":100,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":105,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1796106532691,"responseId":"chatcmpl-mock-14"}},"message":{"role":"assistant","content":[{"type":"toolCall","id":"call_mock_14","name":"bash","arguments":{"command":"echo hello-from-bash"}}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":100,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":105,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1796106532691,"responseId":"chatcmpl-mock-14"}}"#,
        ];
        for frame in frames {
            let v: Value = serde_json::from_str(frame).unwrap();
            let ev: AssistantMessageEvent =
                serde_json::from_value(v["assistantMessageEvent"].clone()).unwrap();
            let out = serde_json::to_string(&AgentEvent::MessageUpdate {
                assistant_message_event: ev,
            })
            .unwrap();
            assert_eq!(out, frame);
        }
    }

    #[test]
    fn tool_and_turn_frames_match_reference_shapes() {
        let tr: ToolResultMessage = serde_json::from_str(r#"{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"hi"}],"isError":false,"timestamp":1}"#).unwrap();
        let am: AssistantMessage = serde_json::from_str(r#"{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}"#).unwrap();
        let ev = AgentEvent::TurnEnd {
            message: am,
            tool_results: vec![tr],
        };
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"type":"turn_end","message":{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2},"toolResults":[{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"hi"}],"isError":false,"timestamp":1}]}"#
        );
        let mut args = Map::new();
        args.insert("command".into(), Value::from("echo"));
        let upd = AgentEvent::ToolExecutionUpdate {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            args: args.clone(),
            partial_result: ToolOutput::default(),
        };
        assert_eq!(
            serde_json::to_string(&upd).unwrap(),
            r#"{"type":"tool_execution_update","toolCallId":"c","toolName":"bash","args":{"command":"echo"},"partialResult":{"content":[]}}"#
        );
        let end = AgentEvent::ToolExecutionEnd {
            tool_call_id: "c".into(),
            tool_name: "wait".into(),
            result: ToolOutput {
                end_turn: true,
                ..ToolOutput::text("Waiting…")
            },
            is_error: false,
        };
        assert_eq!(
            serde_json::to_string(&end).unwrap(),
            r#"{"type":"tool_execution_end","toolCallId":"c","toolName":"wait","result":{"content":[{"type":"text","text":"Waiting…"}],"endTurn":true},"isError":false}"#
        );
        let start = AgentEvent::AgentStart {
            model: ModelRef {
                provider: "mock".into(),
                id: "mock-model".into(),
            },
            thinking_level: ThinkingLevel::Off,
        };
        assert_eq!(
            serde_json::to_string(&start).unwrap(),
            r#"{"type":"agent_start","model":{"provider":"mock","id":"mock-model"},"thinkingLevel":"off"}"#
        );
        assert_eq!(
            serde_json::to_string(&AgentEvent::TurnStart).unwrap(),
            r#"{"type":"turn_start"}"#
        );
        let retry = AgentEvent::StreamRetry {
            attempt: 1,
            max_attempts: 3,
            error: "x".into(),
            discarded_partial: None,
        };
        assert_eq!(
            serde_json::to_string(&retry).unwrap(),
            r#"{"type":"stream_retry","attempt":1,"maxAttempts":3,"error":"x"}"#
        );
    }

    fn update(frame: &str) -> AgentEvent {
        let v: Value = serde_json::from_str(frame).unwrap();
        AgentEvent::MessageUpdate {
            assistant_message_event: serde_json::from_value(v["assistantMessageEvent"].clone())
                .unwrap(),
        }
    }

    /// The dashboard projection drops both cumulative copies and keeps the delta fields, in the reference's order.
    #[test]
    fn dashboard_serialisation_drops_message_and_partial() {
        let text_delta = update(
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hello","partial":{"role":"assistant","content":[{"type":"text","text":"Hello"}],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}}}"#,
        );
        assert_eq!(
            serde_json::to_string(&DashboardEventJson(&text_delta)).unwrap(),
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"Hello"}}"#
        );
        let full: Value = serde_json::to_value(&text_delta).unwrap();
        assert!(full.get("message").is_some());
        assert!(full["assistantMessageEvent"].get("partial").is_some());
        assert!(
            serde_json::to_value(AssistantEventJson(match &text_delta {
                AgentEvent::MessageUpdate {
                    assistant_message_event,
                } => assistant_message_event,
                _ => unreachable!(),
            }))
            .unwrap()
            .get("partial")
            .is_some()
        );

        let tool_end = update(
            r#"{"type":"message_update","assistantMessageEvent":{"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}},"partial":{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1}}}"#,
        );
        assert_eq!(
            serde_json::to_string(&DashboardEventJson(&tool_end)).unwrap(),
            r#"{"type":"message_update","assistantMessageEvent":{"type":"toolcall_end","contentIndex":2,"toolCall":{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}}}}"#
        );

        let text_end = update(
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_end","contentIndex":1,"content":"done","partial":{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1}}}"#,
        );
        assert_eq!(
            serde_json::to_string(&DashboardEventJson(&text_end)).unwrap(),
            r#"{"type":"message_update","assistantMessageEvent":{"type":"text_end","contentIndex":1,"content":"done"}}"#
        );
    }

    /// Events other than `message_update` serialise the same with or without the projection.
    #[test]
    fn dashboard_serialisation_leaves_other_events_alone() {
        let am: AssistantMessage = serde_json::from_str(r#"{"role":"assistant","content":[{"type":"text","text":"x"}],"api":"a","provider":"p","model":"m","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2}"#).unwrap();
        let events = [
            AgentEvent::TurnStart,
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(am.clone()),
            },
            AgentEvent::TurnEnd {
                message: am.clone(),
                tool_results: Vec::new(),
            },
            AgentEvent::StreamRetry {
                attempt: 1,
                max_attempts: 3,
                error: "x".into(),
                discarded_partial: Some(am),
            },
        ];
        for ev in &events {
            assert_eq!(
                serde_json::to_string(&DashboardEventJson(ev)).unwrap(),
                serde_json::to_string(ev).unwrap()
            );
        }
    }
}
