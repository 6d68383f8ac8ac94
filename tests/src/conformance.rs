//! Spec examples as test cases, a spec-replaying [`CommandService`], and the malformed-input fixtures.

use std::sync::Mutex;

use dreb_codegen::Ir;
use dreb_codegen::ir::Command as SpecCommand;
use dreb_protocol::{
    Command, CommandService, Dispatched, RequestContext, Response, ResponseData, dispatch,
};
use serde_json::Value;

/// The spec `dreb-protocol` was generated from (loaded once per test binary).
pub fn spec() -> &'static Ir {
    static SPEC: std::sync::OnceLock<Ir> = std::sync::OnceLock::new();
    SPEC.get_or_init(|| {
        dreb_codegen::load_spec(dreb_protocol::SPEC_FILE).unwrap_or_else(|e| panic!("{e}"))
    })
}

/// One command example of the spec.
#[derive(Debug, Clone)]
pub struct CommandCase {
    /// Command wire name.
    pub command: String,
    /// Docs group of the command (snapshot grouping).
    pub group: String,
    /// Example name.
    pub name: String,
    /// The request frame, if the example has one.
    pub request: Option<Value>,
    /// The response frame, if the example has one.
    pub response: Option<Value>,
    /// Events the example lists.
    pub events: Vec<Value>,
}

impl CommandCase {
    /// `command/name`, unique across the spec.
    pub fn id(&self) -> String {
        format!("{}/{}", self.command, self.name)
    }
}

/// Every command example, in spec order.
pub fn command_cases(ir: &Ir) -> Vec<CommandCase> {
    ir.commands
        .iter()
        .flat_map(|c: &SpecCommand| {
            c.examples.iter().map(move |e| CommandCase {
                command: c.name.clone(),
                group: c.group.clone().unwrap_or_else(|| "Other".into()),
                name: e.name.clone(),
                request: e.request.clone(),
                response: e.response.clone(),
                events: e.events.clone(),
            })
        })
        .collect()
}

/// JSON equality as a JSON reader sees it: object key order is ignored and numbers compare by value (`3` and
/// `3.0` are the same number; the spec's examples sometimes spell whole numbers with a fraction).
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || (x.as_f64().is_some() && x.as_f64() == y.as_f64())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Parses a response frame and serialises it back; the frame written must match the spec's JSON Schema.
pub fn reserialize_response(frame: &Value) -> Result<Value, String> {
    let r = Response::from_value(frame.clone())?;
    let back = serde_json::to_value(&r).map_err(|e| e.to_string())?;
    dreb_spec_check::check_frame(&back)?;
    Ok(back)
}

/// Parses an event frame (must be a known event) and serialises it back; the frame written must match the spec's
/// JSON Schema.
pub fn reserialize_event(frame: &Value) -> Result<Value, String> {
    let e: dreb_protocol::Event =
        serde_json::from_value(frame.clone()).map_err(|e| e.to_string())?;
    if matches!(e, dreb_protocol::Event::Unknown(_)) {
        return Err(format!("not a known event: {frame}"));
    }
    let back = serde_json::to_value(&e).map_err(|e| e.to_string())?;
    dreb_spec_check::check_frame(&back)?;
    Ok(back)
}

/// Replays a request frame through [`dispatch`] on `service`; the one response it produced, as JSON (checked
/// against the spec's JSON Schema).
pub async fn replay<S: CommandService>(service: &S, line: &str) -> Value {
    match dispatch(service, line).await {
        Dispatched::Response(r) => {
            let frame = serde_json::to_value(&r).expect("responses serialise");
            dreb_spec_check::assert_frame(&frame);
            frame
        }
        Dispatched::Input(i) => {
            panic!("`{line}` is an input message ({}), not a command", i.name())
        }
    }
}

/// The result of replaying every request example against a service.
#[derive(Debug, Default)]
pub struct ReplayReport {
    /// How many examples were replayed (those with both a request and a response).
    pub replayed: usize,
    /// How many of those requests were valid commands (and so reached the service).
    pub valid_requests: usize,
    /// One line per example whose response differs from every documented response to the same request.
    pub failures: Vec<String>,
}

/// Replays every request example of `ir` through [`dispatch`] on `service` and compares each response with the
/// documented one(s) (examples with the very same request but different outcomes, idle vs busy, are all
/// accepted). The id must be echoed and `command` must name the command. Plug the real runtime in here to check it
/// against the spec; state-dependent examples then need the state they document.
pub async fn replay_examples<S: CommandService>(service: &S, ir: &Ir) -> ReplayReport {
    let cases = command_cases(ir);
    let mut report = ReplayReport::default();
    for case in &cases {
        let (Some(req), Some(_)) = (&case.request, &case.response) else {
            continue;
        };
        let text = serde_json::to_string(req).expect("JSON");
        if matches!(
            dreb_protocol::decode(&text),
            dreb_protocol::Decoded::Request(_)
        ) {
            report.valid_requests += 1;
        }
        let got = replay(service, &text).await;
        report.replayed += 1;
        let documented: Vec<&Value> = cases
            .iter()
            .filter(|c| c.request.as_ref() == Some(req))
            .filter_map(|c| c.response.as_ref())
            .collect();
        if !documented.iter().any(|d| same_json(d, &got)) {
            report.failures.push(format!(
                "{}: got {got}, spec documents {documented:?}",
                case.id()
            ));
        } else if got.get("id") != req.get("id")
            || got.get("command") != Some(&Value::String(case.command.clone()))
        {
            report.failures.push(format!(
                "{}: id not echoed or wrong command: {got}",
                case.id()
            ));
        }
    }
    report
}

/// A [`CommandService`] that answers each request with the response the spec documents for it: it looks the
/// request up among the examples (compared as JSON including `id`) and returns the first matching example's
/// `data` or `error`. A request the spec has no example for is answered with an error naming it. Records every
/// call.
pub struct SpecReplay {
    cases: Vec<(Value, Result<ResponseData, String>)>,
    /// Names of the commands called, in order.
    pub calls: Mutex<Vec<String>>,
}

impl SpecReplay {
    /// Builds the replay table from every example that has both a request and a response.
    pub fn new(ir: &Ir) -> SpecReplay {
        let mut cases = Vec::new();
        for c in command_cases(ir) {
            let (Some(req), Some(resp)) = (&c.request, &c.response) else {
                continue;
            };
            let parsed =
                Response::from_value(resp.clone()).unwrap_or_else(|e| panic!("{}: {e}", c.id()));
            cases.push((req.clone(), parsed.result));
        }
        SpecReplay {
            cases,
            calls: Mutex::new(Vec::new()),
        }
    }
}

impl CommandService for SpecReplay {
    async fn call(&self, ctx: &RequestContext, command: Command) -> Result<ResponseData, String> {
        self.calls.lock().unwrap().push(command.name().to_string());
        let request = serde_json::to_value(&dreb_protocol::Request {
            id: ctx.id.clone(),
            command,
        })
        .unwrap();
        match self.cases.iter().find(|(req, _)| *req == request) {
            Some((_, result)) => result.clone(),
            None => Err(format!("no spec example for request {request}")),
        }
    }
}

/// Malformed or unusual input lines and why each is interesting; each must get exactly one response.
pub const NEGATIVE_LINES: &[(&str, &str)] = &[
    ("not-json", "this is not json"),
    ("empty-line", ""),
    ("truncated-json", "{\"type\": \"get_state\""),
    ("json-null", "null"),
    ("json-number", "42"),
    ("json-string", "\"get_state\""),
    ("json-array", "[1, 2]"),
    ("object-without-type", "{\"id\": \"n1\"}"),
    ("object-without-type-or-id", "{}"),
    ("non-string-type", "{\"id\": 3, \"type\": 5}"),
    (
        "unknown-type-with-id",
        "{\"id\": \"u1\", \"type\": \"no_such_command\"}",
    ),
    ("unknown-type-without-id", "{\"type\": \"no_such_command\"}"),
    (
        "missing-required-field",
        "{\"id\": \"p1\", \"type\": \"prompt\"}",
    ),
    (
        "wrong-field-type",
        "{\"id\": \"p2\", \"type\": \"prompt\", \"message\": 5}",
    ),
    (
        "wrong-nested-field-type",
        "{\"id\": \"p3\", \"type\": \"prompt\", \"message\": \"hi\", \"images\": [{\"type\": \"image\", \"data\": 1, \"mimeType\": \"image/png\"}]}",
    ),
    (
        "unknown-enum-value",
        "{\"id\": \"t1\", \"type\": \"set_thinking_level\", \"level\": \"huge\"}",
    ),
    (
        "numeric-id-echoed",
        "{\"id\": 7, \"type\": \"no_such_command\"}",
    ),
];
