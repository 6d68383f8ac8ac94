//! Test harness: an engine whose frames are decoded and collected, a stop-hook counter, and helpers to answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dreb_dialog::{DialogEngine, FrameSink, ResponseDisposition};
use dreb_protocol::Input;
use serde_json::Value;
use tokio::sync::mpsc;

pub struct Harness {
    pub engine: DialogEngine,
    frames: Arc<Mutex<Vec<Value>>>,
    rx: mpsc::UnboundedReceiver<Value>,
    stops: Arc<AtomicUsize>,
}

pub fn harness() -> Harness {
    let (tx, rx) = mpsc::unbounded_channel();
    let frames = Arc::new(Mutex::new(Vec::new()));
    let all = frames.clone();
    let output: FrameSink = Arc::new(move |bytes: Vec<u8>| {
        // Every frame is exactly one JSON line.
        assert_eq!(bytes.last(), Some(&b'\n'), "frame must end with LF");
        assert!(
            !bytes[..bytes.len() - 1].contains(&b'\n'),
            "frame must be a single line"
        );
        let v: Value = serde_json::from_slice(&bytes).expect("frame is JSON");
        all.lock().unwrap().push(v.clone());
        let _ = tx.send(v);
    });
    let engine = DialogEngine::new(output);
    let stops = Arc::new(AtomicUsize::new(0));
    let s = stops.clone();
    engine.set_ask_stop_hook(Arc::new(move || {
        s.fetch_add(1, Ordering::SeqCst);
    }));
    Harness {
        engine,
        frames,
        rx,
        stops,
    }
}

impl Harness {
    /// The next frame written (waits for it).
    pub async fn next_frame(&mut self) -> Value {
        self.rx.recv().await.expect("engine alive")
    }

    /// The next `extension_ui_request` frame (handled events before it are skipped: tests check them
    /// with [`handled`](Self::handled)); returns it and its id.
    pub async fn next_request(&mut self) -> (Value, String) {
        let mut f = self.next_frame().await;
        while f["type"] == "extension_ui_response_handled" {
            f = self.next_frame().await;
        }
        assert_eq!(f["type"], "extension_ui_request", "{f}");
        let id = f["id"].as_str().expect("string id").to_string();
        (f, id)
    }

    /// Every frame written so far.
    pub fn frames(&self) -> Vec<Value> {
        self.frames.lock().unwrap().clone()
    }

    /// Ids of the `extension_ui_response_handled` frames written so far, in order.
    pub fn handled(&self) -> Vec<String> {
        self.frames()
            .iter()
            .filter(|f| f["type"] == "extension_ui_response_handled")
            .map(|f| f["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// Number of `extension_ui_request` frames written so far.
    pub fn requests_emitted(&self) -> usize {
        self.frames()
            .iter()
            .filter(|f| f["type"] == "extension_ui_request")
            .count()
    }

    pub fn stops(&self) -> usize {
        self.stops.load(Ordering::SeqCst)
    }

    /// Sends a raw `extension_ui_response` frame (given without `type`) through `handle_response`.
    pub fn respond(&self, body: Value) -> ResponseDisposition {
        let Value::Object(mut m) = body else {
            panic!("object expected")
        };
        m.insert("type".into(), Value::String("extension_ui_response".into()));
        self.engine.handle_response(&Input::ExtensionUiResponse(m))
    }

    /// Answers dialog `id` with `fields` merged into `{type, id}`.
    pub fn answer(&self, id: &str, fields: Value) -> ResponseDisposition {
        let mut m = serde_json::Map::new();
        m.insert("id".into(), Value::String(id.into()));
        for (k, v) in fields.as_object().expect("object").clone() {
            m.insert(k, v);
        }
        self.respond(Value::Object(m))
    }
}

/// In paused-time tests: returns once every other task is parked (time only auto-advances when idle).
pub async fn quiesce() {
    tokio::time::sleep(Duration::from_millis(1)).await;
}
