"""The asyncio client's ergonomics: ``async with AsyncDrebClient.spawn(...)`` with one ``await``-free line,
``async with client.events()``, ``close_info``; and ``__version__``, ``uid`` / ``gid`` as the reference client names
them."""

from __future__ import annotations

import asyncio
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

import dreb_rpc
from dreb_rpc import AsyncDrebClient, AsyncSubprocessTransport, SubprocessTransport


def test_spawn_works_with_async_with_and_with_await(fake_agent_path: str) -> None:
    async def main() -> None:
        async with AsyncDrebClient.spawn(sys.executable, command_args=["-I", fake_agent_path]) as client:
            assert (await client.call("echo", {"x": 1}))["x"] == 1
            async with client.events() as events:
                await client.call("prompt", {"message": "hello"})
                first = await events.get(10)
                assert first is not None and first["type"] == "agent_start"
            assert client.close_info is None
        assert client.is_closed
        assert client.close_info is not None  # why it closed (here: the agent exited once stdin closed)

        # The double await of earlier versions still works.
        async with await AsyncDrebClient.spawn(sys.executable, command_args=["-I", fake_agent_path]) as client:
            assert (await client.call("echo", {"x": 2}))["x"] == 2
            # run() to completion (the fake agent's run has no reply: no text, no stop reason).
            result = await client.run(message="hello")
            assert [e["type"] for e in result.events][-1] == "agent_end"
            assert (result.final_text, result.stop_reason) == ("", None)

    asyncio.run(main())


def test_version_is_the_package_version() -> None:
    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert dreb_rpc.__version__ == pyproject["project"]["version"]
    assert "__version__" in dreb_rpc.__all__


@pytest.mark.parametrize("cls", [SubprocessTransport, AsyncSubprocessTransport])
def test_uid_and_gid_are_accepted_as_user_and_group(cls: Any) -> None:
    transport = cls("dreb", uid=1234, gid=5678)
    assert (transport._user, transport._group) == (1234, 5678)
    with pytest.raises(ValueError, match="either user or uid"):
        cls("dreb", user=1, uid=2)
    with pytest.raises(ValueError, match="either group or gid"):
        cls("dreb", group=1, gid=2)
