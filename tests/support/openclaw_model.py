"""A stand-in OpenAI-compatible model on loopback, for driving a real OpenClaw offline.

:class:`StandInModel` is a real HTTP server on ``127.0.0.1`` (an ephemeral port) that speaks
enough of the OpenAI wire protocol for OpenClaw's ``openai-completions`` provider: Chat
Completions and Responses, streamed (server-sent events) or not, and the model list. Every
reply is deterministic: ``ECHO-<n>: <the last user text>``, so a test sees its own words come
back; or, scripted by :attr:`StandInModel.tool_rules`, a call of a tool (then ``ECHO-<n>: tool
result seen`` once the result is in). Every request body is kept, in order, in memory and as
one JSON line per request in ``log_path``: that log is the evidence of what OpenClaw really sent the model.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL_ID = "stand-in"
REPLY_PREFIX = "ECHO-"

# OpenClaw wraps what the user typed: a "[Mon 2026-11-30 08:24 UTC] " stamp in front, a
# "Runtime:" block after, and sometimes a separate user message of internal context. The
# reply echoes only the typed words, so a test can find them in it.
_STAMP = re.compile(r"^\[[^\]\n]{1,60}\]\s*")
_INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT"


def text_of(content: Any) -> str:
    """The text of one message's ``content``: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") or p.get("input_text") or "" for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return ""


def request_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The conversation a request carries: Chat Completions' ``messages`` or Responses' ``input``."""
    messages = body.get("messages")
    if messages is None:
        given = body.get("input")
        messages = [{"role": "user", "content": given}] if isinstance(given, str) else given
    return [m for m in messages or [] if isinstance(m, dict)]


def last_user_text(body: dict[str, Any]) -> str:
    """What the user typed in the newest user message, without OpenClaw's stamp and runtime block."""
    for message in reversed(request_messages(body)):
        if message.get("role") != "user":
            continue
        text = text_of(message.get("content")).strip()
        if text.startswith(_INTERNAL):
            continue
        text = text.split("\n\nRuntime:", 1)[0]
        return _STAMP.sub("", text).strip()
    return ""


SUMMARY_SECTIONS = (
    "## Decisions",
    "## Open TODOs",
    "## Constraints/Rules",
    "## Pending user asks",
    "## Exact identifiers",
)
"""The sections OpenClaw 2026.9's compaction safeguard requires of a summary, each once, in this order."""


def reply_text(typed: str) -> str:
    """What the stand-in says back: the typed words, or, asked for a compaction summary, one.

    OpenClaw 2026.9 sends the conversation to summarize in ``<conversation>`` and checks what
    comes back: the required sections each exactly once, in order, every identifier of the
    conversation literally, the latest ask reflected, all within its size budget. An echo
    would repeat a previous summary's headings and outgrow the budget, so the stand-in
    answers as a model following the instructions would, briefly: the latest user line and
    every token with a digit in it under ``## Decisions``, the other sections empty. A
    summary of a split turn's prefix (its own format) gets the latest user line alone.
    """
    if not typed.startswith("<conversation>"):
        return typed
    asks = [line.strip() for line in typed.splitlines() if line.strip().startswith("[User]:")]
    latest = asks[-1] if asks else ""
    if "This is the PREFIX of a turn" in typed:
        return latest
    tokens = dict.fromkeys(t.strip(".,;:()[]<>\"'`") for t in typed.split() if any(c.isdigit() for c in t))
    decisions = "\n".join([latest, " ".join(t for t in tokens if t)])
    empty = {"## Exact identifiers": "None captured."}
    return "\n\n".join(f"{h}\n{decisions if i == 0 else empty.get(h, 'None.')}" for i, h in enumerate(SUMMARY_SECTIONS))


def last_turn_role(body: dict[str, Any]) -> str | None:
    """The role of the newest message, past OpenClaw's trailing internal-context user message."""
    for message in reversed(request_messages(body)):
        if message.get("role") == "user" and text_of(message.get("content")).strip().startswith(_INTERNAL):
            continue
        role = message.get("role")
        return role if isinstance(role, str) else None
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        # The request log is the body log; the per-line access log would only be noise in pytest.
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            data = [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "kurahi-tests"}]
            self._json(200, {"object": "list", "data": data})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "request body is not JSON"}})
            return
        if not isinstance(body, dict):
            self._json(400, {"error": {"message": "request body is not a JSON object"}})
            return
        n = self.server.model.record(self.path, body)
        call = self.server.model.tool_call_for(body)
        if call is not None and self.path.endswith("/chat/completions"):
            self._chat_tool_call(body, n, *call)
            return
        tool_seen = last_turn_role(body) == "tool"
        said = "tool result seen" if tool_seen else reply_text(last_user_text(body))
        # A summary's first heading must start its own line, as a model would write it.
        text = f"{REPLY_PREFIX}{n}:{chr(10) if said.startswith('#') else ' '}{said}"
        if self.path.endswith("/chat/completions"):
            self._chat(body, n, text)
        elif self.path.endswith("/responses"):
            self._responses(body, n, text)
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def _json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _events(self, events: list[tuple[str | None, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            payload = data if isinstance(data, str) else json.dumps(data)
            self.wfile.write(f"{head}data: {payload}\n\n".encode())
        self.wfile.flush()

    def _chat(self, body: dict[str, Any], n: int, text: str) -> None:
        usage = {"prompt_tokens": 10, "completion_tokens": len(text.split()), "total_tokens": 10 + len(text.split())}
        base = {"id": f"chatcmpl-{n}", "created": 0, "model": body.get("model") or MODEL_ID}
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            self._json(200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage})
            return
        chunk = {**base, "object": "chat.completion.chunk"}
        deltas = [{"role": "assistant", "content": ""}, {"content": text}]
        events: list[tuple[str | None, Any]] = [
            (None, {**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]}) for d in deltas
        ]
        events.append((None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
        events.append((None, {**chunk, "choices": [], "usage": usage}))
        events.append((None, "[DONE]"))
        self._events(events)

    def _chat_tool_call(self, body: dict[str, Any], n: int, name: str, arguments: dict[str, Any]) -> None:
        """Answer with one call of tool ``name`` (Chat Completions, streamed or not)."""
        call = {
            "id": f"call_standin_{n}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        base = {"id": f"chatcmpl-{n}", "created": 0, "model": body.get("model") or MODEL_ID}
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
            self._json(200, {**base, "object": "chat.completion", "choices": [choice], "usage": usage})
            return
        chunk = {**base, "object": "chat.completion.chunk"}
        delta = {"role": "assistant", "content": None, "tool_calls": [{"index": 0, **call}]}
        events: list[tuple[str | None, Any]] = [
            (None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            (None, {**chunk, "choices": [], "usage": usage}),
            (None, "[DONE]"),
        ]
        self._events(events)

    def _responses(self, body: dict[str, Any], n: int, text: str) -> None:
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {"id": f"msg_{n}", "type": "message", "status": "completed", "role": "assistant", "content": [part]}
        usage = {
            "input_tokens": 10,
            "output_tokens": len(text.split()),
            "total_tokens": 10 + len(text.split()),
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        model = body.get("model") or MODEL_ID
        done = {"id": f"resp_{n}", "object": "response", "created_at": 0, "status": "completed", "model": model}
        done |= {"output": [item], "usage": usage}
        if not body.get("stream"):
            self._json(200, done)
            return
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        steps: list[dict[str, Any]] = [
            {"type": "response.created", "response": {**done, "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
            {"type": "response.content_part.added", **where, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **where, "delta": text},
            {"type": "response.output_text.done", **where, "text": text},
            {"type": "response.content_part.done", **where, "part": part},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": done},
        ]
        self._events([(s["type"], {**s, "sequence_number": i}) for i, s in enumerate(steps)])


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, model: StandInModel) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.model = model


class StandInModel:
    """The stand-in model server: start it, point OpenClaw at :attr:`base_url`, read :meth:`requests`."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self._lock = threading.Lock()
        self._bodies: list[dict[str, Any]] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.tool_rules: list[tuple[str, str, dict[str, Any]]] = []
        """``(cue, tool name, arguments)``: a user turn whose text holds the cue is answered with
        a call of that tool (Chat Completions only); the request after its result, with text."""

    def tool_call_for(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """The tool call a request gets by :attr:`tool_rules`, if its newest turn is a user's holding a cue."""
        if last_turn_role(body) != "user":
            return None
        typed = last_user_text(body)
        for cue, name, arguments in self.tool_rules:
            if cue in typed:
                return name, arguments
        return None

    @property
    def port(self) -> int:
        """The port it listens on (only while started)."""
        assert self._server is not None, "the stand-in model is not running"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """What an OpenAI-compatible client takes as its base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        """Listen on an ephemeral loopback port, serving from a daemon thread."""
        if self._server is not None:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, name="stand-in-model", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def record(self, path: str, body: dict[str, Any]) -> int:
        """Keep one request body (memory and log file); returns its 1-based number."""
        with self._lock:
            self._bodies.append(body)
            with self.log_path.open("a", encoding="utf-8") as log:
                log.write(json.dumps({"path": path, "body": body}) + "\n")
            return len(self._bodies)

    def requests(self) -> list[dict[str, Any]]:
        """Every request body received so far, oldest first."""
        with self._lock:
            return list(self._bodies)
