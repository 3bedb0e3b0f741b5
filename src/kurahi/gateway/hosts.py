"""The ``Host`` header, checked against where the gateway listens (DNS rebinding).

A page on ``evil.example`` can make its name resolve to ``127.0.0.1`` after the browser
loaded it; its scripts then reach the gateway on loopback as "same origin", and only the
``Host`` header still says ``evil.example``. So, unless the operator passed
``--allow-remote`` (a gateway reached by names Kurahi cannot know), a request whose
``Host`` names anything but a loopback name or the address the gateway is bound to is
answered ``421 misdirected_request`` before any route or credential is looked at. A request
without ``Host`` (HTTP/1.0, no browser sends one) passes: no page can make it.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from kurahi.gateway.http import error_response

__all__ = ["LOOPBACK_NAMES", "HostCheckMiddleware", "allowed_hosts", "host_name"]

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
"""Names a client on this machine may use for a loopback gateway."""


def host_name(value: str) -> str:
    """The name part of a ``Host`` header value, lower-cased, without port, brackets or final dot."""
    v = value.strip().lower()
    if v.startswith("["):  # [::1]:8787
        end = v.find("]")
        return v[1:end] if end > 0 else v
    if v.count(":") == 1:  # name:port (a bare IPv6 address has more than one colon)
        v = v.split(":", 1)[0]
    return v.rstrip(".")


def allowed_hosts(bind_host: str) -> frozenset[str]:
    """The ``Host`` names a gateway bound to ``bind_host`` answers (loopback names and the bind address)."""
    return LOOPBACK_NAMES | {host_name(bind_host if ":" not in bind_host else f"[{bind_host.strip('[]')}]")}


class HostCheckMiddleware:
    """Answer 421 to a request whose ``Host`` is not one of ``allowed`` (see the module docstring)."""

    def __init__(self, app: ASGIApp, allowed: frozenset[str]) -> None:
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI call."""
        if scope["type"] in ("http", "websocket"):
            for name, value in scope["headers"]:
                if name == b"host":
                    if host_name(value.decode("latin-1")) not in self.allowed:
                        response = error_response(
                            421,
                            "misdirected_request",
                            "this gateway answers only to its own address (the Host header names another); "
                            "a gateway reached by other names runs with --allow-remote",
                        )
                        await response(scope, receive, send)
                        return
                    break
        await self.app(scope, receive, send)
