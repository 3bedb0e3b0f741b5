"""Local HTTP servers that speak the OpenAI Chat Completions and Anthropic Messages
streaming protocols, for testing the real SDK-backed providers on loopback."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Script:
    """Responses to give, in order, and the requests received (with their arrival, ``time.monotonic()``).

    A reply is ``{"sse": [...]}`` or ``{"events": [...]}`` (a stream), or ``{"status": N, "error":
    "...", "headers": {...}}`` (an error, e.g. a 429 with ``Retry-After``). When the list is
    empty, ``default`` answers (a provider that answers 429 forever), else a 500.
    """

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.default: dict[str, Any] | None = None


def openai_text(text: str, *, pieces: int = 3) -> dict[str, Any]:
    size = max(1, -(-len(text) // pieces))
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    for i in range(0, len(text), size):
        chunks.append({"choices": [{"index": 0, "delta": {"content": text[i : i + size]}}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    chunks.append({"choices": [], "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}})
    return {"sse": chunks}


def openai_tool_call(call_id: str, name: str, args: str) -> dict[str, Any]:
    half = len(args) // 2
    fn0 = {"name": name, "arguments": args[:half]}
    chunks = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "id": call_id, "type": "function", "function": fn0}]},
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args[half:]}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    return {"sse": chunks}


def anthropic_text(
    text: str, *, message_id: str = "msg_1", model: str = "claude-test", input_tokens: int = 31
) -> dict[str, Any]:
    return {
        "events": [
            ("message_start", {"type": "message_start", "message": _amsg(message_id, model, input_tokens)}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[:5]}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text[5:]}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 9},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    }


def anthropic_tool_call(
    call_id: str,
    name: str,
    args: str,
    *,
    message_id: str = "msg_1",
    model: str = "claude-test",
    input_tokens: int = 31,
) -> dict[str, Any]:
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    return {
        "events": [
            ("message_start", {"type": "message_start", "message": _amsg(message_id, model, input_tokens)}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": args[:4]},
                },
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": args[4:]},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                    "usage": {"output_tokens": 12},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    }


def _amsg(message_id: str = "msg_1", model: str = "claude-test", input_tokens: int = 31) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
            script.requests.append(
                {"path": self.path, "body": body, "headers": dict(self.headers), "at": time.monotonic()}
            )
            if script.replies:
                reply = script.replies.pop(0)
            else:
                reply = script.default or {"status": 500, "error": "no scripted reply"}
            if "sleep" in reply:
                time.sleep(reply["sleep"])
            if "status" in reply:
                payload = json.dumps({"error": {"message": reply["error"], "type": "server_error"}}).encode()
                self.send_response(reply["status"])
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in reply.get("headers", {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            if "sse" in reply:
                for chunk in reply["sse"]:
                    chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m", **chunk}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                self.wfile.write(b"data: [DONE]\n\n")
            else:
                for name, data in reply["events"]:
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()

    return Handler


@contextmanager
def serve() -> Iterator[tuple[str, Script]]:
    """A server on 127.0.0.1 in a thread; yields its base URL and its script."""
    script = Script()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script
    finally:
        server.shutdown()
        server.server_close()
