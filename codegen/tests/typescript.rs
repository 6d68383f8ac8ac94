//! Golden test of the TypeScript backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/typescript/`), and of its extension flavour
//! (the backend of `clients/extension-host/src/generated/protocol.ts`) on the two-way fixture
//! (`tests/fixtures/calls.yaml` → `tests/golden/typescript_extension/`). The drift gate for the
//! output of the specs (`protocol/rpc.yaml`, `protocol/extension.yaml`) is `tests/drift.rs`.
//! The goldens are type-checked by `npm test` in `clients/typescript` (`tsconfig.golden.json`).
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test typescript`.

mod common;

use common::{Backend, assert_fixture_matches_golden};
use dreb_codegen::{BANNER, EXTENSION_BANNER, typescript};

fn backend() -> Backend {
    Backend {
        name: "typescript",
        test: "typescript",
        fixture: "basic.yaml",
        prefix: "clients/typescript",
        banner_start: format!("// {BANNER}\n"),
        generate: typescript::generate,
    }
}

#[test]
fn fixture_matches_golden() {
    assert_fixture_matches_golden(&backend());
}

/// The extension flavour (the output of `protocol/extension.yaml`) on the two-way fixture
/// (`tests/fixtures/calls.yaml` → `tests/golden/typescript_extension/`).
fn extension_backend() -> Backend {
    Backend {
        name: "typescript_extension",
        test: "typescript",
        fixture: "calls.yaml",
        prefix: "clients/extension-host",
        banner_start: format!("// {EXTENSION_BANNER}\n"),
        generate: typescript::generate_extension,
    }
}

#[test]
fn extension_fixture_matches_golden() {
    assert_fixture_matches_golden(&extension_backend());
}
