//! Fuzz body: the stdin frame reader ([`JsonlReader`]) against the reference splitter.
//!
//! Input layout: byte 0 picks the record limit (1..=48 bytes, or the 64 MiB default from 240 up); byte 1 % 8 is
//! the number of chunk-pattern bytes that follow; each pattern byte is one read's size (`0` = the read is pending
//! once, `1..=239` = that many bytes % 64 + 1, `240..` = everything left), used in a cycle (no pattern = one read
//! of everything). The rest is the input stream. The same stream is also read in one piece with the default limit.
//!
//! Checks: never panics; the delivered sequence of records and errors equals the reference's for every line (so
//! records never contain LF, one trailing CR is stripped, an over-limit line is one `TooLarge` and reading goes
//! on with the next line, invalid UTF-8 is one `InvalidUtf8` naming the first bad byte, a final line without LF
//! is delivered, and nothing is delivered twice or lost); the reader ends (`None`) and stays ended.

use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};

use dreb_protocol::framing::{DEFAULT_MAX_RECORD_BYTES, JsonlReader};
use tokio::io::{AsyncRead, ReadBuf};

use crate::reference::reference_records;

/// Splits the fuzz input into (record limit, chunk pattern, stream).
pub fn parse_input(data: &[u8]) -> (usize, &[u8], &[u8]) {
    let Some((&limit, rest)) = data.split_first() else {
        return (DEFAULT_MAX_RECORD_BYTES, &[], &[]);
    };
    let max = if limit >= 240 {
        DEFAULT_MAX_RECORD_BYTES
    } else {
        1 + limit as usize % 48
    };
    let Some((&n, rest)) = rest.split_first() else {
        return (max, &[], &[]);
    };
    let n = (n as usize % 8).min(rest.len());
    (max, &rest[..n], &rest[n..])
}

/// The fuzz body (see the module doc).
pub fn frame_reader(data: &[u8]) {
    let (max, pattern, stream) = parse_input(data);
    check(stream, max, pattern);
    if !pattern.is_empty() || max != DEFAULT_MAX_RECORD_BYTES {
        check(stream, DEFAULT_MAX_RECORD_BYTES, &[]);
    }
}

fn check(stream: &[u8], max: usize, pattern: &[u8]) {
    let want = reference_records(stream, max);
    let reader = ChunkedReader {
        data: stream,
        pos: 0,
        pattern,
        step: 0,
        pended: false,
    };
    let mut r = JsonlReader::with_max_record_bytes(reader, max);
    let mut got = Vec::new();
    loop {
        match block_on(r.next_record()) {
            Ok(Some(record)) => {
                if let Ok(line) = &record {
                    assert!(!line.contains('\n'), "a record contains LF: {line:?}");
                }
                got.push(record);
                assert!(
                    got.len() <= want.len(),
                    "more records than lines (limit {max}, pattern {pattern:?}): {got:?}, want {want:?}"
                );
            }
            Ok(None) => break,
            Err(e) => panic!("the in-memory reader cannot fail, got {e}"),
        }
    }
    assert_eq!(
        got, want,
        "records differ from the reference (limit {max}, pattern {pattern:?})"
    );
    // Ended for good.
    assert!(matches!(block_on(r.next_record()), Ok(None)));
}

/// Polls a future that never waits on anything external (the reader below wakes itself) to completion.
fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

/// Hands out `data` in reads sized by `pattern` (see the module doc).
struct ChunkedReader<'a> {
    data: &'a [u8],
    pos: usize,
    pattern: &'a [u8],
    step: usize,
    pended: bool,
}

impl AsyncRead for ChunkedReader<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let left = self.data.len() - self.pos;
        let size = if self.pattern.is_empty() {
            left
        } else {
            let b = self.pattern[self.step % self.pattern.len()];
            if b == 0 && !self.pended {
                self.pended = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            self.pended = false;
            self.step += 1;
            match b {
                0 => 1,
                240.. => left,
                _ => b as usize % 64 + 1,
            }
        };
        let n = size.min(left).min(buf.remaining());
        let start = self.pos;
        buf.put_slice(&self.data[start..start + n]);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}
