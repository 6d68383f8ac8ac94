//! The runtime's dialogs (`extension_ui_request`) as ACP requests: the bash permission gate (allow once, allow
//! always, block), an extension's `select` and `confirm` as `session/request_permission`; free text (`input`,
//! `editor`) and `ask_user`'s questions as one `elicitation/create` form when the client offers form elicitation.
//! Without it, `ask_user` asks each question that has options as a permission request and answers the others
//! skipped, and `input` / `editor` are answered `cancelled` at once: nothing waits for a dialog the editor
//! never shows.

use std::collections::BTreeMap;

use agent_client_protocol_schema::v1::{
    ElicitationAction, ElicitationContentValue, ElicitationSchema, EnumOption,
    MultiSelectPropertySchema, PermissionOption, PermissionOptionId, PermissionOptionKind,
    StringPropertySchema,
};
use serde_json::{Map, Value, json};

/// The permission gate's dialog (`dreb_dialog::permission_gate`): a `select` with these options and title prefix.
const GATE_TITLE_PREFIX: &str = "Allow dangerous command?";
const GATE_ALLOW: &str = "Allow";
const GATE_BLOCK: &str = "Block";

/// One dialog the runtime opened.
#[derive(Debug, Clone, PartialEq)]
pub struct Dialog {
    pub id: String,
    pub kind: DialogKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DialogKind {
    /// The bash permission gate for `command`.
    Gate {
        title: String,
        command: String,
    },
    Select {
        title: String,
        options: Vec<String>,
    },
    Confirm {
        title: String,
    },
    /// `ask_user`'s questions.
    Ask {
        title: String,
        questions: Vec<Question>,
    },
    /// One line of free text.
    Input {
        title: String,
        placeholder: Option<String>,
    },
    /// Free text, starting from `prefill`.
    Editor {
        title: String,
        prefill: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub text: String,
    pub title: Option<String>,
    pub options: Vec<String>,
    pub multi_select: bool,
    /// An answer of one's own may be typed (always when there are no options).
    pub free_text: bool,
}

/// How a dialog is put to the client.
pub enum Route {
    /// Permission requests, one after another.
    Permission(Vec<Step>),
    /// One `elicitation/create` form: its message and schema.
    Form {
        message: String,
        schema: ElicitationSchema,
    },
    /// Nothing to ask: this is the answer.
    Answer(Map<String, Value>),
}

/// One permission request to send: its title and options.
pub struct Step {
    pub title: String,
    pub options: Vec<PermissionOption>,
}

/// A dialog request frame as a [`Dialog`]; `None` for fire-and-forget UI (`notify`, `setStatus`, …).
pub fn parse(frame: &Value) -> Option<Dialog> {
    let s = |k: &str| frame.get(k).and_then(Value::as_str);
    let id = s("id")?.to_string();
    let title = s("title").unwrap_or("").to_string();
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let kind = match s("method")? {
        "select" => {
            let options = strings(frame.get("options"));
            match title.strip_prefix(GATE_TITLE_PREFIX) {
                Some(rest) if options == [GATE_ALLOW, GATE_BLOCK] => DialogKind::Gate {
                    command: rest.trim().to_string(),
                    title,
                },
                _ => DialogKind::Select { title, options },
            }
        }
        "confirm" => DialogKind::Confirm {
            title: match s("message") {
                Some(m) if !m.is_empty() => format!("{title}\n\n{m}"),
                _ => title,
            },
        },
        "ask" => DialogKind::Ask {
            title,
            questions: frame
                .get("questions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|q| {
                    let options = strings(q.get("options"));
                    let flag = |k: &str| q.get(k).and_then(Value::as_bool);
                    Question {
                        text: q
                            .get("question")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        title: q.get("title").and_then(Value::as_str).map(str::to_string),
                        multi_select: !options.is_empty() && flag("multiSelect") == Some(true),
                        free_text: options.is_empty() || flag("allowFreeText") != Some(false),
                        options,
                    }
                })
                .collect(),
        },
        "input" => DialogKind::Input {
            title,
            placeholder: s("placeholder").map(str::to_string),
        },
        "editor" => DialogKind::Editor {
            title,
            prefill: s("prefill").map(str::to_string),
        },
        _ => return None,
    };
    Some(Dialog { id, kind })
}

fn option(id: &str, name: &str, kind: PermissionOptionKind) -> PermissionOption {
    PermissionOption::new(PermissionOptionId::new(id), name, kind)
}

fn indexed(options: &[String]) -> Vec<PermissionOption> {
    options
        .iter()
        .enumerate()
        .map(|(i, o)| option(&format!("option-{i}"), o, PermissionOptionKind::AllowOnce))
        .collect()
}

pub const ALLOW_ONCE: &str = "allow-once";
pub const ALLOW_ALWAYS: &str = "allow-always";
pub const REJECT: &str = "reject";

/// How `kind` is asked; `forms`: the client offers form elicitation.
pub fn route(dialog: &Dialog, forms: bool) -> Route {
    match &dialog.kind {
        DialogKind::Ask { title, questions } if forms => Route::Form {
            message: title.clone(),
            schema: ask_form(questions),
        },
        DialogKind::Input { title, placeholder } if forms => text_form(
            title,
            StringPropertySchema::new().description(placeholder.clone()),
        ),
        DialogKind::Editor { title, prefill } if forms => text_form(
            title,
            StringPropertySchema::new().default_value(prefill.clone()),
        ),
        DialogKind::Input { .. } | DialogKind::Editor { .. } => {
            Route::Answer(response(dialog, &[]))
        }
        kind => match steps(kind) {
            steps if steps.is_empty() => Route::Answer(response(dialog, &[])),
            steps => Route::Permission(steps),
        },
    }
}

/// A form with one required text field, titled as the dialog.
fn text_form(title: &str, field: StringPropertySchema) -> Route {
    Route::Form {
        message: title.to_string(),
        schema: ElicitationSchema::new().property(VALUE, field.title(title.to_string()), true),
    }
}

/// The form field of a dialog's text.
const VALUE: &str = "value";

/// Question `i`'s field (zero-padded: the schema's properties are sorted by name), and its free-text field.
fn field(i: usize) -> String {
    format!("q{:02}", i + 1)
}

fn other_field(i: usize) -> String {
    format!("{}_other", field(i))
}

/// `ask_user`'s questions as one form: per question its choice (one, or several) and, where allowed, an answer
/// of one's own. Nothing is required: an unanswered question is skipped, as in the reference's wizard.
fn ask_form(questions: &[Question]) -> ElicitationSchema {
    let mut schema = ElicitationSchema::new();
    for (i, q) in questions.iter().enumerate() {
        let title = q.title.clone().unwrap_or_else(|| q.text.clone());
        let description = q.title.is_some().then(|| q.text.clone());
        if q.options.is_empty() {
            let text = StringPropertySchema::new()
                .title(title)
                .description(description);
            schema = schema.property(field(i), text, false);
            continue;
        }
        schema = if q.multi_select {
            let choice = MultiSelectPropertySchema::new(q.options.clone())
                .title(title.clone())
                .description(description);
            schema.property(field(i), choice, false)
        } else {
            let choice = StringPropertySchema::new()
                .title(title.clone())
                .description(description)
                .one_of(
                    q.options
                        .iter()
                        .map(|o| EnumOption::new(o.as_str(), o.as_str()))
                        .collect::<Vec<_>>(),
                );
            schema.property(field(i), choice, false)
        };
        if q.free_text {
            let other = StringPropertySchema::new().title(format!("{title}: another answer"));
            schema = schema.property(other_field(i), other, false);
        }
    }
    schema
}

/// The `extension_ui_response` for a form's outcome (`None`: withdrawn or failed, as a cancel).
pub fn form_response(dialog: &Dialog, action: Option<&ElicitationAction>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("type".into(), json!("extension_ui_response"));
    out.insert("id".into(), json!(dialog.id));
    let empty = BTreeMap::new();
    let answer = match action {
        Some(ElicitationAction::Accept(a)) => Some(a.content.as_ref().unwrap_or(&empty)),
        // Declined: the questions are skipped (the agent carries on); a text dialog has no text.
        Some(ElicitationAction::Decline) => Some(&empty),
        _ => None,
    };
    let text =
        |content: &BTreeMap<String, ElicitationContentValue>, key: &str| match content.get(key) {
            Some(ElicitationContentValue::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            _ => None,
        };
    match (&dialog.kind, answer) {
        (DialogKind::Ask { questions, .. }, Some(content)) => {
            let answers: Vec<Value> = questions
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    let selected: Vec<String> = match content.get(&field(i)) {
                        _ if q.options.is_empty() => Vec::new(),
                        Some(ElicitationContentValue::String(s)) => vec![s.clone()],
                        Some(ElicitationContentValue::StringArray(a)) => a.clone(),
                        _ => Vec::new(),
                    };
                    let custom = if q.options.is_empty() {
                        text(content, &field(i))
                    } else {
                        text(content, &other_field(i))
                    };
                    let mut a = json!({"selected": selected});
                    match custom {
                        Some(c) => a["customText"] = json!(c),
                        None if selected.is_empty() => a["skipped"] = json!(true),
                        None => {}
                    }
                    a
                })
                .collect();
            out.insert("answers".into(), Value::Array(answers));
        }
        (DialogKind::Input { .. } | DialogKind::Editor { .. }, Some(content)) => {
            match content.get(VALUE) {
                Some(ElicitationContentValue::String(v)) => {
                    out.insert(VALUE.into(), json!(v));
                }
                _ => {
                    out.insert("cancelled".into(), json!(true));
                }
            }
        }
        _ => {
            out.insert("cancelled".into(), json!(true));
        }
    }
    out
}

/// The permission requests a dialog needs, in order (for `ask_user` only its questions with options: the others
/// are answered skipped).
pub fn steps(kind: &DialogKind) -> Vec<Step> {
    match kind {
        DialogKind::Gate { title, .. } => vec![Step {
            title: title.clone(),
            options: vec![
                option(ALLOW_ONCE, "Allow", PermissionOptionKind::AllowOnce),
                option(
                    ALLOW_ALWAYS,
                    "Always allow this command",
                    PermissionOptionKind::AllowAlways,
                ),
                option(REJECT, "Block", PermissionOptionKind::RejectOnce),
            ],
        }],
        DialogKind::Select { title, options } => vec![Step {
            title: title.clone(),
            options: indexed(options),
        }],
        DialogKind::Confirm { title } => vec![Step {
            title: title.clone(),
            options: vec![
                option(ALLOW_ONCE, "Yes", PermissionOptionKind::AllowOnce),
                option(REJECT, "No", PermissionOptionKind::RejectOnce),
            ],
        }],
        DialogKind::Ask { questions, .. } => questions
            .iter()
            .filter(|q| !q.options.is_empty())
            .map(|q| Step {
                title: q.text.clone(),
                options: indexed(&q.options),
            })
            .collect(),
        DialogKind::Input { .. } | DialogKind::Editor { .. } => Vec::new(),
    }
}

/// The `extension_ui_response` for the chosen option of each step (`None`: the client cancelled a step).
pub fn response(dialog: &Dialog, chosen: &[Option<String>]) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("type".into(), json!("extension_ui_response"));
    out.insert("id".into(), json!(dialog.id));
    let pick = |i: usize| chosen.get(i).cloned().flatten();
    let nth = |options: &[String], choice: &str| -> Option<String> {
        let i: usize = choice.strip_prefix("option-")?.parse().ok()?;
        options.get(i).cloned()
    };
    let answer = match (&dialog.kind, pick(0)) {
        // Nothing could be asked: every question is skipped.
        (DialogKind::Ask { questions, .. }, _)
            if questions.iter().all(|q| q.options.is_empty()) =>
        {
            Some((
                "answers",
                questions
                    .iter()
                    .map(|_| json!({"selected": [], "skipped": true}))
                    .collect(),
            ))
        }
        (DialogKind::Input { .. } | DialogKind::Editor { .. }, _) | (_, None) => None,
        (DialogKind::Gate { .. }, Some(c)) => Some((
            "value",
            json!(if c == REJECT { GATE_BLOCK } else { GATE_ALLOW }),
        )),
        (DialogKind::Select { options, .. }, Some(c)) => {
            nth(options, &c).map(|v| ("value", json!(v)))
        }
        (DialogKind::Confirm { .. }, Some(c)) => Some(("confirmed", json!(c == ALLOW_ONCE))),
        (DialogKind::Ask { questions, .. }, Some(_)) => {
            // The steps were the questions with options, in order.
            let mut step = 0;
            let answers: Option<Vec<Value>> = questions
                .iter()
                .map(|q| {
                    if q.options.is_empty() {
                        return Some(json!({"selected": [], "skipped": true}));
                    }
                    step += 1;
                    let v = nth(&q.options, &pick(step - 1)?)?;
                    Some(json!({"selected": [v]}))
                })
                .collect();
            answers.map(|a| ("answers", Value::Array(a)))
        }
    };
    match answer {
        Some((key, value)) => {
            out.insert(key.into(), value);
        }
        None => {
            out.insert("cancelled".into(), json!(true));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_permission_gate_is_recognised_and_answered_both_ways() {
        let d = parse(
            &json!({"type": "extension_ui_request", "id": "u1", "method": "select",
            "title": "Allow dangerous command?\n\nrm -rf build", "options": ["Allow", "Block"]}),
        )
        .unwrap();
        assert!(matches!(&d.kind, DialogKind::Gate { command, .. } if command == "rm -rf build"));
        assert_eq!(steps(&d.kind)[0].options.len(), 3);
        assert_eq!(response(&d, &[Some(ALLOW_ALWAYS.into())])["value"], "Allow");
        assert_eq!(response(&d, &[Some(REJECT.into())])["value"], "Block");
        assert_eq!(response(&d, &[None])["cancelled"], true);
    }

    #[test]
    fn ask_user_questions_become_one_step_each() {
        let d = parse(&json!({"id": "u2", "method": "ask", "questions": [
            {"question": "DB?", "options": ["SQLite", "Postgres"]},
            {"question": "Tests?", "options": ["yes", "no"]}]}))
        .unwrap();
        assert_eq!(steps(&d.kind).len(), 2);
        let r = response(&d, &[Some("option-1".into()), Some("option-0".into())]);
        assert_eq!(
            r["answers"],
            json!([{"selected": ["Postgres"]}, {"selected": ["yes"]}])
        );
        // Without forms a question without options cannot be asked: it is skipped, the others asked.
        let mixed = parse(&json!({"id": "u3", "method": "ask", "questions": [
            {"question": "Why?"}, {"question": "Tests?", "options": ["yes", "no"]}]}))
        .unwrap();
        assert_eq!(steps(&mixed.kind).len(), 1);
        assert_eq!(
            response(&mixed, &[Some("option-1".into())])["answers"],
            json!([{"selected": [], "skipped": true}, {"selected": ["no"]}])
        );
        let free =
            parse(&json!({"id": "u5", "method": "ask", "questions": [{"question": "Why?"}]}))
                .unwrap();
        let Route::Answer(answer) = route(&free, false) else {
            panic!("asked")
        };
        assert_eq!(
            answer["answers"],
            json!([{"selected": [], "skipped": true}])
        );
        assert!(parse(&json!({"id": "u4", "method": "notify", "message": "m"})).is_none());
    }

    #[test]
    fn confirm_and_select() {
        let c = parse(
            &json!({"id": "c", "method": "confirm", "title": "Clear?", "message": "All lost."}),
        )
        .unwrap();
        assert_eq!(response(&c, &[Some(REJECT.into())])["confirmed"], false);
        let s =
            parse(&json!({"id": "s", "method": "select", "title": "Pick", "options": ["a", "b"]}))
                .unwrap();
        assert_eq!(response(&s, &[Some("option-1".into())])["value"], "b");
    }

    #[test]
    fn free_text_dialogs_are_forms_when_the_client_offers_them_and_cancelled_otherwise() {
        let input = parse(
            &json!({"id": "i", "method": "input", "title": "Branch name?", "placeholder": "main"}),
        )
        .unwrap();
        let Route::Answer(answer) = route(&input, false) else {
            panic!("asked without forms")
        };
        assert_eq!(answer["cancelled"], true);
        let Route::Form { message, schema } = route(&input, true) else {
            panic!("no form")
        };
        assert_eq!(message, "Branch name?");
        let schema = serde_json::to_value(schema).unwrap();
        assert_eq!(schema["properties"]["value"]["description"], "main");
        assert_eq!(schema["required"], json!(["value"]));
        let accept: ElicitationAction =
            serde_json::from_value(json!({"action": "accept", "content": {"value": "dev"}}))
                .unwrap();
        assert_eq!(form_response(&input, Some(&accept))["value"], "dev");
        let decline: ElicitationAction =
            serde_json::from_value(json!({"action": "decline"})).unwrap();
        assert_eq!(form_response(&input, Some(&decline))["cancelled"], true);
        assert_eq!(form_response(&input, None)["cancelled"], true);
    }

    #[test]
    fn ask_user_is_one_form_with_a_field_per_question() {
        let ask = parse(&json!({"id": "a", "method": "ask", "title": "Question", "questions": [
            {"question": "Which DB?", "options": ["SQLite", "Postgres"]},
            {"question": "Which checks?", "title": "Checks", "options": ["lint", "test"], "multiSelect": true, "allowFreeText": false},
            {"question": "Anything else?"}]}))
        .unwrap();
        let Route::Form { schema, .. } = route(&ask, true) else {
            panic!("no form")
        };
        let schema = serde_json::to_value(schema).unwrap();
        let names: Vec<_> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(names, ["q01", "q01_other", "q02", "q03"]);
        assert_eq!(schema["properties"]["q01"]["oneOf"][1]["const"], "Postgres");
        assert_eq!(schema["properties"]["q02"]["type"], "array");
        assert_eq!(schema["properties"]["q02"]["title"], "Checks");
        let accept: ElicitationAction =
            serde_json::from_value(json!({"action": "accept", "content": {
            "q01": "Postgres", "q02": ["lint", "test"], "q03": "  "}}))
            .unwrap();
        assert_eq!(
            form_response(&ask, Some(&accept))["answers"],
            json!([{"selected": ["Postgres"]}, {"selected": ["lint", "test"]}, {"selected": [], "skipped": true}])
        );
        let other: ElicitationAction =
            serde_json::from_value(json!({"action": "accept", "content": {
            "q01_other": "DuckDB", "q03": "no"}}))
            .unwrap();
        assert_eq!(
            form_response(&ask, Some(&other))["answers"],
            json!([{"selected": [], "customText": "DuckDB"}, {"selected": [], "skipped": true}, {"selected": [], "customText": "no"}])
        );
        let cancel: ElicitationAction =
            serde_json::from_value(json!({"action": "cancel"})).unwrap();
        assert_eq!(form_response(&ask, Some(&cancel))["cancelled"], true);
    }
}
