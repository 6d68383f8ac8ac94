//! The single ordered stdout writer.
//!
//! Every frame (responses and events alike) goes through one [`Output`] handle into one writer task, so frames are
//! written whole, in the order they were sent, and never interleave. A reader that stops reading cannot make memory
//! grow without bound: the bytes queued for stdout are capped (16 MiB by default, like the reference); going over
//! the cap is fatal, reported on stderr and turned into exit code 1 by the caller, because silently dropping frames
//! would desynchronise the host.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use dreb_protocol::framing::encode_frame;
use serde::Serialize;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Default cap on bytes queued for stdout while the reader is not keeping up.
pub const DEFAULT_MAX_QUEUED_BYTES: usize = 16 * 1024 * 1024;

/// The frame could not be queued: the writer has stopped (stdout closed, or the queue overflowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputClosed;

impl std::fmt::Display for OutputClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout writer has stopped")
    }
}

impl std::error::Error for OutputClosed {}

/// A cloneable handle that queues frames for the writer task.
#[derive(Clone)]
pub struct Output {
    tx: mpsc::UnboundedSender<Vec<u8>>,
    queued: Arc<AtomicUsize>,
    max_queued: usize,
    /// Cancelled when the queue overflowed; the server stops and the process exits 1.
    overflowed: CancellationToken,
}

impl Output {
    /// Start the writer task on `sink`. Returns the handle and the task, which ends (after writing everything
    /// queued) once every handle is dropped, or at the first write error.
    pub fn start<W>(sink: W, max_queued: usize) -> (Output, JoinHandle<std::io::Result<()>>)
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let queued = Arc::new(AtomicUsize::new(0));
        let out = Output {
            tx,
            queued: queued.clone(),
            max_queued,
            overflowed: CancellationToken::new(),
        };
        let task = tokio::spawn(async move {
            let mut sink = sink;
            while let Some(bytes) = rx.recv().await {
                let len = bytes.len();
                let result = sink.write_all(&bytes).await;
                queued.fetch_sub(len, Ordering::AcqRel);
                result?;
                // Flush when the queue is drained, so a burst is written in few syscalls but nothing lingers.
                if rx.is_empty() {
                    sink.flush().await?;
                }
            }
            sink.flush().await
        });
        (out, task)
    }

    /// Queue one frame.
    pub fn send<T: Serialize + ?Sized>(&self, frame: &T) -> Result<(), OutputClosed> {
        match encode_frame(frame) {
            Ok(bytes) => self.send_encoded(bytes),
            Err(e) => {
                // Our own types always serialise; report rather than write a half frame.
                tracing::error!("could not encode a frame: {e}");
                Ok(())
            }
        }
    }

    /// Queue already encoded frame bytes (each frame ending in `\n`).
    pub fn send_encoded(&self, bytes: Vec<u8>) -> Result<(), OutputClosed> {
        if self.overflowed.is_cancelled() {
            return Err(OutputClosed);
        }
        let len = bytes.len();
        let before = self.queued.fetch_add(len, Ordering::AcqRel);
        // One frame larger than the cap is allowed when the queue was within it (a big transcript must go out).
        if before > 0 && before + len > self.max_queued {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            if !self.overflowed.is_cancelled() {
                tracing::error!(
                    "Fatal: stdout write queue exceeded {} bytes while the stream was backpressured. The consumer of \
                     this process's stdout is not reading; refusing unbounded memory growth. Aborting.",
                    self.max_queued
                );
                self.overflowed.cancel();
            }
            return Err(OutputClosed);
        }
        self.tx.send(bytes).map_err(|_| {
            self.queued.fetch_sub(len, Ordering::AcqRel);
            OutputClosed
        })
    }

    /// Wait until every queued frame has been written, or `timeout` passes. Returns whether the queue drained.
    pub async fn flush(&self, timeout: std::time::Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        while self.queued_bytes() > 0 {
            if tokio::time::Instant::now() >= deadline || self.tx.is_closed() {
                return self.queued_bytes() == 0;
            }
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        true
    }

    /// Bytes queued and not yet written.
    pub fn queued_bytes(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    /// Cancelled when the output queue overflowed.
    pub fn overflowed(&self) -> CancellationToken {
        self.overflowed.clone()
    }
}

/// The writer as the outbox's sink. A frame the writer no longer takes (stdout closed or overflowed) is dropped: the
/// server is already stopping.
impl dreb_protocol::FrameSink for Output {
    fn send_frame(&self, frame: Vec<u8>) {
        let _ = self.send_encoded(frame);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn frames_are_written_whole_and_in_order() {
        let (client, mut server) = tokio::io::duplex(64);
        let (out, task) = Output::start(client, DEFAULT_MAX_QUEUED_BYTES);
        for i in 0..100 {
            out.send(&json!({"type": "n", "i": i, "text": "x\u{2028}y"}))
                .unwrap();
        }
        let mut adjacent = encode_frame(&json!({"type": "barrier"})).unwrap();
        adjacent.extend(encode_frame(&json!({"type": "response"})).unwrap());
        out.send_encoded(adjacent).unwrap();
        drop(out);
        let mut text = String::new();
        server.read_to_string(&mut text).await.unwrap();
        task.await.unwrap().unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 102);
        for (i, line) in lines[..100].iter().enumerate() {
            assert_eq!(
                *line,
                format!(r#"{{"type":"n","i":{i},"text":"x\u2028y"}}"#)
            );
        }
        assert_eq!(
            &lines[100..],
            [r#"{"type":"barrier"}"#, r#"{"type":"response"}"#]
        );
    }

    #[tokio::test]
    async fn a_reader_that_stops_reading_trips_the_cap_instead_of_growing_memory() {
        // The other end is never read: after the pipe buffer fills, frames pile up in the queue.
        let (client, _server) = tokio::io::duplex(1024);
        let (out, _task) = Output::start(client, 64 * 1024);
        let frame = json!({"type": "message_update", "pad": "p".repeat(1000)});
        let mut sent = 0usize;
        let result = loop {
            match out.send(&frame) {
                Ok(()) => sent += 1,
                Err(e) => break e,
            }
            if sent > 10_000 {
                panic!("the cap never tripped");
            }
            tokio::task::yield_now().await;
        };
        assert_eq!(result, OutputClosed);
        assert!(out.overflowed().is_cancelled());
        assert!(out.queued_bytes() <= 64 * 1024 + 2048);
        // Once overflowed, nothing more is accepted.
        assert_eq!(out.send(&json!({"type": "late"})), Err(OutputClosed));
    }
}
