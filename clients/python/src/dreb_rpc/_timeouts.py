"""Default response timeouts, per command.

Most commands answer at once, so they get :data:`DEFAULT_REQUEST_TIMEOUT`. A few can make an LLM call
or run a process before answering (``compact``, ``bash``, ``navigate_tree`` with ``summarize``, the
buddy commands): they get :data:`LONG_COMMAND_TIMEOUT`, the 5 minutes the reference client gives
``navigateTree``. Waiting for a run to end (``wait_for_idle``, ``prompt_and_wait``) has no default
timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: Default timeout of a command that answers at once, in seconds.
DEFAULT_REQUEST_TIMEOUT = 30.0

#: Default timeout of a command that can make an LLM call or run a process before answering, in seconds.
LONG_COMMAND_TIMEOUT = 300.0

#: Commands (wire names) whose default timeout is not :data:`DEFAULT_REQUEST_TIMEOUT`.
COMMAND_TIMEOUTS: Mapping[str, float] = MappingProxyType(
    {
        # Aborts the run, then an LLM call summarises the conversation.
        "compact": LONG_COMMAND_TIMEOUT,
        # Runs a shell command to completion.
        "bash": LONG_COMMAND_TIMEOUT,
        # With ``summarize``, an LLM call summarises the abandoned branch.
        "navigate_tree": LONG_COMMAND_TIMEOUT,
        # An LLM call creates the buddy.
        "buddy_hatch": LONG_COMMAND_TIMEOUT,
        # An LLM call rerolls the buddy.
        "buddy_reroll": LONG_COMMAND_TIMEOUT,
    }
)


def default_timeout_for(command: str) -> float:
    """The built-in default timeout of ``command`` (a wire name), in seconds."""
    return COMMAND_TIMEOUTS.get(command, DEFAULT_REQUEST_TIMEOUT)
