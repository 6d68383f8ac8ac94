"""Typed client for the dreb RPC protocol (``dreb --mode rpc``)."""

from ._connection import DEFAULT_TIMEOUT, UNSET, EventSubscription, RpcConnection, Unset
from ._errors import RpcClientError, RpcClosedError, RpcError, RpcTimeoutError, SpawnError
from ._jsonl import JsonlDecoder, encode_frame
from ._transport import CloseInfo, StreamTransport, SubprocessTransport, RpcTransport

__all__ = [
    "DEFAULT_TIMEOUT",
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
    "SubprocessTransport",
    "RpcTransport",
    "encode_frame",
]
