//! A minimal structural JSON scanner for listings: walks the fields of an object line and returns raw value spans
//! without building values or validating string contents. It is several times faster than a serde probe, which
//! matters when a listing reads tens of megabytes. Anything it cannot make sense of returns `None`; callers fall
//! back to serde then.

type Fields<'a> = Vec<(&'a [u8], &'a [u8])>;

/// Fields of the JSON object in `line` (surrounding whitespace allowed) as `(raw key, raw value)` pairs. Keys are
/// the text between the quotes (escapes not decoded); values are exact JSON slices.
pub fn object_fields(line: &[u8]) -> Option<Fields<'_>> {
    object_fields_nested(line, b"").map(|(f, _)| f)
}

/// Like [`object_fields`], and also the fields of the object under `nested_key` (scanned in the same pass, so a
/// large nested value is read once).
pub fn object_fields_nested<'a>(
    line: &'a [u8],
    nested_key: &[u8],
) -> Option<(Fields<'a>, Option<Fields<'a>>)> {
    let mut nested = None;
    let i = skip_ws(line, 0);
    let (fields, end) = fields_at(line, i, nested_key, &mut nested)?;
    (skip_ws(line, end) == line.len()).then_some((fields, nested))
}

/// Fields of an object value given as a raw slice (`{...}`).
pub fn value_fields(value: &[u8]) -> Option<Fields<'_>> {
    let (fields, end) = fields_at(value, 0, b"", &mut None)?;
    (end == value.len()).then_some(fields)
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Parses `{ "k": v, ... }` starting at `i`; returns the fields and the index after `}`.
fn fields_at<'a>(
    b: &'a [u8],
    mut i: usize,
    nested_key: &[u8],
    nested: &mut Option<Fields<'a>>,
) -> Option<(Fields<'a>, usize)> {
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    let mut fields = Vec::with_capacity(8);
    if b.get(i) == Some(&b'}') {
        return Some((fields, i + 1));
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(b, i)?;
        let key = &b[i + 1..key_end - 1];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        let value_end = if !nested_key.is_empty() && key == nested_key && b.get(i) == Some(&b'{') {
            let (inner, end) = fields_at(b, i, b"", &mut None)?;
            *nested = Some(inner);
            end
        } else {
            value_end(b, i)?
        };
        fields.push((key, &b[i..value_end]));
        i = skip_ws(b, value_end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Some((fields, i + 1)),
            _ => return None,
        }
    }
}

/// Index after the closing quote of the string starting at `i`.
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        let k = j + memchr::memchr2(b'"', b'\\', &b[j..])?;
        if b[k] == b'"' {
            return Some(k + 1);
        }
        j = k + 2;
    }
    None
}

/// Index after the value starting at `i`.
fn value_end(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            None
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

/// The value of a raw JSON string (decoded only when it has escapes); `None` for non-strings.
pub fn raw_string(raw: &[u8]) -> Option<std::borrow::Cow<'_, str>> {
    if raw.len() < 2 || raw[0] != b'"' {
        return None;
    }
    let inner = &raw[1..raw.len() - 1];
    if !inner.contains(&b'\\') {
        return std::str::from_utf8(inner)
            .ok()
            .map(std::borrow::Cow::Borrowed);
    }
    serde_json::from_slice::<String>(raw)
        .ok()
        .map(std::borrow::Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_fields_and_nested_values() {
        let line = br#" {"type":"message","message":{"role":"user","content":[{"t":"a\"}{"}],"timestamp":12},"x":null} "#;
        let f = object_fields(line).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(f[0], (&b"type"[..], &br#""message""#[..]));
        let m = value_fields(f[1].1).unwrap();
        assert_eq!(m[1].1, br#"[{"t":"a\"}{"}]"#);
        assert_eq!(m[2].1, b"12");
        assert_eq!(f[2].1, b"null");
        assert_eq!(raw_string(br#""a\nb""#).unwrap(), "a\nb");
        assert_eq!(raw_string(b"12"), None);
        assert!(object_fields(br#"{"type":"mess"#).is_none(), "torn line");
        assert!(object_fields(b"{} trailing").is_none());
        assert!(object_fields(b"{}").unwrap().is_empty());
        let (top, nested) = object_fields_nested(line, b"message").unwrap();
        assert_eq!(top.len(), 3);
        assert_eq!(nested.unwrap()[0], (&b"role"[..], &br#""user""#[..]));
        assert!(object_fields(br#"{"a":"x\\"}"#).is_some());
        assert!(object_fields(br#"{"a":"x\\"#).is_none());
    }
}
