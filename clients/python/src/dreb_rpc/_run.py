"""Run to completion: the result of one prompt's run as a host wants it at the end (the final text, why it
stopped, the usage, the messages and the events), like the Codex SDK's ``run()``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from ._generated import AgentMessage, RpcEvent, StopReason, Usage


@dataclass(frozen=True)
class RunResult:
    """What :func:`summarize_run` (and ``DrebClient.run``) returns."""

    #: The text blocks of the run's last assistant reply, joined; ``""`` when there is none.
    final_text: str
    #: Why the last reply ended; ``None`` when the run produced no reply.
    stop_reason: StopReason | None
    #: The last reply's error, when it failed or was aborted.
    error_message: str | None
    #: Tokens and cost summed over every reply of the run (retries included).
    usage: Usage
    #: The messages new in the run (the ``agent_end`` messages, every run of a retry chain in order).
    messages: list[AgentMessage]
    #: Every event of the run, in order.
    events: list[RpcEvent]


def summarize_run(events: Sequence[Mapping[str, Any]]) -> RunResult:
    """The :class:`RunResult` of a run's events (as ``prompt_and_wait`` collects them)."""
    messages: list[dict[str, Any]] = []
    for event in events:
        if event.get("type") == "agent_end" and isinstance(event.get("messages"), list):
            messages.extend(event["messages"])
    replies = [m for m in messages if m.get("role") == "assistant"]
    keys = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
    cost_keys = ("input", "output", "cacheRead", "cacheWrite", "total")
    usage: dict[str, Any] = {k: 0 for k in keys}
    usage["cost"] = {k: 0.0 for k in cost_keys}
    for reply in replies:
        u = reply.get("usage") or {}
        for k in keys:
            usage[k] += u.get(k, 0)
        for k in cost_keys:
            usage["cost"][k] += (u.get("cost") or {}).get(k, 0)
    last = replies[-1] if replies else None
    text = "".join(b.get("text", "") for b in (last or {}).get("content", []) if b.get("type") == "text")
    return RunResult(
        final_text=text,
        stop_reason=cast("StopReason | None", last.get("stopReason") if last else None),
        error_message=last.get("errorMessage") if last else None,
        usage=cast("Usage", usage),
        messages=cast("list[AgentMessage]", messages),
        events=cast("list[RpcEvent]", list(events)),
    )
