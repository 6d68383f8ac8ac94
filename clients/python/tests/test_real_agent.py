"""Opt-in: the generated client against the real agent binary (offline `faux` provider), with every frame
validated against the generated JSON Schema. Set DREB_BIN to a built `dreb` (e.g. target/debug/dreb)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from dreb_rpc import DrebClient, RpcError, RpcEvent, is_known_event

DREB_BIN = os.environ.get("DREB_BIN", "")
pytestmark = pytest.mark.skipif(not DREB_BIN, reason="set DREB_BIN to a dreb binary to run against the real agent")

SCHEMA = Path(__file__).resolve().parents[3] / "protocol" / "schema" / "rpc.schema.json"


def stdout_frame_errors(frame: Any) -> list[str]:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    schema.pop("anyOf")
    schema["$ref"] = "#/$defs/StdoutFrame"
    return [f"{list(e.absolute_path)}: {e.message}" for e in Draft202012Validator(schema).iter_errors(frame)]


@pytest.fixture()
def client(tmp_path: Path) -> Iterator[DrebClient]:
    env = {"DREB_CODING_AGENT_DIR": str(tmp_path / "agent")}
    with DrebClient.spawn(DREB_BIN, provider="faux", args=["--no-session"], cwd=str(tmp_path), env=env) as c:
        yield c


def test_state_and_version_responses_match_the_schema(client: DrebClient) -> None:
    for command in ("get_state", "get_version"):
        response = client.request({"type": command})
        assert response["success"] is True, response
        assert stdout_frame_errors(response) == []
    state = client.get_state()
    assert state["isStreaming"] is False


def test_prompt_run_events_are_known_and_match_the_schema(client: DrebClient) -> None:
    events: list[RpcEvent] = []
    client.on_event(events.append)
    client.prompt(message="hello")
    client.wait_for_idle(timeout=60)
    assert events[0]["type"] == "agent_start" and events[-1]["type"] == "agent_end"
    problems = [f"{e['type']}: {p}" for e in events for p in stdout_frame_errors(e)]
    assert problems == []
    assert all(is_known_event(e) for e in events)
    assert client.get_state()["messageCount"] > 0


def test_errors_carry_the_documented_texts(client: DrebClient) -> None:
    with pytest.raises(RpcError) as info:
        client.prompt(message="/fork")
    assert str(info.value) == (
        "Built-in slash command /fork must be handled by the RPC client; it was not sent to the model."
    )
    response = client.request({"type": "bogus"})
    assert response == {"id": response["id"], "type": "response", "command": "bogus", "success": False,
                        "error": "Unknown command: bogus"}


def test_every_read_only_command_answers_with_a_schema_valid_frame(client: DrebClient) -> None:
    """Each `get_*` / `list_*` command of the spec, sent as its first documented example, gets exactly one
    response that is a valid stdout frame (a typed success, or an error response with a text)."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    defs = schema["$defs"]
    problems: list[str] = []
    for ref in defs["RpcCommand"]["oneOf"]:
        definition = defs[ref["$ref"].rsplit("/", 1)[1]]
        wire = definition["properties"]["type"]["const"]
        if not wire.startswith(("get_", "list_")):
            continue
        request = next(iter(definition.get("examples", [])), {"type": wire})
        response = client.request({k: v for k, v in request.items() if k != "id"}, timeout=30)
        if response.get("command") != wire:
            problems.append(f"{wire}: answered as {response.get('command')!r}")
        problems += [f"{wire}: {p}" for p in stdout_frame_errors(response)]
    assert problems == []


def test_run_returns_the_final_text_stop_reason_usage_and_events(client: DrebClient) -> None:
    result = client.run(message="hello")
    end = result.events[-1]
    assert end["type"] == "agent_end"
    last = end["messages"][-1]
    assert last["role"] == "assistant"
    text = "".join(b["text"] for b in last["content"] if b["type"] == "text")
    assert text and result.final_text == text
    assert result.stop_reason == "stop"
    assert result.error_message is None
    assert result.messages == end["messages"]
    replies = [m for m in end["messages"] if m["role"] == "assistant"]
    assert result.usage["output"] == sum(m["usage"]["output"] for m in replies)
