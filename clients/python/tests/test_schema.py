"""The JSON Schema backend's output: valid draft 2020-12, and every example in it validates.

Runs on the golden output for the codegen fixture spec and on the real `protocol/schema/rpc.schema.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "codegen" / "tests" / "golden" / "jsonschema" / "rpc.schema.json"
REAL = ROOT / "protocol" / "schema" / "rpc.schema.json"
SCHEMAS = [pytest.param(GOLDEN, id="fixture-golden"), pytest.param(REAL, id="protocol")]


def load(path: Path) -> dict[str, Any]:
    if not path.exists():
        pytest.fail(f"{path} is missing; regenerate with `cargo run -p dreb-codegen -- generate`")
    schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return schema


_ROOT_URI = "urn:dreb-rpc:schema"


def registry_for(schema: dict[str, Any]) -> Registry[Any]:
    """The document registered once (it is large), for validators of its `$defs` entries."""
    resource: Resource[Any] = Resource.from_contents(schema, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource(_ROOT_URI, resource)
    return registry


def validator_for(registry: Registry[Any], definition: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"{_ROOT_URI}#/$defs/{definition}"}, registry=registry)


def errors(validator: Draft202012Validator, value: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(value)]


@pytest.mark.parametrize("path", SCHEMAS)
def test_schema_is_valid_draft_2020_12(path: Path) -> None:
    Draft202012Validator.check_schema(load(path))


@pytest.mark.parametrize("path", SCHEMAS)
def test_every_example_validates_against_its_definition_and_frame_union(path: Path) -> None:
    schema = load(path)
    registry = registry_for(schema)
    stdin = validator_for(registry, "StdinFrame")
    stdout = validator_for(registry, "StdoutFrame")
    defs = schema["$defs"]

    def members(union: str) -> set[str]:
        return {ref["$ref"].rsplit("/", 1)[1] for ref in defs[union].get("oneOf", [])}

    stdin_frames = members("RpcCommand") | members("RpcInput")
    stdout_frames = members("RpcResponse") | members("RpcEvent")
    problems: list[str] = []
    checked = 0
    for name, definition in defs.items():
        own = validator_for(registry, name)
        for example in definition.get("examples", []):
            checked += 1
            problems += [f"{name}: {e}" for e in errors(own, example)]
            # Frames must also match exactly one branch of the whole stdin / stdout union.
            if name in stdin_frames:
                problems += [f"{name} as a stdin frame: {e}" for e in errors(stdin, example)]
            if name in stdout_frames:
                problems += [f"{name} as a stdout frame: {e}" for e in errors(stdout, example)]
    assert checked > 0
    assert not problems, "\n".join(problems)


def test_fixture_schema_rejects_bad_frames_and_keeps_the_event_union_open() -> None:
    registry = registry_for(load(GOLDEN))
    stdin = validator_for(registry, "StdinFrame")
    stdout = validator_for(registry, "StdoutFrame")
    assert errors(stdin, {"type": "prompt", "message": "hi"}) == []
    assert errors(stdin, {"type": "prompt"}) != []  # missing required param
    assert errors(stdin, {"type": "prompt", "message": "hi", "bogus": 1}) != []  # closed params
    assert errors(stdin, {"type": "ui_response", "id": "u1", "cancelled": True}) == []
    assert errors(stdout, {"type": "response", "command": "get_state", "success": True}) != []  # data required
    assert errors(stdout, {"type": "response", "command": "prompt", "success": True, "data": 1}) != []  # no data
    assert errors(stdout, {"type": "response", "success": False, "error": "Unknown command: undefined"}) == []
    assert errors(stdout, {"type": "brand_new_event", "anything": [1]}) == []  # open event union
    assert errors(stdout, {"type": "message_update", "content": {"type": "text", "text": "a"}}) != []  # final required
    assert errors(stdout, {"type": "ui_request", "id": "u9", "method": "future_method"}) == []  # open body union
    presence = validator_for(registry, "Presence")
    assert errors(presence, {"required": "a", "orNull": None, "tri": None}) == []
    assert errors(presence, {"required": "a", "orNull": None, "maybe": None}) != []  # optional is not nullable
