//! Golden test of the Python backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/python/`). The drift gate for the output of
//! `protocol/rpc.yaml` is `tests/drift.rs`.
//! The golden is type-checked (`mypy --strict`) by `tests/test_golden.py` in `clients/python`.
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test python`.

mod common;

use common::{Backend, assert_fixture_matches_golden};
use dreb_codegen::{BANNER, python};

fn backend() -> Backend {
    Backend {
        name: "python",
        prefix: "clients/python",
        banner_start: format!("# {BANNER}\n"),
        generate: python::generate,
    }
}

#[test]
fn fixture_matches_golden() {
    assert_fixture_matches_golden(&backend());
}
