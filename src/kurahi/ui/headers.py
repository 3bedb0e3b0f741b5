"""Every answer under ``/ui`` (pages, assets, JSON, errors) carries the strict page headers."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kurahi.gateway.static_files import PAGE_HEADERS

__all__ = ["PageHeadersMiddleware"]

_HEADERS = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in PAGE_HEADERS.items()]


class PageHeadersMiddleware:
    """Add :data:`~kurahi.gateway.static_files.PAGE_HEADERS` to responses whose path starts with ``prefix``."""

    def __init__(self, app: ASGIApp, prefix: str = "/ui") -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI call."""
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == self.prefix or path.startswith(self.prefix + "/")):
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                have = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *(h for h in _HEADERS if h[0] not in have)]
            await send(message)

        await self.app(scope, receive, with_headers)
