"""The extension side of the dreb extension protocol (protocol/extension.yaml): registrations, the runtime's
calls dispatched to handlers, and a context whose methods are the agent API.

An extension process reads the runtime's frames on stdin and writes its own on stdout (one JSON object per
line); stderr goes to the runtime's log. Every call from the runtime runs on its own thread, so a handler may
block on the agent API (a dialog, ``wait_for_idle``) while the runtime sends further calls. Events run one at a
time, in order, on one thread.
"""

from __future__ import annotations

import itertools
import json
import queue
import sys
import threading
import traceback
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Optional

PROTOCOL_VERSION = "1"
# How long a call waits for the events that arrived before it to be handled (see Extension.run).
EVENTS_BEFORE_CALL_WAIT = 5.0

JsonObject = dict[str, Any]
Handler = Callable[[JsonObject, "Context"], Any]
CommandHandler = Callable[[str, "CommandContext"], Any]
ToolHandler = Callable[[JsonObject, "ToolCall"], Any]

# Hook points answered as calls (the handler's return value is the result).
HOOK_CALLS = frozenset(
    {
        "tool_call",
        "tool_result",
        "context",
        "before_provider_request",
        "input",
        "before_agent_start",
        "user_bash",
        "session_before_switch",
        "session_before_fork",
        "session_before_compact",
        "session_before_tree",
        "resources_discover",
        "session_directory",
    }
)


class ExtensionError(Exception):
    """A command the extension sent failed; the text is the runtime's error."""


@dataclass
class _Tool:
    name: str
    description: str
    parameters: JsonObject
    handler: ToolHandler
    label: Optional[str] = None
    prompt_snippet: Optional[str] = None


@dataclass
class _Command:
    name: str
    handler: CommandHandler
    description: Optional[str] = None


@dataclass
class _Flag:
    name: str
    type: str
    description: Optional[str] = None
    default: Any = None


@dataclass
class _Registry:
    hooks: dict[str, list[Handler]] = field(default_factory=dict)
    tools: dict[str, _Tool] = field(default_factory=dict)
    commands: dict[str, _Command] = field(default_factory=dict)
    flags: dict[str, _Flag] = field(default_factory=dict)


class Ui:
    """``ctx.ui``: dialogs (they block until answered, cancelled or timed out) and fire-and-forget updates."""

    def __init__(self, conn: "_Connection") -> None:
        self._conn = conn

    def select(self, title: str, options: list[str], timeout: Optional[int] = None) -> Optional[str]:
        r = self._conn.request("ui_select", title=title, options=options, timeout=timeout)
        value = r.get("value")
        return value if isinstance(value, str) else None

    def confirm(self, title: str, message: str, timeout: Optional[int] = None) -> bool:
        r = self._conn.request("ui_confirm", title=title, message=message, timeout=timeout)
        return bool(r.get("confirmed"))

    def input(self, title: str, placeholder: Optional[str] = None, timeout: Optional[int] = None) -> Optional[str]:
        r = self._conn.request("ui_input", title=title, placeholder=placeholder, timeout=timeout)
        value = r.get("value")
        return value if isinstance(value, str) else None

    def editor(self, title: str, prefill: Optional[str] = None) -> Optional[str]:
        r = self._conn.request("ui_editor", title=title, prefill=prefill)
        value = r.get("value")
        return value if isinstance(value, str) else None

    def ask(
        self, questions: list[JsonObject], title: Optional[str] = None, timeout: Optional[int] = None
    ) -> Optional[list[JsonObject]]:
        r = self._conn.request("ui_ask", questions=questions, title=title, timeout=timeout)
        answers = r.get("answers")
        return answers if isinstance(answers, list) else None

    def notify(self, message: str, notify_type: Optional[str] = None) -> None:
        self._conn.send("ui_notify", message=message, notifyType=notify_type)

    def set_status(self, key: str, text: Optional[str] = None) -> None:
        self._conn.send("ui_set_status", key=key, text=text)

    def set_widget(self, key: str, lines: Optional[list[str]] = None, placement: Optional[str] = None) -> None:
        self._conn.send("ui_set_widget", key=key, lines=lines, placement=placement)

    def set_title(self, title: str) -> None:
        self._conn.send("ui_set_title", title=title)

    def set_editor_text(self, text: str) -> None:
        self._conn.send("ui_set_editor_text", text=text)


class Context:
    """What a handler can do: the agent API (each method is one command, answered by the runtime)."""

    def __init__(self, conn: "_Connection") -> None:
        self._conn = conn
        self.ui = Ui(conn)

    @property
    def flags(self) -> JsonObject:
        """The command line's extension flags (registered defaults filled in)."""
        return self._conn.flag_values

    def request(self, name: str, /, **params: Any) -> Any:
        """Send any command and wait for its ``data``."""
        return self._conn.request(name, **params)

    def get_context(self) -> JsonObject:
        result: JsonObject = self._conn.request("get_context")
        return result

    def session(self) -> JsonObject:
        result: JsonObject = self._conn.request("get_session")
        return result

    def models(self) -> JsonObject:
        result: JsonObject = self._conn.request("get_models")
        return result

    def tools(self) -> list[JsonObject]:
        result: list[JsonObject] = self._conn.request("get_tools")
        return result

    def send_message(
        self,
        custom_type: str,
        content: Any,
        *,
        display: Optional[bool] = None,
        details: Any = None,
        trigger_turn: Optional[bool] = None,
        deliver_as: Optional[str] = None,
    ) -> None:
        message: JsonObject = {"customType": custom_type, "content": content}
        if display is not None:
            message["display"] = display
        if details is not None:
            message["details"] = details
        self._conn.request("send_message", message=message, triggerTurn=trigger_turn, deliverAs=deliver_as)

    def send_user_message(self, content: Any, *, deliver_as: Optional[str] = None) -> None:
        self._conn.request("send_user_message", content=content, deliverAs=deliver_as)

    def append_entry(self, custom_type: str, data: Any = None) -> None:
        self._conn.request("append_entry", customType=custom_type, data=data)

    def set_session_name(self, name: str) -> None:
        self._conn.request("set_session_name", name=name)

    def set_label(self, entry_id: str, label: Optional[str] = None) -> None:
        self._conn.request("set_label", entryId=entry_id, label=label)

    def set_active_tools(self, tool_names: list[str]) -> None:
        self._conn.request("set_active_tools", toolNames=tool_names)

    def set_model(self, provider: str, model_id: str) -> bool:
        return bool(self._conn.request("set_model", provider=provider, modelId=model_id).get("ok"))

    def set_thinking_level(self, level: str) -> None:
        self._conn.request("set_thinking_level", level=level)

    def exec(
        self, command: str, args: Optional[list[str]] = None, *, cwd: Optional[str] = None, timeout: Optional[int] = None
    ) -> JsonObject:
        result: JsonObject = self._conn.request("exec", command=command, args=args, cwd=cwd, timeout=timeout)
        return result

    def abort(self) -> None:
        self._conn.request("abort")

    def compact(self, custom_instructions: Optional[str] = None) -> JsonObject:
        result: JsonObject = self._conn.request("compact", customInstructions=custom_instructions)
        return result


class CommandContext(Context):
    """A command's context: the session operations besides the agent API."""

    def wait_for_idle(self) -> None:
        self._conn.request("wait_for_idle")

    def new_session(self, parent_session: Optional[str] = None) -> bool:
        """Returns whether it was cancelled (by an extension's ``session_before_switch``)."""
        return bool(self._conn.request("new_session", parentSession=parent_session).get("cancelled"))

    def fork(self, entry_id: str) -> bool:
        return bool(self._conn.request("fork", entryId=entry_id).get("cancelled"))

    def navigate_tree(self, target_id: str, *, summarize: Optional[bool] = None, label: Optional[str] = None) -> bool:
        r = self._conn.request("navigate_tree", targetId=target_id, summarize=summarize, label=label)
        return bool(r.get("cancelled"))

    def switch_session(self, session_path: str) -> bool:
        return bool(self._conn.request("switch_session", sessionPath=session_path).get("cancelled"))

    def reload(self) -> None:
        self._conn.request("reload")


class ToolCall(Context):
    """A running tool call: its id, whether it was aborted, and progress updates."""

    def __init__(self, conn: "_Connection", tool_call_id: str, cancelled: threading.Event) -> None:
        super().__init__(conn)
        self.tool_call_id = tool_call_id
        self._cancelled = cancelled

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def update(self, partial_result: Any) -> None:
        """Progress (a ``tool_execution_update`` for the host), e.g. ``{"content": [{"type": "text", ...}]}``."""
        self._conn.send("tool_update", toolCallId=self.tool_call_id, partialResult=partial_result)


class _Pending:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.frame: JsonObject = {}


class _Connection:
    def __init__(self, out: IO[str]) -> None:
        self._out = out
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._pending: dict[str, _Pending] = {}
        self._pending_lock = threading.Lock()
        self.flag_values: JsonObject = {}
        self.closed = threading.Event()

    def write(self, frame: JsonObject) -> None:
        line = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
        with self._write_lock:
            self._out.write(line + "\n")
            self._out.flush()

    @staticmethod
    def _frame(command: str, params: dict[str, Any]) -> JsonObject:
        frame: JsonObject = {"type": command}
        frame.update({k: v for k, v in params.items() if v is not None})
        return frame

    def send(self, name: str, /, **params: Any) -> None:
        """Fire-and-forget: no id, the response is not waited for."""
        self.write(self._frame(name, params))

    def request(self, name: str, /, **params: Any) -> Any:
        if self.closed.is_set():
            raise ExtensionError("the runtime closed the connection")
        request_id = f"x{next(self._ids)}"
        pending = _Pending()
        with self._pending_lock:
            self._pending[request_id] = pending
        frame = {"id": request_id, **self._frame(name, params)}
        self.write(frame)
        while not pending.done.wait(0.5):
            if self.closed.is_set():
                raise ExtensionError("the runtime closed the connection")
        if pending.frame.get("success") is True:
            return pending.frame.get("data", {})
        raise ExtensionError(str(pending.frame.get("error", "command failed")))

    def resolve(self, frame: JsonObject) -> None:
        request_id = frame.get("id")
        if not isinstance(request_id, str):
            return
        with self._pending_lock:
            pending = self._pending.pop(request_id, None)
        if pending is not None:
            pending.frame = frame
            pending.done.set()

    def close(self) -> None:
        self.closed.set()
        with self._pending_lock:
            pending = list(self._pending.values())
            self._pending.clear()
        for p in pending:
            p.frame = {"success": False, "error": "the runtime closed the connection"}
            p.done.set()


def _default_result(call: str) -> JsonObject:
    return {"action": "continue"} if call == "input" else {}


class Extension:
    """An extension: register handlers with the decorators, then call :meth:`run`."""

    def __init__(self, name: Optional[str] = None) -> None:
        self.name = name
        self._registry = _Registry()
        self._cancels: dict[str, threading.Event] = {}
        self._cancels_lock = threading.Lock()
        # Events run in order on one thread and calls each on their own; a call waits (at most
        # EVENTS_BEFORE_CALL_WAIT seconds) until the events that arrived before it have been handled, so a command
        # sees what a `session_start` before it recorded, as in the reference, where handlers run in turn.
        self._events_seen = 0
        self._events_done = 0
        self._events_cond = threading.Condition()
        self._conn: Optional[_Connection] = None
        self._providers: dict[str, JsonObject] = {}

    # ----- registration -----------------------------------------------------------------------------------------

    def on(self, event: str) -> Callable[[Handler], Handler]:
        """Handle a hook point (its return value is the answer) or an event (``session_start``, ``agent_end``...)."""

        def register(handler: Handler) -> Handler:
            self._registry.hooks.setdefault(event, []).append(handler)
            return handler

        return register

    def tool(
        self,
        name: str,
        *,
        description: str,
        parameters: Optional[JsonObject] = None,
        label: Optional[str] = None,
        prompt_snippet: Optional[str] = None,
    ) -> Callable[[ToolHandler], ToolHandler]:
        """A tool for the model. The handler gets the arguments and a :class:`ToolCall`, and returns
        ``{"content": [...], "details"?: ..., "isError"?: bool}`` (a string is taken as one text block)."""

        def register(handler: ToolHandler) -> ToolHandler:
            schema = parameters if parameters is not None else {"type": "object", "properties": {}}
            self._registry.tools[name] = _Tool(name, description, schema, handler, label, prompt_snippet)
            return handler

        return register

    def command(self, name: str, *, description: Optional[str] = None) -> Callable[[CommandHandler], CommandHandler]:
        """A slash command (``/name args``); the handler gets the argument text and a :class:`CommandContext`."""

        def register(handler: CommandHandler) -> CommandHandler:
            self._registry.commands[name] = _Command(name, handler, description)
            return handler

        return register

    def flag(self, name: str, *, type: str = "boolean", description: Optional[str] = None, default: Any = None) -> None:
        """A command-line flag (``--name`` / ``--name value``); its value is ``ctx.flags[name]``."""
        self._registry.flags[name] = _Flag(name, type, description, default)

    def provider(self, name: str, config: JsonObject) -> None:
        """A model provider (the reference's ``registerProvider``): ``config`` has ``baseUrl``, ``apiKey``, ``api``
        and ``models`` (see the protocol's ``ProviderRegistration``). Registered with :meth:`run`'s handshake."""
        self._providers[name] = config

    def registration(self) -> JsonObject:
        r = self._registry
        reg: JsonObject = {}
        if self.name is not None:
            reg["name"] = self.name
        events = sorted(r.hooks)
        if events:
            reg["events"] = events
        if r.commands:
            reg["commands"] = [
                {"name": c.name, **({"description": c.description} if c.description else {})} for c in r.commands.values()
            ]
        if r.tools:
            tools = []
            for t in r.tools.values():
                entry: JsonObject = {"name": t.name, "description": t.description, "parameters": t.parameters}
                if t.label:
                    entry["label"] = t.label
                if t.prompt_snippet:
                    entry["promptSnippet"] = t.prompt_snippet
                tools.append(entry)
            reg["tools"] = tools
        if r.flags:
            flags = []
            for f in r.flags.values():
                spec: JsonObject = {"name": f.name, "type": f.type}
                if f.description:
                    spec["description"] = f.description
                if f.default is not None:
                    spec["default"] = f.default
                flags.append(spec)
            reg["flags"] = flags
        if self._providers:
            reg["providers"] = [{"name": n, "config": c} for n, c in self._providers.items()]
        return reg

    # ----- serving ----------------------------------------------------------------------------------------------

    def run(self, stdin: Optional[IO[str]] = None, stdout: Optional[IO[str]] = None) -> None:
        """Serve the runtime until it closes stdin."""
        inp = stdin if stdin is not None else sys.stdin
        out = stdout if stdout is not None else sys.stdout
        # Nothing else may write to the protocol stream: stray prints go to stderr (the runtime's log).
        if stdout is None:
            sys.stdout = sys.stderr
        conn = _Connection(out)
        self._conn = conn
        events: "queue.Queue[Optional[JsonObject]]" = queue.Queue()
        event_thread = threading.Thread(target=self._event_loop, args=(events, conn), daemon=True)
        event_thread.start()
        try:
            for line in inp:
                line = line.strip()
                if not line:
                    continue
                try:
                    frame = json.loads(line)
                except ValueError:
                    print(f"dreb_extension: dropped a line that is not JSON: {line[:200]}", file=sys.stderr)
                    continue
                if not isinstance(frame, dict):
                    continue
                kind = frame.get("type")
                if kind == "response":
                    conn.resolve(frame)
                elif "id" in frame:
                    with self._events_cond:
                        after = self._events_seen
                    threading.Thread(target=self._serve_call, args=(frame, conn, after), daemon=True).start()
                elif kind == "cancel":
                    with self._cancels_lock:
                        flag = self._cancels.get(str(frame.get("id")))
                    if flag is not None:
                        flag.set()
                else:
                    with self._events_cond:
                        self._events_seen += 1
                    events.put(frame)
        finally:
            conn.close()
            events.put(None)
            event_thread.join(timeout=5)

    def _event_loop(self, events: "queue.Queue[Optional[JsonObject]]", conn: _Connection) -> None:
        while True:
            frame = events.get()
            if frame is None:
                return
            kind = str(frame.get("type"))
            if kind == "agent_event":
                inner = frame.get("event")
                if isinstance(inner, dict):
                    kind, frame = str(inner.get("type")), inner
            for handler in self._registry.hooks.get(kind, []):
                try:
                    handler(frame, Context(conn))
                except Exception:
                    traceback.print_exc(file=sys.stderr)
            with self._events_cond:
                self._events_done += 1
                self._events_cond.notify_all()

    def _serve_call(self, frame: JsonObject, conn: _Connection, after: int = 0) -> None:
        # A slow or hung event handler delays a call by at most EVENTS_BEFORE_CALL_WAIT, never wedges it.
        with self._events_cond:
            self._events_cond.wait_for(lambda: self._events_done >= after, timeout=EVENTS_BEFORE_CALL_WAIT)
        call_id = frame.get("id")
        call = str(frame.get("type"))
        response: JsonObject = {"id": call_id, "type": "response", "command": call}
        try:
            data = self._dispatch(call, frame, conn)
            response["success"] = True
            if data is not None:
                response["data"] = data
        except Exception as e:  # the runtime reports it as extension_error
            response["success"] = False
            response["error"] = str(e) or type(e).__name__
        conn.write(response)

    def _dispatch(self, call: str, frame: JsonObject, conn: _Connection) -> Any:
        params = {k: v for k, v in frame.items() if k not in ("id", "type")}
        if call == "initialize":
            flags = params.get("flagValues")
            values: JsonObject = {f.name: f.default for f in self._registry.flags.values() if f.default is not None}
            if isinstance(flags, dict):
                values.update(flags)
            conn.flag_values = values
            return {"protocolVersion": PROTOCOL_VERSION, "registration": self.registration()}
        if call == "session_shutdown":
            for handler in self._registry.hooks.get("session_shutdown", []):
                handler(params, Context(conn))
            return None
        if call == "execute_command":
            command = self._registry.commands.get(str(params.get("name")))
            if command is None:
                raise ExtensionError(f"Unknown command: {params.get('name')}")
            command.handler(str(params.get("args", "")), CommandContext(conn))
            return None
        if call == "execute_tool":
            return self._execute_tool(str(frame.get("id")), params, conn)
        if call in HOOK_CALLS:
            result: JsonObject = _default_result(call)
            for handler in self._registry.hooks.get(call, []):
                answer = handler(params, Context(conn))
                if isinstance(answer, dict):
                    result = answer
                    # A block or a cancel ends the chain within this extension, as the runtime does across them.
                    if answer.get("block") or answer.get("cancel") or answer.get("action") == "handled":
                        break
                    if call == "tool_call" and isinstance(answer.get("input"), dict):
                        params["input"] = answer["input"]
            return result
        raise ExtensionError(f"Unknown command: {call}")

    def _execute_tool(self, call_id: str, params: JsonObject, conn: _Connection) -> JsonObject:
        tool = self._registry.tools.get(str(params.get("toolName")))
        if tool is None:
            raise ExtensionError(f"Unknown tool: {params.get('toolName')}")
        cancelled = threading.Event()
        with self._cancels_lock:
            self._cancels[call_id] = cancelled
        try:
            args = params.get("params")
            result = tool.handler(args if isinstance(args, dict) else {}, ToolCall(conn, str(params.get("toolCallId")), cancelled))
        finally:
            with self._cancels_lock:
                self._cancels.pop(call_id, None)
        if isinstance(result, str):
            return {"content": [{"type": "text", "text": result}]}
        if isinstance(result, dict):
            return result
        raise ExtensionError(f"tool {tool.name} returned {type(result).__name__}, expected a dict or a string")
