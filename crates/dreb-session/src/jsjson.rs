//! JSON text exactly as JavaScript's `JSON.stringify` writes it.
//!
//! Session files are shared with the TypeScript reference, so a line we re-serialise must be byte-identical to the
//! line it wrote: same escapes, key order (the map preserves it), and number formatting (`Number#toString`: `0` not
//! `0.0`, `1e+21` not `1e21`, integers above 2^53 rounded like a double).

use serde_json::Value;

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

const MAX_SAFE: u64 = 9_007_199_254_740_992; // 2^53

fn write_number(n: &serde_json::Number, out: &mut String) {
    if let Some(u) = n.as_u64() {
        if u <= MAX_SAFE {
            out.push_str(&u.to_string());
        } else {
            out.push_str(&format_f64(u as f64));
        }
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= MAX_SAFE {
            out.push_str(&i.to_string());
        } else {
            out.push_str(&format_f64(i as f64));
        }
    } else if let Some(f) = n.as_f64() {
        out.push_str(&format_f64(f));
    } else {
        out.push_str("null");
    }
}

/// `Number.prototype.toString()` for a double (ECMA-262 Number::toString, radix 10).
pub fn format_f64(v: f64) -> String {
    if v.is_nan() || v.is_infinite() {
        // JSON.stringify writes non-finite numbers as null; `String(x)` would say NaN/Infinity.
        return "null".to_string();
    }
    if v == 0.0 {
        return "0".to_string(); // also -0
    }
    // Rust's `{:e}` yields the shortest round-tripping digits: "d.ddddeX".
    let sci = format!("{:e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let k = digits.len() as i32;
    let n = exp + 1;
    let mut out = String::with_capacity(k as usize + 8);
    if v < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let e = n - 1;
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if e > 0 { '+' } else { '-' });
        out.push_str(&e.unsigned_abs().to_string());
    }
    out
}

/// JavaScript's `String(value)` for a JSON value (as used in template literals): `undefined` for a missing value,
/// numbers as `Number#toString`, arrays joined with `,`, objects as `[object Object]`.
pub fn js_string(value: Option<&Value>) -> String {
    match value {
        None => "undefined".to_string(),
        Some(Value::Null) => "null".to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => {
            let mut s = String::new();
            write_number(n, &mut s);
            s
        }
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
        let cases: &[(f64, &str)] = &[
            (93.58587999999986, "93.58587999999986"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (1e-6, "0.000001"),
            (0.051000000000000004, "0.051000000000000004"),
            (-2.5, "-2.5"),
            (-0.0, "0"),
            (100.0, "100"),
            (123456.789, "123456.789"),
        ];
        for (v, want) in cases {
            assert_eq!(format_f64(*v), *want, "{v}");
        }
        assert_eq!(
            to_string(&json!(12345678901234567890u64)),
            "12345678901234567000"
        );
        assert_eq!(to_string(&json!(1796106531171u64)), "1796106531171");
        assert_eq!(to_string(&json!(-5)), "-5");
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
