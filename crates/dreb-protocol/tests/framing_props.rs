//! Property tests: however the input is chunked (down to single bytes, splitting UTF-8 sequences and CRLF pairs),
//! the reader yields the same records, and writer output always reads back as the same values.

use std::pin::Pin;
use std::task::{Context, Poll};

use dreb_protocol::framing::{JsonlReader, RecordError, encode_frame};
use proptest::prelude::*;
use tokio::io::{AsyncRead, ReadBuf};

/// Serves `data` in chunks of the given sizes (cycled), one chunk per read.
struct Chunked {
    data: Vec<u8>,
    pos: usize,
    sizes: Vec<usize>,
    turn: usize,
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let me = &mut *self;
        let size = me.sizes[me.turn % me.sizes.len()].max(1);
        me.turn += 1;
        let end = me
            .pos
            .saturating_add(size)
            .min(me.data.len())
            .min(me.pos + buf.remaining());
        buf.put_slice(&me.data[me.pos..end]);
        me.pos = end;
        Poll::Ready(Ok(()))
    }
}

fn read_all(data: Vec<u8>, sizes: Vec<usize>, max: usize) -> Vec<Result<String, RecordError>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut r = JsonlReader::with_max_record_bytes(
            Chunked {
                data,
                pos: 0,
                sizes,
                turn: 0,
            },
            max,
        );
        let mut out = Vec::new();
        while let Some(rec) = r.next_record().await.unwrap() {
            out.push(rec);
        }
        out
    })
}

fn record() -> impl Strategy<Value = String> {
    let chars = prop::sample::select(vec![
        'a', ' ', '{', '"', '\r', 'é', '€', '😀', '\u{2028}', '\u{2029}', '\\',
    ]);
    prop::collection::vec(chars, 0..12).prop_map(|cs| cs.into_iter().collect::<String>())
}

proptest! {
    #[test]
    fn any_chunking_gives_the_same_records(
        records in prop::collection::vec(record(), 0..8),
        trailing_lf in any::<bool>(),
        crlf in any::<bool>(),
        sizes in prop::collection::vec(1usize..9, 1..6),
    ) {
        let sep = if crlf { "\r\n" } else { "\n" };
        let mut text = records.join(sep);
        if trailing_lf && !records.is_empty() {
            text.push_str(sep);
        }
        // Expected: each record minus one trailing CR (CRLF separators add one more CR that is stripped first).
        let mut expected: Vec<Result<String, RecordError>> = records
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let last = i + 1 == records.len();
                let mut r = r.clone();
                if (!crlf || (last && !trailing_lf)) && r.ends_with('\r') {
                    r.pop();
                }
                Ok(r)
            })
            .collect();
        // An empty final record without a terminator is no record at all.
        if !trailing_lf && records.last().is_some_and(|r| r.is_empty()) {
            expected.pop();
        }
        let whole = read_all(text.clone().into_bytes(), vec![usize::MAX], 1 << 20);
        prop_assert_eq!(&whole, &expected);
        let chunked = read_all(text.into_bytes(), sizes, 1 << 20);
        prop_assert_eq!(chunked, whole);
    }

    #[test]
    fn errors_do_not_depend_on_chunking(
        parts in prop::collection::vec((record(), 0u8..3), 1..8),
        sizes in prop::collection::vec(1usize..9, 1..6),
    ) {
        // Each record is valid, invalid UTF-8, or oversized (limit 16 bytes).
        let mut data = Vec::new();
        for (r, kind) in &parts {
            match kind {
                0 => data.extend(r.as_bytes()),
                1 => { data.extend(r.as_bytes()); data.push(0xFF); }
                _ => data.extend(std::iter::repeat_n(b'x', 40)),
            }
            data.push(b'\n');
        }
        let whole = read_all(data.clone(), vec![usize::MAX], 16);
        prop_assert_eq!(whole.len(), parts.len());
        let chunked = read_all(data, sizes, 16);
        prop_assert_eq!(chunked, whole);
    }

    #[test]
    fn written_frames_read_back(strings in prop::collection::vec(record(), 0..6)) {
        let mut data = Vec::new();
        for s in &strings {
            data.extend(encode_frame(&serde_json::json!({"s": s})).unwrap());
        }
        // No raw U+2028/U+2029 ever reaches the wire.
        let raw_separator = String::from_utf8(data.clone()).unwrap().contains(['\u{2028}', '\u{2029}']);
        prop_assert!(!raw_separator, "a raw line separator reached the wire");
        let back = read_all(data, vec![3], 1 << 20);
        let values: Vec<String> = back
            .into_iter()
            .map(|r| serde_json::from_str::<serde_json::Value>(&r.unwrap()).unwrap()["s"].as_str().unwrap().to_string())
            .collect();
        prop_assert_eq!(values, strings);
    }
}
