"""Rate limits on credentials: failed attempts per client address, viewer logins per credential.

A token bucket per key: ``burst`` attempts at once, one more every ``every`` seconds. Two
limits use it:

- **Failed credentials, per client address** (bearer tokens on the API, tokens sent to the
  viewer's login): once an address has spent its bucket, its requests that carry a
  credential are answered ``429 too_many_failures`` with ``Retry-After`` *before* the
  credential is checked, so guessing goes no faster than the refill. A correct credential
  from that address waits as well, for at most ``every`` seconds per attempt: on a loopback
  gateway every local client shares one address, so a process that keeps failing slows the
  others there (behind a trusted proxy, ``--trust-proxy``, the address is the forwarded one).
- **Viewer logins, per credential** (the owner token, each device): a credential that logs
  in faster than its bucket allows gets ``429 too_many_logins``; together with the
  per-credential cap on viewer sessions (:mod:`kurahi.ui.access`) a device can neither
  flood the gateway with sessions nor end anyone else's.

State is in memory only and bounded: at most :data:`MAX_KEYS` keys are tracked, the
fullest buckets (those that have refilled) dropped first.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

__all__ = [
    "FAILURES_BURST",
    "FAILURES_EVERY",
    "LOGINS_BURST",
    "LOGINS_EVERY",
    "MAX_KEYS",
    "RateLimiter",
    "retry_after",
]

FAILURES_BURST = 30
"""Failed credentials an address may send at once."""
FAILURES_EVERY = 2.0
"""Seconds until an address may fail once more (30 a minute, sustained)."""
LOGINS_BURST = 10
"""Viewer logins a credential may make at once."""
LOGINS_EVERY = 6.0
"""Seconds until a credential may log in once more (10 a minute, sustained)."""
MAX_KEYS = 4096
"""Keys tracked at most per limiter."""


class RateLimiter:
    """Token buckets by key.

    Args:
        burst: tokens a full bucket holds.
        every: seconds per token refilled.
        clock: a monotonic time source (tests may pass their own).
    """

    def __init__(self, burst: int, every: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.burst = burst
        self.every = every
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, at)

    def _level(self, key: str, now: float) -> float:
        tokens, at = self._buckets.get(key, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - at) / self.every)

    def wait(self, key: str) -> float:
        """Seconds until ``key`` may try again (``0`` when it may now); takes nothing."""
        level = self._level(key, self.clock())
        return 0.0 if level >= 1 else (1 - level) * self.every

    def take(self, key: str) -> float:
        """Spend one token of ``key``: ``0`` when there was one, else the seconds to wait (nothing spent)."""
        now = self.clock()
        level = self._level(key, now)
        if level < 1:
            return (1 - level) * self.every
        self._buckets[key] = (level - 1, now)
        if len(self._buckets) > MAX_KEYS:
            self._prune(now)
        return 0.0

    def _prune(self, now: float) -> None:
        full = [k for k in self._buckets if self._level(k, now) >= self.burst]
        for k in full:
            del self._buckets[k]
        while len(self._buckets) > MAX_KEYS:  # every bucket is busy: drop the oldest
            del self._buckets[next(iter(self._buckets))]


def retry_after(seconds: float) -> dict[str, str]:
    """The ``Retry-After`` header for a wait of ``seconds`` (whole seconds, at least 1)."""
    return {"Retry-After": str(max(1, math.ceil(seconds)))}
