"""The access log and request metrics, as plain ASGI middleware outermost in the app.

One line per request: method, path, status, duration and who asked (``owner``,
``device:<id>`` or ``-``). Never the query string (a client may put anything there, a
token included), never a header. The route *template* labels the metrics, so that
``/api/agents/alice/chat`` and ``/api/agents/bob/chat`` are one series; an error response's
JSON ``code`` is counted by code. Both are computed after the response has been sent.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import msgspec
from fastapi.routing import iter_route_contexts
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from kurahi.gateway.metrics import GatewayMetrics

__all__ = ["ACCESS_LOGGER", "ARRIVED", "AccessMiddleware"]

ACCESS_LOGGER = "kurahi.access"
"""Name of the logger access lines go to (``kurahi gateway run`` sends it to stderr)."""

ARRIVED = "kurahi.arrived"
"""Key in the scope's ``extensions`` of the ``time.perf_counter()`` at which the server began to
parse the request (:func:`kurahi.gateway.server.serve` sets it); durations count from there."""

_ERROR_BODY_LIMIT = 4096  # error bodies are small; a larger one is not read for its code


class AccessMiddleware:
    """Log and count every HTTP request (see the module docstring).

    Args:
        app: the app inside.
        metrics: where requests are counted (``None``: not counted).
        log: write access lines to :data:`ACCESS_LOGGER`.
        routes: the app's routes, to name the template of a request answered before routing
            (a 401 from the auth middleware).
    """

    def __init__(self, app: ASGIApp, *, metrics: GatewayMetrics | None, log: bool, routes: list[Any]) -> None:
        self.app = app
        self.metrics = metrics
        self.logger = logging.getLogger(ACCESS_LOGGER) if log else None
        self.routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI call."""
        if scope["type"] != "http" or (self.metrics is None and self.logger is None):
            await self.app(scope, receive, send)
            return
        arrived = (scope.get("extensions") or {}).get(ARRIVED)
        t0 = arrived if isinstance(arrived, float) else time.perf_counter()
        status = 500
        json_error = False
        body = bytearray()

        async def watching(message: Message) -> None:
            nonlocal status, json_error
            if message["type"] == "http.response.start":
                status = message["status"]
                if status >= 400:
                    for k, v in message.get("headers", ()):
                        if k == b"content-type" and v.startswith(b"application/json"):
                            json_error = True
            elif json_error and message["type"] == "http.response.body" and len(body) <= _ERROR_BODY_LIMIT:
                body.extend(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, watching)
        finally:
            seconds = time.perf_counter() - t0
            if self.metrics is not None:
                code = _error_code(bytes(body)) if json_error else ("error" if status >= 400 else None)
                self.metrics.request(scope["method"], self._template(scope), status, seconds, code)
            if self.logger is not None:
                principal = scope.get("state", {}).get("principal")
                who = getattr(principal, "actor", "-")
                path = _printable(scope["path"])
                self.logger.info("%s %s %d %.1fms %s", scope["method"], path, status, seconds * 1000, who)

    def _template(self, scope: Scope) -> str:
        route = scope.get("route")
        path = getattr(route, "path", None)
        if isinstance(path, str):
            return path
        # Answered before routing (401, 413, 431): find the template it was meant for, through
        # the routers the app includes (FastAPI keeps each included router as one node).
        for r in iter_route_contexts(self.routes):
            match, _ = r.matches(scope)
            if match is Match.FULL:
                return str(r.path)
        return "unmatched"


def _printable(path: str, limit: int = 1024) -> str:
    # The path is percent-decoded: a client could send %0a and forge a line of the log, or %20
    # and shift its fields. Both are written escaped, as is every control character.
    out = "".join(c if " " < c != "\x7f" else f"\\x{ord(c):02x}" for c in path[:limit])
    return out + "..." if len(path) > limit else out


def _error_code(body: bytes) -> str:
    try:
        doc = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return "error"
    code = doc.get("error", {}).get("code") if isinstance(doc, dict) and isinstance(doc.get("error"), dict) else None
    return code if isinstance(code, str) and len(code) <= 64 else "error"
