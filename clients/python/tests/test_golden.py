"""The Python backend's golden output for the codegen fixture spec must type-check and import, and the
fixture's examples must type-check against it."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from mypy import api as mypy_api

GOLDEN_DIR = Path(__file__).resolve().parents[3] / "codegen" / "tests" / "golden" / "python"
GOLDEN = GOLDEN_DIR / "src" / "dreb_rpc" / "_generated.py"
GOLDEN_EXAMPLES = GOLDEN_DIR / "tests" / "_generated_examples.py"


def test_golden_passes_mypy_strict() -> None:
    stdout, stderr, status = mypy_api.run(["--strict", "--no-incremental", str(GOLDEN)])
    assert status == 0, stdout + stderr


def test_golden_examples_type_check_against_the_golden_types(tmp_path: Path) -> None:
    # The examples import `dreb_rpc._generated`; point them at the golden module in a package of its own.
    package = tmp_path / "fixture_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(GOLDEN, package / "_generated.py")
    examples = GOLDEN_EXAMPLES.read_text(encoding="utf-8")
    assert "from dreb_rpc import _generated as T" in examples
    (tmp_path / "examples.py").write_text(examples.replace("from dreb_rpc import", "from fixture_pkg import"))
    stdout, stderr, status = mypy_api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), str(tmp_path / "examples.py")]
    )
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
