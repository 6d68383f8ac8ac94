//! Golden test of the JSON Schema backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/jsonschema/`). `checked_in_output_matches_protocol_spec` is the drift gate
//! for the output of `protocol/rpc.yaml`.
//! The golden is checked against the draft 2020-12 metaschema, and its examples against their schemas, by `tests/test_schema.py` in `clients/python`.
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test jsonschema`.

mod common;

use common::{
    Backend, assert_checked_in_output_matches_protocol_spec, assert_fixture_matches_golden,
};
use dreb_codegen::{BANNER, jsonschema};

fn backend() -> Backend {
    Backend {
        name: "jsonschema",
        prefix: "protocol/schema",
        banner_start: format!(
            "{{\n  \"$comment\": {}",
            serde_json::Value::String(BANNER.into())
        ),
        generate: jsonschema::generate,
    }
}

#[test]
fn fixture_matches_golden() {
    assert_fixture_matches_golden(&backend());
}

/// Drift gate: the checked-in output for `protocol/rpc.yaml` is what the backend generates now.
#[test]
fn checked_in_output_matches_protocol_spec() {
    assert_checked_in_output_matches_protocol_spec(&backend());
}
