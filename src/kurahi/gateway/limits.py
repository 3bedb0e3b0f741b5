"""Request size limits as ASGI middleware: oversized bodies and headers are refused early.

A declared ``Content-Length`` over the limit is answered 413 before the body is read; a
body without one (chunked) is counted as it streams and cut off at the limit, with a 413
even when the app catches the cut-off as a body it could not parse (FastAPI turns any error
while reading a body into a 400). Headers larger than the limit in total get 431.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kurahi.gateway.http import error_response

__all__ = ["SizeLimitMiddleware"]


class _TooLarge(Exception):
    pass


class SizeLimitMiddleware:
    """Refuse bodies over ``max_body`` bytes and header blocks over ``max_headers`` bytes."""

    def __init__(self, app: ASGIApp, *, max_body: int = 1024 * 1024, max_headers: int = 16 * 1024) -> None:
        self.app = app
        self.max_body = max_body
        self.max_headers = max_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI call."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        size = sum(len(k) + len(v) + 4 for k, v in scope["headers"])
        if size > self.max_headers:
            msg = f"request headers are {size} bytes; the limit is {self.max_headers}"
            await error_response(431, "headers_too_large", msg)(scope, receive, send)
            return
        for k, v in scope["headers"]:
            if k == b"content-length":
                try:
                    declared = int(v)
                except ValueError:
                    await error_response(400, "bad_request", "Content-Length is not a number")(scope, receive, send)
                    return
                if declared > self.max_body:
                    msg = f"request body is {declared} bytes; the limit is {self.max_body}"
                    await error_response(413, "body_too_large", msg)(scope, receive, send)
                    return
        seen = 0
        started = False
        over = False
        msg = f"request body is over the limit of {self.max_body} bytes"

        async def counted() -> Message:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    over = True
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if over:
                # The app caught the cut-off and answers on its own (a 400): answer 413 instead.
                if message["type"] == "http.response.start" and not started:
                    started = True
                    await error_response(413, "body_too_large", msg)(scope, receive, send)
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counted, tracking_send)
        except _TooLarge:
            if not started:
                started = True
                await error_response(413, "body_too_large", msg)(scope, receive, send)
