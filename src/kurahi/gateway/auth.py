"""Authentication as plain ASGI middleware, and per-route scopes.

Every request but ``GET /api/health``, ``GET /api/ready``, ``/openapi.json`` and the docs (``/docs``
and the files under it: the page, our initializer and the vendored Swagger UI) carries
``Authorization: Bearer <token>``. The owner token (``secrets/gateway.token`` or
``KOLO_GATEWAY_TOKEN``) holds every scope; a device token holds the scopes it was paired
with. Paths under a *delegated* prefix (``/ui``, added by the web viewer's plugin) are passed
through untouched: the plugin that owns them authenticates them itself (a session cookie).
Tokens are compared in constant time and never logged or echoed. No or unknown credentials:
401; a credential without the route's scope: 403 (checked by :func:`require`); credentials
that cannot be checked (a token file or device registry that became open to other users or
unreadable): 500 with the reason (no absolute path in it: the caller is not known yet), never a
traceback. Wrong tokens are counted per client address; past the limit
(:mod:`kurahi.gateway.ratelimit`) a request with a token is answered 429 before it is checked.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from kurahi.errors import KurahiError
from kurahi.gateway.http import HTTPError, error_response
from kurahi.gateway.ratelimit import RateLimiter, retry_after
from kurahi.resident.devices import SCOPES, DeviceRegistry

__all__ = [
    "PUBLIC_PATHS",
    "PUBLIC_PREFIXES",
    "AuthMiddleware",
    "Principal",
    "client_address",
    "principal_for",
    "require",
]

PUBLIC_PATHS = frozenset({"/api/health", "/api/ready", "/openapi.json", "/docs"})
"""Paths that need no credential."""

PUBLIC_PREFIXES = ("/docs/",)
"""Path prefixes that need no credential: the API reference's static files (a fixed table; any
other name under it is a 404, whatever ``..`` it holds, since routing never normalises a path)."""


@dataclass(frozen=True)
class Principal:
    """Who is calling."""

    actor: str
    """``owner`` or ``device:<id>`` (what the audit chain records)."""
    scopes: frozenset[str]


class AuthMiddleware:
    """Resolve the bearer token to a :class:`Principal` (in ``scope["state"]["principal"]``) or answer 401."""

    def __init__(
        self,
        app: ASGIApp,
        owner_token: Callable[[], str],
        devices: DeviceRegistry,
        delegated: set[str] | None = None,
        failures: RateLimiter | None = None,
        public: Callable[[str], str] = str,
    ) -> None:
        self.app = app
        self.owner_token = owner_token
        self.devices = devices
        self.failures = failures
        """Failed credentials per client address (:mod:`kurahi.gateway.ratelimit`); ``None``: no limit."""
        self.public = public
        """What a message becomes for a caller without a credential (no absolute path: :func:`hide_paths`)."""
        self.delegated = delegated if delegated is not None else set()
        """Path prefixes (ending in ``/``) whose owner checks credentials itself; filled by plugins."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Handle one ASGI call."""
        path = scope.get("path", "")
        if (
            scope["type"] != "http"
            or path in PUBLIC_PATHS
            or path.startswith(PUBLIC_PREFIXES)
            or any(path == p or path.startswith(p + "/") for p in self.delegated)
        ):
            await self.app(scope, receive, send)
            return
        token = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                raw = value.decode("latin-1")
                if raw[:7].lower() == "bearer ":
                    token = raw[7:].strip()
                break
        address = client_address(scope)
        if token and self.failures is not None and (wait := self.failures.wait(address)) > 0:
            # Over the failure limit: refused before the token is checked, so guessing is no faster.
            what = "too many failed credentials from this address; try again later"
            await error_response(429, "too_many_failures", what, retry_after(wait))(scope, receive, send)
            return
        try:
            principal = self._resolve(token) if token else None
        except KurahiError as exc:  # the server's problem, not the caller's: 500, with the reason
            await error_response(500, "credentials_unusable", self.public(str(exc)))(scope, receive, send)
            return
        if principal is None and token and self.failures is not None:
            self.failures.take(address)
        if principal is None:
            what = "a valid bearer token is required" if token else "missing bearer token"
            response = error_response(401, "unauthorized", what, {"WWW-Authenticate": "Bearer"})
            await response(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)

    def _resolve(self, token: str) -> Principal | None:
        return principal_for(token, self.owner_token(), self.devices)


def client_address(scope: Scope) -> str:
    """The client's address (the forwarded one behind a trusted proxy), ``""`` when unknown."""
    client = scope.get("client")
    return str(client[0]) if client else ""


def principal_for(token: str, owner_token: str, devices: DeviceRegistry) -> Principal | None:
    """The principal a bearer token stands for, or ``None`` when it is no valid credential.

    Raises:
        KurahiError: the credentials cannot be checked (a device registry open to others, ...).
    """
    if owner_token and hmac.compare_digest(token.encode("utf-8", "surrogatepass"), owner_token.encode()):
        return Principal("owner", frozenset(SCOPES))
    device = devices.authenticate(token)
    if device is not None:
        return Principal(f"device:{device.id}", frozenset(device.scopes))
    return None


def require(scope_name: str) -> Callable[[Request], Awaitable[Principal]]:
    """A FastAPI dependency: the caller's principal, which must hold ``scope_name`` (else 403)."""

    # async on purpose: FastAPI runs a plain function dependency in a worker thread.
    async def check(request: Request) -> Principal:
        principal: Any = request.scope.get("state", {}).get("principal")
        if not isinstance(principal, Principal):  # pragma: no cover - the middleware always sets it
            raise HTTPError(401, "unauthorized", "missing bearer token")
        if scope_name not in principal.scopes:
            raise HTTPError(403, "forbidden", f"this credential lacks the {scope_name!r} scope")
        return principal

    return check
