//! Running one request: its [`RequestContext`] with the [`Reply`] that writes its response at most once, and the
//! entry points that run a command in-process ([`handle_request`], [`dispatch`]) or for a connection
//! ([`serve_request`]).
//!
//! The dispatcher writes the response when the handler returns, after every event the handler emitted, unless the
//! handler wrote it earlier itself (the `prompt` acknowledgement goes out before the run's first event). No
//! per-command configuration is involved.

use std::panic::AssertUnwindSafe;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::FutureExt;
use serde_json::Value;

use crate::envelope::{Decoded, Request, Response, decode, fill};
use crate::outbox::{Held, Outbox, Ticket, lock};
use crate::{Command, CommandService, Input, ResponseData, error_text};

/// A request's response, written at most once.
pub struct Reply {
    id: Option<Value>,
    command: &'static str,
    /// `None` for a detached request (called in-process): nothing is written, the caller uses the returned value.
    outbox: Option<Outbox>,
    sent: AtomicBool,
    /// The request's ordered turn: it ends when the response is written (or on [`Reply::end_turn`]).
    turn: Mutex<Option<Ticket>>,
}

impl Reply {
    pub(crate) fn new(
        id: Option<Value>,
        command: &'static str,
        outbox: Option<Outbox>,
        turn: Option<Ticket>,
    ) -> Reply {
        Reply {
            id,
            command,
            outbox,
            sent: AtomicBool::new(false),
            turn: Mutex::new(turn),
        }
    }

    /// Wait for this request's turn (at once for a request without one).
    pub(crate) async fn wait_turn(&self) {
        let waiter = lock(&self.turn).as_ref().map(Ticket::waiter);
        if let Some(waiter) = waiter {
            waiter.turn().await;
        }
    }

    /// End the request's ordered turn now: the next ordered command may start.
    pub fn end_turn(&self) {
        drop(lock(&self.turn).take());
    }

    /// Whether the response has been written.
    pub fn is_sent(&self) -> bool {
        self.sent.load(Ordering::Acquire)
    }

    /// Whether responses are written to a connection (false for in-process calls).
    pub fn is_attached(&self) -> bool {
        self.outbox.is_some()
    }

    /// Take the right to write the response: false if it was written already or nothing is attached.
    fn claim(&self) -> bool {
        self.outbox.is_some() && !self.sent.swap(true, Ordering::AcqRel)
    }

    /// Write the success response now, ahead of whatever the command causes next. Returns whether it was written.
    pub fn send_ok(&self, data: ResponseData) -> bool {
        if !self.claim() {
            return false;
        }
        if let Some(outbox) = &self.outbox {
            outbox.send_now(&Response::ok(self.id.clone(), self.command, data));
        }
        self.end_turn();
        true
    }

    /// Write a success response whose `data` the caller serialises itself, straight from where it lives, instead
    /// of building the command's typed result first (a large answer, such as a long session's messages, is then
    /// encoded once, into the frame). `data` must write exactly what the typed result would. The caller holds the
    /// outbox (so it may read runtime state under its locks while `data` is encoded). Returns whether it was
    /// written (false when already written or detached: the handler then returns the typed result).
    pub fn send_ok_encoded_in<D: serde::Serialize + ?Sized>(
        &self,
        held: &Held<'_>,
        data: &D,
    ) -> bool {
        if !self.claim() {
            return false;
        }
        held.send_streamed(&EncodedOk {
            id: self.id.as_ref(),
            command: self.command,
            data,
        });
        self.end_turn();
        true
    }

    /// Write a success response whose `data` the caller writes itself as JSON text (`write_data` appends exactly
    /// the bytes `serde_json` would write for the command's typed result), as [`Reply::send_ok`] would write it:
    /// for a small answer read from state that changes rarely (`get_state`), written without building the typed
    /// result. Returns whether it was written; false when already written, detached, or `write_data` failed (it
    /// then wrote nothing to the connection, and the handler returns the typed result).
    pub fn send_ok_written(
        &self,
        write_data: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
    ) -> bool {
        let Some(outbox) = &self.outbox else {
            return false;
        };
        if self.is_sent() {
            return false;
        }
        let sent = outbox.send_now_with(|buf| {
            if let Err(e) =
                write_ok_head(buf, self.id.as_ref(), self.command).and_then(|()| write_data(buf))
            {
                tracing::error!(command = self.command, "could not encode a response: {e}");
                return false;
            }
            buf.push(b'}');
            // Claimed once the frame is whole: a failure above leaves the response to the dispatcher.
            self.claim()
        });
        if sent {
            self.end_turn();
        }
        sent
    }

    /// [`Reply::send_ok`] while the caller holds the outbox (e.g. right after a barrier frame).
    pub fn send_ok_in(&self, held: &Held<'_>, data: ResponseData) -> bool {
        if !self.claim() {
            return false;
        }
        held.send(&Response::ok(self.id.clone(), self.command, data));
        self.end_turn();
        true
    }

    /// Write the response the dispatcher built, unless the handler already wrote one.
    pub(crate) fn finish(&self, response: &Response) -> bool {
        if !self.claim() {
            return false;
        }
        if let Some(outbox) = &self.outbox {
            outbox.send_now(response);
        }
        self.end_turn();
        true
    }
}

/// A success response with caller-serialised `data`, in [`Response`]'s key order.
struct EncodedOk<'a, D: ?Sized> {
    id: Option<&'a Value>,
    command: &'a str,
    data: &'a D,
}

impl<D: serde::Serialize + ?Sized> serde::Serialize for EncodedOk<'_, D> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        if let Some(id) = self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("type", "response")?;
        map.serialize_entry("command", self.command)?;
        map.serialize_entry("success", &true)?;
        map.serialize_entry("data", self.data)?;
        map.end()
    }
}

/// What [`Response`]'s serialisation writes before a success response's `data` value: `{"id":…,"type":"response",
/// "command":"…","success":true,"data":` (no `id` key without an id). Command names are plain ASCII.
fn write_ok_head(
    buf: &mut Vec<u8>,
    id: Option<&Value>,
    command: &str,
) -> Result<(), serde_json::Error> {
    buf.push(b'{');
    if let Some(id) = id {
        buf.extend_from_slice(b"\"id\":");
        serde_json::to_writer(&mut *buf, id)?;
        buf.push(b',');
    }
    buf.extend_from_slice(b"\"type\":\"response\",\"command\":");
    serde_json::to_writer(&mut *buf, command)?;
    buf.extend_from_slice(b",\"success\":true,\"data\":");
    Ok(())
}

/// Per-request information passed to every handler method.
pub struct RequestContext {
    /// The request's `id`, any JSON value, echoed in the response; `None` when the request had none.
    pub id: Option<Value>,
    /// Where the response goes (see [`Reply`]).
    pub reply: Reply,
}

impl RequestContext {
    /// A request called in-process: nothing is written for it, the handler's return value is the answer.
    pub fn detached(id: Option<Value>) -> RequestContext {
        RequestContext {
            reply: Reply::new(id.clone(), "", None, None),
            id,
        }
    }

    /// A request from a connection: its response goes through `outbox`, in the turn of `ticket` if it has one.
    pub fn attached(
        id: Option<Value>,
        command: &'static str,
        outbox: Outbox,
        ticket: Option<Ticket>,
    ) -> RequestContext {
        RequestContext {
            reply: Reply::new(id.clone(), command, Some(outbox), ticket),
            id,
        }
    }

    /// End this command's ordered turn before it answers: it has applied its state change, and what remains is a
    /// long wait (a process, a compaction) that later commands should not sit behind.
    pub fn release_order(&self) {
        self.reply.end_turn();
    }
}

impl Default for RequestContext {
    fn default() -> Self {
        RequestContext::detached(None)
    }
}

impl std::fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestContext")
            .field("id", &self.id)
            .field("attached", &self.reply.is_attached())
            .field("replied", &self.reply.is_sent())
            .finish()
    }
}

/// Runs the command on `service` with `ctx`. A panic inside the service becomes `Command failed: <panic message>`
/// instead of tearing the connection down.
async fn run_command<S: CommandService>(
    service: &S,
    ctx: &RequestContext,
    command: Command,
) -> Result<ResponseData, String> {
    let name = command.name();
    match AssertUnwindSafe(service.call(ctx, command))
        .catch_unwind()
        .await
    {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "handler panicked".into());
            tracing::error!(command = name, "handler panicked: {msg}");
            Err(fill(error_text::COMMAND_FAILED, &[("message", &msg)]))
        }
    }
}

/// Runs one request on `service` in-process (a detached context: nothing is written) and builds its response
/// (id echoed).
pub async fn handle_request<S: CommandService>(service: &S, request: Request) -> Response {
    let Request { id, command } = request;
    let name = command.name();
    let ctx = RequestContext::detached(id.clone());
    let result = run_command(service, &ctx, command).await;
    Response {
        id,
        command: Some(name.to_string()),
        result,
    }
}

/// Runs one request from a connection: waits for its turn (`ticket`, see [`crate::outbox`]), runs it, and writes
/// its response through `outbox` unless the handler wrote it already. The response is written before the turn
/// ends, so ordered commands answer in arrival order too.
pub async fn serve_request<S: CommandService>(
    service: &S,
    request: Request,
    outbox: &Outbox,
    ticket: Option<Ticket>,
) {
    let Request { id, command } = request;
    let name = command.name();
    let ctx = RequestContext::attached(id.clone(), name, outbox.clone(), ticket);
    ctx.reply.wait_turn().await;
    let result = run_command(service, &ctx, command).await;
    if ctx.reply.is_sent() {
        if let Err(text) = result {
            // A handler that answered early reports later failures itself (as a documented late response).
            tracing::error!(
                command = name,
                "failure after the response was written: {text}"
            );
        }
        return;
    }
    ctx.reply.finish(&Response {
        id,
        command: Some(name.to_string()),
        result,
    });
}

/// The outcome of [`dispatch`]: a response to write, or an input message for the caller to route.
#[allow(clippy::large_enum_variant)] // short-lived, written or routed at once
#[derive(Debug, Clone, PartialEq)]
pub enum Dispatched {
    /// Write this response (exactly one per command line, valid or not).
    Response(Response),
    /// Not a command: route it (e.g. to the pending extension dialog); it gets no response.
    Input(Input),
}

/// Turns one input line into exactly one response (or an [`Input`] for the caller): parse errors, unknown
/// commands and invalid parameters are answered here; valid commands run on `service`.
pub async fn dispatch<S: CommandService>(service: &S, line: &str) -> Dispatched {
    match decode(line) {
        Decoded::Request(req) => Dispatched::Response(handle_request(service, req).await),
        Decoded::Input(input) => Dispatched::Input(input),
        Decoded::Invalid(resp) => Dispatched::Response(resp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::{FrameSink, Sequencer};
    use std::sync::Arc;

    #[derive(Default)]
    struct Collect(Mutex<Vec<Vec<u8>>>);

    impl FrameSink for Collect {
        fn send_frame(&self, frame: Vec<u8>) {
            lock(&self.0).push(frame);
        }
    }

    #[test]
    fn a_reply_is_written_once_and_a_detached_one_never() {
        let sink = Arc::new(Collect::default());
        let outbox = Outbox::new(sink.clone());
        let sequencer = Sequencer::new();
        let reply = Reply::new(
            Some("a".into()),
            "abort",
            Some(outbox.clone()),
            Some(sequencer.ticket()),
        );
        let next = sequencer.ticket();
        assert!(reply.send_ok(ResponseData::Abort));
        // Writing the response ended the request's turn.
        assert!(futures::FutureExt::now_or_never(next.turn()).is_some());
        assert!(!reply.send_ok(ResponseData::Abort));
        assert!(!reply.finish(&Response::error(None, None, "late")));
        assert_eq!(lock(&sink.0).len(), 1);

        let detached = Reply::new(None, "abort", None, None);
        assert!(!detached.send_ok(ResponseData::Abort));
        assert!(!detached.is_sent());
        assert_eq!(lock(&sink.0).len(), 1);
    }

    /// A response whose data the handler writes itself is the frame [`Reply::send_ok`] writes for the typed result.
    #[test]
    fn a_written_response_is_the_typed_response_frame() {
        let ids = [
            None,
            Some(serde_json::json!(7)),
            Some(serde_json::json!(-2.5)),
            Some(serde_json::json!("a \"q\" \u{2028} \u{1F600}")),
            Some(serde_json::json!({"z": [1, null], "a": {"b": true}})),
            Some(Value::Null),
        ];
        for id in ids {
            for version in ["1.2.3", "line\u{2028}sep\u{2029}s \\ \n"] {
                let data = crate::VersionResult {
                    version: version.into(),
                };
                let typed = Arc::new(Collect::default());
                let reply = Reply::new(
                    id.clone(),
                    "get_version",
                    Some(Outbox::new(typed.clone())),
                    None,
                );
                assert!(reply.send_ok(ResponseData::GetVersion(data.clone())));
                let written = Arc::new(Collect::default());
                let reply = Reply::new(
                    id.clone(),
                    "get_version",
                    Some(Outbox::new(written.clone())),
                    None,
                );
                assert!(reply.send_ok_written(|buf| serde_json::to_writer(buf, &data)));
                assert!(!reply.send_ok_written(|buf| serde_json::to_writer(buf, &data)));
                assert!(!reply.send_ok(ResponseData::GetVersion(data.clone())));
                let typed = lock(&typed.0).concat();
                assert_eq!(
                    String::from_utf8(lock(&written.0).concat()).unwrap(),
                    String::from_utf8(typed).unwrap(),
                    "{id:?}"
                );
            }
        }
        // A failed write sends nothing and leaves the response to the dispatcher.
        let sink = Arc::new(Collect::default());
        let reply = Reply::new(None, "get_version", Some(Outbox::new(sink.clone())), None);
        assert!(!reply.send_ok_written(|_| Err(serde::ser::Error::custom("no"))));
        assert!(lock(&sink.0).is_empty());
        assert!(reply.finish(&Response::error(None, None, "failed")));
        assert_eq!(lock(&sink.0).len(), 1);
        // Detached: nothing is written.
        let detached = Reply::new(None, "get_version", None, None);
        assert!(!detached.send_ok_written(|buf| serde_json::to_writer(buf, &1)));
    }
}
