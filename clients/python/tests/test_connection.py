"""The connection core over in-memory pipes: the test plays the agent and controls every byte."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from dreb_rpc import (
    JsonlDecoder,
    RpcClosedError,
    RpcConnection,
    RpcError,
    RpcTimeoutError,
    StreamTransport,
)


class Peer:
    """The agent side: reads the client's frames from a pipe, writes raw bytes back."""

    def __init__(self) -> None:
        to_client_r, self._to_client_w = os.pipe()
        self._from_client_r, from_client_w = os.pipe()
        self.client: RpcConnection[Any] = RpcConnection(
            StreamTransport(os.fdopen(to_client_r, "rb", buffering=0), os.fdopen(from_client_w, "wb", buffering=0))
        )
        self._decoder = JsonlDecoder()
        self._frames: list[dict[str, Any]] = []

    def next(self) -> dict[str, Any]:
        while not self._frames:
            chunk = os.read(self._from_client_r, 65536)
            assert chunk, "client closed its output"
            self._frames += [json.loads(r) for r in self._decoder.push(chunk)]
        return self._frames.pop(0)

    def write(self, data: bytes) -> None:
        os.write(self._to_client_w, data)

    def send(self, *frames: dict[str, Any]) -> None:
        """All frames in one write."""
        self.write(b"".join(json.dumps(f).encode() + b"\n" for f in frames))

    def hang_up(self) -> None:
        os.close(self._to_client_w)


@pytest.fixture()
def peer() -> Iterator[Peer]:
    p = Peer()
    p.client.start()
    yield p
    p.client.close()


def in_thread(fn: Any, *args: Any) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = fn(*args)
        except BaseException as error:  # noqa: BLE001
            result["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def test_correlates_out_of_order_responses(peer: Peer) -> None:
    ta, ra = in_thread(peer.client.call, "get_version")
    fa = peer.next()
    tb, rb = in_thread(peer.client.call, "get_git_branch")
    fb = peer.next()
    assert fa["id"] != fb["id"] and str(fa["id"]).startswith("req_")
    peer.send({"id": fb["id"], "type": "response", "command": "get_git_branch", "success": True, "data": None})
    peer.send({"id": fa["id"], "type": "response", "command": "get_version", "success": True, "data": "1.2.3"})
    ta.join()
    tb.join()
    assert ra == {"value": "1.2.3"}
    assert rb == {"value": None}


def test_wire_key_order_is_id_type_params(peer: Peer) -> None:
    t, r = in_thread(peer.client.call, "prompt", {"message": "hi \u2028", "images": []})
    frame = peer.next()
    assert list(frame) == ["id", "type", "message", "images"]
    assert frame["message"] == "hi \u2028"
    peer.send({"id": frame["id"], "type": "response", "command": "prompt", "success": True})
    t.join()
    assert r == {"value": None}


def test_failure_raises_rpc_error_with_exact_text(peer: Peer) -> None:
    t, r = in_thread(peer.client.call, "set_model", {"provider": "x", "modelId": "y"})
    frame = peer.next()
    peer.send({"id": frame["id"], "type": "response", "command": "set_model", "success": False, "error": "Model not found: x/y"})
    t.join()
    error = r["error"]
    assert isinstance(error, RpcError)
    assert error.command == "set_model"
    assert error.error == str(error) == "Model not found: x/y"
    assert error.response["success"] is False


def test_request_returns_raw_failure_frames(peer: Peer) -> None:
    t, r = in_thread(peer.client.request, {"type": "bogus"})
    frame = peer.next()
    peer.send({"id": frame["id"], "type": "response", "command": "bogus", "success": False, "error": "Unknown command: bogus"})
    t.join()
    assert r["value"]["error"] == "Unknown command: bogus"


def test_timeout_then_late_response_is_unmatched(peer: Peer) -> None:
    unmatched: list[dict[str, Any]] = []
    peer.client.on_unmatched_response(unmatched.append)
    marker = threading.Event()
    peer.client.on_event(lambda e: marker.set() if e["type"] == "marker" else None)
    with pytest.raises(RpcTimeoutError) as info:
        peer.client.call("compact", timeout=0.02)
    assert info.value.command == "compact"
    frame = peer.next()
    late = {"id": frame["id"], "type": "response", "command": "compact", "success": True, "data": {}}
    peer.send(late, {"type": "marker"})
    assert marker.wait(10)
    assert unmatched == [late]


def test_events_fan_out_and_a_raising_listener_is_isolated() -> None:
    errors: list[BaseException] = []
    p = Peer()
    p.client = RpcConnection(p.client.transport, on_listener_error=errors.append)
    p.client.start()
    seen: list[str] = []

    def boom(_: Any) -> None:
        raise RuntimeError("boom")

    p.client.on_event(boom)
    p.client.on_event(lambda e: seen.append(e["type"]))
    with p.client.events() as sub:
        p.send({"type": "agent_start"}, {"type": "future_event_kind", "x": 1})
        p.write(b"not json\n[1,2]\n")
        p.send({"type": "turn_end"})
        got = [sub.get(10), sub.get(10), sub.get(10)]
    assert [e["type"] for e in got if e] == ["agent_start", "future_event_kind", "turn_end"]
    p.client.flush_listeners()  # listeners run on their own thread
    assert seen == ["agent_start", "future_event_kind", "turn_end"]
    assert len(errors) == 3
    p.client.close()


def test_wait_for_idle_does_not_race_when_everything_arrives_in_one_chunk(peer: Peer) -> None:
    t, r = in_thread(peer.client.call, "prompt", {"message": "hello"})
    frame = peer.next()
    peer.send(
        {"id": frame["id"], "type": "response", "command": "prompt", "success": True},
        {"type": "agent_start"},
        {"type": "agent_end", "messages": []},
    )
    t.join()
    assert "error" not in r
    peer.client.wait_for_idle(timeout=None)  # already idle: returns, never times out
    assert peer.client.is_idle()


def test_wait_for_idle_waits_for_the_prompts_run_not_an_earlier_one(peer: Peer) -> None:
    with peer.client.events() as sub:
        peer.send({"type": "agent_start"}, {"type": "agent_end", "messages": []})
        assert sub.get(10) is not None and sub.get(10) is not None
    t, r = in_thread(peer.client.call, "prompt", {"message": "next"})
    frame = peer.next()
    peer.send({"id": frame["id"], "type": "response", "command": "prompt", "success": True})
    t.join()
    assert not peer.client.is_idle()
    waiter, result = in_thread(peer.client.wait_for_idle, None)
    with peer.client.events() as sub:
        peer.send({"type": "agent_start"})
        assert sub.get(10) is not None
        assert waiter.is_alive() and not peer.client.is_idle()
        peer.send({"type": "agent_end", "messages": []})
        waiter.join()
    assert result == {"value": None}


def test_a_refused_prompt_leaves_the_agent_idle(peer: Peer) -> None:
    t, r = in_thread(peer.client.call, "prompt", {"message": "x"})
    frame = peer.next()
    peer.send({"id": frame["id"], "type": "response", "command": "prompt", "success": False, "error": "busy"})
    t.join()
    assert isinstance(r["error"], RpcError)
    peer.client.wait_for_idle(timeout=None)


def test_prompt_and_wait_collects_the_run(peer: Peer) -> None:
    t, r = in_thread(peer.client.prompt_and_wait, {"message": "go"}, None)
    frame = peer.next()
    peer.send({"id": frame["id"], "type": "response", "command": "prompt", "success": True})
    peer.send({"type": "agent_start"}, {"type": "message_update"})
    peer.send({"type": "agent_end", "messages": []})
    t.join()
    assert [e["type"] for e in r["value"]] == ["agent_start", "message_update", "agent_end"]


def test_hang_up_fails_pending_requests_and_ends_subscriptions(peer: Peer) -> None:
    closed = threading.Event()
    peer.client.on_close(lambda info: closed.set())
    sub = peer.client.events()
    t, r = in_thread(peer.client.call, "bash", {"command": "sleep 100"}, None)
    peer.next()
    peer.write(b'{"type":"last_words"}')  # unterminated final record
    peer.hang_up()
    t.join()
    assert isinstance(r["error"], RpcClosedError)
    assert [e["type"] for e in sub] == ["last_words"]
    assert closed.wait(10)
    with pytest.raises(RpcClosedError):
        peer.client.call("get_state")
    with pytest.raises(RpcClosedError):
        peer.client.notify({"type": "extension_ui_response", "id": "x", "cancelled": True})


def test_start_twice_and_calls_before_start() -> None:
    p = Peer()
    with pytest.raises(RpcClosedError):
        p.client.call("get_state")
    p.client.start()
    with pytest.raises(Exception, match="already started"):
        p.client.start()
    p.client.close()


def test_notify_writes_a_frame_without_id(peer: Peer) -> None:
    peer.client.notify({"type": "extension_ui_response", "id": "dlg-1", "value": "yes"})
    assert peer.next() == {"type": "extension_ui_response", "id": "dlg-1", "value": "yes"}


def test_wait_for_idle_stays_pending_across_an_automatic_retry(peer: Peer) -> None:
    t, r = in_thread(peer.client.call, "prompt", {"message": "x"})
    frame = peer.next()
    with peer.client.events() as sub:
        peer.send(
            {"id": frame["id"], "type": "response", "command": "prompt", "success": True},
            {"type": "agent_start"},
            {"type": "agent_end", "messages": []},
            {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "overloaded"},
        )
        t.join()
        assert [sub.get(10), sub.get(10), sub.get(10)][-1] == {
            "type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 2000, "errorMessage": "overloaded"
        }
        assert not peer.client.is_idle()
        waiter, result = in_thread(peer.client.wait_for_idle, None)
        peer.send({"type": "agent_start"}, {"type": "agent_end", "messages": []})
        assert sub.get(10) is not None and sub.get(10) is not None
        assert waiter.is_alive(), "still retrying until auto_retry_end"
        peer.send({"type": "auto_retry_end", "success": True, "attempt": 2})
        waiter.join()
    assert result == {"value": None}


def test_wait_for_idle_stays_pending_across_an_auto_compaction_that_retries(peer: Peer) -> None:
    t, r = in_thread(peer.client.call, "prompt", {"message": "x"})
    frame = peer.next()
    with peer.client.events() as sub:
        peer.send(
            {"id": frame["id"], "type": "response", "command": "prompt", "success": True},
            {"type": "agent_start"},
            {"type": "agent_end", "messages": []},
            {"type": "auto_compaction_start", "reason": "overflow"},
            {"type": "auto_compaction_end", "aborted": False, "willRetry": True},
        )
        t.join()
        for _ in range(4):
            assert sub.get(10) is not None
        assert not peer.client.is_idle(), "the continuation run has not started yet"
        waiter, result = in_thread(peer.client.wait_for_idle, None)
        peer.send({"type": "agent_start"}, {"type": "agent_end", "messages": []})
        waiter.join()
    assert result == {"value": None}
