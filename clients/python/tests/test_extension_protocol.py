"""The generated extension protocol outputs (protocol/extension.yaml): every example, as typed constants
(tests/_generated_extension_examples.py), is accepted by `dreb_extension._protocol` under `mypy --strict` (and the
codegen fixture's examples by its golden); and the JSON Schema (`protocol/schema/extension.schema.json`, and the golden of the codegen's two-way fixture) is valid
draft 2020-12 with every example matching its definition and its side's frame union."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import shutil

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from mypy import api as mypy_api

from .test_schema import ROOT, errors, load, registry_for, validator_for

EXAMPLES = Path(__file__).resolve().parent / "_generated_extension_examples.py"
GOLDEN_DIR = ROOT / "codegen" / "tests" / "golden" / "python_extension"
SCHEMAS = [
    pytest.param(
        ROOT / "codegen" / "tests" / "golden" / "jsonschema_extension" / "extension.schema.json",
        id="fixture-golden",
    ),
    pytest.param(ROOT / "protocol" / "schema" / "extension.schema.json", id="protocol"),
]


def test_examples_type_check_against_the_generated_types() -> None:
    stdout, stderr, status = mypy_api.run(["--strict", str(EXAMPLES)])
    assert status == 0, stdout + stderr


def test_examples_import() -> None:
    from . import _generated_extension_examples

    assert _generated_extension_examples.COUNT > 10


def test_golden_examples_type_check_against_the_golden_types(tmp_path: Path) -> None:
    # The golden of the codegen's two-way fixture, with its examples pointed at it in a package of its own.
    package = tmp_path / "fixture_ext"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(GOLDEN_DIR / "src" / "dreb_extension" / "_protocol.py", package / "_protocol.py")
    examples = (GOLDEN_DIR / "tests" / "_generated_extension_examples.py").read_text(encoding="utf-8")
    assert "from dreb_extension import _protocol as T" in examples
    (tmp_path / "examples.py").write_text(examples.replace("from dreb_extension import", "from fixture_ext import"))
    stdout, stderr, status = mypy_api.run(
        ["--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), str(tmp_path / "examples.py")]
    )
    assert status == 0, stdout + stderr


def test_name_tuples_match_the_unions() -> None:
    from dreb_extension import _protocol as T

    assert "initialize" in T.CALL_TYPES and "register" in T.COMMAND_TYPES and "cancel" in T.EVENT_TYPES
    assert not set(T.CALL_TYPES) & set(T.COMMAND_TYPES)


@pytest.mark.parametrize("path", SCHEMAS)
def test_schema_is_valid_draft_2020_12(path: Path) -> None:
    Draft202012Validator.check_schema(load(path))


@pytest.mark.parametrize("path", SCHEMAS)
def test_every_example_validates_against_its_definition_and_frame_union(path: Path) -> None:
    schema = load(path)
    registry = registry_for(schema)
    defs: dict[str, Any] = schema["$defs"]

    def members(union: str) -> set[str]:
        return {ref["$ref"].rsplit("/", 1)[1] for ref in defs[union].get("oneOf", [])}

    # What each side writes: the extension its commands and its answers to calls; the runtime its calls, events
    # and answers to commands.
    sides = {
        "ExtensionFrame": members("RpcCommand") | members("RpcCallResponse"),
        "RuntimeFrame": members("RpcCall") | members("RpcResponse") | members("RpcEvent"),
    }
    frames = {side: validator_for(registry, side) for side in sides}
    problems: list[str] = []
    checked = 0
    for name, definition in defs.items():
        own = validator_for(registry, name)
        for example in definition.get("examples", []):
            checked += 1
            problems += [f"{name}: {e}" for e in errors(own, example)]
            for side, names in sides.items():
                if name in names:
                    problems += [f"{name} as a {side}: {e}" for e in errors(frames[side], example)]
    assert checked > 0
    assert not problems, "\n".join(problems)
