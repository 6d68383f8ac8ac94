//! The runtime's dialogs (`extension_ui_request`) as ACP permission requests: the bash permission gate (allow once,
//! allow always, block), `ask_user`'s questions with options (one request per question), an extension's `select`
//! and `confirm`. What ACP cannot ask (free text: `input`, `editor`, questions without options) is answered
//! `cancelled` at once, so nothing waits for a dialog the editor never shows.

use agent_client_protocol_schema::v1::{
    PermissionOption, PermissionOptionId, PermissionOptionKind,
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
    /// `ask_user`: every question has options (else the dialog is [`DialogKind::Unanswerable`]).
    Ask {
        questions: Vec<Question>,
    },
    /// Needs free text, which ACP's permission request cannot carry.
    Unanswerable,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub text: String,
    pub options: Vec<String>,
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
        "ask" => {
            let questions: Vec<Question> = frame
                .get("questions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|q| Question {
                    text: q
                        .get("question")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    options: strings(q.get("options")),
                })
                .collect();
            if questions.is_empty() || questions.iter().any(|q| q.options.is_empty()) {
                DialogKind::Unanswerable
            } else {
                DialogKind::Ask { questions }
            }
        }
        "input" | "editor" => DialogKind::Unanswerable,
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

/// The permission requests a dialog needs, in order (none for [`DialogKind::Unanswerable`]).
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
        DialogKind::Ask { questions } => questions
            .iter()
            .map(|q| Step {
                title: q.text.clone(),
                options: indexed(&q.options),
            })
            .collect(),
        DialogKind::Unanswerable => Vec::new(),
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
        (DialogKind::Unanswerable, _) | (_, None) => None,
        (DialogKind::Gate { .. }, Some(c)) => Some((
            "value",
            json!(if c == REJECT { GATE_BLOCK } else { GATE_ALLOW }),
        )),
        (DialogKind::Select { options, .. }, Some(c)) => {
            nth(options, &c).map(|v| ("value", json!(v)))
        }
        (DialogKind::Confirm { .. }, Some(c)) => Some(("confirmed", json!(c == ALLOW_ONCE))),
        (DialogKind::Ask { questions }, Some(_)) => {
            let answers: Option<Vec<Value>> = questions
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    let v = nth(&q.options, &pick(i)?)?;
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
        let free =
            parse(&json!({"id": "u3", "method": "ask", "questions": [{"question": "Why?"}]}))
                .unwrap();
        assert_eq!(free.kind, DialogKind::Unanswerable);
        assert_eq!(response(&free, &[])["cancelled"], true);
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
}
