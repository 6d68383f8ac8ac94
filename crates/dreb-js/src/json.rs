//! JSON text exactly as JavaScript's `JSON.stringify` writes it.
//!
//! Session files are shared with the TypeScript reference, so a line we re-serialise must be byte-identical to the
//! line it wrote: same escapes, key order (the map preserves it), and number formatting (`Number#toString`: `0` not
//! `0.0`, `1e+21` not `1e21`, integers above 2^53 rounded like a double).

use serde_json::Value;

use serde_json::ser::{Formatter, PrettyFormatter};

use crate::number::{json_number_text, json_number_to_string};

/// Serialises `value` compactly, the way `JSON.stringify(value)` would.
pub fn to_string(value: &Value) -> String {
    let mut out = String::with_capacity(128);
    write_value(value, &mut out);
    out
}

/// Appends the compact JSON text of `value` to `out`.
///
/// Iterative, so arbitrarily deep values cannot overflow the stack.
pub fn write_value(value: &Value, out: &mut String) {
    // Explicit stack of pending work: either a value to write or a literal to emit.
    enum Work<'a> {
        Value(&'a Value),
        Key(&'a str),
        Lit(&'static str),
    }
    let mut stack = vec![Work::Value(value)];
    while let Some(work) = stack.pop() {
        match work {
            Work::Lit(s) => out.push_str(s),
            Work::Key(k) => {
                write_string(k, out);
                out.push(':');
            }
            Work::Value(v) => match v {
                Value::Null => out.push_str("null"),
                Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                Value::Number(n) => write_number(n, out),
                Value::String(s) => write_string(s, out),
                Value::Array(items) => {
                    out.push('[');
                    stack.push(Work::Lit("]"));
                    for (i, item) in items.iter().enumerate().rev() {
                        stack.push(Work::Value(item));
                        if i > 0 {
                            stack.push(Work::Lit(","));
                        }
                    }
                }
                Value::Object(map) => {
                    out.push('{');
                    stack.push(Work::Lit("}"));
                    let entries: Vec<_> = map.iter().collect();
                    for (i, (k, v)) in entries.into_iter().enumerate().rev() {
                        stack.push(Work::Value(v));
                        stack.push(Work::Key(k));
                        if i > 0 {
                            stack.push(Work::Lit(","));
                        }
                    }
                }
            },
        }
    }
}

/// `JSON.stringify(value, null, 2)`: serde_json's pretty printer (same layout and escapes) with JavaScript's number
/// text.
pub fn to_string_pretty(value: &Value) -> String {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        JsPretty(PrettyFormatter::with_indent(b"  ")),
    );
    serde::Serialize::serialize(value, &mut ser).expect("a JSON value always serialises");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// serde_json's pretty formatter with `Number#toString` for numbers.
struct JsPretty<'a>(PrettyFormatter<'a>);

macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(fn $name<W: ?Sized + std::io::Write>(&mut self, w: &mut W $(, $arg: $ty)*) -> std::io::Result<()> {
            self.0.$name(w $(, $arg)*)
        })*
    };
}

impl Formatter for JsPretty<'_> {
    delegate!(
        begin_array(),
        end_array(),
        begin_array_value(first: bool),
        end_array_value(),
        begin_object(),
        end_object(),
        begin_object_key(first: bool),
        begin_object_value(),
        end_object_value(),
    );

    fn write_f64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: f64) -> std::io::Result<()> {
        w.write_all(json_number_text(v).as_bytes())
    }

    fn write_u64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: u64) -> std::io::Result<()> {
        w.write_all(json_number_to_string(&v.into()).as_bytes())
    }

    fn write_i64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, v: i64) -> std::io::Result<()> {
        w.write_all(json_number_to_string(&v.into()).as_bytes())
    }
}

/// Writes a JSON string literal with `JSON.stringify`'s escapes (short forms for `\b\f\n\r\t`, lowercase `\u00xx`
/// for other control characters, nothing else escaped).
pub fn write_string(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0..=0x1f => None,
            _ => continue,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(b >> 4) as usize] as char);
                out.push(HEX[(b & 0xf) as usize] as char);
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

fn write_number(n: &serde_json::Number, out: &mut String) {
    out.push_str(&json_number_to_string(n));
}

/// JavaScript's `String(value)` for a JSON value (as used in template literals): `undefined` for a missing value,
/// numbers as `Number#toString`, arrays joined with `,`, objects as `[object Object]`.
pub fn js_string(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_string(),
        Some(Value::Null) => "null".to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => json_number_to_string(n),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::Null => String::new(),
                other => js_string(Some(other)),
            })
            .collect::<Vec<_>>()
            .join(","),
        Some(Value::Object(_)) => "[object Object]".to_string(),
    }
}

/// JavaScript truthiness of an optional JSON value.
pub fn js_truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_)) | Some(Value::Object(_)) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_match_javascript() {
        let v: Value = serde_json::from_str(
            "[93.58587999999986,1e21,1e20,1e-7,0.000001,-2.5,-0.0,100.0,12345678901234567890,1796106531171,-5]",
        )
        .unwrap();
        assert_eq!(
            to_string(&v),
            "[93.58587999999986,1e+21,100000000000000000000,1e-7,0.000001,-2.5,0,100,12345678901234567000,1796106531171,-5]"
        );
    }

    #[test]
    fn pretty_matches_json_stringify_with_indent() {
        let v: Value = serde_json::from_str(
            r#"{"e":[],"o":{},"n":2.0,"f":0.0000015,"big":1e21,"u":12345678901234567890,"a":[1,{"b":null}],"s":"\u007f\n"}"#,
        )
        .unwrap();
        assert_eq!(
            to_string_pretty(&v),
            "{\n  \"e\": [],\n  \"o\": {},\n  \"n\": 2,\n  \"f\": 0.0000015,\n  \"big\": 1e+21,\n  \"u\": 12345678901234567000,\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"s\": \"\u{7f}\\n\"\n}"
        );
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        let v = json!({"a": "q\"b\\n\n\r\t\u{8}\u{c}\u{1b}\u{7f}é\u{2028}"});
        assert_eq!(
            to_string(&v),
            "{\"a\":\"q\\\"b\\\\n\\n\\r\\t\\b\\f\\u001b\u{7f}é\u{2028}\"}"
        );
    }

    #[test]
    fn nested_structures_and_key_order() {
        let v: Value =
            serde_json::from_str(r#"{"z":1,"a":[1,{"y":null,"b":true}],"m":{}}"#).unwrap();
        assert_eq!(
            to_string(&v),
            r#"{"z":1,"a":[1,{"y":null,"b":true}],"m":{}}"#
        );
        assert_eq!(to_string(&json!([])), "[]");
    }

    #[test]
    fn js_string_conversions() {
        assert_eq!(js_string(None), "undefined");
        assert_eq!(js_string(Some(&json!(3))), "3");
        assert_eq!(js_string(Some(&json!([1, null, "a"]))), "1,,a");
        assert_eq!(js_string(Some(&json!({}))), "[object Object]");
        assert!(!js_truthy(Some(&json!(""))));
        assert!(js_truthy(Some(&json!("x"))));
    }
}
