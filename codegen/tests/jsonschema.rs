//! Golden test of the JSON Schema backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/jsonschema/`), and of its extension flavour
//! (the backend of `protocol/schema/extension.schema.json`) on the two-way fixture
//! (`tests/fixtures/calls.yaml` → `tests/golden/jsonschema_extension/`). The drift gate for the
//! output of the specs (`protocol/rpc.yaml`, `protocol/extension.yaml`) is `tests/drift.rs`.
//! The golden is checked against the draft 2020-12 metaschema, and its examples against their schemas, by `tests/test_schema.py` in `clients/python`.
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test jsonschema`.

mod common;

use common::{Backend, assert_fixture_matches_golden};
use dreb_codegen::{BANNER, EXTENSION_BANNER, jsonschema};

fn backend() -> Backend {
    Backend {
        name: "jsonschema",
        test: "jsonschema",
        fixture: "basic.yaml",
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

/// The extension flavour (the output of `protocol/extension.yaml`) on the two-way fixture
/// (`tests/fixtures/calls.yaml` → `tests/golden/jsonschema_extension/`).
fn extension_backend() -> Backend {
    Backend {
        name: "jsonschema_extension",
        test: "jsonschema",
        fixture: "calls.yaml",
        prefix: "protocol/schema",
        banner_start: format!(
            "{{\n  \"$comment\": {}",
            serde_json::Value::String(EXTENSION_BANNER.into())
        ),
        generate: jsonschema::generate_extension,
    }
}

#[test]
fn extension_fixture_matches_golden() {
    assert_fixture_matches_golden(&extension_backend());
}
