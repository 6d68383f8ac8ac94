//! Loader and validator behaviour on the fixture spec and on small broken specs.

use std::path::PathBuf;

use dreb_codegen_core::ir::{CommandResult, MessageBody, TypeKind, TypeRef};
use dreb_codegen_core::{load_spec, load_spec_str};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
}

#[test]
fn fixture_loads_in_spec_order() {
    let ir = load_spec(fixture("basic.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = ir.types.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(&names[..4], ["Level", "Api", "Timestamp", "TextContent"]);
    let TypeKind::Enum(level) = &ir.type_def("Level").unwrap().kind else {
        panic!("Level is an enum")
    };
    // YAML 1.1 booleans stay strings.
    assert_eq!(
        level
            .values
            .iter()
            .map(|v| v.value.as_str())
            .collect::<Vec<_>>(),
        ["off", "on", "high"]
    );
    let TypeKind::Struct(p) = &ir.type_def("Presence").unwrap().kind else {
        panic!("struct")
    };
    let flags: Vec<(bool, bool)> = p.fields.iter().map(|f| (f.optional, f.nullable)).collect();
    assert_eq!(
        flags,
        [(false, false), (true, false), (false, true), (true, true)]
    );
    let resolve = ir.command("resolve").unwrap();
    assert_eq!(
        resolve.result,
        CommandResult::Data {
            ty: TypeRef::Named("Presence".into()),
            nullable: true
        }
    );
    assert!(!resolve.documented);
    assert_eq!(
        ir.event("ui_request").unwrap().body,
        MessageBody::Type("UiRequest".into())
    );
    assert_eq!(ir.inputs.len(), 1);
    assert_eq!(
        ir.envelope.error("parse"),
        Some("Failed to parse JSON: {message}")
    );
}

fn problems(yaml: &str) -> Vec<String> {
    match load_spec_str(yaml, "test.yaml") {
        Ok(_) => panic!("expected the spec to be rejected"),
        Err(e) => e.problems,
    }
}

const HEAD: &str = "protocol: {name: t, version: \"1\"}\nenvelope: {doc: x}\n";

#[test]
fn unknown_key_is_an_error_with_position() {
    let p = problems(&format!(
        "{HEAD}types:\n  A:\n    kind: struct\n    feilds: {{}}\n"
    ));
    assert_eq!(p.len(), 1);
    assert!(p[0].contains("feilds"), "{p:?}");
    assert!(p[0].contains("line 6"), "{p:?}");
}

#[test]
fn duplicate_key_is_an_error_with_position() {
    let p = problems(&format!(
        "{HEAD}types:\n  A: {{kind: alias, type: int}}\n  A: {{kind: alias, type: string}}\n"
    ));
    assert_eq!(p.len(), 1);
    assert!(p[0].to_lowercase().contains("duplicate"), "{p:?}");
    assert!(p[0].contains("line 5"), "{p:?}");
}

#[test]
fn kind_specific_keys_are_checked() {
    let p = problems(&format!(
        "{HEAD}types:\n  A: {{kind: alias, type: int, values: [a]}}\n"
    ));
    assert!(
        p.iter()
            .any(|m| m.contains("`values` is not allowed for kind `alias`")),
        "{p:?}"
    );
}

#[test]
fn references_must_resolve() {
    let p = problems(&format!(
        "{HEAD}types:\n  A:\n    kind: struct\n    fields:\n      b: {{type: list<Missing>}}\n"
    ));
    assert!(
        p.iter().any(|m| m.contains("unknown type `Missing`")),
        "{p:?}"
    );
}

#[test]
fn union_variants_must_carry_the_tag_const() {
    let yaml = format!(
        "{HEAD}types:\n  U: {{kind: union, tag: type, variants: {{a: A, b: B}}}}\n  A:\n    kind: struct\n    fields:\n      type: {{type: string, const: a}}\n  B:\n    kind: struct\n    fields:\n      type: {{type: string, const: a}}\n"
    );
    let p = problems(&yaml);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("const: b"), "{p:?}");
}

#[test]
fn examples_are_validated_against_their_types() {
    let yaml = format!(
        "{HEAD}types:\n  E: {{kind: enum, values: [x, y]}}\n  S:\n    kind: struct\n    fields:\n      a: {{type: string, optional: true}}\n      b: {{type: string, nullable: true}}\n      e: {{type: E, optional: true}}\n    examples:\n      - {{\"a\": null, \"b\": null}}\n      - {{\"a\": \"x\"}}\n      - {{\"b\": 1, \"e\": \"z\", \"c\": 1}}\n"
    );
    let p = problems(&yaml);
    let joined = p.join("\n");
    assert!(
        joined.contains("examples[0].a: null is not allowed"),
        "{joined}"
    );
    assert!(
        joined.contains("examples[1]: missing required field `b`"),
        "{joined}"
    );
    assert!(
        joined.contains("examples[2].b: expected a string, got an integer"),
        "{joined}"
    );
    assert!(joined.contains("\"z\" is not a value of E"), "{joined}");
    assert!(joined.contains("unknown key `c`"), "{joined}");
}

#[test]
fn command_examples_are_validated() {
    let yaml = format!(
        "{HEAD}commands:\n  ping:\n    result: none\n    examples:\n      - name: a\n        request: {{\"id\": 1, \"type\": \"ping\", \"x\": 1}}\n        response: {{\"id\": 2, \"type\": \"response\", \"command\": \"ping\", \"success\": true, \"data\": 1}}\n"
    );
    let joined = problems(&yaml).join("\n");
    assert!(joined.contains("request: unknown key `x`"), "{joined}");
    assert!(joined.contains("`data` must be absent"), "{joined}");
    assert!(joined.contains("must echo the request `id`"), "{joined}");
}

#[test]
fn calls_load_like_commands() {
    let yaml = format!(
        "{HEAD}commands:\n  ping:\n    result: none\ncalls:\n  ask:\n    group: Hooks\n    params:\n      q: {{type: string}}\n    result: {{type: string, nullable: true}}\n    examples:\n      - name: a\n        request: {{\"id\": \"1\", \"type\": \"ask\", \"q\": \"?\"}}\n        response: {{\"id\": \"1\", \"type\": \"response\", \"command\": \"ask\", \"success\": true, \"data\": null}}\n"
    );
    let ir = load_spec_str(&yaml, "test.yaml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ir.calls.len(), 1);
    let ask = ir.call("ask").unwrap();
    assert_eq!(ask.group.as_deref(), Some("Hooks"));
    assert_eq!(
        ask.result,
        CommandResult::Data {
            ty: TypeRef::String,
            nullable: true
        }
    );
    assert!(ir.command("ask").is_none() && ir.call("ping").is_none());
}

#[test]
fn specs_without_calls_have_none() {
    let ir = load_spec(fixture("basic.yaml")).unwrap_or_else(|e| panic!("{e}"));
    assert!(ir.calls.is_empty());
}

#[test]
fn call_examples_are_validated() {
    let yaml = format!(
        "{HEAD}calls:\n  ask:\n    params:\n      q: {{type: string, raw: true}}\n    result: none\n    examples:\n      - name: a\n        request: {{\"id\": \"1\", \"type\": \"ask\", \"q\": 1}}\n        response: {{\"id\": \"1\", \"type\": \"response\", \"command\": \"ask\", \"success\": true, \"data\": 1}}\n"
    );
    let joined = problems(&yaml).join("\n");
    assert!(
        joined.contains("calls.ask.examples[a].request.q: expected a string"),
        "{joined}"
    );
    assert!(joined.contains("`data` must be absent"), "{joined}");
    assert!(
        joined.contains("calls.ask.params.q: `raw` is only allowed on command params"),
        "{joined}"
    );
}

#[test]
fn a_name_is_a_command_or_a_call_not_both() {
    let yaml = format!(
        "{HEAD}commands:\n  ping:\n    result: none\ncalls:\n  ping:\n    result: none\n  tick:\n    result: none\nevents:\n  tick:\n    fields: {{}}\n"
    );
    let joined = problems(&yaml).join("\n");
    assert!(
        joined.contains("calls.ping: the same wire name is also a command"),
        "{joined}"
    );
    assert!(
        joined.contains("calls.tick: the same wire name is also an event"),
        "{joined}"
    );
}

#[test]
fn the_repository_specs_load() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    for spec in dreb_codegen_core::SPEC_PATHS {
        load_spec(root.join(spec)).unwrap_or_else(|e| panic!("{e}"));
    }
    let ext = load_spec(root.join(dreb_codegen_core::EXTENSION_SPEC_PATH)).unwrap();
    assert!(ext.call("initialize").is_some() && ext.command("register").is_some());
}

#[test]
fn error_names_are_checked() {
    let yaml = format!(
        "{HEAD}commands:\n  ping:\n    result: none\n    errors:\n      - text: \"Bad thing: {{a}}\"\n      - text: \"Command failed: Bad thing, again\"\n      - name: notPascal\n        text: \"x\"\n      - name: Unexpected\n        text: \"y\"\n      - text: \"y\"\n      - text: \"{{aB}} {{a_b}}\"\n      - text: \"z\"\n"
    );
    let joined = problems(&yaml).join("\n");
    assert!(
        joined.contains("errors[1]: error name `BadThing` (derived from its text) is used twice"),
        "{joined}"
    );
    assert!(
        joined.contains("errors[2].name: `notPascal` is not PascalCase"),
        "{joined}"
    );
    assert!(
        joined.contains("errors[3]: the error name `Unexpected` is reserved"),
        "{joined}"
    );
    assert!(
        joined.contains("errors[4]: duplicate error text \"y\""),
        "{joined}"
    );
    assert!(
        joined.contains("errors[5]: placeholders that differ only in case"),
        "{joined}"
    );
    let strict = problems(&format!(
        "{HEAD}commands:\n  ping:\n    result: none\n    errors:\n      - text: \"z\"\n        nick: Z\n"
    ))
    .join("\n");
    assert!(strict.contains("unknown field `nick`"), "{strict}");
}

#[test]
fn error_names_and_thrown_texts() {
    use dreb_codegen_core::ir::{CommandError, TextPart, text_parts};
    let ir = load_spec(fixture("basic.yaml")).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = ir
        .command("prompt")
        .unwrap()
        .errors
        .iter()
        .map(|e| e.variant_name(&ir.envelope))
        .collect();
    assert_eq!(
        names,
        ["AgentIsBusy", "Refused", "LiteralNotAPlaceholderAnd"]
    );
    assert_eq!(
        ir.envelope
            .thrown_message("Command failed: No model selected"),
        Some("No model selected")
    );
    assert_eq!(ir.envelope.thrown_message("No model selected"), None);
    assert_eq!(
        CommandError::derived_name("Command failed: {message}"),
        "CommandFailed"
    );
    assert_eq!(CommandError::derived_name("{message}"), "Message");
    assert_eq!(
        CommandError::derived_name("Not a session file (expected .jsonl): {path}"),
        "NotASessionFile"
    );
    assert_eq!(
        text_parts("a {b} {c d} {}"),
        [
            TextPart::Literal("a ".into()),
            TextPart::Placeholder("b".into()),
            TextPart::Literal(" {c d} {}".into())
        ]
    );
}
