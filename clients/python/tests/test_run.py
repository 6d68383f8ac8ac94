"""``summarize_run`` over a retry chain's events: the last reply's text, usage summed over every reply."""

from __future__ import annotations

from typing import Any

from dreb_rpc import summarize_run


def _reply(text: str, output: int, stop: str) -> dict[str, Any]:
    reply: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "faux",
        "provider": "faux",
        "model": "faux",
        "usage": {"input": 1, "output": output, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1 + output,
                  "cost": {"input": 0, "output": output / 100, "cacheRead": 0, "cacheWrite": 0, "total": output / 100}},
        "stopReason": stop,
        "timestamp": 1,
    }
    if stop == "error":
        reply["errorMessage"] = "529 overloaded"
    return reply


def test_a_retry_chain_is_summarised_by_its_last_reply_and_total_usage() -> None:
    events = [
        {"type": "agent_start"},
        {"type": "agent_end", "messages": [{"role": "user", "content": "hi", "timestamp": 0}, _reply("", 0, "error")]},
        {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 1, "errorMessage": "529 overloaded"},
        {"type": "agent_end", "messages": [_reply("Hel", 3, "stop")]},
    ]
    result = summarize_run(events)
    assert result.final_text == "Hel"
    assert result.stop_reason == "stop"
    assert result.error_message is None
    assert result.usage["output"] == 3 and result.usage["input"] == 2
    assert abs(result.usage["cost"]["total"] - 0.03) < 1e-12
    assert len(result.messages) == 3 and len(result.events) == 4


def test_a_failed_last_reply_gives_its_error() -> None:
    result = summarize_run([{"type": "agent_end", "messages": [_reply("", 0, "error")]}])
    assert result.stop_reason == "error"
    assert result.error_message == "529 overloaded"
    assert result.final_text == ""
