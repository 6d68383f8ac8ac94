"""Errors raised by the client; every one derives from :class:`RpcClientError`."""

from __future__ import annotations

from typing import Any


class RpcClientError(Exception):
    """Base class of every error the client raises."""


class RpcError(RpcClientError):
    """The agent answered ``success: false``.

    ``str(error)`` and ``error.error`` are the agent's exact error text (hosts match on it);
    ``command`` is the wire name of the failed command; ``response`` is the whole frame.
    """

    def __init__(self, command: str, error: str, response: dict[str, Any]) -> None:
        super().__init__(error)
        self.command = command
        self.error = error
        self.response = response


class RpcTimeoutError(RpcClientError, TimeoutError):
    """No response arrived in time (the request may still complete later)."""

    def __init__(self, command: str, timeout: float) -> None:
        super().__init__(f"Timeout waiting for response to {command} after {timeout} s")
        self.command = command
        self.timeout = timeout


class RpcClosedError(RpcClientError):
    """The transport is closed (the agent exited, or the client was closed)."""


class SpawnError(RpcClientError):
    """The agent process could not be started."""
