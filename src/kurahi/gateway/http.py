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

from kurahi.errors import (
    CatalogWriteError,
    ConfigError,
    KurahiError,
    LockHeldError,
    QueueFullError,
    SecretFileError,
    SigningKeyError,
    UnknownAgentError,
    UnsafeFileError,
    UsageError,
)

__all__ = ["HTTPError", "error_body", "error_response", "from_kurahi", "hide_paths"]


@dataclass
class HTTPError(Exception):
    """An error with its status, machine code and message."""

    status: int
    code: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)

    def response(self) -> JSONResponse:
        """The JSON response for it."""
        return error_response(self.status, self.code, self.message, self.headers)


def error_body(status: int, code: str, message: str) -> dict[str, Any]:
    """The error JSON."""
    return {"error": {"status": status, "code": code, "message": message}}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """A JSON error response."""
    return JSONResponse(error_body(status, code, message), status_code=status, headers=headers)


def from_kurahi(exc: KurahiError) -> HTTPError:
    """The HTTP error for a library error."""
    if isinstance(exc, SecretFileError):
        return HTTPError(500, "insecure_secret_file", str(exc))
    if isinstance(exc, UnsafeFileError):
        return HTTPError(500, "unsafe_file", str(exc))
    if isinstance(exc, SigningKeyError):
        return HTTPError(500, "signing_key_unusable", str(exc))
    if isinstance(exc, UnknownAgentError):
        return HTTPError(404, "unknown_agent", str(exc))
    if isinstance(exc, QueueFullError):
        return HTTPError(429, "queue_full", str(exc))
    if isinstance(exc, ConfigError):
        return HTTPError(422, "invalid_config", str(exc))
    if isinstance(exc, LockHeldError):
        return HTTPError(409, "busy", str(exc))
    if isinstance(exc, UsageError):
        return HTTPError(400, "bad_request", str(exc))
    if isinstance(exc, CatalogWriteError):
        # Nothing was appended; the gateway retries the write on its own: worth a retry later.
        return HTTPError(503, "catalog_unwritable", str(exc), {"Retry-After": "5"})
    return HTTPError(500, "internal", f"{type(exc).__name__}: {exc}")


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
