//! Scripted replies, shared by the offline `faux` provider and the mock LLM server (`dreb-mock-llm`).
//!
//! A scenario is a JSON document:
//!
//! ```json
//! {
//!   "turns": [
//!     { "when": { "afterToolResult": true }, "repeat": true, "text": ["Done", "."] },
//!     { "thinking": ["Let me look."], "text": ["Listing files."],
//!       "toolCalls": [{ "name": "ls", "arguments": { "path": "." } }] },
//!     { "fault": { "status": 529 } },
//!     { "text": ["partial"], "cutAfter": 1 },
//!     { "text": ["truncated"], "stop": "length", "firstByteDelayMs": 200 }
//!   ],
//!   "fallback": "reference"
//! }
//! ```
//!
//! For each request the first unused turn whose `when` matches is played (`repeat: true` turns are never used up).
//! When none matches, `fallback` decides: `reference` plays the reference mock's trigger rules (see
//! [`reference_turn`]); `error` answers HTTP 500.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    #[serde(default)]
    pub turns: Vec<Turn>,
    #[serde(default)]
    pub fallback: Fallback,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Fallback {
    /// The reference mock's trigger rules.
    #[default]
    Reference,
    /// HTTP 500 "mock scenario exhausted".
    Error,
}

/// One scripted reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Turn {
    /// Only play this turn for matching requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    /// Keep the turn available after it was played.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeat: bool,
    /// Answer with an HTTP error instead of a stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Delay before the response headers (a slow first byte).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_byte_delay_ms: u64,
    /// Delay before each streamed delta.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delta_delay_ms: u64,
    /// Thinking deltas (a thinking block comes first when present).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// Text deltas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ScriptedUsage>,
    /// Default: `toolUse` when there are tool calls, else `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<ScriptedStop>,
    /// Close the stream after this many deltas, without the terminal event (a dropped connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_after: Option<usize>,
    /// Response id; default `<wire prefix>-<request number>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_id: Option<String>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct When {
    /// The last user text contains this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_user_contains: Option<String>,
    /// The last message is (true) or is not (false) a tool result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_tool_result: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// Default: `call_mock_<n>` / `toolu_mock_<n>` per wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Map<String, Value>,
    /// Argument text is streamed in pieces of this many characters (default 8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk_size: Option<usize>,
}

impl ScriptedToolCall {
    /// The argument text as streamed: JSON with `": "` and `", "` separators, as the reference mock wrote it.
    pub fn arguments_text(&self) -> String {
        spaced_json(&Value::Object(self.arguments.clone()))
    }

    /// The argument text split into streamed pieces.
    pub fn argument_chunks(&self) -> Vec<String> {
        chunk_chars(&self.arguments_text(), self.chunk_size.unwrap_or(8).max(1))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedUsage {
    #[serde(default = "default_input")]
    pub input: u64,
    /// Default: the number of deltas and argument pieces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
}

fn default_input() -> u64 {
    100
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ScriptedStop {
    Stop,
    Length,
    ToolUse,
}

/// An HTTP error reply. Without `body`, the mock writes the error body each wire uses for that status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fault {
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Sent as `retry-after-ms`, so SDK-style clients retry quickly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl Fault {
    /// (error type, message) used in generated error bodies.
    pub fn kind(&self) -> (&'static str, &'static str) {
        match self.status {
            529 => ("overloaded_error", "Overloaded"),
            429 => ("rate_limit_error", "Rate limit exceeded"),
            400 => ("invalid_request_error", "Invalid request"),
            401 => ("authentication_error", "Invalid API key"),
            s if s >= 500 => ("api_error", "Internal server error"),
            _ => ("api_error", "Error"),
        }
    }
}

impl Turn {
    pub fn stop_reason(&self) -> ScriptedStop {
        self.stop.unwrap_or(if self.tool_calls.is_empty() {
            ScriptedStop::Stop
        } else {
            ScriptedStop::ToolUse
        })
    }

    /// Deltas and argument pieces in the turn (the default output token count).
    pub fn delta_count(&self) -> u64 {
        (self.thinking.len()
            + self.text.len()
            + self
                .tool_calls
                .iter()
                .map(|t| t.argument_chunks().len())
                .sum::<usize>()) as u64
    }

    pub fn usage(&self) -> ScriptedUsage {
        let mut u = self.usage.clone().unwrap_or(ScriptedUsage {
            input: 100,
            ..Default::default()
        });
        if u.output.is_none() {
            u.output = Some(self.delta_count());
        }
        u
    }
}

/// What a scenario looks at in a request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestSummary {
    pub last_user_text: String,
    pub last_is_tool_result: bool,
}

impl When {
    pub fn matches(&self, req: &RequestSummary) -> bool {
        self.last_user_contains
            .as_ref()
            .is_none_or(|s| req.last_user_text.contains(s.as_str()))
            && self
                .after_tool_result
                .is_none_or(|b| b == req.last_is_tool_result)
    }
}

/// A scenario being played: remembers which turns were used.
#[derive(Debug, Clone)]
pub struct ScenarioPlayer {
    scenario: Scenario,
    used: Vec<bool>,
}

/// What to answer. (One per request: the size of the `Turn` variant does not matter.)
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Reply {
    Turn(Turn),
    /// The scenario has nothing for this request.
    Exhausted,
}

impl ScenarioPlayer {
    pub fn new(scenario: Scenario) -> Self {
        let used = vec![false; scenario.turns.len()];
        ScenarioPlayer { scenario, used }
    }

    pub fn next(&mut self, req: &RequestSummary) -> Reply {
        for (i, t) in self.scenario.turns.iter_mut().enumerate() {
            if self.used[i] || !t.when.as_ref().is_none_or(|w| w.matches(req)) {
                continue;
            }
            if t.repeat {
                return Reply::Turn(t.clone());
            }
            // Played once: hand it over rather than copy it (a scripted reply can be 200,000 deltas).
            self.used[i] = true;
            return Reply::Turn(std::mem::take(t));
        }
        match self.scenario.fallback {
            Fallback::Reference => Reply::Turn(reference_turn(req)),
            Fallback::Error => Reply::Exhausted,
        }
    }
}

/// The reference mock's rules, decided from the last user text:
/// `[[tool=bash:CMD]]` → a `bash` tool call (then, once the last message is a tool result, "Tool finished; done."
/// in 3 deltas); `[[deltas=1]][[text=T]]` → `T` in one delta; `Reply with just: X` → `X` in 2 deltas; anything else
/// → "Hello from the mock LLM." in 6 deltas.
pub fn reference_turn(req: &RequestSummary) -> Turn {
    let text = &req.last_user_text;
    let deltas = |parts: &[&str]| Turn {
        text: parts.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    if let Some(cmd) = between(text, "[[tool=bash:", "]]") {
        if req.last_is_tool_result {
            return deltas(&["Tool ", "finished; ", "done."]);
        }
        let mut arguments = Map::new();
        arguments.insert("command".into(), Value::String(cmd.to_string()));
        return Turn {
            tool_calls: vec![ScriptedToolCall {
                id: None,
                name: "bash".into(),
                arguments,
                chunk_size: Some(8),
            }],
            ..Default::default()
        };
    }
    if text.contains("[[deltas=1]]")
        && let Some(t) = between(text, "[[text=", "]]")
    {
        return deltas(&[t]);
    }
    if let Some(pos) = text.find("Reply with just: ") {
        let x = text[pos + "Reply with just: ".len()..].trim();
        let chars: Vec<char> = x.chars().collect();
        let mid = chars.len().div_ceil(2);
        let a: String = chars[..mid].iter().collect();
        let b: String = chars[mid..].iter().collect();
        return deltas(&[&a, &b]);
    }
    deltas(&["Hello", " from", " the", " mock", " LLM", "."])
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let s = text.find(start)? + start.len();
    let e = text[s..].find(end)? + s;
    Some(&text[s..e])
}

/// Splits text into pieces of `n` characters.
pub fn chunk_chars(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// JSON with a space after `:` and `,` (Python's `json.dumps` default), as the reference mock streamed arguments.
pub fn spaced_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), spaced_json(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(spaced_json).collect::<Vec<_>>().join(", ")
        ),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_rules() {
        let req = |t: &str, tool: bool| RequestSummary {
            last_user_text: t.into(),
            last_is_tool_result: tool,
        };
        assert_eq!(
            reference_turn(&req("Say hello", false)).text.concat(),
            "Hello from the mock LLM."
        );
        assert_eq!(
            reference_turn(&req("Reply with just: pong", false)).text,
            vec!["po", "ng"]
        );
        let t = reference_turn(&req(
            "Run a command [[tool=bash:echo hello-from-bash]]",
            false,
        ));
        assert_eq!(
            t.tool_calls[0].argument_chunks(),
            vec!["{\"comman", "d\": \"ech", "o hello-", "from-bas", "h\"}"]
        );
        assert_eq!(t.usage().output, Some(5));
        assert_eq!(t.stop_reason(), ScriptedStop::ToolUse);
        let t = reference_turn(&req("x [[tool=bash:ls]]", true));
        assert_eq!(t.text, vec!["Tool ", "finished; ", "done."]);
        assert_eq!(
            reference_turn(&req("[[deltas=1]][[text=Summary!]]", false)).text,
            vec!["Summary!"]
        );
    }

    #[test]
    fn player_consumes_turns_in_order() {
        let s: Scenario = serde_json::from_str(
            r#"{"turns":[{"when":{"afterToolResult":true},"repeat":true,"text":["after"]},{"text":["one"]},{"fault":{"status":529}}],"fallback":"error"}"#,
        )
        .unwrap();
        let mut p = ScenarioPlayer::new(s);
        let plain = RequestSummary::default();
        let tool = RequestSummary {
            last_is_tool_result: true,
            ..Default::default()
        };
        assert!(matches!(p.next(&plain), Reply::Turn(t) if t.text == vec!["one"]));
        assert!(matches!(p.next(&tool), Reply::Turn(t) if t.text == vec!["after"]));
        assert!(matches!(p.next(&plain), Reply::Turn(t) if t.fault.is_some()));
        assert_eq!(p.next(&plain), Reply::Exhausted);
        assert!(matches!(p.next(&tool), Reply::Turn(t) if t.text == vec!["after"]));
        assert!(
            serde_json::from_str::<Scenario>(r#"{"turns":[{"txt":[]}]}"#).is_err(),
            "unknown keys are rejected"
        );
    }
}
