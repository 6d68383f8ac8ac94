"""Shared fixtures: a tiny fake agent speaking the dreb JSONL protocol, run as a real subprocess."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dreb_rpc import RpcConnection, SubprocessTransport

FAKE_AGENT = r'''
import json, os, sys

out = sys.stdout.buffer

def write(value, ending=b"\n"):
    # ensure_ascii=False: real UTF-8 (and raw U+2028) on the wire, like the reference server.
    out.write(json.dumps(value, ensure_ascii=False).encode("utf-8") + ending)
    out.flush()

def ok(cmd, data=None, has_data=True):
    frame = {"id": cmd.get("id"), "type": "response", "command": cmd["type"], "success": True}
    if has_data:
        frame["data"] = data
    write(frame)

def fail(cmd, error):
    write({"id": cmd.get("id"), "type": "response", "command": cmd["type"], "success": False, "error": error})

held = None
# Shaped like the spec's get_state example (RpcSessionState).
state = {
    "model": {"id": "mock-model", "name": "Mock", "api": "openai-completions", "provider": "mock",
              "baseUrl": "http://127.0.0.1:9/v1", "reasoning": False, "input": ["text"],
              "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
              "contextWindow": 200000, "maxTokens": 32000},
    "scopedModels": [], "tasks": [], "usingSubscription": False, "thinkingLevel": "off",
    "availableThinkingLevels": ["off"], "isStreaming": False, "isRetrying": False, "retryAttempt": 0,
    "isCompacting": False, "steeringMode": "one-at-a-time", "followUpMode": "one-at-a-time",
    "sessionId": "fake-session", "autoCompactionEnabled": True, "messageCount": 0, "pendingMessageCount": 0,
    "contextUsage": {"tokens": 0, "contextWindow": 200000, "percent": 0},
}

def handle(cmd):
    global held, state
    t = cmd.get("type")
    if t == "echo":
        ok(cmd, cmd)
    elif t == "whoami":
        ok(cmd, {"argv": sys.argv[1:], "cwd": os.getcwd(), "env": os.environ.get("FAKE_AGENT_VAR"),
                 "removed": os.environ.get("FAKE_AGENT_REMOVED"), "uid": os.getuid(), "gid": os.getgid()})
    elif t == "crlf":
        write({"id": cmd["id"], "type": "response", "command": t, "success": True, "data": "crlf"}, b"\r\n")
    elif t == "bytewise":
        frame = {"id": cmd["id"], "type": "response", "command": t, "success": True,
                 "data": {"text": "h\u00e9 \U0001F600 \u2028 \u2029 \u4e2d"}}
        for b in json.dumps(frame, ensure_ascii=False).encode("utf-8") + b"\n":
            out.write(bytes([b]))
            out.flush()
    elif t == "hold":
        held = cmd
    elif t == "release":
        ok(cmd, "second")
        if held is not None:
            ok(held, "first")
        held = None
    elif t == "never":
        pass
    elif t == "die":
        sys.stderr.write("fatal: fake agent dying\n")
        sys.stderr.flush()
        os._exit(3)
    elif t == "extension_ui_response":
        write({"type": "echo_input", "frame": cmd})  # inputs get no response
    elif t == "spawn_child":
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"])
        ok(cmd, {"pid": child.pid})
    elif t == "get_state":
        ok(cmd, state)
    elif t == "prompt":
        if cmd.get("message") == "keys":
            fail(cmd, ",".join(cmd))  # shows which keys were sent
            return
        if cmd.get("message") == "refuse":
            fail(cmd, "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.")
            return
        # The response and the whole run in one write: exercises the wait_for_idle race.
        frames = [
            {"id": cmd["id"], "type": "response", "command": "prompt", "success": True},
            {"type": "agent_start", "model": {"provider": "mock", "id": "mock-model"}, "thinkingLevel": "off"},
            {"type": "message_update",
             "assistantMessageEvent": {"type": "text_delta", "contentIndex": 0, "delta": "hi\u2028there"}},
            {"type": "some_future_event", "payload": 1},
            {"type": "agent_end", "messages": []},
        ]
        out.write(b"".join(json.dumps(f, ensure_ascii=False).encode("utf-8") + b"\n" for f in frames))
        out.flush()
        state = dict(state, messageCount=state["messageCount"] + 2)
    else:
        fail(cmd, "Unknown command: " + str(t))

pending = b""
while True:
    chunk = os.read(0, 65536)
    if not chunk:
        break
    pending += chunk
    while b"\n" in pending:
        line, pending = pending.split(b"\n", 1)
        if line.endswith(b"\r"):
            line = line[:-1]
        try:
            cmd = json.loads(line.decode("utf-8"))
        except ValueError as e:
            write({"type": "response", "command": "parse", "success": False, "error": "Failed to parse JSON: " + str(e)})
            continue
        handle(cmd)
if os.environ.get("FAKE_AGENT_IGNORE_EOF"):
    import signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        time.sleep(1)
'''


@pytest.fixture(scope="session")
def fake_agent_path() -> Iterator[str]:
    # A world-readable directory so the uid test can run the script as another user.
    with tempfile.TemporaryDirectory(prefix="dreb-fake-agent-") as tmp:
        os.chmod(tmp, 0o755)
        path = Path(tmp) / "agent.py"
        path.write_text(FAKE_AGENT, encoding="utf-8")
        path.chmod(stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
        yield str(path)


def fake_transport(agent: str, **kwargs: Any) -> SubprocessTransport:
    return SubprocessTransport(sys.executable, command_args=["-I", agent], **kwargs)


@pytest.fixture()
def agent(fake_agent_path: str) -> Iterator[RpcConnection[Any]]:
    client: RpcConnection[Any] = RpcConnection(fake_transport(fake_agent_path))
    client.start()
    yield client
    client.close()
