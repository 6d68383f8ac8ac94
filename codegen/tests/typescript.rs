//! Golden test of the TypeScript backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/typescript/`). The drift gate for the output of
//! `protocol/rpc.yaml` is `tests/drift.rs`.
//! The goldens are type-checked by `npm test` in `clients/typescript` (`tsconfig.golden.json`).
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test typescript`.

mod common;

use common::{Backend, assert_fixture_matches_golden};
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
