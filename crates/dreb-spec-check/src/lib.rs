//! Checks stdout frames against the protocol spec, through the JSON Schema generated from `protocol/rpc.yaml`
//! (`protocol/schema/rpc.schema.json`, loaded once per test binary).
//!
//! A frame passes when it is valid against `StdoutFrame` and, more strictly than that open union:
//! - a response (`type: "response"`) is valid against the response of the command it names (`success: true`) or
//!   against `ErrorResponse` (`success: false`);
//! - an event has a type the spec defines and is valid against that event's definition. The event union is open
//!   for *clients* (they must ignore unknown types), but the binary writes only documented events, so an unknown
//!   type here is a bug or a spec gap. The one documented open frame is the child `session` header that
//!   `background_agent_event` relays; every other frame a `background_agent_event` carries is checked as an event.
//!
//! The suites call [`assert_frame`] where they read frames (their harness / frame reader), so every frame a test
//! reads is checked.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::Validator;
use jsonschema::error::ValidationErrorKind;
use serde_json::{Value, json};

/// The checked-in schema, relative to the workspace root.
pub const SCHEMA_FILE: &str = "protocol/schema/rpc.schema.json";

/// Frame types a `background_agent_event` may carry besides events: the child's session header (documented in
/// the `background_agent_event` doc of rpc.yaml).
pub const RELAYED_NON_EVENT_TYPES: &[&str] = &["session"];

/// How much of a frame's JSON a failure message quotes.
const QUOTE_LIMIT: usize = 2000;

/// The schema, indexed by frame discriminator, with compiled validators cached per definition.
pub struct SpecChecker {
    schema: Value,
    /// Success response definition per command (`get_state` → `GetStateResponse`).
    responses: HashMap<String, String>,
    /// Event definition per event type (`agent_start` → `AgentStartEvent`).
    events: HashMap<String, String>,
    validators: Mutex<HashMap<String, Arc<Validator>>>,
}

/// The checker for the workspace's schema (loaded and indexed on first use).
pub fn checker() -> &'static SpecChecker {
    static CHECKER: OnceLock<SpecChecker> = OnceLock::new();
    CHECKER.get_or_init(|| {
        let path = workspace_root().join(SCHEMA_FILE);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let schema = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        SpecChecker::new(schema).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    })
}

/// Checks one stdout frame against the spec; the error names the frame and every schema error.
pub fn check_frame(frame: &Value) -> Result<(), String> {
    checker().check(frame)
}

/// Panics with [`check_frame`]'s message when `frame` does not match the spec.
#[track_caller]
pub fn assert_frame(frame: &Value) {
    if let Err(e) = check_frame(frame) {
        panic!("{e}");
    }
}

fn workspace_root() -> PathBuf {
    // crates/dreb-spec-check → the workspace root.
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

impl SpecChecker {
    /// Indexes a schema document shaped like the generated one (`$defs` with `StdoutFrame`, `RpcResponse`,
    /// `RpcEvent`, `ErrorResponse`).
    pub fn new(schema: Value) -> Result<SpecChecker, String> {
        let defs = schema
            .get("$defs")
            .and_then(Value::as_object)
            .ok_or("the schema has no $defs")?;
        for name in ["StdoutFrame", "ErrorResponse"] {
            if !defs.contains_key(name) {
                return Err(format!("the schema has no $defs/{name}"));
            }
        }
        let variants = |union: &str| -> Result<Vec<String>, String> {
            let refs = defs
                .get(union)
                .and_then(|u| u.get("oneOf"))
                .and_then(Value::as_array)
                .ok_or(format!("$defs/{union} is not a oneOf"))?;
            Ok(refs
                .iter()
                .filter_map(|r| r.get("$ref").and_then(Value::as_str))
                .filter_map(|r| r.strip_prefix("#/$defs/"))
                .map(str::to_string)
                .collect())
        };
        let const_of = |def: &str, key: &str| -> Option<String> {
            defs.get(def)?
                .get("properties")?
                .get(key)?
                .get("const")?
                .as_str()
                .map(str::to_string)
        };
        let mut responses = HashMap::new();
        for def in variants("RpcResponse")? {
            let success = defs[&def]
                .pointer("/properties/success/const")
                .and_then(Value::as_bool);
            if let (Some(command), Some(true)) = (const_of(&def, "command"), success) {
                responses.insert(command, def);
            }
        }
        // Variants without a const `type` (the open `UnknownEvent`) are what this checker refuses.
        let events: HashMap<String, String> = variants("RpcEvent")?
            .into_iter()
            .filter_map(|def| Some((type_const(defs, &defs[&def])?, def)))
            .collect();
        if responses.is_empty() || events.is_empty() {
            return Err("no response or event definitions found".into());
        }
        Ok(SpecChecker {
            schema,
            responses,
            events,
            validators: Mutex::new(HashMap::new()),
        })
    }

    /// The event types the spec defines.
    pub fn event_types(&self) -> impl Iterator<Item = &str> {
        self.events.keys().map(String::as_str)
    }

    /// Checks one stdout frame; see the crate docs for what is checked.
    pub fn check(&self, frame: &Value) -> Result<(), String> {
        let fail = |what: String| {
            Err(format!(
                "frame does not match the spec: {what}\n  frame: {}",
                quote(frame)
            ))
        };
        let (def, label) = match self.definition_for(frame) {
            Ok(found) => found,
            Err(e) => return fail(e),
        };
        let errors = self.errors_against(&def, frame);
        if !errors.is_empty() {
            return fail(format!(
                "{label} is not a valid {def}:\n    {}",
                errors.join("\n    ")
            ));
        }
        // The specific definition passed; the frame must also be exactly one of the `StdoutFrame` union.
        let errors = self.errors_against("StdoutFrame", frame);
        if !errors.is_empty() {
            return fail(format!(
                "{label} is not a valid StdoutFrame:\n    {}",
                errors.join("\n    ")
            ));
        }
        if frame["type"] == "background_agent_event"
            && let Some(inner) = frame.get("event")
        {
            let inner_type = inner.get("type").and_then(Value::as_str).unwrap_or("");
            if !RELAYED_NON_EVENT_TYPES.contains(&inner_type)
                && let Err(e) = self.check_event(inner)
            {
                return fail(format!("the relayed child frame (`event`) is wrong: {e}"));
            }
        }
        Ok(())
    }

    fn check_event(&self, frame: &Value) -> Result<(), String> {
        match frame.get("type").and_then(Value::as_str) {
            Some("response") => Err("a response is relayed as an event".into()),
            _ => self.check(frame),
        }
    }

    /// The definition `frame` must satisfy, and a short label naming the frame.
    fn definition_for(&self, frame: &Value) -> Result<(String, String), String> {
        let Some(obj) = frame.as_object() else {
            return Err("a frame is a JSON object".into());
        };
        let Some(ty) = obj.get("type").and_then(Value::as_str) else {
            return Err("a frame has a string `type`".into());
        };
        if ty != "response" {
            return match self.events.get(ty) {
                Some(def) => Ok((def.clone(), format!("event `{ty}`"))),
                None => Err(format!(
                    "`{ty}` is not an event type the spec defines (protocol/rpc.yaml `events:`)"
                )),
            };
        }
        let command = obj.get("command").and_then(Value::as_str);
        let label = format!("response to `{}`", command.unwrap_or("?"));
        match obj.get("success") {
            Some(Value::Bool(false)) => Ok(("ErrorResponse".into(), label)),
            Some(Value::Bool(true)) => match command.and_then(|c| self.responses.get(c)) {
                Some(def) => Ok((def.clone(), label)),
                None => Err(format!(
                    "{label}: no success response is defined for this command"
                )),
            },
            _ => Err(format!("{label}: `success` is not a boolean")),
        }
    }

    /// Every schema error of `instance` against `$defs/<def>`, one line each.
    fn errors_against(&self, def: &str, instance: &Value) -> Vec<String> {
        let validator = self.validator(def);
        let mut lines = Vec::new();
        for e in validator.iter_errors(instance) {
            describe(&e, &mut lines);
        }
        lines
    }

    fn validator(&self, def: &str) -> Arc<Validator> {
        let mut cache = self.validators.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.get(def) {
            return v.clone();
        }
        let document = json!({
            "$schema": self.schema.get("$schema").cloned().unwrap_or(Value::Null),
            "$defs": self.schema["$defs"].clone(),
            "$ref": format!("#/$defs/{def}"),
        });
        let v = Arc::new(
            jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(&document)
                .unwrap_or_else(|e| panic!("$defs/{def} does not compile: {e}")),
        );
        cache.insert(def.to_string(), v.clone());
        v
    }
}

/// The const `type` of an event definition: on the struct itself, or, for an event whose body is a union
/// (`extension_ui_request`), in its `allOf` wrapper or its variants.
fn type_const(defs: &serde_json::Map<String, Value>, schema: &Value) -> Option<String> {
    if let Some(t) = schema
        .pointer("/properties/type/const")
        .and_then(Value::as_str)
    {
        return Some(t.to_string());
    }
    ["allOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .flatten()
        .find_map(|part| match part.get("$ref").and_then(Value::as_str) {
            Some(r) => type_const(defs, defs.get(r.strip_prefix("#/$defs/")?)?),
            None => type_const(defs, part),
        })
}

/// One line per error. A failed `oneOf` (a tagged union such as a message or a content block) is explained by
/// the variant the value was closest to: the one whose errors are fewest, preferring variants whose tag matched.
fn describe(e: &jsonschema::ValidationError<'_>, lines: &mut Vec<String>) {
    let path = e.instance_path().to_string();
    let at = if path.is_empty() {
        "/".to_string()
    } else {
        path
    };
    match e.kind() {
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context }
            if !context.is_empty() =>
        {
            let depth = e.instance_path().to_string().matches('/').count();
            let closest = context
                .iter()
                .min_by_key(|errs| {
                    let depth_of = |v: &jsonschema::ValidationError<'_>| {
                        v.instance_path().to_string().matches('/').count()
                    };
                    // A variant of another JSON type, or with another tag, is the least close.
                    let wrong_type = errs.iter().any(|v| {
                        matches!(v.kind(), ValidationErrorKind::Type { .. }) && depth_of(v) == depth
                    });
                    let wrong_tag = errs.iter().any(|v| {
                        matches!(v.kind(), ValidationErrorKind::Constant { .. })
                            && depth_of(v) == depth + 1
                    });
                    (wrong_type, wrong_tag, errs.len())
                })
                .expect("non-empty");
            lines.push(format!(
                "{at}: matches none of the union's variants; closest:"
            ));
            for v in closest {
                let mut inner = Vec::new();
                describe(v, &mut inner);
                lines.extend(inner.into_iter().map(|l| format!("  {l}")));
            }
        }
        _ => lines.push(format!("{at}: {}", shorten(&e.to_string(), 300))),
    }
}

fn quote(v: &Value) -> String {
    shorten(&v.to_string(), QUOTE_LIMIT)
}

fn shorten(s: &str, limit: usize) -> String {
    if s.len() <= limit {
        return s.to_string();
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}
