//! The dashboard projection (`--ui dashboard`).
//!
//! Every `message_update` carries the growing reply twice (`message` and `assistantMessageEvent.partial`), so a
//! streamed reply costs bytes quadratic in its length. A dashboard host reads only the delta fields and gets the
//! full transcript from `message_end` and `get_dashboard_snapshot`, so with `--ui dashboard` both copies are left
//! out of the event stream. Responses are never projected.
//!
//! The runtime's own agent events are serialised lean directly ([`dreb_agent::event::DashboardEventJson`]); this
//! module handles frames that arrive already parsed, i.e. background children's events relayed as
//! `background_agent_event`.

use serde_json::Value;

/// Whether the UI takes the dashboard projection: `--ui dashboard`, and the ACP front end (`acp`), which reads only
/// the deltas. Any other value keeps full frames.
pub(crate) fn is_dashboard(ui: Option<&str>) -> bool {
    matches!(ui, Some("dashboard" | "acp"))
}

/// Applies the dashboard projection to one event frame, in place: a `message_update` loses `message` and (when
/// `assistantMessageEvent` is an object) its `partial`; a `background_agent_event` has its `event` projected the
/// same way, recursively. Every other frame is left untouched.
pub fn project_dashboard_event(frame: &mut Value) {
    let Value::Object(fields) = frame else {
        return;
    };
    match fields.get("type").and_then(Value::as_str) {
        Some("message_update") => {
            fields.remove("message");
            if let Some(Value::Object(stream_event)) = fields.get_mut("assistantMessageEvent") {
                stream_event.remove("partial");
            }
        }
        Some("background_agent_event") => {
            if let Some(child) = fields.get_mut("event") {
                project_dashboard_event(child);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn partial() -> Value {
        json!({"role": "assistant", "content": [{"type": "text", "text": "Hello wor"}], "stopReason": "stop"})
    }

    fn projected(mut frame: Value) -> Value {
        project_dashboard_event(&mut frame);
        frame
    }

    #[test]
    fn only_the_dashboard_and_acp_uis_project() {
        assert!(is_dashboard(Some("dashboard")));
        assert!(is_dashboard(Some("acp")));
        assert!(!is_dashboard(Some("rpc")));
        assert!(!is_dashboard(Some("agent")));
        assert!(!is_dashboard(None));
    }

    #[test]
    fn message_update_loses_message_and_partial_and_keeps_the_deltas() {
        let frame = json!({"type": "message_update", "assistantMessageEvent":
            {"type": "text_delta", "contentIndex": 0, "delta": "wor", "partial": partial()}, "message": partial()});
        assert_eq!(
            projected(frame),
            json!({"type": "message_update", "assistantMessageEvent":
                {"type": "text_delta", "contentIndex": 0, "delta": "wor"}})
        );

        let tool_end = json!({"type": "message_update", "assistantMessageEvent": {"type": "toolcall_end",
            "contentIndex": 1, "toolCall": {"type": "toolCall", "id": "c", "name": "ls", "arguments": {}},
            "partial": partial()}, "message": partial()});
        assert_eq!(
            projected(tool_end),
            json!({"type": "message_update", "assistantMessageEvent": {"type": "toolcall_end",
                "contentIndex": 1, "toolCall": {"type": "toolCall", "id": "c", "name": "ls", "arguments": {}}}})
        );

        let text_end = json!({"type": "message_update", "assistantMessageEvent":
            {"type": "text_end", "contentIndex": 0, "content": "Hello world", "partial": partial()}});
        assert_eq!(
            projected(text_end),
            json!({"type": "message_update", "assistantMessageEvent":
                {"type": "text_end", "contentIndex": 0, "content": "Hello world"}})
        );
    }

    #[test]
    fn a_non_object_stream_event_only_loses_message() {
        for stream_event in [Value::Null, json!("text"), json!([1, 2]), json!(3)] {
            let frame = json!({"type": "message_update", "assistantMessageEvent": stream_event,
                "message": partial()});
            assert_eq!(
                projected(frame),
                json!({"type": "message_update", "assistantMessageEvent": stream_event})
            );
        }
        assert_eq!(
            projected(json!({"type": "message_update", "message": partial()})),
            json!({"type": "message_update"})
        );
    }

    #[test]
    fn background_agent_events_are_projected_recursively() {
        let update = json!({"type": "message_update", "assistantMessageEvent":
            {"type": "thinking_delta", "contentIndex": 0, "delta": "hm", "partial": partial()}, "message": partial()});
        let lean = json!({"type": "message_update", "assistantMessageEvent":
            {"type": "thinking_delta", "contentIndex": 0, "delta": "hm"}});
        assert_eq!(
            projected(json!({"type": "background_agent_event", "agentId": "a1", "event": update})),
            json!({"type": "background_agent_event", "agentId": "a1", "event": lean})
        );
        // A grandchild's frame, relayed by the child and again by this process.
        let nested = json!({"type": "background_agent_event", "agentId": "a1", "event":
            {"type": "background_agent_event", "agentId": "a2", "event": update}});
        assert_eq!(
            projected(nested),
            json!({"type": "background_agent_event", "agentId": "a1", "event":
                {"type": "background_agent_event", "agentId": "a2", "event": lean}})
        );
        // Anything else a child says passes through.
        let child_end = json!({"type": "message_end", "message": partial()});
        assert_eq!(
            projected(
                json!({"type": "background_agent_event", "agentId": "a1", "event": child_end})
            ),
            json!({"type": "background_agent_event", "agentId": "a1", "event": child_end})
        );
        for payload in [Value::Null, json!("x"), json!([update])] {
            let frame =
                json!({"type": "background_agent_event", "agentId": "a1", "event": payload});
            assert_eq!(projected(frame.clone()), frame);
        }
    }

    #[test]
    fn other_frames_pass_unchanged() {
        for frame in [
            json!({"type": "message_end", "message": partial()}),
            json!({"type": "message_start", "message": partial()}),
            json!({"type": "turn_end", "message": partial(), "toolResults": []}),
            json!({"type": "stream_retry", "attempt": 1, "discardedPartial": partial()}),
            json!({"type": "response", "command": "get_messages", "success": true,
                "data": {"messages": [partial()]}, "message": "kept"}),
            json!({"type": "future_event", "partial": partial(), "message": "kept"}),
            json!({"message": "no type"}),
            json!("not an object"),
            Value::Null,
        ] {
            assert_eq!(projected(frame.clone()), frame);
        }
    }

    /// A projected delta frame stays small however long the reply has grown.
    #[test]
    fn a_projected_delta_stays_small() {
        let long = json!({"role": "assistant", "content": [{"type": "text", "text": "x".repeat(100_000)}]});
        let frame = json!({"type": "message_update", "assistantMessageEvent":
            {"type": "text_delta", "contentIndex": 0, "delta": "xx", "partial": long}, "message": long});
        assert!(serde_json::to_string(&projected(frame)).unwrap().len() < 300);
    }
}
