"""The Python extension SDK against a scripted runtime over real pipes (the runtime side of the protocol is
played by the test; the real binary drives it in crates/dreb/tests/extensions.rs)."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Iterator

import pytest

from dreb_extension import CommandContext, Context, Extension, ToolCall


class Pipe:
    """The runtime's end: write frames to the extension, read what it writes."""

    def __init__(self, ext: Extension) -> None:
        to_ext_r, self._to_ext_w = os.pipe()
        self._from_ext_r, from_ext_w = os.pipe()
        self._writer = os.fdopen(self._to_ext_w, "w")
        self._reader = os.fdopen(self._from_ext_r, "r")
        ext_in = os.fdopen(to_ext_r, "r")
        ext_out = os.fdopen(from_ext_w, "w")
        self.thread = threading.Thread(target=ext.run, args=(ext_in, ext_out), daemon=True)
        self.thread.start()

    def send(self, frame: dict[str, Any]) -> None:
        self._writer.write(json.dumps(frame) + "\n")
        self._writer.flush()

    def read(self) -> dict[str, Any]:
        line = self._reader.readline()
        assert line, "the extension closed its stdout"
        frame: dict[str, Any] = json.loads(line)
        return frame

    def close(self) -> None:
        self._writer.close()
        self.thread.join(timeout=5)


@pytest.fixture
def ext() -> Extension:
    e = Extension(name="t")
    e.flag("plan", default=False)

    @e.on("tool_call")
    def block(event: dict[str, Any], ctx: Context) -> Any:
        if "rm" in event["input"].get("command", ""):
            return {"block": True, "reason": "no"}
        return None

    @e.tool("echo", description="Echoes", parameters={"type": "object"})
    def echo(params: dict[str, Any], call: ToolCall) -> Any:
        call.update({"content": [{"type": "text", "text": "working"}]})
        return f"{params['text']} plan={call.flags['plan']}"

    @e.command("pick")
    def pick(args: str, ctx: CommandContext) -> None:
        ctx.ui.notify(f"picked {ctx.ui.select('Pick', ['a', 'b'])}")

    @e.command("boom")
    def boom(args: str, ctx: CommandContext) -> None:
        raise RuntimeError("boom")

    return e


@pytest.fixture
def pipe(ext: Extension) -> Iterator[Pipe]:
    p = Pipe(ext)
    p.send({"id": "1", "type": "initialize", "protocolVersion": "1", "extensionPath": "/x/t.py", "cwd": "/x",
            "agentDir": "/a", "hasUI": True, "flagValues": {"plan": True}})
    yield p
    p.close()


def test_initialize_registers_everything(pipe: Pipe) -> None:
    r = pipe.read()
    assert r["id"] == "1" and r["success"] is True and r["command"] == "initialize"
    reg = r["data"]["registration"]
    assert r["data"]["protocolVersion"] == "1"
    assert reg["name"] == "t"
    assert reg["events"] == ["tool_call"]
    assert reg["tools"] == [{"name": "echo", "description": "Echoes", "parameters": {"type": "object"}}]
    assert [c["name"] for c in reg["commands"]] == ["pick", "boom"]
    assert reg["flags"] == [{"name": "plan", "type": "boolean", "default": False}]


def test_hooks_tools_and_commands(pipe: Pipe) -> None:
    pipe.read()
    pipe.send({"id": "2", "type": "tool_call", "toolName": "bash", "toolCallId": "c", "input": {"command": "rm x"}})
    assert pipe.read() == {"id": "2", "type": "response", "command": "tool_call", "success": True,
                           "data": {"block": True, "reason": "no"}}
    pipe.send({"id": "3", "type": "tool_call", "toolName": "bash", "toolCallId": "c", "input": {"command": "ls"}})
    assert pipe.read()["data"] == {}
    pipe.send({"id": "4", "type": "execute_tool", "toolName": "echo", "toolCallId": "c9", "params": {"text": "hi"}})
    update = pipe.read()
    assert update == {"type": "tool_update", "toolCallId": "c9", "partialResult": {"content": [{"type": "text", "text": "working"}]}}
    result = pipe.read()
    assert result["data"] == {"content": [{"type": "text", "text": "hi plan=True"}]}
    # A command that opens a dialog: the SDK sends the command and waits for the runtime's answer.
    pipe.send({"id": "5", "type": "execute_command", "name": "pick", "args": ""})
    select = pipe.read()
    assert select["type"] == "ui_select" and select["options"] == ["a", "b"] and "id" in select
    pipe.send({"id": select["id"], "type": "response", "command": "ui_select", "success": True, "data": {"value": "b"}})
    assert pipe.read() == {"type": "ui_notify", "message": "picked b"}
    assert pipe.read() == {"id": "5", "type": "response", "command": "execute_command", "success": True}


def test_a_failing_handler_is_answered_with_its_error(pipe: Pipe) -> None:
    pipe.read()
    pipe.send({"id": "6", "type": "execute_command", "name": "boom", "args": ""})
    assert pipe.read() == {"id": "6", "type": "response", "command": "execute_command", "success": False, "error": "boom"}
    pipe.send({"id": "7", "type": "execute_tool", "toolName": "nope", "toolCallId": "c", "params": {}})
    assert pipe.read()["error"] == "Unknown tool: nope"
    # Garbage is dropped; the extension keeps serving.
    pipe._writer.write("not json\n")
    pipe._writer.flush()
    pipe.send({"id": "8", "type": "input", "text": "x", "source": "rpc"})
    assert pipe.read()["data"] == {"action": "continue"}


def test_a_call_runs_after_the_events_sent_before_it() -> None:
    # Events are handled in order on one thread, calls each on their own: a command sent right after an event
    # still sees what the (slow) event handler recorded, as a reference extension's would.
    e = Extension(name="order")
    starts: list[str] = []

    @e.on("session_start")
    def started(event: dict[str, Any], ctx: Context) -> None:
        time.sleep(0.3)
        starts.append(event["reason"])

    @e.command("stats")
    def stats(args: str, ctx: CommandContext) -> None:
        ctx.ui.notify(",".join(starts))

    p = Pipe(e)
    try:
        p.send({"id": "1", "type": "initialize", "protocolVersion": "1", "extensionPath": "/x/o.py", "cwd": "/x",
                "agentDir": "/a", "hasUI": True})
        p.read()
        p.send({"type": "session_start", "reason": "new"})
        p.send({"id": "2", "type": "execute_command", "name": "stats", "args": ""})
        notify = p.read()
        assert (notify["type"], notify["message"]) == ("ui_notify", "new"), notify
    finally:
        p.close()


def test_providers_and_resources_discover_are_registered() -> None:
    e = Extension()
    config = {"baseUrl": "http://127.0.0.1:9/v1", "apiKey": "k", "api": "openai-completions", "models": [{"id": "m"}]}
    e.provider("local", config)

    @e.on("resources_discover")
    def found(event: dict[str, Any], ctx: Context) -> Any:
        return {"skillPaths": [f"{event['cwd']}/skills"]} if event["reason"] == "startup" else None

    p = Pipe(e)
    try:
        p.send({"id": "1", "type": "initialize", "protocolVersion": "1", "extensionPath": "/x/p.py", "cwd": "/x",
                "agentDir": "/a", "hasUI": False, "flagValues": {}})
        reg = p.read()["data"]["registration"]
        assert reg["providers"] == [{"name": "local", "config": config}]
        assert reg["events"] == ["resources_discover"]
        p.send({"id": "2", "type": "resources_discover", "cwd": "/x", "reason": "startup"})
        assert p.read() == {"id": "2", "type": "response", "command": "resources_discover", "success": True,
                            "data": {"skillPaths": ["/x/skills"]}}
        p.send({"id": "3", "type": "resources_discover", "cwd": "/x", "reason": "reload"})
        r = p.read()
        assert r["success"] is True and r.get("data", {}) == {}
    finally:
        p.close()
