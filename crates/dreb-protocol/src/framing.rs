//! Strict JSON Lines framing for the protocol streams.
//!
//! Reading ([`JsonlReader`]): records end at LF (`\n`) only; one trailing CR is stripped (CRLF input works);
//! U+2028/U+2029 are ordinary characters (they never split a record); a record may arrive split at any byte,
//! including inside a UTF-8 sequence; a final record without LF is delivered at EOF; invalid UTF-8 and records over
//! the size limit are per-record errors after which reading goes on with the next record. Empty records are
//! delivered (an empty line is a protocol error the dispatcher answers, not something to skip).
//!
//! Writing ([`JsonlWriter`], [`encode_frame`]): one frame = compact JSON + `\n`, written with one `write_all`, with
//! U+2028/U+2029 escaped as `\u2028`/`\u2029` (still the same JSON value, and safe for line readers that split on
//! them).

use std::io;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Default maximum record size: 64 MiB (prompts can carry base64 images).
pub const DEFAULT_MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// A record that could not be delivered. Reading continues with the next record after either error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// The record is not valid UTF-8.
    InvalidUtf8 {
        /// Byte offset of the first invalid byte within the record.
        valid_up_to: usize,
    },
    /// The record is longer than the limit; its bytes were discarded up to the next LF.
    TooLarge {
        /// The configured limit in bytes.
        limit: usize,
    },
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordError::InvalidUtf8 { valid_up_to } => {
                write!(
                    f,
                    "input line is not valid UTF-8 (invalid byte at offset {valid_up_to})"
                )
            }
            RecordError::TooLarge { limit } => write!(
                f,
                "input line exceeds the maximum record size of {limit} bytes"
            ),
        }
    }
}

impl std::error::Error for RecordError {}

/// Reads LF-delimited records from an [`AsyncRead`].
#[derive(Debug)]
pub struct JsonlReader<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unconsumed bytes in `buf`.
    start: usize,
    /// End of the unconsumed bytes already known to contain no LF.
    scanned: usize,
    max_record: usize,
    /// Inside an oversized record that was already reported: drop bytes until the next LF.
    discarding: bool,
    eof: bool,
}

const READ_CHUNK: usize = 64 * 1024;

impl<R: AsyncRead + Unpin> JsonlReader<R> {
    /// A reader with the [`DEFAULT_MAX_RECORD_BYTES`] limit.
    pub fn new(inner: R) -> Self {
        Self::with_max_record_bytes(inner, DEFAULT_MAX_RECORD_BYTES)
    }

    /// A reader whose records (without the LF, before CR stripping) may be at most `max` bytes.
    pub fn with_max_record_bytes(inner: R, max: usize) -> Self {
        JsonlReader {
            inner,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            max_record: max,
            discarding: false,
            eof: false,
        }
    }

    /// The next record: `None` at end of input, `Some(Err(_))` for a record that could not be delivered (the
    /// next call goes on after it), `Err` from the outer result for an I/O error of the underlying stream.
    ///
    /// Cancel safe: a record read in part stays buffered for the next call.
    pub async fn next_record(&mut self) -> io::Result<Option<Result<String, RecordError>>> {
        loop {
            if let Some(record) = self.next_buffered() {
                return Ok(record);
            }
            // Compact consumed bytes once per read (not once per record).
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.scanned -= self.start;
                self.start = 0;
            }
            self.buf.reserve(READ_CHUNK);
            let n = self.inner.read_buf(&mut self.buf).await?;
            if n == 0 {
                self.eof = true;
            }
        }
    }

    /// What [`JsonlReader::next_record`] would return without reading: `Some` when the bytes already read hold the
    /// next record (or its error, or the end of input), `None` when more input is needed. A caller handles the
    /// records a host sent together in one go this way, without waiting between them.
    pub fn next_buffered(&mut self) -> Option<Option<Result<String, RecordError>>> {
        loop {
            // `buf[start..]` is unconsumed; `buf[start..scanned]` is known to contain no LF.
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let end = self.scanned + pos;
                let range = self.start..end;
                self.start = end + 1;
                self.scanned = self.start;
                if std::mem::take(&mut self.discarding) {
                    continue; // tail of an oversized record, already reported
                }
                if range.len() > self.max_record {
                    return Some(Some(Err(RecordError::TooLarge {
                        limit: self.max_record,
                    })));
                }
                return Some(Some(finish(self.buf[range].to_vec())));
            }
            self.scanned = self.buf.len();
            if self.discarding || self.buf.len() - self.start > self.max_record {
                // Report once, then drop the rest of this record as it streams in.
                self.buf.clear();
                self.start = 0;
                self.scanned = 0;
                if !std::mem::replace(&mut self.discarding, true) {
                    return Some(Some(Err(RecordError::TooLarge {
                        limit: self.max_record,
                    })));
                }
            }
            if self.eof {
                let rest = self.buf.split_off(self.start);
                self.buf.clear();
                self.start = 0;
                self.scanned = 0;
                if rest.is_empty() || std::mem::take(&mut self.discarding) {
                    return Some(None);
                }
                return Some(Some(finish(rest)));
            }
            return None;
        }
    }

    /// Takes bytes the caller read from the same input itself (the serving loop polls stdin for a moment after
    /// answering, without the runtime): they come after the bytes already buffered, as if this reader had read
    /// them. After the end of input nothing more is taken.
    pub fn push_bytes(&mut self, bytes: &[u8]) {
        if self.eof {
            return;
        }
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Gives the underlying reader back (buffered bytes are dropped).
    pub fn into_inner(self) -> R {
        self.inner
    }
}

/// Strips one trailing CR and checks UTF-8.
fn finish(mut record: Vec<u8>) -> Result<String, RecordError> {
    if record.last() == Some(&b'\r') {
        record.pop();
    }
    String::from_utf8(record).map_err(|e| RecordError::InvalidUtf8 {
        valid_up_to: e.utf8_error().valid_up_to(),
    })
}

/// Frames at least this long give back their spare capacity (see [`encode_frame`]).
const SHRINK_OVER_BYTES: usize = 64 * 1024;

/// Serialises `value` as one frame: compact JSON, U+2028/U+2029 escaped, then `\n`.
pub fn encode_frame<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    // serde_json::to_vec's starting capacity.
    let mut out = Vec::with_capacity(128);
    encode_frame_into(&mut out, value)?;
    // serde_json grows the buffer by doubling: a large frame waiting in the stdout queue should not hold up to twice
    // its size (the queue is budgeted by frame length). Small frames keep their slack: shrinking them would cost a
    // reallocation on nearly every frame for nothing.
    if out.len() >= SHRINK_OVER_BYTES && out.capacity() - out.len() > out.len() / 4 {
        out.shrink_to_fit();
    }
    Ok(out)
}

/// Appends `value` as one frame ([`encode_frame`]'s bytes) to `out`.
pub fn encode_frame_into<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    value: &T,
) -> Result<(), serde_json::Error> {
    let start = out.len();
    serde_json::to_writer(&mut *out, value)?;
    finish_frame(out, start);
    Ok(())
}

/// Makes the JSON text in `out[start..]` a frame: U+2028/U+2029 escaped and `\n` appended, as
/// [`encode_frame_into`] does.
pub(crate) fn finish_frame(out: &mut Vec<u8>, start: usize) {
    escape_line_separators_from(out, start);
    out.push(b'\n');
}

/// Serialises `value` as one frame like [`encode_frame`], handing it to `emit` in parts of about `part_bytes` as
/// it is encoded (the last part ends in `\n`), so a large answer starts reaching the reader before it is all
/// encoded and never exists whole in memory. The parts joined are exactly `encode_frame`'s bytes. On an encoding
/// error the parts already emitted stay emitted; the caller ends the line.
pub fn encode_frame_in_parts<T: Serialize + ?Sized>(
    value: &T,
    part_bytes: usize,
    emit: &mut dyn FnMut(Vec<u8>),
) -> Result<(), serde_json::Error> {
    let mut parts = PartWriter {
        buf: Vec::with_capacity(part_bytes + 64),
        part_bytes,
        emit,
    };
    serde_json::to_writer(&mut parts, value)?;
    let mut last = std::mem::take(&mut parts.buf);
    escape_line_separators(&mut last);
    last.push(b'\n');
    (parts.emit)(last);
    Ok(())
}

struct PartWriter<'a> {
    buf: Vec<u8>,
    part_bytes: usize,
    emit: &'a mut dyn FnMut(Vec<u8>),
}

impl std::io::Write for PartWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= self.part_bytes {
            // A U+2028/U+2029 split across parts would escape neither half: keep a trailing prefix of one back
            // (serde_json writes whole characters, so this is a guard, not a path).
            let keep = match self.buf.as_slice() {
                [.., 0xE2, 0x80] => 2,
                [.., 0xE2] => 1,
                _ => 0,
            };
            let rest = self.buf.split_off(self.buf.len() - keep);
            let mut part =
                std::mem::replace(&mut self.buf, Vec::with_capacity(self.part_bytes + 64));
            self.buf.extend_from_slice(&rest);
            if !part.is_empty() {
                escape_line_separators(&mut part);
                (self.emit)(part);
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Replaces the UTF-8 bytes of U+2028/U+2029 with the JSON escapes `\u2028`/`\u2029`. serde_json writes every
/// byte outside strings as ASCII, so these sequences can only be inside strings, where the escape is equivalent.
fn escape_line_separators(json: &mut Vec<u8>) {
    escape_line_separators_from(json, 0);
}

/// [`escape_line_separators`] for the bytes of `json` from `from` on.
fn escape_line_separators_from(json: &mut Vec<u8>, from: usize) {
    // U+2028 = E2 80 A8, U+2029 = E2 80 A9. memchr: frames can be tens of MiB, and this runs on every one.
    let is_sep_at = |j: &[u8], i: usize| {
        j.get(i + 1) == Some(&0x80) && matches!(j.get(i + 2), Some(0xA8 | 0xA9))
    };
    let mut seps = memchr::memchr_iter(0xE2, &json[from..])
        .map(|i| i + from)
        .filter(|&i| is_sep_at(json, i))
        .peekable();
    if seps.peek().is_none() {
        return;
    }
    let mut out = Vec::with_capacity(json.len() + 16);
    let mut copied = 0;
    for i in seps {
        out.extend_from_slice(&json[copied..i]);
        out.extend_from_slice(if json[i + 2] == 0xA8 {
            b"\\u2028"
        } else {
            b"\\u2029"
        });
        copied = i + 3;
    }
    out.extend_from_slice(&json[copied..]);
    *json = out;
}

/// Writes frames to an [`AsyncWrite`], one `write_all` per frame, flushed after each.
#[derive(Debug)]
pub struct JsonlWriter<W> {
    inner: W,
}

impl<W: AsyncWrite + Unpin> JsonlWriter<W> {
    /// Wraps a writer.
    pub fn new(inner: W) -> Self {
        JsonlWriter { inner }
    }

    /// Serialises and writes one frame. A serialisation failure is reported as `InvalidData` and writes nothing.
    pub async fn write_frame<T: Serialize + ?Sized>(&mut self, value: &T) -> io::Result<()> {
        let bytes =
            encode_frame(value).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        self.write_encoded(&bytes).await
    }

    /// Writes a frame produced by [`encode_frame`] (already ending in `\n`).
    pub async fn write_encoded(&mut self, frame: &[u8]) -> io::Result<()> {
        self.inner.write_all(frame).await?;
        self.inner.flush().await
    }

    /// Gives the underlying writer back.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_frame_in_parts_joins_to_the_whole_frame() {
        // Line separators fall across part boundaries at every offset of a 7-byte part.
        let text: String = (0..200)
            .map(|i| match i % 5 {
                0 => "\u{2028}",
                1 => "\u{2029}",
                2 => "é\"\\",
                3 => "\u{e280}",
                _ => "ab",
            })
            .collect();
        let value =
            serde_json::json!({"type": "response", "data": {"text": text, "list": [1, 2, 3]}});
        let whole = encode_frame(&value).unwrap();
        for part_bytes in [1, 2, 3, 7, 64, 1 << 20] {
            let mut parts = Vec::new();
            encode_frame_in_parts(&value, part_bytes, &mut |p| parts.push(p)).unwrap();
            assert!(parts.iter().all(|p| !p.is_empty()));
            assert!(parts[..parts.len() - 1].iter().all(|p| !p.contains(&b'\n')));
            assert_eq!(parts.concat(), whole, "part size {part_bytes}");
        }
    }
    use super::*;

    /// Bytes pushed by a caller that read them itself join the ones the reader read, at any split point, with
    /// partial records, oversized ones, a CR, invalid UTF-8 and the end of input handled as usual.
    #[tokio::test]
    async fn pushed_bytes_are_read_as_if_the_reader_had_read_them() {
        use futures::FutureExt;
        use tokio::io::AsyncWriteExt;
        let input: &[u8] = b"{\"a\":1}\nxxxxxxxxxxxxxxxxxxxx\n{\"b\":2}\r\n\xff\nlast";
        let expected = all(input, 10).await;
        for split in 0..=input.len() {
            for chunk in [1, 3, 64] {
                // A fresh scheduling budget, so that the pipe is never "not ready" only because this task has
                // polled it for long (tokio's cooperative yielding).
                tokio::task::yield_now().await;
                let (head, tail) = input.split_at(split);
                // `head` is read by the reader from an open pipe; `tail` is pushed in chunks, as the serving loop
                // does after the reader has taken what it holds; then the pipe closes.
                let (mut tx, rx) = tokio::io::duplex(1024);
                tx.write_all(head).await.unwrap();
                let mut r = JsonlReader::with_max_record_bytes(rx, 10);
                let mut got = Vec::new();
                while let Some(rec) = r.next_record().now_or_never() {
                    got.push(rec.unwrap().unwrap());
                }
                for bytes in tail.chunks(chunk) {
                    r.push_bytes(bytes);
                    while let Some(Some(rec)) = r.next_buffered() {
                        got.push(rec);
                    }
                }
                drop(tx);
                while let Some(rec) = r.next_record().await.unwrap() {
                    got.push(rec);
                }
                assert_eq!(got, expected, "split {split} chunk {chunk}");
            }
        }
    }

    async fn all(input: &[u8], max: usize) -> Vec<Result<String, RecordError>> {
        let mut r = JsonlReader::with_max_record_bytes(input, max);
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().await.unwrap() {
            out.push(rec);
        }
        out
    }

    #[tokio::test]
    async fn splits_on_lf_only_and_strips_one_cr() {
        let got = all("a\r\n\nb\u{2028}c\u{2029}\r\r\nlast".as_bytes(), 100).await;
        let want: Vec<Result<String, RecordError>> = vec![
            Ok("a".into()),
            Ok("".into()),
            Ok("b\u{2028}c\u{2029}\r".into()),
            Ok("last".into()),
        ];
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn invalid_utf8_is_a_per_record_error() {
        let got = all(b"ok\n\xff\xfe\nnext\n", 100).await;
        assert_eq!(
            got,
            vec![
                Ok("ok".into()),
                Err(RecordError::InvalidUtf8 { valid_up_to: 0 }),
                Ok("next".into())
            ]
        );
    }

    #[tokio::test]
    async fn oversized_records_are_reported_once_and_skipped() {
        let mut input = b"small\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 50));
        input.extend(b"\nafter\n");
        input.extend(std::iter::repeat_n(b'y', 50)); // oversized final record without LF
        let got = all(&input, 10).await;
        assert_eq!(
            got,
            vec![
                Ok("small".into()),
                Err(RecordError::TooLarge { limit: 10 }),
                Ok("after".into()),
                Err(RecordError::TooLarge { limit: 10 })
            ]
        );
    }

    #[test]
    fn frames_escape_line_separators() {
        let v = serde_json::json!({"t": "a\u{2028}b\u{2029}c\n"});
        let bytes = encode_frame(&v).unwrap();
        assert_eq!(bytes, b"{\"t\":\"a\\u2028b\\u2029c\\n\"}\n");
        let back: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, v);
    }

    #[tokio::test]
    async fn writer_writes_whole_frames() {
        let mut w = JsonlWriter::new(Vec::new());
        w.write_frame(&serde_json::json!({"a": 1})).await.unwrap();
        w.write_frame(&serde_json::json!("x")).await.unwrap();
        assert_eq!(w.into_inner(), b"{\"a\":1}\n\"x\"\n");
    }
}
