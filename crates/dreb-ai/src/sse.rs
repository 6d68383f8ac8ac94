//! Server-sent events from a byte stream, as `eventsource_stream` decodes them (the same [`Event`]s, fields and
//! dispatch rules of the HTML spec: `data` lines joined with LF, `event` defaulting to `message`, the last `id`
//! kept across events, `retry` in milliseconds, comments ignored, a leading BOM skipped, CR, LF or CRLF line ends,
//! nothing dispatched for an event without data or for an unterminated event at the end), without its per-line
//! cost: it cut each parsed line off the front of its buffer by copying the rest into a new `String`, so a read of
//! many small events was copied over once per line. Here lines are found in the bytes and the buffer is compacted
//! once per read.
//!
//! Differences: a leading BOM is skipped (the crate panicked, slicing one byte off it); bytes that are not UTF-8 end the stream at the line that holds them (the crate kept them
//! buffered, delivering nothing after them, and reported an error when the body ended); the providers see either
//! as a stream that stopped.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use eventsource_stream::Event;
use futures::Stream;

/// The events of `bytes`; a transport error ends them (logged), as does a line that is not UTF-8.
pub(crate) struct SseStream<S> {
    bytes: S,
    buf: Vec<u8>,
    /// Where the unparsed bytes of `buf` start.
    pos: usize,
    started: bool,
    done: bool,
    fields: Fields,
}

/// The event being read.
#[derive(Default)]
struct Fields {
    event: String,
    data: String,
    /// The last event id, carried into every later event.
    id: String,
    retry: Option<Duration>,
}

impl<S> SseStream<S> {
    pub(crate) fn new(bytes: S) -> SseStream<S> {
        SseStream {
            bytes,
            buf: Vec::new(),
            pos: 0,
            started: false,
            done: false,
            fields: Fields::default(),
        }
    }

    /// The next complete event in the buffered bytes, if any. `Err(())`: a line is not UTF-8.
    fn next_event(&mut self) -> Result<Option<Event>, ()> {
        loop {
            let rest = &self.buf[self.pos..];
            let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') else {
                return Ok(None);
            };
            let eol = match rest[end] {
                b'\r' if end + 1 == rest.len() => return Ok(None), // CR or CRLF: wait for the next byte
                b'\r' if rest[end + 1] == b'\n' => 2,
                _ => 1,
            };
            let line = std::str::from_utf8(&rest[..end]).map_err(|_| ())?;
            let dispatch = self.fields.line(line);
            self.pos += end + eol;
            if dispatch && let Some(event) = self.fields.dispatch() {
                return Ok(Some(event));
            }
        }
    }

    /// Drops the parsed bytes once they are the larger part of the buffer (so it is compacted about once per read).
    fn compact(&mut self) {
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }
}

impl Fields {
    /// Takes in one line; `true` when it ends an event.
    fn line(&mut self, line: &str) -> bool {
        if line.is_empty() {
            return true;
        }
        if line.starts_with(':') {
            return false;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
            }
            "id" if !value.contains('\0') => value.clone_into(&mut self.id),
            "retry" => {
                self.retry = value
                    .parse::<u64>()
                    .ok()
                    .map(Duration::from_millis)
                    .or(self.retry);
            }
            _ => {}
        }
        false
    }

    fn dispatch(&mut self) -> Option<Event> {
        let mut data = std::mem::take(&mut self.data);
        let mut event = std::mem::take(&mut self.event);
        let retry = self.retry.take();
        if data.is_empty() {
            return None;
        }
        data.pop(); // the LF after the last data line
        if event.is_empty() {
            event.push_str("message");
        }
        Some(Event {
            event,
            data,
            id: self.id.clone(),
            retry,
        })
    }
}

impl<S, B, E> Stream for SseStream<S>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
    E: std::fmt::Display,
{
    type Item = Event;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match this.next_event() {
                Ok(Some(event)) => return Poll::Ready(Some(event)),
                Ok(None) => {}
                Err(()) => {
                    tracing::debug!("SSE stream error: the body is not UTF-8");
                    this.done = true;
                    return Poll::Ready(None);
                }
            }
            this.compact();
            match Pin::new(&mut this.bytes).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    let mut chunk = chunk.as_ref();
                    if chunk.is_empty() {
                        continue;
                    }
                    if !this.started {
                        this.started = true;
                        chunk = chunk.strip_prefix("\u{feff}".as_bytes()).unwrap_or(chunk);
                    }
                    this.buf.extend_from_slice(chunk);
                }
                Poll::Ready(Some(Err(e))) => {
                    tracing::debug!(error = %e, "SSE stream error");
                    this.done = true;
                }
                Poll::Ready(None) => this.done = true,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eventsource_stream::Eventsource;
    use futures::StreamExt;

    /// Ours and the crate's events for the same chunks (the crate's up to its first error).
    async fn both(chunks: &[&[u8]]) -> (Vec<Event>, Vec<Event>) {
        let owned: Vec<Result<Vec<u8>, std::io::Error>> =
            chunks.iter().map(|c| Ok(c.to_vec())).collect();
        let ours = SseStream::new(futures::stream::iter(owned.iter().map(|r| match r {
            Ok(b) => Ok::<_, std::io::Error>(b.clone()),
            Err(_) => unreachable!(),
        })))
        .collect::<Vec<_>>()
        .await;
        let theirs = futures::stream::iter(owned)
            .eventsource()
            .take_while(|r| futures::future::ready(r.is_ok()))
            .filter_map(|r| futures::future::ready(r.ok()))
            .collect::<Vec<_>>()
            .await;
        (ours, theirs)
    }

    #[tokio::test]
    async fn decodes_like_eventsource_stream() {
        let inputs: Vec<Vec<&[u8]>> = vec![
            vec![b"data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n"],
            vec![b"event: message_start\ndata: x\n\nevent: ping\ndata: y\n\n"],
            vec![
                b"data: one\ndata: two\n\n",
                b"data:no space\n\ndata:  two spaces\n\n",
            ],
            vec![b"id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"],
            vec![b"retry: 1500\ndata: a\n\ndata: b\n\nretry: x\ndata: c\n\n"],
            vec![
                b": comment\n\ndata: after comment\n\n",
                b"\n\n\ndata\n\ndata:\n\n",
            ],
            vec![b"data: crlf\r\n\r\ndata: cr\r\rdata: mixed\r\n\n"],
            vec![
                b"data: split",
                b" across\n",
                b"\n",
                b"data: cr at end\r",
                b"\n\r\n",
            ],
            vec![b"data: caf\xc3", b"\xa9 \xe2\x82", b"\xac\n\n"],
            vec![b"data: unterminated at the end\n"],
            vec![b"data: last\n\ndata: no blank line"],
            vec![b"field-without-colon\nunknown: x\ndata: d\n\n"],
            vec![b"event: e\n\ndata: event name reset\n\n"],
            vec![b"", b"data: empty chunks\n", b"", b"\n"],
        ];
        for chunks in inputs {
            let (ours, theirs) = both(&chunks).await;
            assert_eq!(ours, theirs, "{chunks:?}");
        }
    }

    #[tokio::test]
    async fn a_leading_byte_order_mark_is_skipped() {
        // (The crate panics here: it slices one byte off the three-byte mark.)
        let chunks: Vec<Result<&[u8], std::io::Error>> = vec![Ok(b"\xef\xbb\xbfdata: bom\n\n")];
        let ours = SseStream::new(futures::stream::iter(chunks))
            .collect::<Vec<_>>()
            .await;
        assert_eq!(ours.len(), 1);
        assert_eq!(
            (ours[0].event.as_str(), ours[0].data.as_str()),
            ("message", "bom")
        );
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_ends_the_stream_after_the_events_before_it() {
        let (ours, theirs) = both(&[b"data: ok\n\ndata: \xff\xfe\n\ndata: later\n\n"]).await;
        assert_eq!(ours.len(), 1);
        assert_eq!(ours[0].data, "ok");
        assert_eq!(theirs[..1], ours[..]);
    }

    #[tokio::test]
    async fn many_events_in_one_read() {
        let body: String = (0..2000)
            .map(|i| format!("data: {{\"i\":{i}}}\n\n"))
            .collect();
        let (ours, theirs) = both(&[body.as_bytes()]).await;
        assert_eq!(ours.len(), 2000);
        assert_eq!(ours, theirs);
    }
}
