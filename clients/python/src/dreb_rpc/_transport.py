"""The pluggable transport under the client, and the subprocess transport that spawns the agent."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Protocol, TypedDict

from ._errors import RpcClosedError, SpawnError
from ._jsonl import JsonlDecoder


@dataclass(frozen=True)
class CloseInfo:
    """Why a transport closed."""

    reason: str
    returncode: int | None = None
    error: BaseException | None = None


RecordHandler = Callable[[str], None]
CloseHandler = Callable[[CloseInfo], None]


class RpcTransport(Protocol):
    """A bidirectional JSONL channel to one agent."""

    def start(self, on_record: RecordHandler, on_close: CloseHandler) -> None:
        """Connects and starts delivering records (from a background thread).

        ``on_record`` gets each complete record without its LF / CR; ``on_close`` is called once,
        after the last record. Raises if the channel cannot be opened.
        """
        ...

    def send(self, frame: bytes) -> None:
        """Writes one complete LF-terminated frame; raises :class:`RpcClosedError` when closed."""
        ...

    def close(self) -> None:
        """Closes the channel and releases its resources."""
        ...


def _pump(stream: IO[bytes], on_record: RecordHandler) -> None:
    """Reads ``stream`` to EOF, framing records strictly; passes on the unterminated last one."""
    decoder = JsonlDecoder()
    read = getattr(stream, "read1", None) or stream.read
    while True:
        try:
            chunk = read(65536)
        except (OSError, ValueError):
            break
        if not chunk:
            break
        for record in decoder.push(chunk):
            on_record(record)
    for record in decoder.end():
        on_record(record)


def _write_all(stream: IO[bytes], data: bytes) -> None:
    """Writes every byte: a raw (unbuffered) file may accept only part of a large frame per call."""
    view = memoryview(data)
    while view:
        written = stream.write(view)
        if written is None:  # non-blocking stream that would block
            raise OSError("write would block")
        view = view[written:]
    stream.flush()


class StreamTransport:
    """A transport over a pair of binary streams (pipes, sockets' files, test doubles)."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer
        self._write_lock = threading.Lock()
        self._closed = False
        self._thread: threading.Thread | None = None

    def start(self, on_record: RecordHandler, on_close: CloseHandler) -> None:
        if self._thread is not None:
            raise RuntimeError("Transport already started")

        def run() -> None:
            _pump(self._reader, on_record)
            self._closed = True
            on_close(CloseInfo("stream ended"))

        self._thread = threading.Thread(target=run, name="dreb-rpc-reader", daemon=True)
        self._thread.start()

    def send(self, frame: bytes) -> None:
        with self._write_lock:
            if self._closed:
                raise RpcClosedError("Transport is closed")
            try:
                _write_all(self._writer, frame)
            except (OSError, ValueError) as error:
                raise RpcClosedError(f"Transport is closed: {error}") from error

    def close(self) -> None:
        with self._write_lock:
            self._closed = True
            try:
                self._writer.close()
            except OSError:
                pass


def user_and_group(
    user: int | str | None, group: int | str | None, uid: int | None, gid: int | None
) -> tuple[int | str | None, int | str | None]:
    """``uid`` / ``gid`` (the reference client's names) as ``user`` / ``group``; giving both names of one is an error."""
    if uid is not None and user is not None:
        raise ValueError("give either user or uid, not both")
    if gid is not None and group is not None:
        raise ValueError("give either group or gid, not both")
    return (uid if uid is not None else user, gid if gid is not None else group)


def agent_environment(env: Mapping[str, str | None] | None) -> dict[str, str]:
    """``os.environ`` with ``env`` merged over it (``None`` removes a variable)."""
    merged = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def resolve_dreb_binary(command: str | None, env: Mapping[str, str] | None = None) -> str:
    """The executable the agent is started with: ``command`` if given (used as is), else the
    ``DREB_BIN`` variable of ``env`` (resolved against the current directory; it must be an executable
    file), else the first executable ``dreb`` on ``env["PATH"]``. Raises :class:`SpawnError` naming what
    was looked for. ``env`` is the agent's environment (default ``os.environ``)."""
    if command is not None:
        return command
    env = os.environ if env is None else env
    from_env = env.get("DREB_BIN", "")
    if from_env:
        resolved = os.path.abspath(from_env)
        if not os.path.exists(resolved):
            raise SpawnError(f'dreb binary not found: DREB_BIN="{from_env}" does not exist ({resolved})')
        if not _is_executable_file(resolved):
            raise SpawnError(f'dreb binary not usable: DREB_BIN="{from_env}" is not an executable file')
        return resolved
    search_path = env.get("PATH")
    names = ["dreb"]
    if os.name == "nt":
        names += [f"dreb{ext}" for ext in env.get("PATHEXT", ".EXE;.CMD;.BAT;.COM").split(";") if ext]
    for directory in (search_path or "").split(os.pathsep):
        if directory == "":
            continue  # An empty entry would mean the current directory: never searched implicitly.
        for name in names:
            candidate = os.path.join(directory, name)
            if _is_executable_file(candidate):
                return candidate
    shown = "PATH is unset" if search_path is None else f"PATH={search_path}"
    raise SpawnError(f'dreb binary not found: set DREB_BIN or put dreb on PATH (looked for "dreb" in {shown})')


def _is_executable_file(path: str) -> bool:
    return os.path.isfile(path) and (os.name == "nt" or os.access(path, os.X_OK))


class SubprocessOptions(TypedDict, total=False):
    """Keyword options of :class:`SubprocessTransport` (and of ``DrebClient.spawn``)."""

    command_args: Sequence[str]
    provider: str | None
    model: str | None
    args: Sequence[str]
    cwd: str | os.PathLike[str] | None
    env: Mapping[str, str | None] | None
    user: int | str | None
    group: int | str | None
    uid: int | None
    gid: int | None
    stderr_limit: int
    stop_grace: float
    process_group: bool


class SubprocessTransport:
    """Spawns ``dreb --mode rpc`` (or any compatible command) and talks JSONL over its stdio.

    Pipes are binary and decoded as UTF-8 explicitly (never the locale's encoding); no shell is used.
    """

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
        """``command`` is the executable; unset, it is found by :func:`resolve_dreb_binary` when the
        transport starts (``DREB_BIN``, then ``PATH``; :class:`SpawnError` if neither has one).
        ``command_args`` go before ``--mode rpc`` (e.g. a script path), ``args`` after it.
        ``env`` is merged over ``os.environ`` (``None`` removes a variable). ``user`` / ``group``
        run the agent as that uid / gid (the parent needs the capability; ``uid`` / ``gid`` are
        accepted too, as the reference client names them); unset leaves them unchanged."""
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
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr = bytearray()
        self._stderr_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._stderr_thread: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def stderr(self) -> str:
        """The tail of everything the agent wrote to stderr so far."""
        with self._stderr_lock:
            return self._stderr.decode("utf-8", errors="replace")

    def start(self, on_record: RecordHandler, on_close: CloseHandler) -> None:
        if self._proc is not None:
            raise RuntimeError("Transport already started")
        env = agent_environment(self._env)
        executable = resolve_dreb_binary(self.command, env)
        try:
            proc = subprocess.Popen(
                [executable, *self.argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                cwd=self._cwd,
                env=env,
                # None (the default) leaves the uid / gid unchanged.
                user=self._user,
                group=self._group,
                start_new_session=self._process_group,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            raise SpawnError(f"Agent process failed to spawn: {error}") from error
        self._proc = proc
        assert proc.stdout is not None and proc.stderr is not None

        # bufsize=0: the pipes are raw files whose read() returns whatever is available.
        stderr = proc.stderr

        def read_stderr() -> None:
            while chunk := stderr.read(65536):
                with self._stderr_lock:
                    self._stderr += chunk
                    if len(self._stderr) > self._stderr_limit:
                        del self._stderr[: len(self._stderr) - self._stderr_limit]

        stdout = proc.stdout

        def read_stdout() -> None:
            _pump(stdout, on_record)
            code = proc.wait()
            if self._stderr_thread is not None:
                # Let the last stderr lines land in the close reason.
                self._stderr_thread.join(timeout=1.0)
            on_close(CloseInfo(f"RPC process exited with code {code}{self._stderr_suffix()}", code))

        self._stderr_thread = threading.Thread(target=read_stderr, name="dreb-rpc-stderr", daemon=True)
        self._stderr_thread.start()
        threading.Thread(target=read_stdout, name="dreb-rpc-reader", daemon=True).start()

    def send(self, frame: bytes) -> None:
        proc = self._proc
        with self._write_lock:
            if proc is None or proc.stdin is None or proc.stdin.closed or proc.poll() is not None:
                raise RpcClosedError(f"RPC process is not running{self._stderr_suffix()}")
            try:
                _write_all(proc.stdin, frame)
            except (OSError, ValueError) as error:
                raise RpcClosedError(f"RPC process is not running: {error}{self._stderr_suffix()}") from error

    def close(self) -> None:
        """Stops the agent: EOF on its stdin (its cue to finish cleanly), then SIGTERM, then SIGKILL."""
        proc = self._proc
        if proc is None:
            return
        with self._write_lock:
            if proc.stdin is not None and not proc.stdin.closed:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
        for sig in (None, signal.SIGTERM, signal.SIGKILL):
            if sig is not None:
                self._signal(proc.pid, sig)
            try:
                proc.wait(timeout=self._stop_grace)
                break
            except subprocess.TimeoutExpired:
                continue
        proc.wait()
        if sig is not None:
            # A forced stop: nothing the agent started may outlive it.
            self._signal(proc.pid, signal.SIGKILL, group_only=True)

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
