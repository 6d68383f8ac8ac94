"""Per-command default timeouts, untimed idle waits, and how the ``dreb`` binary is found."""

from __future__ import annotations

import asyncio
import inspect
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from dreb_rpc import (
    COMMAND_TIMEOUTS,
    DEFAULT_REQUEST_TIMEOUT,
    LONG_COMMAND_TIMEOUT,
    AsyncDrebClient,
    AsyncRpcConnection,
    AsyncSubprocessTransport,
    DrebClient,
    RpcConnection,
    RpcTimeoutError,
    SpawnError,
    default_timeout_for,
    resolve_dreb_binary,
)

from .conftest import fake_transport


def test_long_commands_get_five_minutes_and_the_rest_thirty_seconds(fake_agent_path: str) -> None:
    assert set(COMMAND_TIMEOUTS) == {"compact", "bash", "navigate_tree", "buddy_hatch", "buddy_reroll"}
    assert default_timeout_for("compact") == LONG_COMMAND_TIMEOUT == 300.0
    assert default_timeout_for("get_state") == DEFAULT_REQUEST_TIMEOUT == 30.0
    client: RpcConnection[Any] = RpcConnection(fake_transport(fake_agent_path))
    assert client.timeout_for("bash") == 300.0
    assert client.timeout_for("navigate_tree") == 300.0
    assert client.timeout_for("prompt") == 30.0


def test_default_timeout_replaces_the_per_command_defaults_and_command_timeouts_win(fake_agent_path: str) -> None:
    client: RpcConnection[Any] = RpcConnection(
        fake_transport(fake_agent_path), default_timeout=5.0, command_timeouts={"bash": None, "get_state": 1.0}
    )
    assert client.timeout_for("compact") == 5.0
    assert client.timeout_for("bash") is None
    assert client.timeout_for("get_state") == 1.0
    unbounded: RpcConnection[Any] = RpcConnection(fake_transport(fake_agent_path), default_timeout=None)
    assert unbounded.timeout_for("get_state") is None


def test_a_command_timeout_applies_when_the_call_passes_none(fake_agent_path: str) -> None:
    with RpcConnection[Any](fake_transport(fake_agent_path), command_timeouts={"never": 0.05}) as client:
        client.start()
        with pytest.raises(RpcTimeoutError) as info:
            client.call("never")
        assert info.value.command == "never"
        assert client.call("echo", {"x": 1})["x"] == 1


def test_async_command_timeouts(fake_agent_path: str) -> None:
    async def main() -> None:
        transport = AsyncSubprocessTransport(sys.executable, command_args=["-I", fake_agent_path])
        client: AsyncRpcConnection[Any] = AsyncRpcConnection(transport, command_timeouts={"never": 0.05})
        assert client.timeout_for("compact") == 300.0
        await client.start()
        try:
            with pytest.raises(RpcTimeoutError):
                await client.call("never")
        finally:
            await client.close()

    asyncio.run(main())


@pytest.mark.parametrize(
    "method",
    [
        RpcConnection.wait_for_idle,
        RpcConnection.prompt_and_wait,
        AsyncRpcConnection.wait_for_idle,
        AsyncRpcConnection.prompt_and_wait,
    ],
)
def test_waiting_for_a_run_has_no_default_timeout(method: Any) -> None:
    assert inspect.signature(method).parameters["timeout"].default is None


@pytest.mark.parametrize("cls", [DrebClient, AsyncDrebClient])
def test_spawn_finds_the_binary_by_default(cls: Any) -> None:
    assert inspect.signature(cls.spawn).parameters["command"].default is None


def _executable(path: Path, body: str) -> Path:
    path.write_text(body, encoding="utf-8")
    path.chmod(stat.S_IRWXU)
    return path


def test_an_explicit_command_is_used_as_is() -> None:
    assert resolve_dreb_binary("./somewhere/dreb", {"PATH": "", "DREB_BIN": "/nope"}) == "./somewhere/dreb"


def test_dreb_bin_wins_over_path_and_must_be_an_executable_file(tmp_path: Path) -> None:
    on_path = _executable(tmp_path / "dreb", "#!/bin/sh\n")
    chosen = _executable(tmp_path / "chosen", "#!/bin/sh\n")
    assert resolve_dreb_binary(None, {"DREB_BIN": str(chosen), "PATH": str(tmp_path)}) == str(chosen)
    with pytest.raises(SpawnError, match=r'DREB_BIN="/no/such/dreb" does not exist'):
        resolve_dreb_binary(None, {"DREB_BIN": "/no/such/dreb", "PATH": str(tmp_path)})
    plain = tmp_path / "plain"
    plain.write_text("", encoding="utf-8")
    with pytest.raises(SpawnError, match="is not an executable file"):
        resolve_dreb_binary(None, {"DREB_BIN": str(plain)})
    assert resolve_dreb_binary(None, {"PATH": f"/no/such/dir{os.pathsep}{tmp_path}"}) == str(on_path)


def test_path_lookup_skips_empty_entries_and_non_executables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty PATH entry would mean the current directory; it is never searched.
    _executable(tmp_path / "dreb", "#!/bin/sh\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpawnError) as info:
        resolve_dreb_binary(None, {"PATH": f"{os.pathsep}/no/such/dir"})
    assert str(info.value) == (
        f'dreb binary not found: set DREB_BIN or put dreb on PATH (looked for "dreb" in PATH={os.pathsep}/no/such/dir)'
    )
    other = tmp_path / "other"
    other.mkdir()
    (other / "dreb").write_text("", encoding="utf-8")  # not executable
    with pytest.raises(SpawnError):
        resolve_dreb_binary(None, {"PATH": str(other)})
    with pytest.raises(SpawnError, match="PATH is unset"):
        resolve_dreb_binary(None, {})


def _dreb_wrapper(directory: Path, fake_agent_path: str) -> Path:
    """A ``dreb`` on ``directory`` that runs the fake agent."""
    return _executable(directory / "dreb", f'#!/bin/sh\nexec "{sys.executable}" -I "{fake_agent_path}" "$@"\n')


def test_the_transports_spawn_dreb_from_the_agents_path(tmp_path: Path, fake_agent_path: str) -> None:
    _dreb_wrapper(tmp_path, fake_agent_path)
    env: dict[str, str | None] = {"PATH": f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin", "DREB_BIN": None}
    with DrebClient.spawn(env=env) as client:
        assert client.call("whoami")["argv"] == ["--mode", "rpc"]

    async def main() -> None:
        async with await AsyncDrebClient.spawn(env=env, args=["--no-session"]) as client:
            assert (await client.call("whoami"))["argv"] == ["--mode", "rpc", "--no-session"]

    asyncio.run(main())


def test_a_missing_binary_fails_start_with_spawn_error(tmp_path: Path) -> None:
    env: dict[str, str | None] = {"PATH": str(tmp_path), "DREB_BIN": None}
    with pytest.raises(SpawnError, match="dreb binary not found"):
        DrebClient.spawn(env=env)

    async def main() -> None:
        with pytest.raises(SpawnError, match="dreb binary not found"):
            await AsyncDrebClient.spawn(env=env)

    asyncio.run(main())
