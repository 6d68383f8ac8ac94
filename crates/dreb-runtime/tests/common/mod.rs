//! Shared by the runtime's in-process suites: a frame sink that checks every frame the runtime writes against
//! the spec (`dreb-spec-check`).
#![allow(dead_code)]

use std::sync::Mutex;

use dreb_runtime::{FrameSink, VecSink};
use serde_json::Value;

/// A [`VecSink`] that checks each frame against the spec as it is written. A frame that does not match is kept
/// as a violation and fails the test at its next read of the frames (`frames`, `writes`, `clear`) or at
/// [`SpecSink::assert_spec`]; frames are checked on write so that none escapes through `clear`.
#[derive(Default)]
pub struct SpecSink {
    frames: VecSink,
    violations: Mutex<Vec<String>>,
}

impl SpecSink {
    /// Panics with every spec violation written so far.
    #[track_caller]
    pub fn assert_spec(&self) {
        let violations = self.violations.lock().unwrap_or_else(|e| e.into_inner());
        assert!(
            violations.is_empty(),
            "the runtime wrote {} frame(s) that do not match the spec:\n{}",
            violations.len(),
            violations.join("\n")
        );
    }

    /// The frames so far, parsed (see [`VecSink::frames`]).
    #[track_caller]
    pub fn frames(&self) -> Vec<Value> {
        self.assert_spec();
        self.frames.frames()
    }

    /// The writes so far, as sent (see [`VecSink::writes`]).
    #[track_caller]
    pub fn writes(&self) -> Vec<Vec<u8>> {
        self.assert_spec();
        self.frames.writes()
    }

    /// Forget the frames so far (after checking them).
    #[track_caller]
    pub fn clear(&self) {
        self.assert_spec();
        self.frames.clear();
    }
}

impl FrameSink for SpecSink {
    fn send_frame(&self, frame: Vec<u8>) {
        for line in frame.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let checked = serde_json::from_slice::<Value>(line)
                .map_err(|e| format!("not JSON ({e}): {}", String::from_utf8_lossy(line)))
                .and_then(|v| dreb_spec_check::check_frame(&v));
            if let Err(e) = checked {
                self.violations
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(e);
            }
        }
        self.frames.send_frame(frame);
    }
}

/// A response frame from `dispatch`, checked against the spec.
#[track_caller]
pub fn checked_response(frame: Value) -> Value {
    dreb_spec_check::assert_frame(&frame);
    frame
}
