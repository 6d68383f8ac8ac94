//! A server's elicitation (`elicitation/create`, form mode) as the host's extension-UI dialogs: one `confirm` to
//! answer or decline, then one dialog per field (`confirm` for booleans, `select` for enums, `input` for text and
//! numbers). Dismissing a field's dialog cancels the elicitation; a number that does not parse is asked again once.

use async_trait::async_trait;
use serde_json::{Map, Value, json};

/// The dialogs an elicitation needs (the runtime serves them with its dialog engine). `None`: dismissed.
#[async_trait]
pub trait DialogUi: Send + Sync {
    async fn confirm(&self, title: &str, message: &str) -> bool;
    async fn select(&self, title: &str, options: &[String]) -> Option<String>;
    async fn input(&self, title: &str, placeholder: Option<&str>) -> Option<String>;
}

/// How the user answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

/// Ask the user for the form `params` (the request's JSON: `message`, `requestedSchema`) of server `server`.
pub async fn ask(ui: &dyn DialogUi, server: &str, params: &Value) -> Answer {
    let message = params.get("message").and_then(Value::as_str).unwrap_or("");
    if !ui
        .confirm(&format!("MCP server \"{server}\" asks"), message)
        .await
    {
        return Answer::Decline;
    }
    let schema = params.get("requestedSchema").cloned().unwrap_or(json!({}));
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut content = Map::new();
    for (name, field) in properties {
        match ask_field(ui, name, field, required.contains(&name.as_str())).await {
            Field::Value(v) => {
                content.insert(name.clone(), v);
            }
            Field::Skipped => {}
            Field::Dismissed => return Answer::Cancel,
        }
    }
    Answer::Accept(content)
}

enum Field {
    Value(Value),
    Skipped,
    Dismissed,
}

/// An enum's choices as (value, label): `enum` (+ legacy `enumNames`) or `oneOf: [{const, title}]`.
fn choices(field: &Value) -> Option<Vec<(Value, String)>> {
    if let Some(values) = field.get("enum").and_then(Value::as_array) {
        let names = field.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| label_of(v));
                    (v.clone(), label)
                })
                .collect(),
        );
    }
    let one_of = field.get("oneOf").and_then(Value::as_array)?;
    Some(
        one_of
            .iter()
            .filter_map(|o| {
                let v = o.get("const")?.clone();
                let label = o
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| label_of(&v));
                Some((v, label))
            })
            .collect(),
    )
}

fn label_of(v: &Value) -> String {
    v.as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string())
}

async fn ask_field(ui: &dyn DialogUi, name: &str, field: &Value, required: bool) -> Field {
    let title = field.get("title").and_then(Value::as_str).unwrap_or(name);
    let description = field.get("description").and_then(Value::as_str);
    let kind = field
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string");
    let heading = match description {
        Some(d) => format!("{title}: {d}"),
        None => title.to_string(),
    };
    if kind == "boolean" {
        return Field::Value(Value::Bool(
            ui.confirm(title, description.unwrap_or(title)).await,
        ));
    }
    if kind == "array" {
        return ask_many(
            ui,
            &heading,
            field.get("items").unwrap_or(&Value::Null),
            required,
        )
        .await;
    }
    if let Some(options) = choices(field) {
        let mut labels: Vec<String> = options.iter().map(|(_, l)| l.clone()).collect();
        if !required {
            labels.push(SKIP.to_string());
        }
        return match ui.select(&heading, &labels).await {
            Some(l) if l == SKIP && !required => Field::Skipped,
            Some(l) => match options.into_iter().find(|(_, label)| *label == l) {
                Some((v, _)) => Field::Value(v),
                None => Field::Dismissed,
            },
            None => Field::Dismissed,
        };
    }
    let placeholder = field.get("default").map(label_of).or_else(|| {
        field
            .get("format")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    let mut prompt = heading.clone();
    for _attempt in 0..2 {
        let Some(answer) = ui.input(&prompt, placeholder.as_deref()).await else {
            return Field::Dismissed;
        };
        let answer = answer.trim();
        if answer.is_empty() && !required {
            return Field::Skipped;
        }
        match kind {
            "integer" => match answer.parse::<i64>() {
                Ok(n) => return Field::Value(json!(n)),
                Err(_) => prompt = format!("{heading} (a whole number)"),
            },
            "number" => match answer.parse::<f64>() {
                Ok(n) if n.is_finite() => return Field::Value(json!(n)),
                _ => prompt = format!("{heading} (a number)"),
            },
            _ => return Field::Value(Value::String(answer.to_string())),
        }
    }
    Field::Dismissed
}

/// A multiple choice (`type: array` of an enum) as one input of comma-separated choices (labels or values).
async fn ask_many(ui: &dyn DialogUi, heading: &str, items: &Value, required: bool) -> Field {
    let options = choices(items).or_else(|| {
        let any_of = items.get("anyOf")?.clone();
        choices(&json!({ "oneOf": any_of }))
    });
    let placeholder = options.as_ref().map(|o| {
        o.iter()
            .map(|(_, l)| l.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    });
    let mut prompt = format!("{heading} (comma-separated)");
    for _attempt in 0..2 {
        let Some(answer) = ui.input(&prompt, placeholder.as_deref()).await else {
            return Field::Dismissed;
        };
        let words: Vec<&str> = answer
            .split(',')
            .map(str::trim)
            .filter(|w| !w.is_empty())
            .collect();
        if words.is_empty() && !required {
            return Field::Skipped;
        }
        let Some(options) = &options else {
            return Field::Value(json!(words));
        };
        let picked: Option<Vec<Value>> = words
            .iter()
            .map(|w| {
                options
                    .iter()
                    .find(|(v, l)| l == w || v.as_str() == Some(w))
                    .map(|(v, _)| v.clone())
            })
            .collect();
        match picked {
            Some(values) => return Field::Value(Value::Array(values)),
            None => {
                prompt = format!(
                    "{heading} (comma-separated, from: {})",
                    placeholder.as_deref().unwrap_or("")
                )
            }
        }
    }
    Field::Dismissed
}

/// The extra choice of an optional enum field.
const SKIP: &str = "(skip)";

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Answers from a script, recording what was asked.
    struct Scripted {
        answers: Mutex<Vec<Option<String>>>,
        asked: Mutex<Vec<String>>,
    }

    impl Scripted {
        fn new(answers: &[Option<&str>]) -> Self {
            Scripted {
                answers: Mutex::new(
                    answers
                        .iter()
                        .rev()
                        .map(|a| a.map(str::to_string))
                        .collect(),
                ),
                asked: Mutex::new(Vec::new()),
            }
        }
        fn next(&self, what: String) -> Option<String> {
            self.asked.lock().unwrap().push(what);
            self.answers.lock().unwrap().pop().flatten()
        }
    }

    #[async_trait]
    impl DialogUi for Scripted {
        async fn confirm(&self, title: &str, _message: &str) -> bool {
            self.next(format!("confirm {title}")).as_deref() == Some("yes")
        }
        async fn select(&self, title: &str, options: &[String]) -> Option<String> {
            self.next(format!("select {title} {options:?}"))
        }
        async fn input(&self, title: &str, _placeholder: Option<&str>) -> Option<String> {
            self.next(format!("input {title}"))
        }
    }

    fn form() -> Value {
        json!({"message": "Tell me", "requestedSchema": {"type": "object", "properties": {
            "name": {"type": "string", "title": "Name"},
            "age": {"type": "integer"},
            "pet": {"type": "string", "oneOf": [{"const": "cat", "title": "Cat"}, {"const": "dog", "title": "Dog"}]},
            "ok": {"type": "boolean", "title": "OK?"}
        }, "required": ["name", "pet"]}})
    }

    #[tokio::test]
    async fn a_form_is_answered_field_by_field() {
        let ui = Scripted::new(&[
            Some("yes"),
            Some("Ada"),
            Some("x"),
            Some("36"),
            Some("Dog"),
            Some("yes"),
        ]);
        let answer = ask(&ui, "srv", &form()).await;
        assert_eq!(
            answer,
            Answer::Accept(
                json!({"name": "Ada", "age": 36, "pet": "dog", "ok": true})
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
        let asked = ui.asked.lock().unwrap().clone();
        assert_eq!(asked[0], "confirm MCP server \"srv\" asks");
        assert_eq!(asked[3], "input age (a whole number)");
        assert_eq!(
            asked[4],
            "select Name [\"Cat\", \"Dog\"]".replace("Name", "pet")
        );
    }

    #[tokio::test]
    async fn declining_and_dismissing() {
        let ui = Scripted::new(&[Some("no")]);
        assert_eq!(ask(&ui, "srv", &form()).await, Answer::Decline);
        let ui = Scripted::new(&[Some("yes"), None]);
        assert_eq!(ask(&ui, "srv", &form()).await, Answer::Cancel);
        // An optional field left empty is skipped.
        let ui = Scripted::new(&[Some("yes"), Some("Ada"), Some(""), Some("Cat"), Some("no")]);
        assert_eq!(
            ask(&ui, "srv", &form()).await,
            Answer::Accept(
                json!({"name": "Ada", "pet": "cat", "ok": false})
                    .as_object()
                    .unwrap()
                    .clone()
            )
        );
    }
}
