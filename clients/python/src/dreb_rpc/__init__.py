"""Typed client for the dreb RPC protocol (``dreb --mode rpc``)."""

from importlib.metadata import PackageNotFoundError, version

from ._async import AsyncEventSubscription, AsyncRpcConnection, AsyncRpcTransport, AsyncSubprocessTransport, Starting
from ._connection import DEFAULT_TIMEOUT, UNSET, EventSubscription, RpcConnection, Unset
from ._errors import RpcClientError, RpcClosedError, RpcError, RpcTimeoutError, SpawnError
from ._jsonl import JsonlDecoder, encode_frame
from ._run import RunResult, summarize_run
from ._timeouts import COMMAND_TIMEOUTS, DEFAULT_REQUEST_TIMEOUT, LONG_COMMAND_TIMEOUT, default_timeout_for
from ._transport import (
    CloseInfo,
    RpcTransport,
    StreamTransport,
    SubprocessOptions,
    SubprocessTransport,
    resolve_dreb_binary,
)
from ._generated import *  # noqa: F403 - the protocol types and DrebClient, listed in _generated.__all__
from ._generated import __all__ as _generated_all

try:
    __version__ = version("dreb-rpc")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = [
    "__version__",
    "Starting",
    "AsyncEventSubscription",
    "AsyncRpcConnection",
    "AsyncRpcTransport",
    "AsyncSubprocessTransport",
    "COMMAND_TIMEOUTS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "LONG_COMMAND_TIMEOUT",
    "UNSET",
    "Unset",
    "CloseInfo",
    "EventSubscription",
    "JsonlDecoder",
    "RpcClientError",
    "RpcClosedError",
    "RpcConnection",
    "RpcError",
    "RpcTimeoutError",
    "SpawnError",
    "StreamTransport",
    "SubprocessOptions",
    "SubprocessTransport",
    "RpcTransport",
    "default_timeout_for",
    "encode_frame",
    "resolve_dreb_binary",
    "RunResult",
    "summarize_run",
    *_generated_all,
]
