//! Tool-argument validation against the tool's JSON Schema, with the reference's behaviour: scalar type coercion
//! first (AJV `coerceTypes: true`), all errors reported, and its failure text
//! `Validation failed for tool "<name>":\n  - <path>: <message>\n...\n\nReceived arguments:\n<pretty JSON>`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use dreb_ai::{ToolCall, ToolDefinition};
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::{Map, Value};

/// Compiled validators, reused while a tool's schema is unchanged.
#[derive(Default)]
pub struct ValidatorCache {
    entries: Mutex<HashMap<String, (Value, Arc<Validator>)>>,
}

impl ValidatorCache {
    fn get(&self, def: &ToolDefinition) -> Result<Arc<Validator>, String> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((schema, v)) = entries.get(&def.name)
            && *schema == def.parameters
        {
            return Ok(v.clone());
        }
        let v = Arc::new(
            jsonschema::options()
                .should_validate_formats(true)
                .build(&def.parameters)
                .map_err(|e| format!("Invalid parameter schema for tool \"{}\": {e}", def.name))?,
        );
        entries.insert(def.name.clone(), (def.parameters.clone(), v.clone()));
        Ok(v)
    }
}

/// Validates (and coerces) a tool call's arguments. Returns the arguments to pass to the tool, or the error text
/// that becomes the tool result.
pub fn validate_tool_arguments(
    cache: &ValidatorCache,
    def: &ToolDefinition,
    call: &ToolCall,
) -> Result<Value, String> {
    let validator = cache.get(def)?;
    let mut args = Value::Object(call.arguments.clone());
    coerce(&def.parameters, &mut args);
    let mut lines = Vec::new();
    for err in validator.iter_errors(&args) {
        describe(&err, &mut lines);
    }
    if lines.is_empty() {
        return Ok(args);
    }
    let received =
        serde_json::to_string_pretty(&Value::Object(call.arguments.clone())).unwrap_or_default();
    Err(format!(
        "Validation failed for tool \"{}\":\n{}\n\nReceived arguments:\n{}",
        call.name,
        lines.join("\n"),
        received
    ))
}

// ---------------------------------------------------------------------------------------------------------------
// Coercion (AJV `coerceTypes: true`): when a value does not have any of the schema's `type`s, convert a scalar to
// the first type it can become. Applied through properties, additionalProperties, items/prefixItems and allOf.

fn coerce(schema: &Value, data: &mut Value) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    if let Some(types) = obj.get("type") {
        let types: Vec<&str> = match types {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !types.is_empty()
            && !types.iter().any(|t| has_type(t, data))
            && let Some(v) = types.iter().find_map(|t| coerce_scalar(t, data))
        {
            *data = v;
        }
    }
    match data {
        Value::Object(map) => coerce_object(obj, map),
        Value::Array(items) => {
            let prefix = obj.get("prefixItems").and_then(Value::as_array);
            let tuple = obj.get("items").and_then(Value::as_array);
            for (i, item) in items.iter_mut().enumerate() {
                if let Some(s) = prefix
                    .and_then(|p| p.get(i))
                    .or_else(|| tuple.and_then(|t| t.get(i)))
                {
                    coerce(s, item);
                } else if let Some(s) = obj.get("items").filter(|s| s.is_object()) {
                    coerce(s, item);
                }
            }
        }
        _ => {}
    }
    if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
        for s in all {
            coerce(s, data);
        }
    }
}

fn coerce_object(schema: &Map<String, Value>, map: &mut Map<String, Value>) {
    let props = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|s| s.is_object());
    for (key, value) in map.iter_mut() {
        match props.and_then(|p| p.get(key)) {
            Some(s) => coerce(s, value),
            None => {
                if let Some(s) = additional {
                    coerce(s, value);
                }
            }
        }
    }
}

fn is_integral(n: &serde_json::Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn has_type(t: &str, v: &Value) -> bool {
    match (t, v) {
        ("string", Value::String(_)) | ("boolean", Value::Bool(_)) | ("null", Value::Null) => true,
        ("number", Value::Number(_))
        | ("object", Value::Object(_))
        | ("array", Value::Array(_)) => true,
        ("integer", Value::Number(n)) => is_integral(n),
        _ => false,
    }
}

fn number_value(f: f64) -> Value {
    dreb_js::number::json_number_value(f).map_or(Value::Null, Value::Number)
}

/// A numeric string as JavaScript's `+x` reads it (surrounding whitespace allowed, empty rejected).
fn parse_js_number(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    t.parse::<f64>().ok().filter(|f| f.is_finite())
}

fn coerce_scalar(t: &str, v: &Value) -> Option<Value> {
    match (t, v) {
        ("string", Value::Number(n)) => {
            Some(Value::String(dreb_js::number::json_number_to_string(n)))
        }
        ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
        ("string", Value::Null) => Some(Value::String(String::new())),
        ("number", Value::String(s)) => parse_js_number(s).map(number_value),
        ("integer", Value::String(s)) => parse_js_number(s)
            .filter(|f| f.fract() == 0.0)
            .map(number_value),
        ("number" | "integer", Value::Bool(b)) => Some(Value::from(*b as i64)),
        ("number" | "integer", Value::Null) => Some(Value::from(0)),
        ("boolean", Value::String(s)) if s == "true" => Some(Value::Bool(true)),
        ("boolean", Value::String(s)) if s == "false" => Some(Value::Bool(false)),
        ("boolean", Value::Number(n)) if n.as_f64() == Some(1.0) => Some(Value::Bool(true)),
        ("boolean", Value::Number(n)) if n.as_f64() == Some(0.0) => Some(Value::Bool(false)),
        ("boolean", Value::Null) => Some(Value::Bool(false)),
        ("null", Value::String(s)) if s.is_empty() => Some(Value::Null),
        ("null", Value::Number(n)) if n.as_f64() == Some(0.0) => Some(Value::Null),
        ("null", Value::Bool(false)) => Some(Value::Null),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Error lines in AJV's wording: `  - <instancePath without leading "/" | missing property | "root">: <message>`.

fn js_value(v: &Value) -> String {
    match v {
        Value::Number(n) => dreb_js::number::json_number_to_string(n),
        other => other.to_string(),
    }
}

fn line(path: &str, fallback: &str, message: &str) -> String {
    let p = path.strip_prefix('/').unwrap_or(path);
    let p = if p.is_empty() { fallback } else { p };
    format!("  - {p}: {message}")
}

fn describe(err: &ValidationError<'_>, out: &mut Vec<String>) {
    let path = err.instance_path().as_str();
    let push = |out: &mut Vec<String>, msg: String| out.push(line(path, "root", &msg));
    match err.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| property.to_string());
            out.push(line(
                path,
                &name,
                &format!("must have required property '{name}'"),
            ));
        }
        ValidationErrorKind::Type { kind } => {
            let names = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            };
            push(out, format!("must be {names}"));
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            for _ in unexpected {
                push(out, "must NOT have additional properties".into());
            }
        }
        ValidationErrorKind::Enum { .. } => {
            push(out, "must be equal to one of the allowed values".into())
        }
        ValidationErrorKind::Constant { .. } => push(out, "must be equal to constant".into()),
        ValidationErrorKind::Minimum { limit } => {
            push(out, format!("must be >= {}", js_value(limit)))
        }
        ValidationErrorKind::Maximum { limit } => {
            push(out, format!("must be <= {}", js_value(limit)))
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            push(out, format!("must be > {}", js_value(limit)))
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            push(out, format!("must be < {}", js_value(limit)))
        }
        ValidationErrorKind::MinLength { limit } => {
            push(out, format!("must NOT have fewer than {limit} characters"))
        }
        ValidationErrorKind::MaxLength { limit } => {
            push(out, format!("must NOT have more than {limit} characters"))
        }
        ValidationErrorKind::MinItems { limit } => {
            push(out, format!("must NOT have fewer than {limit} items"))
        }
        ValidationErrorKind::MaxItems { limit } => {
            push(out, format!("must NOT have more than {limit} items"))
        }
        ValidationErrorKind::MinProperties { limit } => {
            push(out, format!("must NOT have fewer than {limit} properties"))
        }
        ValidationErrorKind::MaxProperties { limit } => {
            push(out, format!("must NOT have more than {limit} properties"))
        }
        ValidationErrorKind::Pattern { pattern } => {
            push(out, format!("must match pattern \"{pattern}\""))
        }
        ValidationErrorKind::Format { format } => {
            push(out, format!("must match format \"{format}\""))
        }
        ValidationErrorKind::MultipleOf { multiple_of } => {
            let n = dreb_js::number_to_string(*multiple_of);
            push(out, format!("must be multiple of {n}"))
        }
        ValidationErrorKind::UniqueItems => {
            let msg = match duplicate_pair(err.instance()) {
                Some((j, i)) => {
                    format!("must NOT have duplicate items (items ## {j} and {i} are identical)")
                }
                None => "must NOT have duplicate items".into(),
            };
            push(out, msg)
        }
        ValidationErrorKind::AnyOf { context } => {
            for branch in context {
                for e in branch {
                    describe(e, out);
                }
            }
            push(out, "must match a schema in anyOf".into());
        }
        ValidationErrorKind::OneOfNotValid { context } => {
            for branch in context {
                for e in branch {
                    describe(e, out);
                }
            }
            push(out, "must match exactly one schema in oneOf".into());
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            push(out, "must match exactly one schema in oneOf".into())
        }
        ValidationErrorKind::Not { .. } => push(out, "must NOT be valid".into()),
        ValidationErrorKind::FalseSchema => push(out, "boolean schema is false".into()),
        ValidationErrorKind::Contains => push(out, "must contain at least 1 valid item(s)".into()),
        _ => push(out, err.to_string()),
    }
}

/// AJV's uniqueItems report: scanning from the end, the first item equal to a later one (`j` later, `i` earlier).
fn duplicate_pair(v: &Value) -> Option<(usize, usize)> {
    let items = v.as_array()?;
    for i in (0..items.len()).rev() {
        if let Some(j) = (i + 1..items.len()).rev().find(|&j| items[j] == items[i]) {
            return Some((j, i));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(schema: Value) -> ToolDefinition {
        ToolDefinition {
            name: "t".into(),
            description: String::new(),
            parameters: schema,
        }
    }

    fn call(args: Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "t".into(),
            arguments: args.as_object().unwrap().clone(),
            partial_args: None,
            partial_json: None,
            index: None,
            thought_signature: None,
            ..Default::default()
        }
    }

    #[test]
    fn coerces_scalars_like_ajv() {
        let cache = ValidatorCache::default();
        let d = def(json!({
            "type": "object",
            "properties": {
                "n": {"type": "number"}, "i": {"type": "integer"}, "s": {"type": "string"},
                "b": {"type": "boolean"}, "list": {"type": "array", "items": {"type": "integer"}}
            },
            "required": ["n"]
        }));
        let out = validate_tool_arguments(
            &cache,
            &d,
            &call(json!({"n": "1.5", "i": "42", "s": 7, "b": "true", "list": ["1", 2]})),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"n": 1.5, "i": 42, "s": "7", "b": true, "list": [1, 2]})
        );
    }

    #[test]
    fn numbers_coerced_to_strings_read_as_javascript_prints_them() {
        let cache = ValidatorCache::default();
        let d = def(json!({"type": "object", "properties": {"command": {"type": "string"}}}));
        // Parsed from the model's JSON text, as the provider streams arguments.
        let coerced = |text: &str| {
            let args: serde_json::Value =
                serde_json::from_str(&format!("{{\"command\": {text}}}")).unwrap();
            validate_tool_arguments(&cache, &d, &call(args)).unwrap()["command"].clone()
        };
        // Was "9223372036854775807" (a saturating cast).
        assert_eq!(coerced("1e20"), json!("100000000000000000000"));
        assert_eq!(coerced("1e21"), json!("1e+21"));
        assert_eq!(coerced("-0.0"), json!("0"));
        assert_eq!(coerced("0.30000000000000004"), json!("0.30000000000000004"));
        assert_eq!(coerced("0.000001"), json!("0.000001"));
        assert_eq!(coerced("1e-7"), json!("1e-7"));
        assert_eq!(
            coerced("12345678901234567890"),
            json!("12345678901234567000")
        );
        assert_eq!(coerced("9007199254740993"), json!("9007199254740992"));
    }

    #[test]
    fn failure_text_matches_reference_format() {
        let cache = ValidatorCache::default();
        let d = def(json!({
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["path"],
            "additionalProperties": false
        }));
        let err =
            validate_tool_arguments(&cache, &d, &call(json!({"limit": "abc", "extra": true})))
                .unwrap_err();
        assert!(
            err.starts_with("Validation failed for tool \"t\":\n"),
            "{err}"
        );
        assert!(
            err.contains("  - path: must have required property 'path'"),
            "{err}"
        );
        assert!(err.contains("  - limit: must be integer"), "{err}");
        assert!(
            err.contains("  - root: must NOT have additional properties"),
            "{err}"
        );
        assert!(
            err.ends_with(
                "\n\nReceived arguments:\n{\n  \"limit\": \"abc\",\n  \"extra\": true\n}"
            ),
            "{err}"
        );
        let err = validate_tool_arguments(&cache, &d, &call(json!({"path": "x", "limit": 0})))
            .unwrap_err();
        assert!(err.contains("  - limit: must be >= 1"), "{err}");
    }

    #[test]
    fn nested_required_uses_parent_path_and_bad_schema_is_an_error() {
        let cache = ValidatorCache::default();
        let d = def(json!({
            "type": "object",
            "properties": {"edits": {"type": "array", "items": {"type": "object", "required": ["oldText"]}}}
        }));
        let err = validate_tool_arguments(&cache, &d, &call(json!({"edits": [{}]}))).unwrap_err();
        assert!(
            err.contains("  - edits/0: must have required property 'oldText'"),
            "{err}"
        );
        let bad = def(json!({"type": 12}));
        assert!(validate_tool_arguments(&cache, &bad, &call(json!({}))).is_err());
    }
}
