"""What the SDK-backed providers tell about a failed HTTP call: the host it went to, and ``Retry-After``.

Both SDKs raise errors that carry the request (its URL) and, for an error status, the
response (its headers). The host is named so that an operator can tell *which* endpoint
was unreachable; the path and query are not, since some services take a key in the query,
and the key itself is only ever in a header that nothing here reads.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["endpoint_host", "retry_after_seconds"]


def endpoint_host(exc: Any, fallback: str | None = None) -> str:
    """``host:port`` of the request behind an SDK error (or of ``fallback``, a base URL), never its path or query."""
    url: Any = None
    request = getattr(exc, "request", None)
    if request is not None:
        url = getattr(request, "url", None)
    if url is not None and getattr(url, "host", None):
        port = getattr(url, "port", None)
        return f"{url.host}:{port}" if port else str(url.host)
    if fallback:
        import httpx

        try:
            parsed = httpx.URL(fallback)
        except (httpx.InvalidURL, TypeError):
            return "the configured endpoint"
        if parsed.host:
            return f"{parsed.host}:{parsed.port}" if parsed.port else parsed.host
    return "the provider's default endpoint"


def retry_after_seconds(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (``None`` if absent or unreadable).

    Both forms of RFC 9110 are read: a number of seconds, or an HTTP date. OpenAI's and
    Anthropic's ``retry-after-ms`` (milliseconds) is preferred when present.
    """
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000
        except ValueError:
            value = -1.0
        if 0 <= value < float("inf"):
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
        return max(0.0, seconds)
    return seconds if 0 <= seconds < float("inf") else None
