//! Golden test of the TypeScript backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/typescript/`). `checked_in_output_matches_protocol_spec` is the drift gate
//! for the output of `protocol/rpc.yaml`.
//! The goldens are type-checked by `npm test` in `clients/typescript` (`tsconfig.golden.json`).
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test typescript`.

mod common;

use common::{
    Backend, assert_checked_in_output_matches_protocol_spec, assert_fixture_matches_golden,
};
use dreb_codegen::{BANNER, typescript};

fn backend() -> Backend {
    Backend {
        name: "typescript",
        prefix: "clients/typescript",
        banner_start: format!("// {BANNER}\n"),
        generate: typescript::generate,
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
