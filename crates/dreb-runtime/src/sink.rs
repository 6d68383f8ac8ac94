//! Where the runtime's events go: the session's `dreb_protocol::Outbox` (responses go through it too), in front of
//! the host's [`FrameSink`].

use std::sync::Mutex;

pub use dreb_protocol::FrameSink;

/// Collects frames in memory (tests, embedding).
#[derive(Default)]
pub struct VecSink {
    frames: Mutex<Vec<Vec<u8>>>,
}

impl VecSink {
    /// The frames so far, parsed (one per line: a single write may carry adjacent frames).
    pub fn frames(&self) -> Vec<serde_json::Value> {
        let frames = self.frames.lock().unwrap_or_else(|e| e.into_inner());
        frames
            .iter()
            .flat_map(|f| f.split(|b| *b == b'\n').filter(|l| !l.is_empty()))
            .map(|l| serde_json::from_slice(l).expect("frames are JSON"))
            .collect()
    }

    /// The writes so far, as sent (each one or more `\n`-terminated frames).
    pub fn writes(&self) -> Vec<Vec<u8>> {
        self.frames
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Forget the frames so far.
    pub fn clear(&self) {
        self.frames
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

impl FrameSink for VecSink {
    fn send_frame(&self, frame: Vec<u8>) {
        self.frames
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(frame);
    }
}
