//! `ask_user`: structured clarifying questions answered by the host's UI. The UI is reached through the
//! [`Dialog`] trait (the RPC layer implements it with `extension_ui_request` method `ask` and the matching
//! `extension_ui_response`). Every outcome settles: answered, skipped, cancelled, timed out, no UI, UI failure.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use dreb_agent::{Tool, ToolError, ToolOutput, ToolUpdateFn};
use dreb_ai::ToolDefinition;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::{definition, parse_params, text_output};

/// One question as sent to the UI (`extension_ui_request.questions[]`).
pub use dreb_types::AskQuestion;

/// The questions of one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskRequest {
    pub questions: Vec<AskQuestion>,
}

/// One answer, normalised from the host's `extension_ui_response.answers[]` (the spec's `AskAnswer`) by the RPC
/// layer: `skipped` is decided (flagged, or nothing chosen and no text), an empty `customText` is dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AskAnswer {
    pub selected: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_text: Option<String>,
    #[serde(default)]
    pub skipped: bool,
}

/// The answers of one call, in question order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskResult {
    pub answers: Vec<AskAnswer>,
}

/// How a dialog settled.
#[derive(Debug, Clone, PartialEq)]
pub enum AskOutcome {
    Answered(AskResult),
    /// Cancelled by the user, timed out, aborted, or shut down.
    Cancelled,
}

/// Timeout and abort for one dialog.
#[derive(Debug, Clone)]
pub struct AskOptions {
    pub timeout: Option<Duration>,
    pub cancel: CancellationToken,
}

/// The host UI failed or answered malformed data (e.g. `Invalid RPC ask response: ...`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct DialogError(pub String);

/// The host's question UI.
#[async_trait]
pub trait Dialog: Send + Sync {
    async fn ask(
        &self,
        request: AskRequest,
        options: AskOptions,
    ) -> Result<AskOutcome, DialogError>;
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AskParams {
    questions: Vec<AskQuestion>,
    timeout_seconds: Option<f64>,
}

pub struct AskUserTool {
    dialog: Option<Arc<dyn Dialog>>,
    def: ToolDefinition,
}

pub fn ask_user_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": {"type": "string", "description": "The Markdown-formatted question to ask the user. Be specific about what you need to decide."},
                        "title": {"type": "string", "description": "Short bold header shown above this question."},
                        "options": {
                            "type": "array",
                            "items": {"type": "string", "minLength": 1, "pattern": "^.*[^ \\t\\r\\n].*$"},
                            "minItems": 2,
                            "maxItems": 4,
                            "description": "2-4 nonblank suggested answers the user can pick from."
                        },
                        "allowFreeText": {"type": "boolean", "description": "Offer a 'type your own answer' field. Defaults to true."},
                        "multiSelect": {"type": "boolean", "description": "Allow selecting multiple options (checkboxes). Only meaningful with options."},
                        "multiline": {"type": "boolean", "description": "Use a large multi-line text area for open-ended answers."}
                    },
                    "required": ["question"]
                },
                "minItems": 1,
                "maxItems": 10,
                "description": "One or more clarifying questions to ask together in a single wizard. Batch every question you need answered in one call — the user answers them all and submits once."
            },
            "timeoutSeconds": {
                "type": "number",
                "minimum": 5,
                "maximum": 3600,
                "description": "Optional: stop the current agent turn after this many seconds if the user does not respond. Shows a live countdown. Omit to wait indefinitely."
            }
        },
        "required": ["questions"]
    })
}

impl AskUserTool {
    /// `dialog: None` means no interactive UI (every call answers "unavailable" without blocking).
    pub fn new(dialog: Option<Arc<dyn Dialog>>) -> Self {
        AskUserTool {
            dialog,
            def: definition(
                "ask_user",
                "Pause and ask the user one or more structured clarifying questions in a single call, each with optional multiple-choice options and a free-text answer. The questions are shown together as one wizard and answered as a batch. Use only when genuinely blocked by ambiguity with multiple viable paths — not for routine confirmation.",
                ask_user_schema(),
            ),
        }
    }
}

/// Every question gets a usable answer control; impossible flag combinations are dropped.
fn normalize_question(q: AskQuestion) -> AskQuestion {
    let has_options = q.options.as_ref().is_some_and(|o| !o.is_empty());
    AskQuestion {
        allow_free_text: if has_options {
            q.allow_free_text
        } else {
            Some(true)
        },
        multi_select: if has_options { q.multi_select } else { None },
        multiline: if has_options && q.allow_free_text == Some(false) {
            None
        } else {
            q.multiline
        },
        ..q
    }
}

struct AnswerDetail {
    question: String,
    title: Option<String>,
    selected: Vec<String>,
    custom_text: Option<String>,
    skipped: bool,
}

impl AnswerDetail {
    fn skipped(q: &AskQuestion) -> Self {
        AnswerDetail {
            question: q.question.clone(),
            title: q.title.clone(),
            selected: vec![],
            custom_text: None,
            skipped: true,
        }
    }

    fn to_json(&self) -> Value {
        let mut v = json!({"question": self.question});
        if let Some(t) = &self.title {
            v["title"] = json!(t);
        }
        v["selected"] = json!(self.selected);
        if let Some(c) = &self.custom_text {
            v["customText"] = json!(c);
        }
        v["skipped"] = json!(self.skipped);
        v
    }

    fn heading(&self) -> String {
        let raw = self
            .title
            .as_deref()
            .filter(|t| !t.is_empty())
            .unwrap_or(&self.question);
        raw.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

fn details_json(answers: &[AnswerDetail], unavailable: bool, failed: bool) -> Value {
    let mut v = json!({"answers": answers.iter().map(AnswerDetail::to_json).collect::<Vec<_>>(), "unavailable": unavailable});
    if failed {
        v["failed"] = json!(true);
    }
    v
}

fn all_skipped(questions: &[AskQuestion]) -> Vec<AnswerDetail> {
    questions.iter().map(AnswerDetail::skipped).collect()
}

fn answered(questions: &[AskQuestion], result: &AskResult) -> ToolOutput {
    let details: Vec<AnswerDetail> = questions
        .iter()
        .enumerate()
        .map(|(i, q)| match result.answers.get(i) {
            Some(a) if !a.skipped => {
                let custom = a
                    .custom_text
                    .as_deref()
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_string);
                if a.selected.is_empty() && custom.is_none() {
                    AnswerDetail::skipped(q)
                } else {
                    AnswerDetail {
                        question: q.question.clone(),
                        title: q.title.clone(),
                        selected: a.selected.clone(),
                        custom_text: custom,
                        skipped: false,
                    }
                }
            }
            _ => AnswerDetail::skipped(q),
        })
        .collect();
    let summary: Vec<String> = details
        .iter()
        .map(|d| {
            if d.skipped {
                return format!("**{}** → (no answer)", d.heading());
            }
            let mut parts = Vec::new();
            if !d.selected.is_empty() {
                parts.push(format!("Selected: {}", d.selected.join(", ")));
            }
            if let Some(c) = &d.custom_text {
                parts.push(format!("wrote: \"{c}\""));
            }
            format!("**{}** → {}", d.heading(), parts.join(" / "))
        })
        .collect();
    text_output(
        summary.join("\n"),
        Some(details_json(&details, false, false)),
    )
}

#[async_trait]
impl Tool for AskUserTool {
    fn definition(&self) -> &ToolDefinition {
        &self.def
    }

    async fn execute(
        &self,
        _tool_call_id: &str,
        params: Value,
        cancel: CancellationToken,
        _on_update: ToolUpdateFn,
    ) -> Result<ToolOutput, ToolError> {
        let p: AskParams = parse_params("ask_user", params)?;
        let questions: Vec<AskQuestion> = p.questions.into_iter().map(normalize_question).collect();
        let timeout = p
            .timeout_seconds
            .filter(|t| t.is_finite() && *t > 0.0)
            .map(Duration::from_secs_f64);
        let Some(dialog) = &self.dialog else {
            return Ok(text_output(
                "The ask_user tool requires an interactive UI, which is not available in this mode. Proceed using your best judgment without waiting for an answer.",
                Some(details_json(&all_skipped(&questions), true, false)),
            ));
        };
        let unanswered = || {
            text_output(
                "The questions closed without an answer.",
                Some(details_json(&all_skipped(&questions), false, false)),
            )
        };
        if cancel.is_cancelled() {
            return Ok(unanswered());
        }
        let request = AskRequest {
            questions: questions.clone(),
        };
        match dialog.ask(request, AskOptions { timeout, cancel }).await {
            Ok(AskOutcome::Answered(result)) => Ok(answered(&questions, &result)),
            Ok(AskOutcome::Cancelled) => Ok(unanswered()),
            Err(e) => {
                tracing::debug!(error = %e, "ask_user: dialog failed");
                Ok(text_output(
                    "The questions could not be delivered because the interactive UI or response protocol failed. Continue without this input.",
                    Some(details_json(&all_skipped(&questions), false, true)),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::test_util::{noop_update, text_of};
    use std::sync::Mutex;

    /// A scripted host UI that records what it was asked.
    struct FakeDialog {
        reply: Mutex<Option<Result<AskOutcome, DialogError>>>,
        asked: Mutex<Vec<(AskRequest, Option<Duration>)>>,
    }

    impl FakeDialog {
        fn new(reply: Result<AskOutcome, DialogError>) -> Arc<Self> {
            Arc::new(FakeDialog {
                reply: Mutex::new(Some(reply)),
                asked: Mutex::new(Vec::new()),
            })
        }
    }

    #[async_trait]
    impl Dialog for FakeDialog {
        async fn ask(
            &self,
            request: AskRequest,
            options: AskOptions,
        ) -> Result<AskOutcome, DialogError> {
            self.asked.lock().unwrap().push((request, options.timeout));
            self.reply
                .lock()
                .unwrap()
                .take()
                .unwrap_or(Ok(AskOutcome::Cancelled))
        }
    }

    fn params() -> Value {
        json!({
            "questions": [
                {"question": "Which   database?", "title": "DB", "options": ["postgres", "sqlite"], "multiline": true},
                {"question": "Anything else?", "multiSelect": true, "allowFreeText": false},
                {"question": "Deploy target?"}
            ],
            "timeoutSeconds": 30
        })
    }

    #[tokio::test]
    async fn answered_questions_are_summarised() {
        // As the RPC layer normalises `{"selected": ["sqlite"]}`, `{"selected": [], "customText": "  use   WAL "}`
        // and `{"selected": [], "customText": "   "}`.
        let answer = |selected: &[&str], custom_text: Option<&str>, skipped| AskAnswer {
            selected: selected.iter().map(|s| s.to_string()).collect(),
            custom_text: custom_text.map(str::to_string),
            skipped,
        };
        let reply = AskResult {
            answers: vec![
                answer(&["sqlite"], None, false),
                answer(&[], Some("  use   WAL "), false),
                answer(&[], Some("   "), true),
            ],
        };
        let dialog = FakeDialog::new(Ok(AskOutcome::Answered(reply)));
        let tool = AskUserTool::new(Some(dialog.clone()));
        let out = tool
            .execute("c", params(), CancellationToken::new(), noop_update())
            .await
            .unwrap();
        assert_eq!(
            text_of(&out),
            "**DB** → Selected: sqlite\n**Anything else?** → wrote: \"use   WAL\"\n**Deploy target?** → (no answer)"
        );
        let d = out.details.unwrap();
        assert_eq!(d["unavailable"], json!(false));
        assert_eq!(
            d["answers"][0],
            json!({"question": "Which   database?", "title": "DB", "selected": ["sqlite"], "skipped": false})
        );
        assert_eq!(d["answers"][2]["skipped"], json!(true));
        let asked = dialog.asked.lock().unwrap();
        let (req, timeout) = &asked[0];
        assert_eq!(*timeout, Some(Duration::from_secs(30)));
        // Without options: free text forced on, multiSelect dropped; multiline kept.
        assert_eq!(
            serde_json::to_value(&req.questions[1]).unwrap(),
            json!({"question": "Anything else?", "allowFreeText": true})
        );
        assert_eq!(req.questions[0].multiline, Some(true));
    }

    #[tokio::test]
    async fn cancelled_failed_and_unavailable() {
        let tool = AskUserTool::new(Some(FakeDialog::new(Ok(AskOutcome::Cancelled))));
        let out = tool
            .execute("c", params(), CancellationToken::new(), noop_update())
            .await
            .unwrap();
        assert_eq!(text_of(&out), "The questions closed without an answer.");

        let bad = DialogError("Invalid RPC ask response: answers must be an array".into());
        let tool = AskUserTool::new(Some(FakeDialog::new(Err(bad))));
        let out = tool
            .execute("c", params(), CancellationToken::new(), noop_update())
            .await
            .unwrap();
        assert!(text_of(&out).starts_with("The questions could not be delivered"));
        assert_eq!(out.details.unwrap()["failed"], json!(true));

        let tool = AskUserTool::new(None);
        let out = tool
            .execute("c", params(), CancellationToken::new(), noop_update())
            .await
            .unwrap();
        assert!(text_of(&out).starts_with("The ask_user tool requires an interactive UI"));
        assert_eq!(out.details.unwrap()["unavailable"], json!(true));

        // A pre-aborted call never reaches the UI.
        let dialog = FakeDialog::new(Ok(AskOutcome::Cancelled));
        let tool = AskUserTool::new(Some(dialog.clone()));
        let cancel = CancellationToken::new();
        cancel.cancel();
        tool.execute("c", params(), cancel, noop_update())
            .await
            .unwrap();
        assert!(dialog.asked.lock().unwrap().is_empty());
    }
}
