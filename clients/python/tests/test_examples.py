"""Every example of protocol/rpc.yaml, as typed constants (tests/_generated_examples.py), must be accepted by
the generated types under `mypy --strict`, and import."""

from __future__ import annotations

from pathlib import Path

from mypy import api as mypy_api

EXAMPLES = Path(__file__).resolve().parent / "_generated_examples.py"


def test_examples_type_check_against_the_generated_types() -> None:
    stdout, stderr, status = mypy_api.run(["--strict", str(EXAMPLES)])
    assert status == 0, stdout + stderr


def test_examples_import() -> None:
    from . import _generated_examples

    assert _generated_examples.COUNT > 100
