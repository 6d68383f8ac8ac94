//! Compiles the Rust backend's golden output for `codegen/tests/fixtures/calls.yaml` (a two-way protocol) against
//! `dreb_protocol::support`, and runs the example tests of `common` on it: what `protocol/extension.yaml` does
//! not cover (a nullable call result, an error example, events listed by an example) is covered here.

#![allow(dead_code)]

mod common;

mod support {
    pub use dreb_protocol::support::*;
}

#[allow(clippy::all)]
mod proto {
    include!("../../../codegen/tests/fixtures/calls.rs");
}

use proto::*;
use serde_json::{Value, json};

const SPEC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../codegen/tests/fixtures/calls.yaml"
);

#[test]
fn a_nullable_call_result_is_an_option() {
    fn output<C: CallSpec>(_: &C) -> &'static str {
        std::any::type_name::<C::Output>()
    }
    let params = LookupParams {
        key: "a".into(),
        level: None,
    };
    let output = output(&params);
    assert!(
        output.starts_with("core::option::Option<") && output.ends_with("::Note>"),
        "{output}"
    );
    let missing: <LookupParams as CallSpec>::Output = serde_json::from_value(Value::Null).unwrap();
    assert_eq!(missing, None);
    assert_eq!(
        CallResult::from_wire(Some("lookup"), Some(Value::Null)),
        Ok(CallResult::Lookup(None))
    );
    assert_eq!(<CountParams as CommandSpec>::NAME, "count");
}

#[test]
fn call_results_check_the_data_key() {
    assert!(CallResult::from_wire(Some("lookup"), None).is_err());
    assert!(CallResult::from_wire(Some("stop"), Some(json!(1))).is_err());
    assert_eq!(
        CallResult::from_wire(Some("later"), Some(json!(1))),
        Ok(CallResult::Unknown(Some(json!(1))))
    );
    assert_eq!(wire::calls::ALL, ["lookup", "stop"]);
}
