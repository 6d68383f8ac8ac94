"""The generated DrebClient end to end against the fake agent process: prompt → events → wait_for_idle,
an error response raising RpcError, and get_state returning typed data."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

from dreb_rpc import DrebClient, RpcError, RpcEvent, RpcSessionState, is_known_event


@pytest.fixture()
def client(fake_agent_path: str) -> Iterator[DrebClient]:
    with DrebClient.spawn(sys.executable, command_args=["-I", fake_agent_path], args=["--no-session"]) as c:
        yield c


def test_prompt_events_and_wait_for_idle(client: DrebClient) -> None:
    events: list[RpcEvent] = []
    client.on_event(events.append)
    assert client.prompt(message="hello \u2028 world") is None  # type: ignore[func-returns-value]
    client.wait_for_idle(timeout=None)
    assert [e["type"] for e in events] == ["agent_start", "message_update", "some_future_event", "agent_end"]
    update = next(e for e in events if e["type"] == "message_update")
    assert update["assistantMessageEvent"]["delta"] == "hi\u2028there"  # type: ignore[typeddict-item]
    # Every frame the fake agent sent is a valid stdout frame of the generated schema (unknown events included).
    schema = json.loads((Path(__file__).resolve().parents[3] / "protocol" / "schema" / "rpc.schema.json").read_text())
    schema.pop("anyOf")
    schema["$ref"] = "#/$defs/StdoutFrame"
    validator = Draft202012Validator(schema)
    for event in events:
        assert not list(validator.iter_errors(event)), event
    future = next(e for e in events if e["type"] == "some_future_event")
    assert not is_known_event(future)
    state: RpcSessionState = client.get_state()
    assert state["messageCount"] == 2


def test_error_response_raises_rpc_error(client: DrebClient) -> None:
    with pytest.raises(RpcError) as info:
        client.prompt(message="refuse")
    assert info.value.command == "prompt"
    assert str(info.value) == (
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
    )
    client.wait_for_idle(timeout=None)  # a refused prompt starts no run


def test_get_state_returns_typed_data(client: DrebClient) -> None:
    state = client.get_state()
    assert state["thinkingLevel"] == "off"
    assert state["isStreaming"] is False
    assert state["availableThinkingLevels"] == ["off"]
    assert state.get("model", {}).get("provider") == "mock"
    assert "sessionName" not in state


def test_optional_params_are_left_out_unless_given(client: DrebClient) -> None:
    with pytest.raises(RpcError) as unset:
        client.prompt(message="keys")
    assert str(unset.value) == "id,type,message"
    with pytest.raises(RpcError) as given:
        client.prompt(message="keys", streaming_behavior="steer", images=[])
    assert str(given.value) == "id,type,message,images,streamingBehavior"


def test_send_extension_ui_response_writes_the_input_frame(client: DrebClient) -> None:
    with client.events() as sub:
        client.send_extension_ui_response({"type": "extension_ui_response", "id": "dlg-1", "cancelled": True})
        event = sub.get(10)
    assert event == {"type": "echo_input", "frame": {"type": "extension_ui_response", "id": "dlg-1", "cancelled": True}}


def test_send_extension_ui_response_sets_a_left_out_type(client: DrebClient) -> None:
    with client.events() as sub:
        client.send_extension_ui_response({"id": "dlg-2", "value": "Allow"})
        event = sub.get(10)
    assert event == {"type": "echo_input", "frame": {"type": "extension_ui_response", "id": "dlg-2", "value": "Allow"}}
