//! Golden test of the Python backend on the fixture spec (`tests/fixtures/basic.yaml` →
//! `tests/golden/python/`), and of its extension flavour
//! (the backend of `clients/python/src/dreb_extension/_protocol.py`) on the two-way fixture
//! (`tests/fixtures/calls.yaml` → `tests/golden/python_extension/`). The drift gate for the
//! output of the specs (`protocol/rpc.yaml`, `protocol/extension.yaml`) is `tests/drift.rs`.
//! The golden is type-checked (`mypy --strict`) by `tests/test_golden.py` in `clients/python`.
//! Rewrite the goldens with `UPDATE_GOLDENS=1 cargo test -p dreb-codegen --test python`.

mod common;

use common::{Backend, assert_fixture_matches_golden};
use dreb_codegen::{BANNER, EXTENSION_BANNER, python};

fn backend() -> Backend {
    Backend {
        name: "python",
        test: "python",
        fixture: "basic.yaml",
        prefix: "clients/python",
        banner_start: format!("# {BANNER}\n"),
        generate: python::generate,
    }
}

#[test]
fn fixture_matches_golden() {
    assert_fixture_matches_golden(&backend());
}

/// The extension flavour (the output of `protocol/extension.yaml`) on the two-way fixture
/// (`tests/fixtures/calls.yaml` → `tests/golden/python_extension/`).
fn extension_backend() -> Backend {
    Backend {
        name: "python_extension",
        test: "python",
        fixture: "calls.yaml",
        prefix: "clients/python",
        banner_start: format!("# {EXTENSION_BANNER}\n"),
        generate: python::generate_extension,
    }
}

#[test]
fn extension_fixture_matches_golden() {
    assert_fixture_matches_golden(&extension_backend());
}
