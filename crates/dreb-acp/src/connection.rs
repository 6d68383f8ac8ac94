//! The connection to the client: one ordered line queue to stdout, and the requests we send to the client
//! (`session/request_permission`) with their pending answers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol_schema::v1::{Error as RpcError, RequestId};
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::jsonrpc;

/// Why a request to the client got no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("the client answered with an error: {0}")]
    Rejected(RpcError),
    #[error("the connection closed before the client answered")]
    Closed,
    #[error("the client's answer does not fit the method's result: {0}")]
    BadResult(serde_json::Error),
}

type Pending = oneshot::Sender<Result<Value, RpcError>>;

enum Out {
    Line(Vec<u8>),
    /// Answered once every line queued before it is written.
    Flush(oneshot::Sender<()>),
}

/// Cheap to clone; every clone writes to the same queue, so lines leave in the order they were queued.
#[derive(Clone)]
pub struct Connection {
    out: mpsc::UnboundedSender<Out>,
    pending: Arc<Mutex<HashMap<RequestId, Pending>>>,
    next_id: Arc<AtomicI64>,
}

/// An answer still to come from the client.
pub struct Answer {
    /// The request's id (to cancel it with `$/cancel_request`).
    pub id: RequestId,
    rx: oneshot::Receiver<Result<Value, RpcError>>,
}

impl Answer {
    pub async fn get<R: serde::de::DeserializeOwned>(self) -> Result<R, PeerError> {
        match self.rx.await {
            Ok(Ok(v)) => serde_json::from_value(v).map_err(PeerError::BadResult),
            Ok(Err(e)) => Err(PeerError::Rejected(e)),
            Err(_) => Err(PeerError::Closed),
        }
    }
}

impl Connection {
    /// The connection and the task that writes its lines to `out` until every clone is dropped.
    pub fn start(
        out: impl AsyncWrite + Unpin + Send + 'static,
    ) -> (Connection, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write_lines(out, rx));
        let conn = Connection {
            out: tx,
            pending: Arc::new(Mutex::new(HashMap::new())),
            next_id: Arc::new(AtomicI64::new(0)),
        };
        (conn, writer)
    }

    fn send(&self, line: Vec<u8>) {
        // The writer only stops when stdout is gone; nothing can be told to the client then.
        let _ = self.out.send(Out::Line(line));
    }

    /// Completes when every line queued so far is written (or stdout is gone).
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.out.send(Out::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }

    pub fn respond(&self, id: &RequestId, result: Result<Value, RpcError>) {
        self.send(match result {
            Ok(v) => jsonrpc::encode_result(id, &v),
            Err(e) => jsonrpc::encode_error(id, &e),
        });
    }

    /// Encoded straight from the typed params (no intermediate `Value`: this runs once per streamed chunk).
    pub fn notify(&self, method: &str, params: &impl Serialize) {
        self.send(jsonrpc::encode_typed_notification(method, params));
    }

    /// Queues a request to the client now (so it is ordered with the lines queued before it); the answer is
    /// awaited separately.
    pub fn request(&self, method: &str, params: &impl Serialize) -> Answer {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), tx);
        let params = serde_json::to_value(params).expect("protocol types serialise");
        self.send(jsonrpc::encode_request(&id, method, &params));
        Answer { id, rx }
    }

    /// Withdraws a request the client has not answered: the client is told (`$/cancel_request`), and the local
    /// waiter gets a cancelled error.
    pub fn cancel_request(&self, id: &RequestId) {
        self.notify(
            "$/cancel_request",
            &agent_client_protocol_schema::v1::CancelRequestNotification::new(id.clone()),
        );
        self.settle(id, Err(RpcError::request_cancelled()));
    }

    /// Routes a client response to its request; false when no request of ours has that id.
    pub fn settle(&self, id: &RequestId, outcome: Result<Value, RpcError>) -> bool {
        match lock(&self.pending).remove(id) {
            Some(tx) => {
                let _ = tx.send(outcome);
                true
            }
            None => false,
        }
    }

    /// Ends every pending request with [`PeerError::Closed`] (stdin closed: no answer can come).
    pub fn close_pending(&self) {
        lock(&self.pending).clear();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

async fn write_lines(mut out: impl AsyncWrite + Unpin, mut rx: mpsc::UnboundedReceiver<Out>) {
    let mut batch = Vec::new();
    let mut flushed = Vec::new();
    while let Some(first) = rx.recv().await {
        batch.clear();
        let mut next = Some(first);
        // Whatever queued meanwhile goes out in the same write.
        while let Some(item) = next.take().or_else(|| rx.try_recv().ok()) {
            match item {
                Out::Line(line) => batch.extend_from_slice(&line),
                Out::Flush(done) => flushed.push(done),
            }
            if batch.len() > 1 << 20 {
                break;
            }
        }
        if !batch.is_empty() && (out.write_all(&batch).await.is_err() || out.flush().await.is_err())
        {
            tracing::warn!("stdout closed; dropping ACP output");
            return;
        }
        for done in flushed.drain(..) {
            let _ = done.send(());
        }
    }
}
