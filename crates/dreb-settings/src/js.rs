//! Small helpers reproducing JavaScript semantics that the reference's wire texts depend on
//! (`JSON.stringify`, `String.prototype.trim`, `Number.isSafeInteger`, object key order).

use serde_json::{Map, Value};

/// Largest integer a JS number represents exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// ECMAScript `WhiteSpace` + `LineTerminator` (what `trim()` and `\s` strip).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'..='\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

/// `String.prototype.trim()`.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// `Number.isSafeInteger(v) && v >= 0`, returning the integer.
pub fn non_negative_safe_integer(value: &Value) -> Option<u64> {
    let n = value.as_number()?;
    if let Some(u) = n.as_u64() {
        return (u as f64 <= MAX_SAFE_INTEGER).then_some(u);
    }
    if n.as_i64().is_some() {
        return None; // negative
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && (0.0..=MAX_SAFE_INTEGER).contains(&f)).then_some(f as u64)
}

/// `JSON.stringify(value)` (compact), used inside error texts.
pub fn stringify(value: &Value) -> String {
    dreb_js::json::to_string(value)
}

/// `JSON.stringify(string)`.
pub fn stringify_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// JavaScript truthiness of a JSON value.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// True for keys JS orders first in objects: canonical array indices ("0", "17", not "01").
fn is_array_index(key: &str) -> Option<u32> {
    if key.is_empty() || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    let n: u32 = key.parse().ok()?;
    (n != u32::MAX).then_some(n)
}

/// Keys of a parsed object in the order `Object.keys` reports them: array-index keys first in
/// ascending numeric order, then the others in insertion order.
pub fn object_keys(map: &Map<String, Value>) -> Vec<&String> {
    let mut indices: Vec<(u32, &String)> = map
        .keys()
        .filter_map(|k| is_array_index(k).map(|n| (n, k)))
        .collect();
    indices.sort_by_key(|(n, _)| *n);
    let mut keys: Vec<&String> = indices.into_iter().map(|(_, k)| k).collect();
    keys.extend(map.keys().filter(|k| is_array_index(k).is_none()));
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn safe_integers_follow_js() {
        assert_eq!(non_negative_safe_integer(&json!(2)), Some(2));
        assert_eq!(non_negative_safe_integer(&json!(2.0)), Some(2));
        assert_eq!(non_negative_safe_integer(&json!(-1)), None);
        assert_eq!(non_negative_safe_integer(&json!(1.5)), None);
        assert_eq!(non_negative_safe_integer(&json!("2")), None);
        assert_eq!(
            non_negative_safe_integer(&json!(9_007_199_254_740_992u64)),
            None
        );
    }

    #[test]
    fn stringify_matches_js() {
        assert_eq!(stringify(&json!("sometimes")), "\"sometimes\"");
        assert_eq!(stringify(&json!(-1)), "-1");
        assert_eq!(stringify(&json!(2.0)), "2");
        assert_eq!(stringify(&json!(1.5)), "1.5");
        assert_eq!(stringify(&json!(1e21)), "1e+21");
        assert_eq!(stringify(&json!(0.0000015)), "0.0000015");
        assert_eq!(stringify(&json!({"a": [1, null]})), "{\"a\":[1,null]}");
    }

    #[test]
    fn trim_uses_js_whitespace() {
        assert_eq!(js_trim("\u{FEFF} a \u{3000}"), "a");
        assert_eq!(js_trim("\u{0085}a"), "\u{0085}a");
    }

    #[test]
    fn key_order_puts_indices_first() {
        let v: Value = serde_json::from_str(r#"{"b":1,"10":2,"a":3,"2":4,"01":5}"#).unwrap();
        let keys: Vec<&str> = object_keys(v.as_object().unwrap())
            .into_iter()
            .map(|s| s.as_str())
            .collect();
        assert_eq!(keys, ["2", "10", "b", "a", "01"]);
    }
}
