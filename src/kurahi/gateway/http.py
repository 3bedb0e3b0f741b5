"""HTTP errors as small values, and the one place Kurahi errors become HTTP responses.

Every error body has one shape: ``{"error": {"status": 401, "code": "unauthorized",
"message": "..."}}``. Messages name what is wrong and never echo a credential.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.responses import JSONResponse

from kurahi.errors import DatabaseUnavailableError, KurahiError, TurnInterruptedError, store_unreachable

__all__ = ["RETRY_AFTER_SECONDS", "HTTPError", "error_body", "error_response", "from_kurahi", "hide_paths"]

RETRY_AFTER_SECONDS: int = DatabaseUnavailableError.http_retry_after or 1
"""``Retry-After`` of a 503 while the store cannot be reached (carried by :class:`DatabaseUnavailableError`)."""


@dataclass
class HTTPError(Exception):
    """An error with its status, machine code and message."""

    status: int
    code: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    """More fields of the error object (a chat turn's ``stored`` and ``idempotencyKey``)."""

    def response(self) -> JSONResponse:
        """The JSON response for it."""
        return error_response(self.status, self.code, self.message, self.headers, self.extra)

    def body(self) -> dict[str, Any]:
        """The error object (what an ``error`` event of a stream carries)."""
        return {"status": self.status, "code": self.code, "message": self.message, **self.extra}


def error_body(status: int, code: str, message: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The error JSON."""
    return {"error": {"status": status, "code": code, "message": message, **(extra or {})}}


def error_response(
    status: int,
    code: str,
    message: str,
    headers: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
) -> JSONResponse:
    """A JSON error response."""
    return JSONResponse(error_body(status, code, message, extra), status_code=status, headers=headers)


def from_kurahi(exc: KurahiError) -> HTTPError:
    """The HTTP error for a library error: the status and code its family carries.

    A store that cannot be reached is ``503 store_unavailable`` with ``Retry-After``: the
    request may be sent again (a chat message with its idempotency key). A chat turn that
    stopped says whether its message was stored (``stored``) and under which key.
    """
    if isinstance(exc, TurnInterruptedError):
        extra = {"stored": exc.stored, "idempotencyKey": exc.idempotency_key}
        # The key in the header too, as every chat answer carries it (docs/backends.md).
        key = {"Idempotency-Key": exc.idempotency_key} if exc.idempotency_key else {}
        if exc.unavailable:
            retry = {"Retry-After": str(max(1, round(exc.retry_after))), **key}
            return HTTPError(503, "store_unavailable", str(exc), retry, extra)
        return HTTPError(exc.http_status, exc.http_code, str(exc), key, extra)
    if store_unreachable(exc):
        away = DatabaseUnavailableError
        return HTTPError(away.http_status, away.http_code, str(exc), {"Retry-After": str(RETRY_AFTER_SECONDS)})
    headers = {"Retry-After": str(exc.http_retry_after)} if exc.http_retry_after is not None else {}
    # What no family claims is a bug: its type helps whoever reads the report.
    message = f"{type(exc).__name__}: {exc}" if exc.http_code == "internal" else str(exc)
    return HTTPError(exc.http_status, exc.http_code, message, headers)


_ABSOLUTE = re.compile(r"(?<![\w.~>])/[^\s:;,'\"()`]+")


def hide_paths(text: str, home: Path) -> str:
    """``text`` for a caller who showed no credential: no absolute path of this machine in it.

    The home's path becomes ``<home>`` (``<home>/secrets/devices.json`` still says which file
    is wrong); any other absolute path becomes ``<path>``. Where the home lives (and so the
    user name) is no business of a caller the gateway does not know.
    """
    for root in sorted({str(home), str(home.resolve()), str(home.absolute())}, key=len, reverse=True):
        if root not in ("", "/"):
            text = text.replace(root, "<home>")
    return _ABSOLUTE.sub("<path>", text)
