//! `Number#toString` (radix 10) and the `JSON.stringify` text of a number.

use serde::Serializer;

/// 2^53: below it every integer is a double and prints as itself.
const SAFE: f64 = 9_007_199_254_740_992.0;

/// `String(v)` for a JavaScript number: `"100000000000000000000"` for 1e20, `"1e+21"`, `"1e-7"`, `"0.000001"`,
/// `"0"` for -0, `"NaN"`, `"Infinity"`, `"-Infinity"`.
pub fn number_to_string(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < SAFE {
        // The common case, without the shortest-digits search (also maps -0 to "0").
        return (v as i64).to_string();
    }
    ryu_js::Buffer::new().format(v).to_string()
}

/// The text `JSON.stringify` writes for a number: [`number_to_string`], except `null` for NaN and the infinities.
pub fn json_number_text(v: f64) -> String {
    if v.is_finite() {
        number_to_string(v)
    } else {
        "null".to_string()
    }
}

/// `String(n)` for a number parsed from JSON: integers beyond 2^53 are rounded to a double first, as
/// JavaScript's `JSON.parse` does (`12345678901234567890` → `"12345678901234567000"`).
pub fn json_number_to_string(n: &serde_json::Number) -> String {
    if let Some(u) = n.as_u64() {
        if u <= SAFE as u64 {
            return u.to_string();
        }
        return number_to_string(u as f64);
    }
    if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= SAFE as u64 {
            return i.to_string();
        }
        return number_to_string(i as f64);
    }
    n.as_f64()
        .map_or_else(|| "null".to_string(), json_number_text)
}

/// A JSON number holding `v` exactly as JavaScript would read it back: integral values below 2^53 become integers
/// (`2.0` → `2`, `-0` → `0`), others stay doubles; `None` for NaN and the infinities.
pub fn json_number_value(v: f64) -> Option<serde_json::Number> {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < SAFE {
        Some(serde_json::Number::from(v as i64))
    } else {
        serde_json::Number::from_f64(v)
    }
}

/// `serialize_with` for `f64` fields: the text `JSON.stringify` writes, so frames and session files match the
/// reference byte for byte (`0` not `0.0`, `0.000001` not `1e-6`, `1e+21` not `1e21`, `null` for NaN).
///
/// Integers below 2^53 go through `serialize_i64`, and doubles whose serde_json text already is JavaScript's (most:
/// `0.5`, `1e-7`) through `serialize_f64`. Only the others (`1e-6` up to `1e-5`, `1e21` and above, integers above
/// 2^53) are handed to serde_json as raw text, which any other serializer would see as serde_json's raw-value
/// struct: use this with serde_json.
pub fn serialize_number<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    let v = *v;
    if v.is_finite() && v.fract() == 0.0 && v.abs() < SAFE {
        return s.serialize_i64(v as i64);
    }
    if !v.is_finite() {
        return s.serialize_none();
    }
    let js = number_to_string(v);
    if serde_json::Number::from_f64(v).is_some_and(|n| n.to_string() == js) {
        return s.serialize_f64(v);
    }
    let raw = serde_json::value::RawValue::from_string(js).map_err(serde::ser::Error::custom)?;
    serde::Serialize::serialize(&raw, s)
}

/// [`serialize_number`] for `Option<f64>` fields (with `skip_serializing_if = "Option::is_none"`).
pub fn serialize_option_number<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => serialize_number(v, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_to_string_matches_javascript() {
        // Each pair is what `String(x)` prints in Node.
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "0"),
            (1.0, "1"),
            (-5.0, "-5"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (-1e21, "-1e+21"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e-6, "0.000001"),
            (1.5e-6, "0.0000015"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (93.58587999999986, "93.58587999999986"),
            (123456.789, "123456.789"),
            (2f64.powi(53), "9007199254740992"),
            (2f64.powi(53) + 2.0, "9007199254740994"),
            // Above 2^53 JavaScript prints the shortest digits, padded with zeros: not the exact integer.
            (2f64.powi(60), "1152921504606847000"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (v, want) in cases {
            assert_eq!(number_to_string(*v), *want, "{v:e}");
        }
    }

    #[test]
    fn json_text_writes_null_for_non_finite() {
        assert_eq!(json_number_text(f64::NAN), "null");
        assert_eq!(json_number_text(f64::INFINITY), "null");
        assert_eq!(json_number_text(1e21), "1e+21");
    }

    #[test]
    fn parsed_json_numbers_round_like_json_parse() {
        let n = |s: &str| serde_json::from_str::<serde_json::Number>(s).unwrap();
        assert_eq!(
            json_number_to_string(&n("12345678901234567890")),
            "12345678901234567000"
        );
        assert_eq!(
            json_number_to_string(&n("-9007199254740993")),
            "-9007199254740992"
        );
        assert_eq!(
            json_number_to_string(&n("9007199254740992")),
            "9007199254740992"
        );
        assert_eq!(json_number_to_string(&n("1e20")), "100000000000000000000");
        assert_eq!(json_number_to_string(&n("-0.0")), "0");
        assert_eq!(json_number_to_string(&n("2.50")), "2.5");
    }

    #[test]
    fn number_values_are_integral_where_javascript_reads_an_integer() {
        assert_eq!(json_number_value(2.0).unwrap().to_string(), "2");
        assert_eq!(json_number_value(-0.0).unwrap().to_string(), "0");
        assert!(json_number_value(2.5).unwrap().is_f64());
        assert!(json_number_value(f64::NAN).is_none());
    }

    #[test]
    fn serializer_writes_javascript_json() {
        #[derive(serde::Serialize)]
        struct S {
            #[serde(serialize_with = "serialize_number")]
            a: f64,
            #[serde(
                serialize_with = "serialize_option_number",
                skip_serializing_if = "Option::is_none"
            )]
            b: Option<f64>,
        }
        let text = |a: f64, b: Option<f64>| serde_json::to_string(&S { a, b }).unwrap();
        assert_eq!(text(3.0, None), r#"{"a":3}"#);
        assert_eq!(text(-0.0, Some(0.5)), r#"{"a":0,"b":0.5}"#);
        assert_eq!(text(0.0000015, None), r#"{"a":0.0000015}"#);
        assert_eq!(text(1e20, None), r#"{"a":100000000000000000000}"#);
        assert_eq!(text(1e21, None), r#"{"a":1e+21}"#);
        assert_eq!(text(2f64.powi(60), None), r#"{"a":1152921504606847000}"#);
        assert_eq!(
            text(-1.5e-7, Some(123456.789)),
            r#"{"a":-1.5e-7,"b":123456.789}"#
        );
        assert_eq!(
            text(f64::NAN, Some(f64::INFINITY)),
            r#"{"a":null,"b":null}"#
        );
        // Through a Value too (the raw text is parsed back into a number).
        let v = serde_json::to_value(S {
            a: 0.1 + 0.2,
            b: Some(7.0),
        })
        .unwrap();
        assert_eq!(v, serde_json::json!({"a": 0.30000000000000004, "b": 7}));
    }
}
