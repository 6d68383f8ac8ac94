//! The mirror of the open blocking dialogs, for the dashboard snapshot.

use std::sync::{Arc, Mutex};

use dreb_protocol::BlockingExtensionUiRequest;
use serde_json::Value;

use crate::sink::FrameSink;
use crate::sync::lock;

/// Sits inside the snapshot gate and mirrors the blocking dialogs that are open on the wire.
///
/// Why a mirror and not `DialogEngine::pending_requests()`: the engine writes its frames while holding its own
/// table lock, and those writes take the snapshot gate; the snapshot holds the gate while it captures, so asking
/// the engine from there would take the two locks in the opposite order. The mirror is updated under the gate
/// from the very frames the host sees, so the snapshot stays exact with the event stream.
pub(crate) struct DialogTracker {
    host: Arc<dyn FrameSink>,
    open: Mutex<Vec<(String, BlockingExtensionUiRequest)>>,
}

impl DialogTracker {
    pub(crate) fn new(host: Arc<dyn FrameSink>) -> Self {
        DialogTracker {
            host,
            open: Mutex::new(Vec::new()),
        }
    }

    /// The open blocking requests in emission order (`pendingExtensionUiRequests`).
    pub(crate) fn pending(&self) -> Vec<BlockingExtensionUiRequest> {
        lock(&self.open).iter().map(|(_, r)| r.clone()).collect()
    }

    fn observe(&self, frame: &[u8]) {
        // Cheap pre-check: only dialog frames name `extension_ui_` near their start.
        let head = &frame[..frame.len().min(64)];
        static DIALOG: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"extension_ui_"));
        if DIALOG.find(head).is_none() {
            return;
        }
        for line in frame.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let Ok(value) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            let id = value
                .get("id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            match value.get("type").and_then(Value::as_str) {
                Some("extension_ui_request") => {
                    let blocking = value
                        .get("method")
                        .and_then(Value::as_str)
                        .is_some_and(|m| BlockingExtensionUiRequest::TAGS.contains(&m));
                    if let (true, Ok(request)) = (
                        blocking,
                        serde_json::from_value::<BlockingExtensionUiRequest>(value),
                    ) {
                        lock(&self.open).push((id, request));
                    }
                }
                Some("extension_ui_response_handled") => {
                    lock(&self.open).retain(|(open, _)| *open != id)
                }
                _ => {}
            }
        }
    }
}

impl FrameSink for DialogTracker {
    fn send_frame(&self, frame: Vec<u8>) {
        self.observe(&frame);
        self.host.send_frame(frame);
    }

    fn send_frame_bytes(&self, frame: &[u8]) {
        self.observe(frame);
        self.host.send_frame_bytes(frame);
    }

    fn send_frame_now(&self, frame: &[u8]) {
        self.observe(frame);
        self.host.send_frame_now(frame);
    }

    // Streaming deltas are never dialog frames; the flow control is the host sink's.
    fn send_delta(&self, delta: dreb_protocol::DeltaFrame) {
        self.host.send_delta(delta);
    }

    fn is_behind(&self) -> bool {
        self.host.is_behind()
    }

    fn ready(&self) -> dreb_protocol::ReadyFuture<'_> {
        self.host.ready()
    }

    // Only large responses are streamed in parts, and they are never dialog frames.
    fn takes_parts(&self) -> bool {
        self.host.takes_parts()
    }

    fn send_frame_part(&self, part: Vec<u8>) {
        self.host.send_frame_part(part);
    }

    fn while_streaming(&self, encode: &mut dyn FnMut()) {
        self.host.while_streaming(encode);
    }
}
