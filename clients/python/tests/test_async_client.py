"""The generated AsyncDrebClient (asyncio) end to end against the fake agent process."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from dreb_rpc import (
    AsyncDrebClient,
    AsyncRpcConnection,
    AsyncSubprocessTransport,
    RpcClosedError,
    RpcError,
    RpcEvent,
    RpcSessionState,
    RpcTimeoutError,
    SpawnError,
)


async def spawn(agent: str, **options: Any) -> AsyncDrebClient:
    return await AsyncDrebClient.spawn(sys.executable, command_args=["-I", agent], **options)


def test_prompt_events_wait_for_idle_and_typed_state(fake_agent_path: str) -> None:
    async def main() -> None:
        async with await spawn(fake_agent_path) as client:
            events: list[RpcEvent] = []
            client.on_event(events.append)
            await client.prompt(message="hello \u2028")
            await client.wait_for_idle(timeout=None)  # the whole run arrived with the response: no race
            assert [e["type"] for e in events] == ["agent_start", "message_update", "some_future_event", "agent_end"]
            state: RpcSessionState = await client.get_state()
            assert state["messageCount"] == 2

    asyncio.run(main())


def test_error_response_raises_and_refused_prompt_is_idle(fake_agent_path: str) -> None:
    async def main() -> None:
        async with await spawn(fake_agent_path) as client:
            with pytest.raises(RpcError) as info:
                await client.prompt(message="refuse")
            assert info.value.command == "prompt"
            assert str(info.value).startswith("Agent is already processing.")
            await client.wait_for_idle(timeout=None)

    asyncio.run(main())


def test_concurrent_requests_correlate_out_of_order(fake_agent_path: str) -> None:
    async def main() -> None:
        async with await spawn(fake_agent_path) as client:
            held = asyncio.create_task(client.call("hold"))
            await asyncio.sleep(0)  # let "hold" be written first
            while not client._pending:  # noqa: SLF001 - test-only peek
                await asyncio.sleep(0)
            assert await client.call("release") == "second"
            assert await held == "first"
            assert (await client.call("echo", {"s": "a\u2029b"}))["s"] == "a\u2029b"
            assert await client.call("bytewise") == {"text": "h\u00e9 \U0001F600 \u2028 \u2029 \u4e2d"}

    asyncio.run(main())


def test_timeout_then_usable(fake_agent_path: str) -> None:
    async def main() -> None:
        async with await spawn(fake_agent_path) as client:
            with pytest.raises(RpcTimeoutError):
                await client.call("never", timeout=0.02)
            assert (await client.call("echo", {"x": 1}))["x"] == 1

    asyncio.run(main())


def test_events_iterator_and_exit(fake_agent_path: str) -> None:
    async def main() -> None:
        transport = AsyncSubprocessTransport(sys.executable, command_args=["-I", fake_agent_path])
        client: AsyncRpcConnection[Any] = AsyncRpcConnection(transport)
        await client.start()
        with client.events() as sub:
            await client.call("prompt", {"message": "x"})
            with pytest.raises(RpcClosedError, match="exited with code 3.*fake agent dying"):
                await client.call("die")
            types = [e["type"] async for e in sub]
        assert types == ["agent_start", "message_update", "some_future_event", "agent_end"]
        assert transport.returncode == 3
        with pytest.raises(RpcClosedError):
            await client.call("echo")
        await client.close()

    asyncio.run(main())


def test_missing_executable(fake_agent_path: str) -> None:
    async def main() -> None:
        with pytest.raises(SpawnError):
            await AsyncDrebClient.spawn("/nonexistent/dreb-binary")

    asyncio.run(main())


def test_send_input(fake_agent_path: str) -> None:
    async def main() -> None:
        async with await spawn(fake_agent_path) as client:
            with client.events() as sub:
                await client.send_extension_ui_response(
                    {"type": "extension_ui_response", "id": "d", "value": "v"}
                )
                assert await sub.get(10) == {
                    "type": "echo_input",
                    "frame": {"type": "extension_ui_response", "id": "d", "value": "v"},
                }

    asyncio.run(main())


def test_large_frames_round_trip(fake_agent_path: str) -> None:
    async def main() -> None:
        async with await spawn(fake_agent_path) as client:
            message = "x\u2028\u00e9" * 700_000
            assert (await client.call("echo", {"message": message}, timeout=60))["message"] == message

    asyncio.run(main())
