"""A stand-in for the Anthropic Messages API on loopback, for driving the real Claude Code offline.

:class:`MessagesStandIn` is a real HTTP server on ``127.0.0.1`` (an ephemeral port, a thread)
that answers what Claude Code 2.1.332 calls: ``POST /v1/messages?beta=true``, streamed as
server-sent events (``message_start``, ``content_block_start``/``delta``/``stop``,
``message_delta``, ``message_stop``; built by :mod:`support.wire_servers`), plus
``/v1/messages/count_tokens`` and any other path or method with a short JSON answer, so the
CLI never waits on a missing endpoint. Every request is kept in order (:attr:`requests`) and,
when a log path is given, written as one JSON line: that log is the evidence of what the CLI
really sent.

Each body is checked against the API's documented rules before it is answered
(:func:`request_errors`): tool_use/tool_result pairing and placement, ids and empty text
(:func:`support.provider_standins.anthropic_errors`), and the placement of the
``role: "system"`` entries Claude Code sends inside ``messages`` (mid-conversation system
messages: never first, and only right after a user turn). A body that breaks one is answered
``400`` with the API's error shape, as the API would, and the verdict is kept.

Replies are deterministic, so one server can serve a whole test run:

- a scripted reply, when the test queued one for the request's session
  (:meth:`MessagesStandIn.script`, keyed by the ``X-Claude-Code-Session-Id`` header);
- a compaction request (Claude Code's ``/compact``) gets a summary holding
  :data:`SUMMARY_MARK`;
- a prompt holding ``run `COMMAND``` gets a ``tool_use`` of the Bash tool running
  ``COMMAND``; one holding ``delegate `PROMPT``` gets a ``tool_use`` of the Agent tool (a
  foreground subagent given ``PROMPT``);
- once the tool's result is in, and for any other prompt: text, :func:`reply_for` the
  turn's prompt (``after_tool=True`` after a tool), so a test knows every reply's words
  without reading them back.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from support.provider_standins import anthropic_errors
from support.wire_servers import anthropic_text, anthropic_tool_call

SESSION_HEADER = "X-Claude-Code-Session-Id"
SUMMARY_MARK = "STANDIN-COMPACT-SUMMARY"
"""Every compaction summary the stand-in writes holds these words."""

_RUN = re.compile(r"\brun `([^`]+)`")
_DELEGATE = re.compile(r"\bdelegate `([^`]+)`")
_REMINDER = "<system-reminder>"


@dataclass
class Request:
    """One request as received, with the verdict of the rules on its body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    errors: list[str] = field(default_factory=list)

    @property
    def session(self) -> str | None:
        """The Claude Code session the request belongs to (its ``X-Claude-Code-Session-Id``)."""
        for name, value in self.headers.items():
            if name.lower() == SESSION_HEADER.lower():
                return value
        return None

    @property
    def key(self) -> str | None:
        """The API key it carried (each :class:`~support.claude_peer.ClaudePeer` run has its own)."""
        for name, value in self.headers.items():
            if name.lower() == "x-api-key":
                return value
        return None

    @property
    def is_messages(self) -> bool:
        """A ``POST /v1/messages`` (not ``count_tokens``, not another path)."""
        return self.method == "POST" and self.path.split("?", 1)[0].rstrip("/").endswith("/v1/messages")

    @property
    def is_compaction(self) -> bool:
        return self.is_messages and isinstance(self.body, dict) and is_compaction(self.body)


def reply_for(prompt: str, *, after_tool: bool = False) -> str:
    """The text the stand-in answers ``prompt`` with: a digest of it, never the prompt's words."""
    digest = hashlib.sha256(f"{after_tool}:{prompt}".encode()).hexdigest()[:12]
    return f"{'TOOLREPLY' if after_tool else 'REPLY'}-{digest}"


def text_blocks(content: Any) -> list[str]:
    """The text of a message's content: a string, or its text blocks' texts."""
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def prompt_of(message: dict[str, Any]) -> str | None:
    """What the user typed in a ``user`` message: its last text block that is not one of Claude
    Code's system reminders (the CLI puts reminders, and after ``/compact`` the command's echo,
    before the prompt), or ``None`` when it holds none (a tool result, reminders only)."""
    if message.get("role") != "user":
        return None
    typed = [t for t in text_blocks(message.get("content")) if t.strip() and not t.lstrip().startswith(_REMINDER)]
    return typed[-1] if typed else None


def conversation(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The user and assistant messages of a request body (its ``system`` entries left out)."""
    return [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") != "system"]


COMPACTION_ASK = "create a detailed summary of the conversation so far"
"""Words of the instruction Claude Code 2.1.332 ends a compaction request with (``/compact``, or
a context grown too large)."""


def is_compaction(body: dict[str, Any]) -> bool:
    """Whether ``body`` is Claude Code asking for a compaction summary: its last message is the
    user's and holds the summary instruction."""
    messages = conversation(body)
    if not messages or messages[-1].get("role") != "user":
        return False
    return any(COMPACTION_ASK in t for t in text_blocks(messages[-1].get("content")))


def system_errors(body: dict[str, Any]) -> list[str]:
    """Where ``role: "system"`` entries may stand in ``messages`` (mid-conversation system messages):
    not first, and right after a user turn (a user message, or system entries that follow one);
    only ``user``, ``assistant`` and ``system`` roles at all."""
    errors: list[str] = []
    last: str | None = None  # the role of the newest user or assistant message so far
    for n, m in enumerate(body.get("messages", [])):
        role = m.get("role") if isinstance(m, dict) else None
        if role not in ("user", "assistant", "system"):
            errors.append(f"messages.{n}.role: Input should be 'user', 'assistant' or 'system'")
        elif role != "system":
            last = role
        elif n == 0:
            errors.append("messages.0: a system message cannot be the first message")
        elif last != "user":
            errors.append(f"messages.{n}: a system message must follow a user message")
    if last is None:
        errors.append("messages: at least one user or assistant message is required")
    return errors


def request_errors(body: Any) -> list[str]:
    """Every documented rule ``body`` breaks (empty when the API would take it)."""
    if not isinstance(body, dict):
        return ["request body: must be a JSON object"]
    errors = system_errors(body)
    errors += anthropic_errors({**body, "messages": conversation(body)})
    first = next(iter(conversation(body)), None)
    if first is not None and first.get("role") != "user":
        errors.append("messages.0: the first message must use the user role")
    return errors


def _turn_prompt(messages: list[dict[str, Any]]) -> tuple[str, bool]:
    """The prompt of the turn the newest message belongs to, and whether a tool ran since."""
    after_tool = False
    for m in reversed(messages):
        typed = prompt_of(m)
        if typed is not None:
            return typed, after_tool
        if m.get("role") == "user" and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in m.get("content") or []
        ):
            after_tool = True
    return "", after_tool


def _estimate_tokens(body: dict[str, Any]) -> int:
    """A rough input size for the usage the stand-in reports (4 characters a token)."""
    size = sum(len(json.dumps(body.get(k), ensure_ascii=False)) for k in ("system", "messages", "tools"))
    return max(1, size // 4)


class MessagesStandIn:
    """The stand-in server; :meth:`start` it (or use :func:`messages_standin`), :meth:`close` it."""

    def __init__(self, log_path: Path | None = None) -> None:
        self.log_path = log_path
        self.requests: list[Request] = []
        self._scripts: dict[str, list[dict[str, Any]]] = {}
        self._hold_deadline = 120.0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        # Message and tool ids unique across stand-ins too: the CLI merges every assistant row that
        # shares a message.id when it rebuilds a session, whichever branch the row is on.
        self._run = secrets.token_hex(4)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._arrived = threading.Condition(self._lock)
        self._open = threading.Event()
        self._open.set()

    @property
    def base(self) -> str:
        """The ``ANTHROPIC_BASE_URL`` that reaches it."""
        assert self._server is not None, "the stand-in is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> MessagesStandIn:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="claude-standin", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def script(self, session: str, *replies: dict[str, Any]) -> None:
        """Queue ``replies`` for the next requests of ``session`` (made by :func:`text` and :func:`tool_use`)."""
        with self._lock:
            self._scripts.setdefault(session, []).extend(replies)

    @contextmanager
    def hold(self, deadline: float = 120.0) -> Iterator[None]:
        """While inside, ``/v1/messages`` requests are received and logged but not answered (a turn
        in flight: what a ``claude`` process leaves on the machine meanwhile); answered on exit,
        or after ``deadline`` seconds, whichever comes first."""
        self._hold_deadline = deadline
        self._open.clear()
        try:
            yield
        finally:
            self._open.set()

    def wait_for(self, key: str, count: int = 1, deadline: float = 120.0) -> list[Request]:
        """Block until ``count`` requests with API key ``key`` have arrived (or fail after ``deadline`` s)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: len([r for r in self.requests if r.key == key]) >= count, deadline):
                raise TimeoutError(f"no request with key {key} in {deadline:.0f} s")
            return [r for r in self.requests if r.key == key]

    def of_key(self, key: str) -> list[Request]:
        """The requests made with API key ``key``, in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.key == key]

    # -- the server side --------------------------------------------------------------------

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)
            self._arrived.notify_all()
            if self.log_path is not None:
                line = {
                    "method": request.method,
                    "path": request.path,
                    "session": request.session,
                    "errors": request.errors,
                    "body": request.body,
                }
                with self.log_path.open("a", encoding="utf-8") as log:
                    log.write(json.dumps(line, ensure_ascii=False) + "\n")

    def _reply(self, request: Request) -> dict[str, Any]:
        body = request.body
        n = f"{self._run}_{next(self._ids)}"
        model = str(body.get("model") or "claude-standin")
        tokens = _estimate_tokens(body)
        with self._lock:
            queued = self._scripts.get(request.session or "")
            scripted = queued.pop(0) if queued else None
        if scripted is not None:
            return _events(scripted, n, model, tokens)
        if is_compaction(body):
            summary = (
                "<analysis>The stand-in does not analyse.</analysis>\n"
                f"<summary>{SUMMARY_MARK}: the conversation so far, summarised by the stand-in (request {n}).</summary>"
            )
            return anthropic_text(summary, message_id=f"msg_standin_{n}", model=model, input_tokens=tokens)
        prompt, after_tool = _turn_prompt(conversation(body))
        if not after_tool:
            if found := _RUN.search(prompt):
                bash = tool_use("Bash", {"command": found[1], "description": "Run a command"})
                return _events(bash, n, model, tokens)
            if found := _DELEGATE.search(prompt):
                task = {
                    "description": "A delegated task",
                    "prompt": found[1],
                    "subagent_type": "general-purpose",
                    "run_in_background": False,
                }
                return _events(tool_use("Agent", task), n, model, tokens)
        return _events(text(reply_for(prompt, after_tool=after_tool)), n, model, tokens)


def text(words: str) -> dict[str, Any]:
    """A scripted reply: ``words`` as one text block."""
    return {"text": words}


def tool_use(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A scripted reply: one ``tool_use`` of tool ``name`` with ``arguments`` (stop reason ``tool_use``)."""
    return {"tool": name, "input": arguments}


def _events(reply: dict[str, Any], n: str, model: str, tokens: int) -> dict[str, Any]:
    if "tool" in reply:
        args = json.dumps(reply["input"])
        return anthropic_tool_call(
            f"toolu_standin_{n}", reply["tool"], args, message_id=f"msg_standin_{n}", model=model, input_tokens=tokens
        )
    return anthropic_text(reply["text"], message_id=f"msg_standin_{n}", model=model, input_tokens=tokens)


def _handler(standin: MessagesStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, status: int, payload: Any) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(raw)

        def _other(self) -> None:
            # Any endpoint Claude Code might probe: an empty success, at once.
            standin._record(Request(self.command, self.path, dict(self.headers), None))
            self._json(200, {})

        do_GET = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _other

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", 0) or 0))
            try:
                body: Any = json.loads(raw or b"{}")
            except ValueError:
                body = raw.decode("utf-8", "replace")
            route = self.path.split("?", 1)[0].rstrip("/")
            request = Request("POST", self.path, dict(self.headers), body)
            if route.endswith("/v1/messages/count_tokens"):
                request.errors = request_errors(body)
                standin._record(request)
                if request.errors:
                    self._error(request.errors)
                else:
                    self._json(200, {"input_tokens": _estimate_tokens(body)})
                return
            if not route.endswith("/v1/messages"):
                standin._record(request)
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "Not found"}})
                return
            request.errors = request_errors(body)
            standin._record(request)
            if request.errors:
                self._error(request.errors)
                return
            standin._open.wait(standin._hold_deadline)
            reply = standin._reply(request)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.end_headers()
            try:
                for name, data in reply["events"]:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the CLI went away mid-reply (killed by a test): nothing to answer

        def _error(self, errors: list[str]) -> None:
            self._json(400, {"type": "error", "error": {"type": "invalid_request_error", "message": "; ".join(errors)}})

    return Handler


@contextmanager
def messages_standin(log_path: Path | None = None) -> Iterator[MessagesStandIn]:
    """A started :class:`MessagesStandIn`, closed on exit."""
    standin = MessagesStandIn(log_path).start()
    try:
        yield standin
    finally:
        standin.close()
