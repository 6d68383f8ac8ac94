"""asyncio flavour of the client: an async transport that spawns the agent, and the async correlation core.

The generated :class:`dreb_rpc.AsyncDrebClient` subclasses :class:`AsyncRpcConnection` with one ``async``
method per command. Framing, error types and the race-free idle tracking are the same as the sync client's.
Everything runs on the event loop that called :meth:`AsyncRpcConnection.start`; listeners are called on it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
from collections.abc import AsyncIterator, Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, Self, TypeVar, cast, overload

from ._connection import DEFAULT_TIMEOUT, UNSET, Unset, _prompt_params, log_listener_error, resolve_timeout
from ._errors import RpcClientError, RpcClosedError, RpcError, RpcTimeoutError, SpawnError
from ._jsonl import JsonlDecoder, encode_frame
from ._runstate import RUN_COMMAND, RunState
from ._transport import (
    CloseHandler,
    CloseInfo,
    RecordHandler,
    agent_environment,
    resolve_dreb_binary,
    user_and_group,
)

if TYPE_CHECKING:
    from ._generated import ImageContent, PromptParams, StreamingBehavior

E = TypeVar("E", bound=Mapping[str, Any])


class AsyncRpcTransport(Protocol):
    """A bidirectional JSONL channel to one agent, driven by the event loop."""

    async def start(self, on_record: RecordHandler, on_close: CloseHandler) -> None:
        """Connects and starts delivering records (``on_close`` is called once, after the last record)."""
        ...

    async def send(self, frame: bytes) -> None:
        """Writes one complete LF-terminated frame; raises :class:`RpcClosedError` when closed."""
        ...

    async def close(self) -> None:
        """Closes the channel and releases its resources."""
        ...


class AsyncSubprocessTransport:
    """Spawns ``dreb --mode rpc`` with asyncio; same options as :class:`dreb_rpc.SubprocessTransport`."""

    def __init__(
        self,
        command: str | None = None,
        *,
        command_args: Sequence[str] = (),
        provider: str | None = None,
        model: str | None = None,
        args: Sequence[str] = (),
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | None] | None = None,
        user: int | str | None = None,
        group: int | str | None = None,
        uid: int | None = None,
        gid: int | None = None,
        stderr_limit: int = 1024 * 1024,
        stop_grace: float = 2.0,
        process_group: bool = os.name == "posix",
    ) -> None:
        user, group = user_and_group(user, group, uid, gid)
        self.command = command
        self.argv = [*command_args, "--mode", "rpc"]
        if provider is not None:
            self.argv += ["--provider", provider]
        if model is not None:
            self.argv += ["--model", model]
        self.argv += list(args)
        self._cwd = cwd
        self._env = env
        self._user = user
        self._group = group
        self._stderr_limit = stderr_limit
        self._stop_grace = stop_grace
        # Own process group: the stop signals reach what the agent started (bash tools) too.
        self._process_group = process_group
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr = bytearray()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode if self._proc is not None else None

    def stderr(self) -> str:
        """The tail of everything the agent wrote to stderr so far."""
        return self._stderr.decode("utf-8", errors="replace")

    async def start(self, on_record: RecordHandler, on_close: CloseHandler) -> None:
        if self._proc is not None:
            raise RuntimeError("Transport already started")
        env = agent_environment(self._env)
        executable = resolve_dreb_binary(self.command, env)
        try:
            proc = await asyncio.create_subprocess_exec(
                executable,
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self._cwd,
                env=env,
                user=self._user,
                group=self._group,
                start_new_session=self._process_group,
            )
        except (OSError, ValueError) as error:
            raise SpawnError(f"Agent process failed to spawn: {error}") from error
        self._proc = proc
        assert proc.stdout is not None and proc.stderr is not None
        stdout, stderr = proc.stdout, proc.stderr

        async def read_stderr() -> None:
            while chunk := await stderr.read(65536):
                self._stderr += chunk
                if len(self._stderr) > self._stderr_limit:
                    del self._stderr[: len(self._stderr) - self._stderr_limit]

        async def read_stdout() -> None:
            decoder = JsonlDecoder()
            while chunk := await stdout.read(65536):
                for record in decoder.push(chunk):
                    on_record(record)
            for record in decoder.end():
                on_record(record)
            code = await proc.wait()
            await stderr_task  # the last stderr lines belong in the close reason
            on_close(CloseInfo(f"RPC process exited with code {code}{self._stderr_suffix()}", code))

        stderr_task = asyncio.create_task(read_stderr())
        self._tasks = [stderr_task, asyncio.create_task(read_stdout())]

    async def send(self, frame: bytes) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdin.is_closing() or proc.returncode is not None:
            raise RpcClosedError(f"RPC process is not running{self._stderr_suffix()}")
        try:
            proc.stdin.write(frame)
            await proc.stdin.drain()
        except (OSError, RuntimeError) as error:
            raise RpcClosedError(f"RPC process is not running: {error}{self._stderr_suffix()}") from error

    async def close(self) -> None:
        """Stops the agent: EOF on its stdin, then SIGTERM, then SIGKILL, each after ``stop_grace``."""
        proc = self._proc
        if proc is None:
            return
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                self._signal(proc.pid, sig)
            try:
                await asyncio.wait_for(proc.wait(), self._stop_grace)
                break
            except asyncio.TimeoutError:
                continue
        await proc.wait()
        if sig is not None:
            # A forced stop: nothing the agent started may outlive it.
            self._signal(proc.pid, signal.SIGKILL, group_only=True)
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _signal(self, pid: int, sig: signal.Signals, group_only: bool = False) -> None:
        try:
            if self._process_group:
                os.killpg(pid, sig)
            elif not group_only:
                os.kill(pid, sig)
        except ProcessLookupError:
            pass

    def _stderr_suffix(self) -> str:
        text = self.stderr().strip()
        return f". Stderr: {text}" if text else ""


class AsyncEventSubscription(Generic[E]):
    """Buffered events from the moment of subscription; ``async for`` ends when the transport closes."""

    _END: Any = object()

    def __init__(self, unsubscribe: Callable[[], None]) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._unsubscribe = unsubscribe
        self._ended = False

    def _put(self, item: Any) -> None:
        self._queue.put_nowait(item)

    async def get(self, timeout: float | None = None) -> E | None:
        """The next event; ``None`` once the transport has closed. Raises ``TimeoutError`` on timeout."""
        if self._ended:
            return None
        item = await asyncio.wait_for(self._queue.get(), timeout)
        if item is self._END:
            self._ended = True
            return None
        return cast(E, item)

    def __aiter__(self) -> AsyncIterator[E]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[E]:
        while (event := await self.get()) is not None:
            yield event

    def close(self) -> None:
        self._unsubscribe()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class AsyncRpcConnection(Generic[E]):
    """Correlates requests and responses by id over an :class:`AsyncRpcTransport` and fans out events."""

    def __init__(
        self,
        transport: AsyncRpcTransport,
        *,
        default_timeout: float | None = DEFAULT_TIMEOUT,
        command_timeouts: Mapping[str, float | None] | None = None,
        on_listener_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Timeouts as for :class:`dreb_rpc.RpcConnection`."""
        self.transport = transport
        self.default_timeout = default_timeout
        self.command_timeouts: dict[str, float | None] = dict(command_timeouts or {})
        self._on_listener_error = on_listener_error
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._event_listeners: list[Callable[[E], None]] = []
        self._unmatched_listeners: list[Callable[[dict[str, Any]], None]] = []
        self._close_listeners: list[Callable[[CloseInfo], None]] = []
        self._subscriptions: list[AsyncEventSubscription[E]] = []
        self._idle_waiters: list[asyncio.Future[None]] = []
        self._state = "new"
        self._close_info: CloseInfo | None = None
        self._run = RunState()

    async def start(self) -> None:
        """Starts the transport (spawns the agent)."""
        if self._state != "new":
            raise RpcClientError("Client already started")
        self._state = "starting"
        try:
            await self.transport.start(self._handle_record, self._handle_close)
        except BaseException:
            self._handle_close(CloseInfo("failed to start"))
            raise
        if self._state == "starting":
            self._state = "open"

    async def close(self) -> None:
        """Stops the transport; pending requests fail with :class:`RpcClosedError`."""
        await self.transport.close()
        self._handle_close(CloseInfo("Client closed"))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def is_closed(self) -> bool:
        return self._state == "closed"

    @property
    def close_info(self) -> CloseInfo | None:
        """Why the transport closed (``None`` while open)."""
        return self._close_info

    def timeout_for(self, command: str) -> float | None:
        """The timeout a request for ``command`` gets when the call passes none (see
        :meth:`dreb_rpc.RpcConnection.timeout_for`)."""
        return resolve_timeout(command, self.default_timeout, self.command_timeouts)

    async def request(self, command: Mapping[str, Any], timeout: float | None = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """Sends ``command`` (its ``type`` plus params; the id is assigned here) and returns the response frame."""
        command_type = command["type"]
        if not isinstance(command_type, str):
            raise TypeError("command type must be a string")
        if timeout is DEFAULT_TIMEOUT:
            timeout = self.timeout_for(command_type)
        if self._state != "open":
            raise self._closed_error()
        request_id = f"req_{next(self._ids)}"
        frame = {"id": request_id, "type": command_type}
        frame.update((k, v) for k, v in command.items() if k not in ("id", "type"))
        data = encode_frame(frame)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._run.request_sent(command_type, request_id)
        try:
            await self.transport.send(data)
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except asyncio.TimeoutError:
            raise RpcTimeoutError(command_type, cast(float, timeout)) from None
        finally:
            self._pending.pop(request_id, None)

    async def call(
        self, command_type: str, params: Mapping[str, Any] | None = None, timeout: float | None = DEFAULT_TIMEOUT
    ) -> Any:
        """Sends a command and returns the response's ``data``; ``success: false`` raises :class:`RpcError`."""
        response = await self.request({"type": command_type, **(params or {})}, timeout)
        if response.get("success") is not True:
            error = response.get("error")
            raise RpcError(command_type, error if isinstance(error, str) else "Unknown error", response)
        return response.get("data")

    async def notify(self, message: Mapping[str, Any]) -> None:
        """Writes a message that gets no response (for example ``extension_ui_response``)."""
        if self._state != "open":
            raise self._closed_error()
        await self.transport.send(encode_frame(dict(message)))

    def on_event(self, listener: Callable[[E], None]) -> Callable[[], None]:
        """Calls ``listener`` for every event, unknown types included. Returns an unsubscribe function."""
        self._event_listeners.append(listener)
        return lambda: self._remove(self._event_listeners, listener)

    def on_unmatched_response(self, listener: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Responses that match no pending request: late answers to timed-out requests, second answers."""
        self._unmatched_listeners.append(listener)
        return lambda: self._remove(self._unmatched_listeners, listener)

    def on_close(self, listener: Callable[[CloseInfo], None]) -> Callable[[], None]:
        """Called once when the transport closes (immediately if it already has)."""
        if self._close_info is not None:
            listener(self._close_info)
        else:
            self._close_listeners.append(listener)
        return lambda: self._remove(self._close_listeners, listener)

    def events(self) -> AsyncEventSubscription[E]:
        """A buffered subscription to every event from now on."""
        subscription: AsyncEventSubscription[E] = AsyncEventSubscription(
            lambda: self._remove(self._subscriptions, subscription)
        )
        if self._state == "closed":
            subscription._put(AsyncEventSubscription._END)
        else:
            self._subscriptions.append(subscription)
        return subscription

    def is_idle(self) -> bool:
        """True when no run is in progress or pending and the latest prompt's run (if any) has ended."""
        return self._run.is_idle()

    async def wait_for_idle(self, timeout: float | None = None) -> None:
        """Waits until the agent is idle, without racing (see :meth:`dreb_rpc.RpcConnection.wait_for_idle`);
        no default timeout."""
        if self._run.is_idle():
            return
        if self._state == "closed":
            raise self._closed_error()
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._idle_waiters.append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except asyncio.TimeoutError:
            raise RpcTimeoutError("wait_for_idle", cast(float, timeout)) from None
        finally:
            self._remove(self._idle_waiters, waiter)

    @overload
    async def prompt_and_wait(
        self,
        *,
        message: str,
        images: list[ImageContent] | Unset = UNSET,
        streaming_behavior: StreamingBehavior | Unset = UNSET,
        timeout: float | None = None,
    ) -> list[E]: ...

    @overload
    async def prompt_and_wait(self, params: PromptParams, /, *, timeout: float | None = None) -> list[E]: ...

    @overload
    async def prompt_and_wait(self, params: Mapping[str, Any], timeout: float | None, /) -> list[E]: ...

    async def prompt_and_wait(
        self,
        params: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        *,
        message: str | Unset = UNSET,
        images: Any = UNSET,
        streaming_behavior: Any = UNSET,
    ) -> list[E]:
        """Sends ``prompt`` and returns every event up to the end of the run it starts (the forms and
        ``timeout`` as for :meth:`dreb_rpc.RpcConnection.prompt_and_wait`)."""
        params = _prompt_params(params, message, images, streaming_behavior)
        collected: list[E] = []
        unsubscribe = self.on_event(collected.append)
        try:
            await self.call(RUN_COMMAND, params, DEFAULT_TIMEOUT if timeout is None else timeout)
            await self.wait_for_idle(timeout)
            return collected
        finally:
            unsubscribe()

    # -- called on the event loop by the transport ---------------------------------------------------

    def _handle_record(self, record: str) -> None:
        self._run.frame_received()
        try:
            frame = json.loads(record)
        except ValueError:
            return  # not JSON: ignored, like the reference client does
        if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
            return
        if frame["type"] == "response":
            self._handle_response(frame)
            return
        settled = self._run.event_received(frame)
        event = cast(E, frame)
        for subscription in list(self._subscriptions):
            subscription._put(event)
        for listener in list(self._event_listeners):
            self._safely(listener, event)
        if settled:
            self._wake_idle_waiters()

    def _handle_response(self, response: dict[str, Any]) -> None:
        request_id = response.get("id")
        future = self._pending.pop(request_id, None) if isinstance(request_id, str) else None
        if future is None or future.done():
            for listener in list(self._unmatched_listeners):
                self._safely(listener, response)
            return
        if self._run.response_received(cast(str, request_id), response.get("success") is True):
            self._wake_idle_waiters()
        future.set_result(response)

    def _wake_idle_waiters(self) -> None:
        if not self._run.is_idle():
            return
        for waiter in self._idle_waiters:
            if not waiter.done():
                waiter.set_result(None)

    def _handle_close(self, info: CloseInfo) -> None:
        if self._state == "closed":
            return
        self._state = "closed"
        self._close_info = info
        error = self._closed_error()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()
        for waiter in self._idle_waiters:
            if not waiter.done():
                waiter.set_exception(error)
        for subscription in self._subscriptions:
            subscription._put(AsyncEventSubscription._END)
        self._subscriptions.clear()
        listeners, self._close_listeners = self._close_listeners, []
        for listener in listeners:
            self._safely(listener, info)

    def _closed_error(self) -> RpcClosedError:
        if self._state in ("new", "starting"):
            return RpcClosedError("Client not started")
        return RpcClosedError(self._close_info.reason if self._close_info else "RPC transport is closed")

    @staticmethod
    def _remove(items: list[Any], item: Any) -> None:
        if item in items:
            items.remove(item)

    def _safely(self, listener: Callable[[Any], None], value: Any) -> None:
        # One listener that raises must not stop delivery to the others, nor kill the reader task.
        try:
            listener(value)
        except Exception as error:  # noqa: BLE001
            (self._on_listener_error or log_listener_error)(error)


C = TypeVar("C", bound="AsyncRpcConnection[Any]")


class Starting(Generic[C]):
    """What ``AsyncDrebClient.spawn`` returns: ``await`` it for the started client, or use it in ``async with``
    directly (started on entry, closed on exit)."""

    def __init__(self, client: C) -> None:
        self._client = client

    def __await__(self) -> Generator[Any, None, C]:
        return self._started().__await__()

    async def _started(self) -> C:
        await self._client.start()
        return self._client

    async def __aenter__(self) -> C:
        return await self._started()

    async def __aexit__(self, *exc: object) -> None:
        await self._client.close()
