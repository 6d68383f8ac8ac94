"""Sticky run state behind ``wait_for_idle``, shared by the sync and async connections (not thread-safe by itself:
the connection serialises access).

Every incoming frame gets a sequence number, so "an ``agent_end`` after the prompt was sent" is decidable even
when the prompt's response and the whole run arrive in one read, before ``wait_for_idle`` is called. Automatic
continuations keep the agent busy too: a pending retry (``auto_retry_start`` … ``auto_retry_end``), a running
auto-compaction, and the run a ``willRetry`` compaction continues with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Wire name of the command that starts an agent run.
RUN_COMMAND = "prompt"


class RunState:
    def __init__(self) -> None:
        self.frame_seq = 0
        self._last_start_seq = 0
        self._last_end_seq = 0
        self._retry_pending = False
        self._compacting = False
        self._continuation_expected = False
        self._run_requested_at: int | None = None
        self._run_request_id: str | None = None

    def frame_received(self) -> None:
        self.frame_seq += 1

    def request_sent(self, command_type: str, request_id: str) -> None:
        if command_type == RUN_COMMAND:
            self._run_requested_at = self.frame_seq
            self._run_request_id = request_id

    def response_received(self, request_id: str, success: bool) -> bool:
        """True when the agent may have become idle (the prompt was refused: no run will start)."""
        if request_id == self._run_request_id and not success:
            self._run_requested_at = None
            self._run_request_id = None
            return True
        return False

    def event_received(self, event: Mapping[str, Any]) -> bool:
        """Updates the state from an event; True when the agent may have become idle."""
        kind = event.get("type")
        if kind == "agent_start":
            self._last_start_seq = self.frame_seq
            self._continuation_expected = False
        elif kind == "agent_end":
            self._last_end_seq = self.frame_seq
            return True
        elif kind == "auto_retry_start":
            self._retry_pending = True
        elif kind == "auto_retry_end":
            self._retry_pending = False
            return True
        elif kind == "auto_compaction_start":
            self._compacting = True
        elif kind == "auto_compaction_end":
            self._compacting = False
            self._continuation_expected = event.get("willRetry") is True
            return True
        return False

    def is_idle(self) -> bool:
        if self._last_start_seq > self._last_end_seq:
            return False
        if self._retry_pending or self._compacting or self._continuation_expected:
            return False
        return self._run_requested_at is None or self._last_end_seq > self._run_requested_at
