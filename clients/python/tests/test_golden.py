"""The Python backend's golden output for the codegen fixture spec must type-check and import."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mypy import api as mypy_api

GOLDEN = Path(__file__).resolve().parents[3] / "codegen" / "tests" / "golden" / "python" / "_generated.py"


def test_golden_passes_mypy_strict() -> None:
    stdout, stderr, status = mypy_api.run(["--strict", "--no-incremental", str(GOLDEN)])
    assert status == 0, stdout + stderr


def test_golden_imports_and_builds_a_client() -> None:
    spec = importlib.util.spec_from_file_location("fixture_generated", GOLDEN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.COMMAND_TYPES == ("prompt", "get_state", "resolve", "type")
    assert module.is_known_event({"type": "agent_start"})
    assert not module.is_known_event({"type": "brand_new"})
    assert "class" in module.Keywords.__annotations__
    assert callable(module.DrebClient.get_state)
