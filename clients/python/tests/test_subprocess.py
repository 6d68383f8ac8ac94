"""SubprocessTransport against a real child process (the fake agent), over real pipes."""

from __future__ import annotations

import os
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from dreb_rpc import CloseInfo, RpcClosedError, RpcConnection, RpcError, RpcTimeoutError, SpawnError, SubprocessTransport

from .conftest import fake_transport


def test_argv_cwd_env_reach_the_agent(fake_agent_path: str) -> None:
    transport = fake_transport(
        fake_agent_path,
        provider="faux",
        model="faux-1",
        args=["--no-session"],
        cwd="/",
        env={"FAKE_AGENT_VAR": "v\u00e9", "FAKE_AGENT_REMOVED": None},
    )
    with RpcConnection[Any](transport) as client:
        client.start()
        who = client.call("whoami")
    assert who["argv"] == ["--mode", "rpc", "--provider", "faux", "--model", "faux-1", "--no-session"]
    assert who["cwd"] == "/"
    assert who["env"] == "v\u00e9"
    assert who["removed"] is None


def test_unicode_separators_and_split_utf8_survive(agent: RpcConnection[Any]) -> None:
    message = "line\u2028sep\u2029par \U0001F680 \u00e9"
    assert agent.call("echo", {"message": message})["message"] == message
    assert agent.call("bytewise")["text"] == "h\u00e9 \U0001F600 \u2028 \u2029 \u4e2d"


def test_crlf_responses(agent: RpcConnection[Any]) -> None:
    assert agent.call("crlf") == "crlf"


def test_out_of_order_responses(agent: RpcConnection[Any]) -> None:
    result: dict[str, Any] = {}
    held = threading.Thread(target=lambda: result.setdefault("first", agent.call("hold")))
    held.start()
    # "hold" must reach the agent before "release": wait until it is pending.
    while not agent._pending:  # noqa: SLF001 - test-only peek
        pass
    assert agent.call("release") == "second"
    held.join()
    assert result["first"] == "first"


def test_error_response_raises(agent: RpcConnection[Any]) -> None:
    with pytest.raises(RpcError) as info:
        agent.call("no_such_command")
    assert info.value.command == "no_such_command"
    assert str(info.value) == "Unknown command: no_such_command"


def test_timeout_leaves_connection_usable(agent: RpcConnection[Any]) -> None:
    with pytest.raises(RpcTimeoutError):
        agent.call("never", timeout=0.02)
    assert agent.call("echo", {"x": 1})["x"] == 1


def test_agent_exit_fails_pending_with_code_and_stderr(fake_agent_path: str) -> None:
    transport = fake_transport(fake_agent_path)
    client: RpcConnection[Any] = RpcConnection(transport)
    closed: list[CloseInfo] = []
    client.on_close(closed.append)
    client.start()
    with pytest.raises(RpcClosedError, match="exited with code 3.*fatal: fake agent dying"):
        client.call("die")
    client.flush_listeners()  # close listeners run on the listener thread
    assert closed and closed[0].returncode == 3
    assert "fake agent dying" in transport.stderr()
    with pytest.raises(RpcClosedError):
        client.call("echo")
    client.close()


def test_missing_executable_raises_spawn_error() -> None:
    client: RpcConnection[Any] = RpcConnection(SubprocessTransport("/nonexistent/dreb-binary"))
    with pytest.raises(SpawnError, match="failed to spawn"):
        client.start()
    assert client.is_closed


def test_close_escalates_to_kill(fake_agent_path: str) -> None:
    transport = fake_transport(fake_agent_path, env={"FAKE_AGENT_IGNORE_EOF": "1"}, stop_grace=0.05)
    client: RpcConnection[Any] = RpcConnection(transport)
    client.start()
    client.call("echo")
    client.close()
    assert transport.returncode is not None and transport.returncode < 0  # killed by a signal


def _world_executable(path: str) -> bool:
    """True if any user may run ``path`` (every ancestor directory is world-searchable)."""
    real = os.path.realpath(path)
    parts = [real] + [os.path.dirname(real)]
    while parts[-1] != "/":
        parts.append(os.path.dirname(parts[-1]))
    return os.path.isfile(real) and all(os.stat(p).st_mode & stat.S_IXOTH for p in parts)


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root")
def test_user_and_group_are_forwarded(fake_agent_path: str) -> None:
    # The venv's interpreter may sit under a directory the other user cannot enter.
    candidates = [sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"]
    interpreter = next((c for c in candidates if _world_executable(c)), None)
    if interpreter is None:
        pytest.skip("no interpreter that uid 65534 may run")
    transport = SubprocessTransport(
        interpreter, command_args=["-I", fake_agent_path], user=65534, group=65534, cwd="/"
    )
    with RpcConnection[Any](transport) as client:
        client.start()
        who = client.call("whoami")
    assert (who["uid"], who["gid"]) == (65534, 65534)


def test_prompt_then_wait_for_idle_with_the_run_in_one_write(agent: RpcConnection[Any]) -> None:
    types: list[str] = []
    agent.on_event(lambda e: types.append(e["type"]))
    agent.call("prompt", {"message": "hello"})
    agent.wait_for_idle(timeout=None)
    assert types == ["agent_start", "message_update", "some_future_event", "agent_end"]


def test_large_frames_round_trip_intact(agent: RpcConnection[Any]) -> None:
    # Several MiB in one frame: bigger than a pipe buffer in both directions.
    message = ("x\u2028\u00e9" * 700_000)[:2_000_000]
    assert agent.call("echo", {"message": message}, timeout=60)["message"] == message


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan may wait for a reaper that a container's pid 1 never runs)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_forced_stop_takes_the_agents_children_with_it(fake_agent_path: str) -> None:
    transport = fake_transport(fake_agent_path, env={"FAKE_AGENT_IGNORE_EOF": "1"}, stop_grace=0.05)
    client: RpcConnection[Any] = RpcConnection(transport)
    client.start()
    pid = client.call("spawn_child")["pid"]
    assert _running(pid)
    client.close()
    assert not _running(pid)
