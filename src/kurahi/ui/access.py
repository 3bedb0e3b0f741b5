"""Who may look: a bearer token exchanged once for a session cookie, and CSRF on every non-GET.

``POST /ui/api/login`` takes ``{"token": ...}`` in a JSON body (never a URL), checks it as
the API does (the owner token, or a device token that holds ``read``) and answers with an
``HttpOnly``, ``SameSite=Strict`` cookie scoped to ``/ui`` and a CSRF token the page keeps
in memory. The cookie is a random session id: the token itself is never stored, echoed
or put in a page. Each later request is re-checked against the credential it came from,
so revoking the device or rotating the owner token ends its viewer sessions at once. Each
credential keeps at most :data:`MAX_PER_CREDENTIAL` sessions (its own oldest ends beyond),
and logins are rate-limited per credential and failed ones per address
(:mod:`kurahi.gateway.ratelimit`): a device cannot end another credential's session.

Every request that is not ``GET`` or ``HEAD`` must carry ``X-CSRF-Token`` equal to the
session's token (compared in constant time). Login has no session yet: it must be JSON
(which a cross-site form cannot send without a preflight) and, when the browser says where
it comes from (``Origin``), come from the gateway's own origin.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request

from kurahi.gateway.auth import Principal
from kurahi.gateway.http import HTTPError
from kurahi.resident.devices import DeviceRegistry

__all__ = [
    "COOKIE",
    "CSRF_HEADER",
    "MAX_PER_CREDENTIAL",
    "MAX_SESSIONS",
    "ViewerSession",
    "ViewerSessions",
    "check_origin",
]

COOKIE = "kurahi_ui"
"""The session cookie's name."""
CSRF_HEADER = "x-csrf-token"
"""The header every non-GET request of the viewer carries."""
DEFAULT_TTL = 8 * 3600.0
"""Seconds a viewer session lasts (the cookie's ``Max-Age``)."""
MAX_SESSIONS = 1024
"""Live viewer sessions kept in all; a login beyond is refused (429), never at another's expense."""
MAX_PER_CREDENTIAL = 8
"""Live viewer sessions of one credential (the owner token, one device); its own oldest ends beyond."""


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass
class ViewerSession:
    """One logged-in browser."""

    principal: Principal
    csrf: str
    """Sent back by the page on every non-GET request."""
    expires: float
    """Clock time after which the session is gone."""
    owner_digest: str | None = None
    """SHA-256 of the owner token it was made with (owner sessions): a rotated token ends it."""
    device_id: str | None = None
    """The device it was made with (device sessions): a revoked device ends it."""


class ViewerSessions:
    """The live viewer sessions, by the SHA-256 of their cookie value (kept in memory only).

    Args:
        owner_token: reads the current owner token.
        devices: the device registry.
        ttl: seconds a session lasts.
        clock: the time source (tests move it forward to expire a cookie).
    """

    def __init__(
        self,
        owner_token: Callable[[], str],
        devices: DeviceRegistry,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.owner_token = owner_token
        self.devices = devices
        self.ttl = ttl
        self.clock = clock
        self._sessions: dict[str, ViewerSession] = {}

    def open(self, principal: Principal) -> tuple[str, ViewerSession]:
        """A new session for ``principal``: ``(cookie value, session)``.

        A credential's sessions are capped at :data:`MAX_PER_CREDENTIAL`: beyond, *its own*
        oldest session ends. No login ends a session made with another credential: when
        :data:`MAX_SESSIONS` are live in all, the login is refused instead.

        Raises:
            HTTPError: 429 when :data:`MAX_SESSIONS` sessions of other credentials are live.
        """
        now = self.clock()
        self._sessions = {k: s for k, s in self._sessions.items() if s.expires > now}
        mine = [k for k, s in self._sessions.items() if s.principal.actor == principal.actor]
        for k in mine[: max(0, len(mine) - MAX_PER_CREDENTIAL + 1)]:  # oldest first (dicts keep order)
            del self._sessions[k]
        if len(self._sessions) >= MAX_SESSIONS:
            raise HTTPError(
                429, "too_many_sessions", "the viewer has as many live sessions as it keeps; try again later"
            )
        cookie = secrets.token_urlsafe(32)
        session = ViewerSession(principal, secrets.token_urlsafe(32), now + self.ttl)
        if principal.actor == "owner":
            session.owner_digest = _digest(self.owner_token())
        elif principal.actor.startswith("device:"):
            session.device_id = principal.actor.split(":", 1)[1]
        self._sessions[_digest(cookie)] = session
        return cookie, session

    def close(self, cookie: str) -> None:
        """End the session of ``cookie`` (nothing when there is none)."""
        self._sessions.pop(_digest(cookie), None)

    def find(self, cookie: str | None) -> ViewerSession | None:
        """The live session of ``cookie``: ``None`` when unknown, expired or its credential is gone."""
        if not cookie:
            return None
        key = _digest(cookie)
        session = self._sessions.get(key)
        if session is None:
            return None
        if session.expires <= self.clock() or not self._still_valid(session):
            del self._sessions[key]
            return None
        return session

    def _still_valid(self, session: ViewerSession) -> bool:
        if session.owner_digest is not None:
            current = self.owner_token()
            return bool(current) and hmac.compare_digest(_digest(current), session.owner_digest)
        for device in self.devices.devices():
            if device.id == session.device_id:
                return device.active and "read" in device.scopes
        return False

    def require(self, request: Request) -> ViewerSession:
        """The request's session, checked for CSRF when it is not a GET.

        Raises:
            HTTPError: 401 without a live session; 403 when the CSRF token is missing or wrong.
        """
        session = self.find(request.cookies.get(COOKIE))
        if session is None:
            raise HTTPError(401, "login_required", "log in to the viewer (no session, or it ended)")
        # Known from here on: errors may name files of the home (see kurahi.gateway.http.hide_paths).
        request.scope.setdefault("state", {})["principal"] = session.principal
        if request.method not in ("GET", "HEAD"):
            sent = request.headers.get(CSRF_HEADER, "")
            if not hmac.compare_digest(sent.encode("utf-8", "surrogatepass"), session.csrf.encode()):
                raise HTTPError(403, "csrf_failed", "the request's CSRF token is missing or wrong; reload the page")
        return session


def check_origin(request: Request) -> None:
    """Refuse a login sent from another origin, or not as JSON.

    Raises:
        HTTPError: 415 when the body is not JSON; 403 when ``Origin`` names another origin.
    """
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json":
        raise HTTPError(415, "unsupported_media_type", "send the login as application/json")
    origin = request.headers.get("origin")
    if origin is not None:
        host = request.headers.get("host", "")
        if origin not in (f"http://{host}", f"https://{host}"):
            raise HTTPError(403, "cross_origin", "a login must come from the gateway's own page")
