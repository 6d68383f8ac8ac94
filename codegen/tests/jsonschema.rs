//! Golden test of the JSON Schema backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/jsonschema/`). The drift gate for the output of
//! `protocol/rpc.yaml` is `tests/drift.rs`.
//! The golden is checked against the draft 2020-12 metaschema, and its examples against their schemas, by `tests/test_schema.py` in `clients/python`.
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test jsonschema`.

mod common;

use common::{Backend, assert_fixture_matches_golden};
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
