//! Compiles the Rust backend's golden output for `codegen/tests/fixtures/basic.yaml` against this crate's
//! support module, and round-trips that fixture's examples through the generated types: tagged unions, optional
//! vs nullable vs tri-state, keyword field names, ordered maps, open enums/unions and body-typed events.

#![allow(dead_code)]

mod support {
    pub use dreb_protocol::support::*;
}

mod fixture {
    include!("../../../codegen/tests/fixtures/basic.rs");
}

use fixture::*;
use serde_json::{Value, json};

fn spec() -> dreb_codegen_core::Ir {
    dreb_codegen_core::load_spec(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../codegen/tests/fixtures/basic.yaml"
    ))
    .unwrap_or_else(|e| panic!("{e}"))
}

fn text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap()
}

#[test]
fn every_type_example_round_trips() {
    let ir = spec();
    let mut n = 0;
    for t in &ir.types {
        for ex in &t.examples {
            let back = conformance::reserialize_type(&t.name, ex.clone())
                .unwrap()
                .unwrap_or_else(|e| panic!("{}: {e}", t.name));
            // Compare serialised text: key order is part of the contract here.
            assert_eq!(text(&back), text(ex), "{}", t.name);
            n += 1;
        }
    }
    assert!(n >= 10);
}

#[test]
fn command_examples_round_trip() {
    let ir = spec();
    for c in &ir.commands {
        for ex in &c.examples {
            let req = ex.request.clone().unwrap();
            let mut obj = req.as_object().unwrap().clone();
            let id = obj.shift_remove("id");
            let cmd = Command::from_wire(&c.name, obj).unwrap().unwrap();
            assert_eq!(cmd.name(), c.name);
            let mut out = serde_json::Serializer::new(Vec::new());
            cmd.serialize_with_id(id.as_ref(), &mut out).unwrap();
            assert_eq!(String::from_utf8(out.into_inner()).unwrap(), text(&req));
            let resp = ex.response.clone().unwrap();
            if resp["success"] == json!(true) {
                let data =
                    ResponseData::from_wire(Some(&c.name), resp.get("data").cloned()).unwrap();
                let mut m = serde_json::Map::new();
                struct Probe<'a>(&'a ResponseData, &'a mut serde_json::Map<String, Value>);
                let mut buf = serde_json::Serializer::new(Vec::new());
                {
                    use serde::ser::{SerializeMap, Serializer};
                    let mut map = (&mut buf).serialize_map(None).unwrap();
                    data.serialize_data(&mut map).unwrap();
                    map.end().unwrap();
                }
                let written: Value = serde_json::from_slice(&buf.into_inner()).unwrap();
                if let Some(d) = resp.get("data") {
                    m.insert("data".into(), d.clone());
                }
                let _ = Probe(&data, &mut m);
                assert_eq!(written, Value::Object(m), "{}", c.name);
            }
            for ev in &ex.events {
                assert_eq!(
                    text(&serde_json::from_value::<Event>(ev.clone()).unwrap()),
                    text(ev)
                );
            }
        }
    }
}

#[test]
fn events_are_open_and_round_trip() {
    let ir = spec();
    for e in &ir.events {
        for ex in &e.examples {
            let ev: Event = serde_json::from_value(ex.clone()).unwrap();
            assert_eq!(ev.name(), Some(e.name.as_str()));
            assert!(!matches!(ev, Event::Unknown(_)));
            assert_eq!(text(&ev), text(ex));
        }
    }
    let unknown = json!({"type": "brand_new", "x": [1]});
    let ev: Event = serde_json::from_value(unknown.clone()).unwrap();
    assert_eq!(ev, Event::Unknown(unknown.clone()));
    assert_eq!(text(&ev), text(&unknown));
    // An open union inside a known event keeps an unknown method.
    let ui = json!({"type": "ui_request", "id": "1", "method": "future", "z": true});
    assert_eq!(
        text(&serde_json::from_value::<Event>(ui.clone()).unwrap()),
        text(&ui)
    );
}

#[test]
fn presence_flags_map_to_distinct_rust_states() {
    let p: Presence = serde_json::from_value(json!({"required": "a", "orNull": null})).unwrap();
    assert_eq!(
        (p.maybe.clone(), p.or_null.clone(), p.tri.clone()),
        (None, None, Tristate::Absent)
    );
    let p: Presence =
        serde_json::from_value(json!({"required": "a", "orNull": "x", "tri": null})).unwrap();
    assert_eq!(p.tri, Tristate::Null);
    // A nullable field must be present.
    assert!(serde_json::from_value::<Presence>(json!({"required": "a"})).is_err());
    let written = text(&Presence {
        required: "a".into(),
        maybe: None,
        or_null: None,
        tri: Tristate::Value(3),
    });
    assert_eq!(written, r#"{"required":"a","orNull":null,"tri":3}"#);
}

use support::Tristate;

#[test]
fn tags_are_checked_and_enums_are_strict_unless_open() {
    assert!(serde_json::from_value::<TextContent>(json!({"type": "image", "text": "x"})).is_err());
    let err = serde_json::from_value::<Content>(json!({"type": "video"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown variant `video`"), "{err}");
    assert!(serde_json::from_value::<Level>(json!("on")).is_ok());
    assert!(serde_json::from_value::<Level>(json!("max")).is_err());
    assert_eq!(
        serde_json::from_value::<Api>(json!("x")).unwrap(),
        Api::Other("x".into())
    );
    assert_eq!(
        wire::commands::ALL,
        ["prompt", "get_state", "resolve", "type"]
    );
}

#[test]
fn keyword_names_keep_their_wire_spelling() {
    let k = Keywords {
        r#type: "t".into(),
        self_: Some(true),
        r#match: Some(1),
        from: None,
        r#async: None,
        r#fn: None,
        class: None,
    };
    assert_eq!(text(&k), r#"{"type":"t","self":true,"match":1}"#);
}

#[test]
fn inputs_keep_the_raw_frame() {
    let frame = json!({"type": "ui_response", "id": "u1", "cancelled": true});
    let input = Input::from_wire("ui_response", frame.as_object().unwrap().clone()).unwrap();
    assert_eq!(input.name(), "ui_response");
    let typed: UiResponse = input.parse().unwrap();
    assert_eq!(
        typed,
        UiResponse::UiCancelled(UiCancelled {
            id: "u1".into(),
            cancelled: true
        })
    );
}

/// A real (small) `RpcHandler` over the fixture protocol: keeps the last prompt and a busy flag. It implements
/// the fixture's two group traits; `RpcHandler` (and so `CommandService`) follows.
struct FixtureAgent {
    last_prompt: std::sync::Mutex<Option<String>>,
}

impl PromptingHandler for FixtureAgent {
    async fn prompt(
        &self,
        _ctx: &support::RequestContext,
        params: PromptParams,
    ) -> Result<(), errors::PromptError> {
        let text = match params.message {
            UserContent::String(s) => s,
            UserContent::ListContent(blocks) => blocks
                .iter()
                .filter_map(|b| {
                    if let Content::Text(t) = b {
                        Some(t.text.clone())
                    } else {
                        None
                    }
                })
                .collect(),
        };
        let mut last = self.last_prompt.lock().unwrap();
        if last.is_some() {
            return Err(errors::PromptError::AgentIsBusy {
                reason: "streaming".into(),
            });
        }
        *last = Some(text);
        Ok(())
    }
}

impl StateHandler for FixtureAgent {
    async fn get_state(
        &self,
        _ctx: &support::RequestContext,
        _params: GetStateParams,
    ) -> Result<State, errors::GetStateError> {
        Ok(State {
            level: Level::Off,
            session_name: self.last_prompt.lock().unwrap().clone(),
            leaf_id: None,
        })
    }

    async fn resolve(
        &self,
        ctx: &support::RequestContext,
        params: ResolveParams,
    ) -> Result<Option<Presence>, errors::ResolveError> {
        // A `raw: true` param: the handler checks it; the spec lists no text for it, so it is unexpected
        // (answered `Command failed: <message>`).
        match &params.patch {
            Some(Value::Object(_)) => {}
            Some(other) => {
                return Err(errors::ResolveError::unexpected(format!(
                    "Invalid patch: {other}"
                )));
            }
            None => {
                return Err(errors::ResolveError::unexpected(
                    "resolve requires a patch object",
                ));
            }
        }
        Ok(params.type_.map(|t| Presence {
            required: t,
            maybe: ctx.id.as_ref().map(|i| i.to_string()),
            or_null: None,
            tri: Tristate::Null,
        }))
    }

    async fn r#type(
        &self,
        _ctx: &support::RequestContext,
        _params: TypeParams,
    ) -> Result<indexmap::IndexMap<String, Api>, errors::TypeError> {
        Ok([("x".to_string(), Api::AnthropicMessages)]
            .into_iter()
            .collect())
    }
}

#[tokio::test]
async fn rpc_handler_serves_through_command_service() {
    let agent = FixtureAgent {
        last_prompt: std::sync::Mutex::new(None),
    };
    let ctx = support::RequestContext::detached(Some(json!("r1")));
    let call = |v: Value| {
        let mut obj = v.as_object().unwrap().clone();
        let ty = obj.shift_remove("type").unwrap();
        Command::from_wire(ty.as_str().unwrap(), obj)
            .unwrap()
            .unwrap()
    };
    let r = CommandService::call(
        &agent,
        &ctx,
        call(json!({"type": "prompt", "message": "hi"})),
    )
    .await;
    assert_eq!(r, Ok(ResponseData::Prompt));
    let r = CommandService::call(
        &agent,
        &ctx,
        call(json!({"type": "prompt", "message": "again"})),
    )
    .await;
    assert_eq!(r, Err("Agent is busy: streaming".to_string()));
    let r = CommandService::call(&agent, &ctx, call(json!({"type": "get_state"})))
        .await
        .unwrap();
    assert_eq!(
        r,
        ResponseData::GetState(State {
            level: Level::Off,
            session_name: Some("hi".into()),
            leaf_id: None
        })
    );
    let r = CommandService::call(&agent, &ctx, call(json!({"type": "resolve", "patch": {}}))).await;
    assert_eq!(r, Ok(ResponseData::Resolve(None)));
    let r = CommandService::call(&agent, &ctx, call(json!({"type": "resolve"}))).await;
    assert_eq!(
        r,
        Err("Command failed: resolve requires a patch object".to_string())
    );
    let r = CommandService::call(&agent, &ctx, call(json!({"type": "resolve", "patch": 5}))).await;
    assert_eq!(r, Err("Command failed: Invalid patch: 5".to_string()));
    let r = CommandService::call(&agent, &ctx, call(json!({"type": "type"})))
        .await
        .unwrap();
    let ResponseData::Type(map) = r else {
        panic!("wrong variant")
    };
    assert_eq!(map["x"], Api::AnthropicMessages);
}

#[test]
fn command_errors_display_their_listed_texts() {
    use fixture::errors::PromptError;
    let busy = PromptError::AgentIsBusy {
        reason: "streaming".into(),
    };
    assert_eq!(busy.to_string(), "Agent is busy: streaming");
    assert!(!busy.prefixed());
    assert_eq!(busy.wire_text(), "Agent is busy: streaming");
    let refused = PromptError::Refused {
        r#type: "x".into(),
        user_name: "ann".into(),
    };
    assert_eq!(refused.to_string(), "Refused x for ann, ann.");
    assert!(refused.prefixed());
    assert_eq!(
        String::from(refused),
        "Command failed: Refused x for ann, ann."
    );
    assert_eq!(
        PromptError::LiteralNotAPlaceholderAnd.wire_text(),
        "Literal {not a placeholder} and {}"
    );
    let other = PromptError::unexpected("disk full");
    assert_eq!(other.to_string(), "disk full");
    assert_eq!(other.wire_text(), "Command failed: disk full");
    // Every listed text, filled with its placeholder names, is what the variant writes.
    let ir = spec();
    let listed: Vec<String> = ir
        .command("prompt")
        .unwrap()
        .errors
        .iter()
        .map(|e| e.text.clone())
        .collect();
    assert_eq!(
        listed,
        [
            PromptError::AgentIsBusy {
                reason: "{reason}".into()
            }
            .wire_text(),
            PromptError::Refused {
                r#type: "{type}".into(),
                user_name: "{userName}".into()
            }
            .wire_text(),
            PromptError::LiteralNotAPlaceholderAnd.wire_text(),
        ]
    );
}
