//! A deliberately naive model of the framing rules of `protocol/rpc.yaml` (`envelope.doc`, "Framing"), written
//! independently of [`dreb_protocol::framing`]: split on LF only, strip one trailing CR, a final record without LF
//! counts, a record over the limit (measured before CR stripping) is one `TooLarge`, invalid UTF-8 is one
//! `InvalidUtf8` naming the first bad byte.

use dreb_protocol::framing::RecordError;

/// One input line: its bytes including the LF that ends it (the last one may have none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment<'a> {
    /// The line with its terminator, exactly as in the input.
    pub raw: &'a [u8],
    /// The record the reader should deliver for it.
    pub record: Result<String, RecordError>,
}

/// Splits `input` into lines and says what the reader should deliver for each.
pub fn segments(input: &[u8], max: usize) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let (line, raw) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => (&rest[..i], &rest[..=i]),
            None => (rest, rest),
        };
        rest = &rest[raw.len()..];
        let record = if line.len() > max {
            Err(RecordError::TooLarge { limit: max })
        } else {
            let body = line.strip_suffix(b"\r").unwrap_or(line);
            match std::str::from_utf8(body) {
                Ok(s) => Ok(s.to_string()),
                Err(e) => Err(RecordError::InvalidUtf8 {
                    valid_up_to: e.valid_up_to(),
                }),
            }
        };
        out.push(Segment { raw, record });
    }
    out
}

/// The records (or per-record errors) a reader with limit `max` must deliver for `input`, in order.
pub fn reference_records(input: &[u8], max: usize) -> Vec<Result<String, RecordError>> {
    segments(input, max).into_iter().map(|s| s.record).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_agrees_with_the_documented_examples() {
        let got = reference_records("a\r\n\nb\u{2028}c\r\r\nlast".as_bytes(), 100);
        assert_eq!(
            got,
            vec![
                Ok("a".into()),
                Ok("".into()),
                Ok("b\u{2028}c\r".into()),
                Ok("last".into())
            ]
        );
        assert_eq!(reference_records(b"", 10), vec![]);
        assert_eq!(reference_records(b"\n", 10), vec![Ok(String::new())]);
        assert_eq!(
            reference_records(b"ok\n\xff\nxxxxxxxxxxx", 10),
            vec![
                Ok("ok".into()),
                Err(RecordError::InvalidUtf8 { valid_up_to: 0 }),
                Err(RecordError::TooLarge { limit: 10 })
            ]
        );
        // The limit counts the CR: 10 bytes + CR is too large for 10.
        assert_eq!(
            reference_records(b"xxxxxxxxxx\r\n", 10),
            vec![Err(RecordError::TooLarge { limit: 10 })]
        );
    }
}
