"""Listeners run on the client's listener thread, in arrival order: one may send a command and wait for its answer
(on the reader thread it would deadlock), and ``wait_for_idle`` returns only once the listeners have seen the run."""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import Any

import pytest

from dreb_rpc import AsyncDrebClient, RpcConnection

from .conftest import fake_transport


def test_a_listener_may_send_a_command_and_wait_for_it(fake_agent_path: str) -> None:
    answers: list[Any] = []
    threads: set[str] = set()
    with RpcConnection[Any](fake_transport(fake_agent_path)) as client:
        client.start()

        def on_event(event: Any) -> None:
            threads.add(threading.current_thread().name)
            if event["type"] == "agent_start":
                # Answered on the reader thread while this listener waits.
                answers.append(client.call("echo", {"x": "from a listener"}, timeout=10)["x"])

        client.on_event(on_event)
        client.call("prompt", {"message": "hello"})
        client.wait_for_idle(timeout=30)
        assert answers == ["from a listener"]
        assert threads == {"dreb-rpc-listeners"}


def test_wait_for_idle_returns_after_the_listeners_saw_every_event(fake_agent_path: str) -> None:
    seen: list[str] = []
    release = threading.Event()
    with RpcConnection[Any](fake_transport(fake_agent_path)) as client:
        client.start()

        def slow(event: Any) -> None:
            # A slow listener: the run's frames are all read long before it is done.
            release.wait(0.2)
            seen.append(event["type"])

        client.on_event(slow)
        client.call("prompt", {"message": "hello"})
        client.wait_for_idle(timeout=30)
        assert seen == ["agent_start", "message_update", "some_future_event", "agent_end"]


def test_listeners_hear_events_in_order_and_the_close_last(fake_agent_path: str) -> None:
    order: list[str] = []
    client: RpcConnection[Any] = RpcConnection(fake_transport(fake_agent_path))
    client.start()
    client.on_event(lambda e: order.append(e["type"]))
    client.on_close(lambda info: order.append("closed"))
    client.call("prompt", {"message": "hello"})
    client.wait_for_idle(timeout=30)
    client.close()
    assert order == ["agent_start", "message_update", "some_future_event", "agent_end", "closed"]


def test_a_listener_that_raises_is_logged_by_default_and_the_others_still_hear(
    fake_agent_path: str, caplog: pytest.LogCaptureFixture
) -> None:
    heard: list[str] = []

    def broken(event: Any) -> None:
        raise ValueError(f"broken listener on {event['type']}")

    with RpcConnection[Any](fake_transport(fake_agent_path)) as client:
        client.start()
        client.on_event(broken)
        client.on_event(lambda e: heard.append(e["type"]))
        with caplog.at_level(logging.ERROR, logger="dreb_rpc"):
            client.call("prompt", {"message": "hello"})
            client.wait_for_idle(timeout=30)
    assert heard == ["agent_start", "message_update", "some_future_event", "agent_end"]
    records = [r for r in caplog.records if r.name == "dreb_rpc"]
    assert [str(r.exc_info[1]) for r in records if r.exc_info] == [f"broken listener on {t}" for t in heard]


def test_an_async_listener_that_raises_is_logged_by_default(fake_agent_path: str, caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> list[str]:
        heard: list[str] = []
        async with AsyncDrebClient.spawn(sys.executable, command_args=["-I", fake_agent_path]) as client:
            client.on_event(lambda e: [][0])
            client.on_event(lambda e: heard.append(e["type"]))
            with caplog.at_level(logging.ERROR, logger="dreb_rpc"):
                await client.prompt_and_wait(message="hello")
        return heard

    heard = asyncio.run(main())
    assert heard[-1] == "agent_end"
    errors = [r for r in caplog.records if r.name == "dreb_rpc" and r.exc_info and isinstance(r.exc_info[1], IndexError)]
    assert len(errors) == len(heard)
