"""Stand-in provider servers on loopback that enforce each provider's tool pairing and role rules.

One server answers the three endpoints Pi's provider layer calls: Anthropic Messages
(``/v1/messages``), OpenAI Chat Completions (``/chat/completions``) and OpenAI Responses
(``/responses``). Each request body is checked against that provider's documented rules, in
the providers' own words where they are on record (docs/session-doctor.md cites them), and
a request that breaks one is answered ``400`` with the provider's error shape; any other
gets a short streamed answer in the provider's wire format. Every verdict is recorded.

The checks are written against the wire format here, independently of Kurahi's own model of
the rules (``kurahi.context.request_rules``), so a test that has both agree proves something.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from support.wire_servers import anthropic_text, openai_text

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


@dataclass
class Verdict:
    """What the stand-in made of one request."""

    api: str
    errors: list[str]
    body: dict[str, Any]

    @property
    def accepted(self) -> bool:
        """No rule broken: answered 200."""
        return not self.errors


@dataclass
class StandIns:
    """The server's base URLs per family and its verdicts, in arrival order."""

    base: str
    verdicts: list[Verdict] = field(default_factory=list)

    def url(self, api: str) -> str:
        """The ``baseUrl`` Pi's model entry for ``api`` takes."""
        return self.base if api == "anthropic-messages" else self.base + "/v1"


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def anthropic_errors(body: dict[str, Any]) -> list[str]:
    """Anthropic Messages' pairing, placement, id and empty-text rules over ``body``."""
    errors: list[str] = []
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for m in body.get("messages", []):
        blocks = _blocks(m.get("content"))
        if turns and turns[-1][0] == m.get("role"):
            turns[-1][1].extend(blocks)  # the API combines consecutive same-role turns
        else:
            turns.append((m.get("role"), list(blocks)))
    if not turns:
        errors.append("messages: at least one message is required")
    for n, (role, blocks) in enumerate(turns):
        for b in blocks:
            if b.get("type") == "text" and not str(b.get("text", "")).strip():
                errors.append(f"messages.{n}: text content blocks must contain non-whitespace text")
        if role == "assistant":
            uses = [b.get("id") for b in blocks if b.get("type") == "tool_use"]
            for u in uses:
                if not isinstance(u, str) or not ANTHROPIC_ID.match(u):
                    errors.append(f"messages.{n}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'")
            answered = (
                {b.get("tool_use_id") for b in turns[n + 1][1] if b.get("type") == "tool_result"}
                if n + 1 < len(turns)
                else None
            )
            missing = [u for u in uses if answered is not None and u not in answered]
            if missing:
                errors.append(
                    f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    + ", ".join(map(str, missing))
                )
            continue
        prev = {b.get("id") for b in turns[n - 1][1] if b.get("type") == "tool_use"} if n else set()
        other_seen = False
        for k, b in enumerate(blocks):
            if b.get("type") != "tool_result":
                other_seen = True
                continue
            if b.get("tool_use_id") not in prev:
                errors.append(
                    f"messages.{n}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                    "block in the previous message."
                )
            elif other_seen:
                errors.append(f"messages.{n}.content.{k}: tool_result blocks must come first")
    return errors


def chat_errors(body: dict[str, Any]) -> list[str]:
    """OpenAI Chat Completions' tool message rules over ``body``."""
    errors: list[str] = []
    pending: set[Any] | None = None
    for i, m in enumerate(body.get("messages", [])):
        if m.get("role") == "tool":
            if pending is None or m.get("tool_call_id") not in pending:
                errors.append(
                    f"Invalid parameter: messages[{i}]: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            else:
                pending.discard(m.get("tool_call_id"))
            continue
        if pending:
            errors.append(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {sorted(pending)}"
            )
        pending = None
        if m.get("role") == "assistant" and m.get("tool_calls"):
            pending = {c.get("id") for c in m["tool_calls"]}
    if pending:
        errors.append(f"The following tool_call_ids did not have response messages: {sorted(pending)}")
    return errors


def responses_errors(body: dict[str, Any]) -> list[str]:
    """OpenAI Responses' function call / output pairing over ``body``."""
    errors: list[str] = []
    calls: set[Any] = set()
    outputs: set[Any] = set()
    for item in body.get("input", []):
        if item.get("type") == "function_call":
            calls.add(item.get("call_id"))
        elif item.get("type") == "function_call_output":
            if item.get("call_id") not in calls:
                errors.append(f"No tool call found for function call output with call_id {item.get('call_id')}.")
            outputs.add(item.get("call_id"))
    for c in sorted(calls - outputs, key=str):
        errors.append(f"No tool output found for function call {c}.")
    return errors


def _responses_stream(text: str) -> list[tuple[str, dict[str, Any]]]:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": []}
    done = {**item, "content": [{"type": "output_text", "text": text, "annotations": []}]}
    usage = {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12, "input_tokens_details": {"cached_tokens": 0}}
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}
    return [
        ("response.created", {"type": "response.created", "response": resp}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
        (
            "response.content_part.added",
            {
                "type": "response.content_part.added",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []},
            },
        ),
        (
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            },
        ),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": done}),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": {**resp, "status": "completed", "output": [done], "usage": usage},
            },
        ),
    ]


def _handler(state: StandIns) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            route = self.path.split("?", 1)[0]
            if route.endswith("/messages"):
                api, errors = "anthropic-messages", anthropic_errors(body)
            elif route.endswith("/chat/completions"):
                api, errors = "openai-completions", chat_errors(body)
            else:
                api, errors = "openai-responses", responses_errors(body)
            state.verdicts.append(Verdict(api, errors, body))
            if errors:
                kind = "invalid_request_error"
                payload = (
                    {"type": "error", "error": {"type": kind, "message": "; ".join(errors)}}
                    if api == "anthropic-messages"
                    else {"error": {"message": "; ".join(errors), "type": kind, "param": "messages", "code": None}}
                )
                raw = json.dumps(payload).encode()
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            if api == "openai-completions":
                for chunk in openai_text("mended ok")["sse"]:
                    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m", **chunk}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                return
            events = anthropic_text("mended ok")["events"] if api == "anthropic-messages" else _responses_stream("ok")
            for name, data in events:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())

    return Handler


@contextmanager
def standins() -> Iterator[StandIns]:
    """The three stand-ins on one loopback port, in a thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(StandIns("")))
    state = StandIns(f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(state)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def pi_requests(peer: Any, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Have ``peer`` (a :class:`support.peer.PiPeer`) send its own next request for each item.

    Each item is ``{"file", "api", "baseUrl"}``; see ``tests/peers/pi_request.mjs``.
    """
    import subprocess

    from support.peer import NODE, ROOT

    ai = peer.package.parent / "pi-ai"
    proc = subprocess.run(
        [str(NODE), str(ROOT / "tests" / "peers" / "pi_request.mjs")],
        input=json.dumps(items),
        capture_output=True,
        text=True,
        timeout=300,
        env={**peer.env, "PI_AI": str(ai)},
        check=False,
    )
    assert proc.returncode == 0, f"pi_request.mjs (Pi {peer.version}) failed:\n{proc.stderr}"
    return [json.loads(line) for line in proc.stdout.split("\n") if line.strip()]
