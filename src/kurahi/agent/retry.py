"""When a failed model call is tried again, and how long to wait first: pure decisions.

A call is retried only when trying again can help and cannot hurt: a 429 (rate limited),
a 5xx (the service's own trouble) or a connection that could not be made or was dropped,
and only when no part of the reply had arrived (the turn loop checks that). A timeout is
not retried: the profile's ``timeoutS`` is the operator's word on how long a call may take.

Waits grow exponentially with *full jitter* (a random wait up to the ceiling, so that many
sessions rate-limited at once do not come back at once), and are never shorter than a
``Retry-After`` the provider sent. A provider asking for a longer wait than the profile's
``maxRetryAfterMs`` fails the call at once: a turn must not hang for an hour.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Literal

from kurahi.agent.config import Backoff
from kurahi.errors import ProviderConnectionError, ProviderError, ProviderTimeoutError

__all__ = ["RetryReason", "backoff_delay", "retry_reason"]

RetryReason = Literal["rate_limited", "server_error", "connection"]


def retry_reason(exc: ProviderError) -> RetryReason | None:
    """Why ``exc`` may be retried (``None``: it may not)."""
    if isinstance(exc, ProviderTimeoutError):
        return None
    if isinstance(exc, ProviderConnectionError):
        return "connection"
    if exc.status == 429:
        return "rate_limited"
    if exc.status is not None and 500 <= exc.status <= 599:
        return "server_error"
    return None


def backoff_delay(
    attempt: int, backoff: Backoff, retry_after: float | None = None, *, rand: Callable[[], float] = random.random
) -> float | None:
    """Seconds to wait before retry number ``attempt`` (from 1); ``None`` when ``Retry-After`` is too long.

    Args:
        attempt: which retry this is (1 for the first).
        backoff: the profile's settings.
        retry_after: the provider's ``Retry-After``, in seconds, when it sent one.
        rand: a source of numbers in ``[0, 1)`` (tests pin it).
    """
    ceiling = min(backoff.max_ms, backoff.initial_ms * backoff.multiplier ** (attempt - 1)) / 1000
    wait = rand() * ceiling
    if retry_after is not None:
        if retry_after * 1000 > backoff.max_retry_after_ms:
            return None
        wait = max(wait, retry_after)
    return wait
