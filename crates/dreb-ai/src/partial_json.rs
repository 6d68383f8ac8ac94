//! Lenient parsing of streamed tool-call arguments.
//!
//! Providers stream tool arguments as JSON text in arbitrary pieces. While streaming, the partial message shows the
//! arguments parsed from the text received so far: complete JSON parses normally; a truncated prefix keeps every
//! complete member plus a trailing string cut mid-way (`{"command": "ech` → `{"command":"ech"}`), and drops a key
//! whose value has not started. Anything unparseable yields an empty object, never an error.

use serde_json::{Map, Number, Value};

/// Parses possibly-incomplete JSON object text into tool arguments.
pub fn parse_streaming_json(text: &str) -> Map<String, Value> {
    parse_with_cursor(text).0
}

/// One step of the path to a value inside the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathSeg {
    Key(String),
    Index(usize),
}

/// Incremental re-parsing of streamed arguments. The common case — a long string value arriving in pieces — costs
/// only the piece: while the text ends inside a string value and a delta adds neither a quote nor a backslash, the
/// delta is appended to that value in place. Anything else falls back to a full lenient parse.
#[derive(Debug, Clone, Default)]
pub struct StreamingArgs {
    /// Where the trailing, still-open string value sits (None: the text does not end inside a string value).
    open_string: Option<Vec<PathSeg>>,
}

impl StreamingArgs {
    /// `full` is the argument text including `delta` (already appended).
    pub fn update(&mut self, args: &mut Map<String, Value>, full: &str, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if let Some(path) = &self.open_string
            && !delta.contains(['"', '\\'])
            && let Some(Value::String(s)) = lookup(args, path)
        {
            s.push_str(delta);
            return;
        }
        let (parsed, open) = parse_with_cursor(full);
        *args = parsed;
        self.open_string = open;
    }
}

fn lookup<'a>(args: &'a mut Map<String, Value>, path: &[PathSeg]) -> Option<&'a mut Value> {
    let (first, rest) = path.split_first()?;
    let PathSeg::Key(k) = first else { return None };
    let mut v = args.get_mut(k)?;
    for seg in rest {
        v = match (seg, v) {
            (PathSeg::Key(k), Value::Object(m)) => m.get_mut(k)?,
            (PathSeg::Index(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

fn parse_with_cursor(text: &str) -> (Map<String, Value>, Option<Vec<PathSeg>>) {
    if text.trim().is_empty() {
        return (Map::new(), None);
    }
    // Only text ending in `}` can be a complete object; don't pay a failing full parse on every streamed prefix.
    if text.trim_end().ends_with('}')
        && let Ok(v) = serde_json::from_str::<Value>(text)
    {
        return match v {
            Value::Object(m) => (m, None),
            _ => (Map::new(), None),
        };
    }
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
        path: Vec::new(),
        open_string: None,
        cut_escape: false,
    };
    p.ws();
    match p.value() {
        Ok(Some(Value::Object(m))) => (m, p.open_string),
        _ => (Map::new(), None),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    /// Path of the value being parsed.
    path: Vec<PathSeg>,
    /// Set when the input ends inside a string value (cleanly, not mid-escape).
    open_string: Option<Vec<PathSeg>>,
    /// The input ended inside an escape sequence.
    cut_escape: bool,
}

/// `Ok(None)`: input ended before the value started or before it was usable; `Err`: malformed.
type Parsed = Result<Option<Value>, ()>;

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eof(&self) -> bool {
        self.i >= self.s.len()
    }

    fn value(&mut self) -> Parsed {
        self.ws();
        if self.eof() {
            return Ok(None);
        }
        match self.s[self.i] {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => {
                let (s, closed) = self.string()?;
                if !closed && !self.cut_escape {
                    self.open_string = Some(self.path.clone());
                }
                Ok(Some(Value::String(s)))
            }
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(()),
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Parsed {
        let rest = &self.s[self.i..];
        let w = word.as_bytes();
        if rest.len() >= w.len() {
            if &rest[..w.len()] == w {
                self.i += w.len();
                return Ok(Some(v));
            }
            return Err(());
        }
        if w.starts_with(rest) {
            self.i = self.s.len();
            return Ok(Some(v));
        }
        Err(())
    }

    fn number(&mut self) -> Parsed {
        let start = self.i;
        while self.i < self.s.len()
            && matches!(
                self.s[self.i],
                b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
            )
        {
            self.i += 1;
        }
        let mut text = std::str::from_utf8(&self.s[start..self.i]).map_err(|_| ())?;
        // A number cut mid-way ("1.", "1e", "-") keeps its longest valid prefix.
        while !text.is_empty() {
            if let Ok(n) = text.parse::<i64>() {
                return Ok(Some(Value::Number(n.into())));
            }
            if let Ok(f) = text.parse::<f64>()
                && let Some(n) = Number::from_f64(f)
            {
                return Ok(Some(Value::Number(n)));
            }
            text = &text[..text.len() - 1];
        }
        if self.eof() { Ok(None) } else { Err(()) }
    }

    /// Returns the string and whether its closing quote was seen.
    fn string(&mut self) -> Result<(String, bool), ()> {
        self.i += 1; // opening quote
        let mut out = Vec::new();
        while self.i < self.s.len() {
            // Copy the run of plain bytes up to the next quote or escape in one go.
            let run = self.s[self.i..]
                .iter()
                .position(|&b| b == b'"' || b == b'\\')
                .unwrap_or(self.s.len() - self.i);
            if run > 0 {
                out.extend_from_slice(&self.s[self.i..self.i + run]);
                self.i += run;
                continue;
            }
            let c = self.s[self.i];
            match c {
                b'"' => {
                    self.i += 1;
                    return Ok((String::from_utf8_lossy(&out).into_owned(), true));
                }
                b'\\' => {
                    if self.i + 1 >= self.s.len() {
                        self.i = self.s.len();
                        self.cut_escape = true;
                        break;
                    }
                    let e = self.s[self.i + 1];
                    self.i += 2;
                    match e {
                        b'"' => out.push(b'"'),
                        b'\\' => out.push(b'\\'),
                        b'/' => out.push(b'/'),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            if self.i + 4 > self.s.len() {
                                self.i = self.s.len();
                                self.cut_escape = true;
                                break;
                            }
                            let hex =
                                std::str::from_utf8(&self.s[self.i..self.i + 4]).map_err(|_| ())?;
                            let mut cp = u32::from_str_radix(hex, 16).map_err(|_| ())?;
                            self.i += 4;
                            if (0xD800..0xDC00).contains(&cp) {
                                // A surrogate pair needs the low half; a cut pair is dropped.
                                if self.i + 6 <= self.s.len()
                                    && self.s[self.i] == b'\\'
                                    && self.s[self.i + 1] == b'u'
                                {
                                    let lo_hex =
                                        std::str::from_utf8(&self.s[self.i + 2..self.i + 6])
                                            .map_err(|_| ())?;
                                    let lo = u32::from_str_radix(lo_hex, 16).map_err(|_| ())?;
                                    self.i += 6;
                                    cp = 0x10000
                                        + ((cp - 0xD800) << 10)
                                        + (lo.wrapping_sub(0xDC00) & 0x3FF);
                                } else {
                                    // A high surrogate at the very end may still get its low half.
                                    self.cut_escape |= self.i >= self.s.len().saturating_sub(5);
                                    continue;
                                }
                            }
                            if let Some(ch) = char::from_u32(cp) {
                                let mut buf = [0u8; 4];
                                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                            }
                        }
                        _ => return Err(()),
                    }
                }
                _ => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
        // Cut mid-string: keep what arrived (a cut multi-byte character is dropped by the lossy decode's tail trim).
        let mut s = String::from_utf8_lossy(&out).into_owned();
        while s.ends_with('\u{FFFD}') {
            s.pop();
        }
        Ok((s, false))
    }

    fn object(&mut self) -> Parsed {
        self.i += 1;
        let mut map = Map::new();
        loop {
            self.ws();
            if self.eof() {
                return Ok(Some(Value::Object(map)));
            }
            match self.s[self.i] {
                b'}' => {
                    self.i += 1;
                    return Ok(Some(Value::Object(map)));
                }
                b',' => {
                    self.i += 1;
                    continue;
                }
                b'"' => {}
                _ => return Err(()),
            }
            let (key, closed) = self.string()?;
            if !closed {
                return Ok(Some(Value::Object(map)));
            }
            self.ws();
            if self.eof() {
                return Ok(Some(Value::Object(map)));
            }
            if self.s[self.i] != b':' {
                return Err(());
            }
            self.i += 1;
            self.path.push(PathSeg::Key(key.clone()));
            let v = self.value();
            self.path.pop();
            match v? {
                Some(v) => {
                    map.insert(key, v);
                }
                None => return Ok(Some(Value::Object(map))),
            }
        }
    }

    fn array(&mut self) -> Parsed {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.ws();
            if self.eof() {
                return Ok(Some(Value::Array(items)));
            }
            match self.s[self.i] {
                b']' => {
                    self.i += 1;
                    return Ok(Some(Value::Array(items)));
                }
                b',' => {
                    self.i += 1;
                    continue;
                }
                _ => {}
            }
            self.path.push(PathSeg::Index(items.len()));
            let v = self.value();
            self.path.pop();
            match v? {
                Some(v) => items.push(v),
                None => return Ok(Some(Value::Array(items))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[a-z \"\\\\\n\u{e9}\u{1F600}]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z\"]{1,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// Fed in arbitrary pieces, the incremental parser always agrees with a full lenient parse, and the complete
        /// text parses to the original object.
        #[test]
        fn streamed_arguments_agree_with_full_parses(
            args in proptest::collection::btree_map("[a-z]{1,6}", json_value(), 0..4),
            cuts in proptest::collection::vec(1usize..9, 1..40),
        ) {
            let object = Value::Object(args.into_iter().collect());
            let text = object.to_string();
            let chars: Vec<char> = text.chars().collect();
            let mut full = String::new();
            let mut parsed = Map::new();
            let mut st = StreamingArgs::default();
            let mut pos = 0;
            let mut k = 0;
            while pos < chars.len() {
                let n = cuts[k % cuts.len()].min(chars.len() - pos);
                let d: String = chars[pos..pos + n].iter().collect();
                pos += n;
                k += 1;
                full.push_str(&d);
                st.update(&mut parsed, &full, &d);
                proptest::prop_assert_eq!(&parsed, &parse_streaming_json(&full));
            }
            proptest::prop_assert_eq!(Value::Object(parsed), object);
        }
    }

    #[test]
    fn incremental_updates_match_full_parses() {
        let text = r#"{"path": "a.txt", "content": "line one\nline \"two\" and more", "list": [1, "x y z", {"k": "vvv"}], "n": 12}"#;
        for step in [1, 2, 3, 5, 8] {
            let chars: Vec<char> = text.chars().collect();
            let mut full = String::new();
            let mut args = Map::new();
            let mut st = StreamingArgs::default();
            for piece in chars.chunks(step) {
                let d: String = piece.iter().collect();
                full.push_str(&d);
                st.update(&mut args, &full, &d);
                assert_eq!(args, parse_streaming_json(&full), "after {full:?}");
            }
        }
    }

    fn p(s: &str) -> Value {
        Value::Object(parse_streaming_json(s))
    }

    #[test]
    fn prefixes_of_the_reference_tool_call() {
        assert_eq!(p(""), json!({}));
        assert_eq!(p("{\"comman"), json!({}));
        assert_eq!(p("{\"command\": \"ech"), json!({"command": "ech"}));
        assert_eq!(
            p("{\"command\": \"echo hello-from-bash\"}"),
            json!({"command": "echo hello-from-bash"})
        );
        assert_eq!(p("{\"command\": "), json!({}));
    }

    #[test]
    fn nested_numbers_literals_and_escapes() {
        assert_eq!(
            p("{\"a\": [1, 2, {\"b\": tr"),
            json!({"a": [1, 2, {"b": true}]})
        );
        assert_eq!(p("{\"n\": -12.5e"), json!({"n": -12.5}));
        assert_eq!(p("{\"s\": \"a\\nb\\u00e9\\"), json!({"s": "a\nbé"}));
        assert_eq!(p("{\"s\": \"\\ud83d\\ude00\"}"), json!({"s": "😀"}));
        assert_eq!(p("[1,2]"), json!({}), "non-object arguments become {{}}");
        assert_eq!(p("{\"a\" 1}"), json!({}), "malformed text becomes {{}}");
    }
}
