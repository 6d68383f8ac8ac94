"""The obvious host code type-checks under ``mypy --strict``: ``if event["type"] == "agent_end"`` narrows an
``RpcEvent`` to the generated TypedDict (the open union's unknown member does not block it), ``is_known_event`` is a
type guard, and events of unknown types still reach the last branch at run time."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

HOST = '''
from typing import Any, cast

from dreb_rpc import DrebClient, RpcEvent, is_known_event


def answer(client: DrebClient, dialog_id: str) -> None:
    # `type` is set by the method: leaving it out type-checks, a wrong key does not (checked below).
    client.send_extension_ui_response({"id": dialog_id, "value": "Allow"})
    client.send_extension_ui_response({"type": "extension_ui_response", "id": dialog_id, "confirmed": True})


def describe(event: RpcEvent) -> str:
    if event["type"] == "agent_end":
        return f"agent_end with {len(event['messages'])} message(s)"
    if event["type"] == "message_update":
        update = event["assistantMessageEvent"]
        return f"delta {update['delta']}" if update["type"] == "text_delta" else f"update {update['type']}"
    if event["type"] == "auto_retry_end":
        return f"retry ended after {event['attempt']} ({event.get('finalError', 'ok')})"
    if is_known_event(event):
        return f"known {event['type']}"
    return "other " + cast(str, event["type"]) + " " + str(cast(dict[str, Any], event).get("payload"))
'''


def test_narrowing_type_checks_under_mypy_strict(tmp_path: Path) -> None:
    host = tmp_path / "host.py"
    host.write_text(HOST, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(host)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr

    spec = importlib.util.spec_from_file_location("host", host)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    frames: list[Any] = [
        {"type": "agent_end", "messages": [{"role": "user", "content": "hi", "timestamp": 1}]},
        {"type": "message_update", "message": {}, "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": "hi", "partial": {}}},
        {"type": "auto_retry_end", "success": False, "attempt": 3, "finalError": "Overloaded"},
        {"type": "turn_start"},
        {"type": "a_future_event", "payload": 1},
    ]
    assert [module.describe(f) for f in frames] == [
        "agent_end with 1 message(s)",
        "delta hi",
        "retry ended after 3 (Overloaded)",
        "known turn_start",
        "other a_future_event 1",
    ]


def test_a_misspelled_dialog_answer_fails_mypy_strict(tmp_path: Path) -> None:
    host = tmp_path / "bad_host.py"
    host.write_text(
        "from dreb_rpc import DrebClient\n\n\n"
        "def answer(client: DrebClient) -> None:\n"
        "    client.send_extension_ui_response({'id': 'x', 'valeu': 'Allow'})\n",
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(host)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'incompatible type "dict[str, str]"' in result.stdout, result.stdout
