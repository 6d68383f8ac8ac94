//! Conformance of the generated extension protocol types with every example in `protocol/extension.yaml` (the spec
//! this crate was generated from; the tests are in `common`), and the typing of `CallSpec` / `CommandSpec`.

mod common;

use dreb_extension_protocol as proto;
use proto::{CallSpec, CommandSpec};
use serde_json::{Map, Value};

const SPEC: &str = proto::SPEC_FILE;

/// The name a spec-typed request goes by, and the `type_name` of what it resolves to.
fn call_spec<C: CallSpec>(params: C) -> (&'static str, &'static str, &'static str) {
    let name = params.into_call().name();
    (C::NAME, name, std::any::type_name::<C::Output>())
}

fn command_spec<C: CommandSpec>(params: C) -> (&'static str, &'static str, &'static str) {
    let name = params.into_command().name();
    (C::NAME, name, std::any::type_name::<C::Output>())
}

#[test]
fn spec_traits_type_requests_with_their_results() {
    use proto::*;
    let (name, wire_name, output) = call_spec(ExecuteToolParams {
        tool_name: "hello".into(),
        tool_call_id: "call_1".into(),
        params: Map::new(),
    });
    assert_eq!((name, wire_name), ("execute_tool", "execute_tool"));
    assert!(output.ends_with("::ToolExecutionResult"), "{output}");
    let (name, _, output) = call_spec(SessionShutdownParams {});
    assert_eq!((name, output), ("session_shutdown", "()"));
    let (name, wire_name, output) = command_spec(GetToolsParams {});
    assert_eq!((name, wire_name), ("get_tools", "get_tools"));
    assert!(
        output.contains("Vec<") && output.ends_with("::ToolInfo>"),
        "{output}"
    );
    // `()` parses from the `null` of an absent `data`.
    serde_json::from_value::<<SessionShutdownParams as CallSpec>::Output>(Value::Null).unwrap();
}
