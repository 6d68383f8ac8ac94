//! Interpreting an `extension_ui_response` frame for the method of the dialog it answers, with the
//! reference's rules: `cancelled` (JS truthiness) wins, a response of the wrong kind gives the method's
//! default, and `ask` answers are validated with the reference's exact error texts.

use dreb_tools::{AskAnswer, AskResult, DialogError};
use serde_json::{Map, Value};

/// `Invalid RPC ask response: answers must be an array` (also for a missing `answers`, e.g. a `value` reply).
pub const ASK_ANSWERS_NOT_ARRAY: &str = "Invalid RPC ask response: answers must be an array";
/// An answer's `selected` is missing or not an array of strings.
pub const ASK_SELECTED_NOT_STRINGS: &str =
    "Invalid RPC ask response: each answer's selected must be an array of strings";
/// An answer's `customText` is present but not a string (`null` included, as in the reference).
pub const ASK_CUSTOM_TEXT_NOT_STRING: &str =
    "Invalid RPC ask response: customText must be a string";

/// JavaScript truthiness of a JSON value (the reference tests `r.cancelled` that way).
fn js_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

/// True when the host dismissed the dialog (`cancelled` truthy).
pub(crate) fn is_cancelled(frame: &Map<String, Value>) -> bool {
    frame.get("cancelled").is_some_and(js_truthy)
}

/// The answer to `select`, `input` or `editor`: `value` when it is a string and the dialog was not
/// cancelled; anything else resolves to the default (`None`). The reference would pass a non-string `value`
/// through untyped; we drop it instead (logged at debug).
pub(crate) fn text_value(frame: &Map<String, Value>) -> Option<String> {
    if is_cancelled(frame) {
        return None;
    }
    match frame.get("value") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            tracing::debug!(value = %other, "non-string extension_ui_response value resolves to the default");
            None
        }
        None => None,
    }
}

/// The answer to `confirm`: only `confirmed: true` (not cancelled) confirms; a `value` reply, a missing or
/// non-boolean `confirmed` gives `false`.
pub(crate) fn confirmed(frame: &Map<String, Value>) -> bool {
    if is_cancelled(frame) {
        return false;
    }
    match frame.get("confirmed") {
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            tracing::debug!(confirmed = %other, "non-boolean confirmed resolves to false");
            false
        }
        None => false,
    }
}

/// JavaScript `String.prototype.trim` whitespace: Unicode White_Space plus the BOM.
fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// Validates and normalises the `answers` of a (non-cancelled) `ask` response, exactly as the reference
/// does: each answer becomes `{selected, customText: customText || none, skipped: skipped === true ||
/// no selection and no non-blank text}`. The number of answers is not checked against the questions.
pub fn parse_ask_answers(frame: &Map<String, Value>) -> Result<AskResult, DialogError> {
    let Some(Value::Array(raw)) = frame.get("answers") else {
        return Err(DialogError(ASK_ANSWERS_NOT_ARRAY.into()));
    };
    let mut answers = Vec::with_capacity(raw.len());
    for entry in raw {
        let field = |name: &str| entry.as_object().and_then(|o| o.get(name));
        let selected: Vec<String> = match field("selected") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| DialogError(ASK_SELECTED_NOT_STRINGS.into()))?,
            _ => return Err(DialogError(ASK_SELECTED_NOT_STRINGS.into())),
        };
        let custom_text = match field("customText") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(DialogError(ASK_CUSTOM_TEXT_NOT_STRING.into())),
        };
        let answered = !selected.is_empty()
            || custom_text
                .as_deref()
                .is_some_and(|t| !js_trim(t).is_empty());
        let skipped = field("skipped") == Some(&Value::Bool(true)) || !answered;
        answers.push(AskAnswer {
            selected,
            custom_text: custom_text.filter(|t| !t.is_empty()),
            skipped,
        });
    }
    Ok(AskResult { answers })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn frame(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn cancelled_uses_js_truthiness() {
        for v in [json!(true), json!(1), json!("x"), json!([]), json!({})] {
            assert!(is_cancelled(&frame(json!({ "cancelled": v }))));
        }
        for v in [json!(false), json!(0), json!(""), json!(null)] {
            assert!(!is_cancelled(&frame(json!({ "cancelled": v }))));
        }
        assert!(!is_cancelled(&frame(json!({}))));
    }

    #[test]
    fn text_and_confirm_defaults() {
        assert_eq!(text_value(&frame(json!({"value": "a"}))), Some("a".into()));
        assert_eq!(
            text_value(&frame(json!({"value": "a", "cancelled": true}))),
            None
        );
        assert_eq!(
            text_value(&frame(json!({"value": "a", "cancelled": false}))),
            Some("a".into())
        );
        assert_eq!(text_value(&frame(json!({"value": 3}))), None);
        assert_eq!(text_value(&frame(json!({"confirmed": true}))), None);
        assert!(confirmed(&frame(json!({"confirmed": true}))));
        assert!(!confirmed(&frame(
            json!({"confirmed": true, "cancelled": true})
        )));
        assert!(!confirmed(&frame(json!({"confirmed": "yes"}))));
        assert!(!confirmed(&frame(json!({"value": "yes"}))));
    }

    #[test]
    fn js_trim_matches_javascript() {
        assert_eq!(js_trim("\u{feff}\u{a0} x \n"), "x");
        assert_eq!(js_trim("\u{2028}"), "");
    }
}
