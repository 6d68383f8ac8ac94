"""The untyped core of the client: id correlation, timeouts, events, and a race-free wait for idle.

The generated :class:`dreb_rpc.DrebClient` subclasses :class:`RpcConnection` with one typed method per
command. The client is synchronous and thread-safe: a background thread reads the agent's output and
resolves waiting requests; listeners run on a second thread of the client's, in the order the frames
arrived, so a listener may send commands and wait for their answers (the reader is never blocked by it).
"""

from __future__ import annotations

import itertools
import json
import logging
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, cast, overload

from ._errors import RpcClientError, RpcClosedError, RpcError, RpcTimeoutError
from ._jsonl import encode_frame
from ._runstate import RUN_COMMAND, RunState
from ._timeouts import default_timeout_for
from ._transport import CloseInfo, RpcTransport

if TYPE_CHECKING:
    from ._generated import ImageContent, PromptParams, StreamingBehavior

E = TypeVar("E", bound=Mapping[str, Any])
T = TypeVar("T")

_log = logging.getLogger("dreb_rpc")


def log_listener_error(error: BaseException) -> None:
    """The default ``on_listener_error``: logs the exception (with its traceback) on the ``dreb_rpc`` logger, which
    Python prints to stderr when logging is not configured."""
    _log.error("an event listener raised %r", error, exc_info=error)


class _DefaultTimeout:
    def __repr__(self) -> str:
        return "DEFAULT_TIMEOUT"


#: Sentinel default of ``timeout`` parameters: "use the connection's timeout for the command"
#: (see :meth:`RpcConnection.timeout_for`); as ``default_timeout`` it means "the built-in per-command defaults".
DEFAULT_TIMEOUT: Any = _DefaultTimeout()


def resolve_timeout(
    command: str, default_timeout: float | None, command_timeouts: Mapping[str, float | None]
) -> float | None:
    """The timeout a request for ``command`` gets when the call passes none: the ``command_timeouts``
    entry, else ``default_timeout`` unless it is :data:`DEFAULT_TIMEOUT`, else the built-in default."""
    if command in command_timeouts:
        return command_timeouts[command]
    if default_timeout is not DEFAULT_TIMEOUT:
        return default_timeout
    return default_timeout_for(command)


class Unset:
    """Type of :data:`UNSET`, the default of optional command parameters: the key is left out."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


#: "Leave this optional key out" (distinct from ``None``, which is sent as ``null``).
UNSET = Unset()


def _prompt_params(params: Mapping[str, Any] | None, message: Any, images: Any, streaming_behavior: Any) -> dict[str, Any]:
    """The ``prompt`` params of ``prompt_and_wait``'s two forms (a dict, or keywords like ``prompt``'s)."""
    keywords = {k: v for k, v in (("images", images), ("streamingBehavior", streaming_behavior)) if v is not UNSET}
    if params is not None:
        if not isinstance(message, Unset) or keywords:
            raise TypeError("prompt_and_wait takes either a params dict or message=... keywords, not both")
        return dict(params)
    if isinstance(message, Unset):
        raise TypeError("prompt_and_wait() missing the prompt: pass message=... (or a params dict)")
    return {"message": message, **keywords}


class _Pending:
    __slots__ = ("command", "done", "response")

    def __init__(self, command: str) -> None:
        self.command = command
        self.done = threading.Event()
        self.response: dict[str, Any] | None = None


class EventSubscription(Generic[E]):
    """A buffered event stream: iterate it (ends when the transport closes) or ``get()`` with a timeout.

    Buffers from the moment it is created; ``close()`` (or leaving the ``with`` block) unsubscribes.
    """

    _END: Any = object()

    def __init__(self, unsubscribe: Callable[[], None]) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._unsubscribe = unsubscribe
        self._ended = False

    def _put(self, event: E) -> None:
        self._queue.put(event)

    def _end(self) -> None:
        self._queue.put(self._END)

    def get(self, timeout: float | None = None) -> E | None:
        """The next event; ``None`` once the transport has closed. Raises ``TimeoutError`` on timeout."""
        if self._ended:
            return None
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("Timeout waiting for an event") from None
        if item is self._END:
            self._ended = True
            return None
        return cast(E, item)

    def __iter__(self) -> Iterator[E]:
        while (event := self.get()) is not None:
            yield event

    def close(self) -> None:
        self._unsubscribe()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Dispatcher:
    """Runs listener calls on one thread of their own, in the order they were queued."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._stopped:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="dreb-rpc-listeners", daemon=True)
                self._thread.start()
        self._queue.put(job)

    def stop(self) -> None:
        """Ends the thread once the jobs queued so far have run."""
        with self._lock:
            self._stopped = True
            if self._thread is not None:
                self._queue.put(None)

    def drain(self) -> None:
        """Returns once every job queued so far has run (at once on the listener thread itself)."""
        with self._lock:
            thread, stopped = self._thread, self._stopped
        if thread is None or thread is threading.current_thread():
            return
        if stopped:
            thread.join()
            return
        done = threading.Event()
        self._queue.put(done.set)
        done.wait()

    def _run(self) -> None:
        while (job := self._queue.get()) is not None:
            job()


class RpcConnection(Generic[E]):
    """Correlates requests and responses by id over a :class:`RpcTransport` and fans out events."""

    def __init__(
        self,
        transport: RpcTransport,
        *,
        default_timeout: float | None = DEFAULT_TIMEOUT,
        command_timeouts: Mapping[str, float | None] | None = None,
        on_listener_error: Callable[[BaseException], None] | None = None,
    ) -> None:
        """``default_timeout`` (seconds, ``None`` = none) replaces the per-command defaults of every
        request (unset: 300 s for the commands in ``COMMAND_TIMEOUTS``, 30 s for the rest);
        ``command_timeouts`` sets single commands by wire name and wins over it. ``on_listener_error`` gets
        the exceptions listeners raise (default: :func:`log_listener_error`, the ``dreb_rpc`` logger)."""
        self.transport = transport
        self.default_timeout = default_timeout
        self.command_timeouts: dict[str, float | None] = dict(command_timeouts or {})
        self._on_listener_error = on_listener_error
        self._dispatcher = _Dispatcher()
        self._lock = threading.Lock()
        self._idle_cond = threading.Condition(self._lock)
        self._ids = itertools.count(1)
        self._pending: dict[str, _Pending] = {}
        self._event_listeners: list[Callable[[E], None]] = []
        self._unmatched_listeners: list[Callable[[dict[str, Any]], None]] = []
        self._close_listeners: list[Callable[[CloseInfo], None]] = []
        self._subscriptions: list[EventSubscription[E]] = []
        self._state = "new"
        self._close_info: CloseInfo | None = None
        # Sticky run state for wait_for_idle (see _runstate).
        self._run = RunState()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Starts the transport (spawns the agent)."""
        with self._lock:
            if self._state != "new":
                raise RpcClientError("Client already started")
            self._state = "starting"
        try:
            self.transport.start(self._handle_record, self._handle_close)
        except BaseException:
            self._handle_close(CloseInfo("failed to start"))
            raise
        with self._lock:
            if self._state == "starting":
                self._state = "open"

    def close(self) -> None:
        """Stops the transport; pending requests fail with :class:`RpcClosedError`. Returns once the
        listeners have been told everything (unless called from a listener)."""
        self.transport.close()
        self._handle_close(CloseInfo("Client closed"))
        self._dispatcher.drain()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_closed(self) -> bool:
        return self._state == "closed"

    @property
    def close_info(self) -> CloseInfo | None:
        return self._close_info

    # -- requests --------------------------------------------------------------------------------

    def timeout_for(self, command: str) -> float | None:
        """The timeout in seconds (``None`` = none) a request for ``command`` (a wire name) gets when
        the call passes none: the ``command_timeouts`` entry, else ``default_timeout``, else the
        command's built-in default."""
        return resolve_timeout(command, self.default_timeout, self.command_timeouts)

    def request(self, command: Mapping[str, Any], timeout: float | None = DEFAULT_TIMEOUT) -> dict[str, Any]:
        """Sends ``command`` (its ``type`` plus params; the id is assigned here) and returns the
        response frame, whether ``success`` is true or false."""
        command_type = command["type"]
        if not isinstance(command_type, str):
            raise TypeError("command type must be a string")
        if timeout is DEFAULT_TIMEOUT:
            timeout = self.timeout_for(command_type)
        request_id = f"req_{next(self._ids)}"
        # Key order on the wire: id, type, then the params.
        frame = {"id": request_id, "type": command_type}
        frame.update((k, v) for k, v in command.items() if k not in ("id", "type"))
        data = encode_frame(frame)
        entry = _Pending(command_type)
        with self._lock:
            if self._state != "open":
                raise self._closed_error()
            self._pending[request_id] = entry
            self._run.request_sent(command_type, request_id)
        try:
            self.transport.send(data)
        except RpcClientError:
            with self._lock:
                self._pending.pop(request_id, None)
            raise
        if not entry.done.wait(timeout):
            with self._lock:
                self._pending.pop(request_id, None)
            if not entry.done.is_set():
                raise RpcTimeoutError(command_type, cast(float, timeout))
        if entry.response is None:
            raise self._closed_error()
        return entry.response

    def call(self, command_type: str, params: Mapping[str, Any] | None = None, timeout: float | None = DEFAULT_TIMEOUT) -> Any:
        """Sends a command and returns the response's ``data`` (``None`` when absent).

        A ``success: false`` response raises :class:`RpcError` with the exact error text.
        """
        command = {"type": command_type, **(params or {})}
        response = self.request(command, timeout)
        if response.get("success") is not True:
            error = response.get("error")
            raise RpcError(command_type, error if isinstance(error, str) else "Unknown error", response)
        return response.get("data")

    def notify(self, message: Mapping[str, Any]) -> None:
        """Writes a message that gets no response (for example ``extension_ui_response``)."""
        with self._lock:
            if self._state != "open":
                raise self._closed_error()
        self.transport.send(encode_frame(dict(message)))

    # -- events ----------------------------------------------------------------------------------

    def on_event(self, listener: Callable[[E], None]) -> Callable[[], None]:
        """Calls ``listener`` for every event, unknown types included, on the client's listener thread
        (in arrival order; a listener may send commands and wait for them)."""
        with self._lock:
            self._event_listeners.append(listener)
        return lambda: self._remove(self._event_listeners, listener)

    def flush_listeners(self) -> None:
        """Returns once the listeners have been called for every frame read so far (at once when called
        from a listener). ``wait_for_idle`` and ``close`` do this themselves."""
        self._dispatcher.drain()

    def on_unmatched_response(self, listener: Callable[[dict[str, Any]], None]) -> Callable[[], None]:
        """Responses that match no pending request: late answers to timed-out requests, second answers."""
        with self._lock:
            self._unmatched_listeners.append(listener)
        return lambda: self._remove(self._unmatched_listeners, listener)

    def on_close(self, listener: Callable[[CloseInfo], None]) -> Callable[[], None]:
        """Called once when the transport closes (immediately if it already has)."""
        with self._lock:
            info = self._close_info
            if info is None:
                self._close_listeners.append(listener)
        if info is not None:
            listener(info)
        return lambda: self._remove(self._close_listeners, listener)

    def events(self) -> EventSubscription[E]:
        """A buffered subscription to every event from now on."""
        subscription: EventSubscription[E] = EventSubscription(lambda: self._remove(self._subscriptions, subscription))
        with self._lock:
            if self._state == "closed":
                subscription._end()
            else:
                self._subscriptions.append(subscription)
        return subscription

    # -- idle ------------------------------------------------------------------------------------

    def _is_idle_locked(self) -> bool:
        return self._run.is_idle()

    def is_idle(self) -> bool:
        """True when no run is in progress, no automatic retry or compaction is pending, and the latest
        prompt's run (if any) has ended."""
        with self._lock:
            return self._is_idle_locked()

    def wait_for_idle(self, timeout: float | None = None) -> None:
        """Blocks until the agent is idle: the ``agent_end`` of the run started by the latest
        ``prompt`` has been seen (even if it arrived before this call), no later run has started, and no
        automatic retry or compaction is pending (``auto_retry_start`` … ``auto_retry_end``,
        ``auto_compaction_start`` … ``auto_compaction_end``, and the run a ``willRetry`` compaction continues with).

        Returns at once if already idle. There is no default timeout: without ``timeout`` this waits
        until the run ends or the transport closes. A prompt that starts no run (an extension command
        that only notifies, say) keeps this waiting until the timeout (``RpcTimeoutError``).
        """
        with self._idle_cond:
            ok = self._idle_cond.wait_for(lambda: self._is_idle_locked() or self._state == "closed", timeout)
            if not ok:
                raise RpcTimeoutError("wait_for_idle", cast(float, timeout))
            idle = self._is_idle_locked()
        # The listeners have seen every event of the run before this returns.
        self._dispatcher.drain()
        if not idle:
            raise self._closed_error()

    @overload
    def prompt_and_wait(
        self,
        *,
        message: str,
        images: list[ImageContent] | Unset = UNSET,
        streaming_behavior: StreamingBehavior | Unset = UNSET,
        timeout: float | None = None,
    ) -> list[E]: ...

    @overload
    def prompt_and_wait(self, params: PromptParams, /, *, timeout: float | None = None) -> list[E]: ...

    @overload
    def prompt_and_wait(self, params: Mapping[str, Any], timeout: float | None, /) -> list[E]: ...

    def prompt_and_wait(
        self,
        params: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        *,
        message: str | Unset = UNSET,
        images: Any = UNSET,
        streaming_behavior: Any = UNSET,
    ) -> list[E]:
        """Sends ``prompt`` and returns every event up to the end of the run it starts. ``timeout``,
        when given, bounds the prompt's response and, separately, the wait for the run's end; unset,
        the response gets the ``prompt`` default and the wait has no timeout.

        Typed like :meth:`prompt`: ``prompt_and_wait(message=..., images=..., streaming_behavior=...)``, or
        one :class:`PromptParams` dict (wire keys; ``timeout`` then by keyword). A dict with both positional
        arguments, ``prompt_and_wait(params, timeout)``, is the untyped form for generic code."""
        params = _prompt_params(params, message, images, streaming_behavior)
        with self.events() as subscription:
            self.call(RUN_COMMAND, params, DEFAULT_TIMEOUT if timeout is None else timeout)
            self.wait_for_idle(timeout)
            collected: list[E] = []
            while True:
                try:
                    event = subscription.get(timeout=0)
                except TimeoutError:
                    break
                if event is None:
                    break
                collected.append(event)
            return collected

    # -- reader-thread side ----------------------------------------------------------------------

    def _handle_record(self, record: str) -> None:
        with self._lock:
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
        with self._idle_cond:
            if self._run.event_received(frame):
                self._idle_cond.notify_all()
            listeners = list(self._event_listeners)
            subscriptions = list(self._subscriptions)
        event = cast(E, frame)
        for subscription in subscriptions:
            subscription._put(event)
        if listeners:
            self._dispatch(listeners, event)

    def _handle_response(self, response: dict[str, Any]) -> None:
        request_id = response.get("id")
        with self._idle_cond:
            entry = self._pending.pop(request_id, None) if isinstance(request_id, str) else None
            if entry is None:
                listeners = list(self._unmatched_listeners)
            else:
                listeners = []
                # A refused prompt starts no run, so nobody should wait for one.
                if self._run.response_received(cast(str, request_id), response.get("success") is True):
                    self._idle_cond.notify_all()
        if entry is not None:
            entry.response = response
            entry.done.set()
        if listeners:
            self._dispatch(listeners, response)

    def _handle_close(self, info: CloseInfo) -> None:
        with self._idle_cond:
            if self._state == "closed":
                return
            self._state = "closed"
            self._close_info = info
            pending = list(self._pending.values())
            self._pending.clear()
            subscriptions = list(self._subscriptions)
            self._subscriptions.clear()
            listeners = list(self._close_listeners)
            self._close_listeners.clear()
            self._idle_cond.notify_all()
        for entry in pending:
            entry.done.set()  # response stays None → RpcClosedError in the waiting thread
        for subscription in subscriptions:
            subscription._end()
        if listeners:
            self._dispatch(listeners, info)
        self._dispatcher.stop()

    def _closed_error(self) -> RpcClosedError:
        if self._state in ("new", "starting"):
            return RpcClosedError("Client not started")
        return RpcClosedError(self._close_info.reason if self._close_info else "RPC transport is closed")

    def _remove(self, items: list[Any], item: Any) -> None:
        with self._lock:
            if item in items:
                items.remove(item)

    def _dispatch(self, listeners: list[Callable[[Any], None]], value: Any) -> None:
        """Calls ``listeners`` with ``value`` on the listener thread (after everything queued before)."""

        def job() -> None:
            for listener in listeners:
                self._safely(listener, value)

        self._dispatcher.submit(job)

    def _safely(self, listener: Callable[[Any], None], value: Any) -> None:
        # One listener that raises must not stop delivery to the others, nor kill the reader thread.
        try:
            listener(value)
        except Exception as error:  # noqa: BLE001
            (self._on_listener_error or log_listener_error)(error)
