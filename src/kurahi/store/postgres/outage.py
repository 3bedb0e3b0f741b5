"""One warning per database outage, not one per failed attempt.

While the server is away, every pooled connection that breaks and every reconnection the
pool tries logs a warning of psycopg's own, several a second for as long as it lasts; a
log full of them hides when the outage began and whether it ended. :class:`Outage` keeps
the state instead: the first failure logs one warning (``kurahi.store.postgres``: the
database, the reason, what requests answer meanwhile); the outage is over once statements
have succeeded for :data:`QUIET` seconds with no failure among them (each pooled connection
the server dropped fails once when it is next used, so a single success does not end it),
and then one line says how long it lasted, from the first failure to the first success
after the last one. The pool's own warnings about connecting and broken connections are
dropped (:func:`quiet_pool`); one that says it cannot connect counts as a failure. The
durations are kept (:attr:`Outage.durations`) for whoever measures recovery.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["LOGGER", "QUIET", "Outage", "forget_pool", "quiet_pool"]

QUIET = 2.0
"""Seconds of successes with no failure that end an outage (the pool checks a connection idle for a second)."""

LOGGER = logging.getLogger("kurahi.store.postgres")
"""Where the outage warnings go."""

_POOL_LOGGER = "psycopg.pool"
# The pool's per-attempt messages while the server is away (psycopg_pool's wording); any other
# warning of the pool (a connection returned mid-transaction: a bug) still gets through.
_NOISE = (
    "error connecting in",
    "reconnection attempt in pool",
    "discarding broken connection",
    "discarding closed connection",
    "task run",
    "error resetting connection",
)
_pools: dict[str, Outage] = {}
_pools_mutex = threading.Lock()


class Outage:
    """Whether one database is away now, and how long each time it was (see the module docstring)."""

    def __init__(self, where: str, scrub: Callable[[str], str] = str) -> None:
        self.where = where
        self._scrub = scrub
        self.since: float | None = None
        """``time.monotonic()`` when the current outage was first seen (``None``: reachable)."""
        self.failures = 0
        """Failures seen during the current outage."""
        self._back: float | None = None
        """The first success after the last failure (``None``: none yet)."""
        self.durations: list[float] = []
        """Seconds each past outage lasted, from its first failure to the first success after it."""
        self._mutex = threading.Lock()

    def down(self, reason: str) -> None:
        """A statement or connection failed because the server is away: warn once per outage."""
        with self._mutex:
            self.failures += 1
            self._back = None
            if self.since is not None:
                return
            self.since = time.monotonic()
        LOGGER.warning(
            "%s cannot be reached (%s); requests that need it answer 503 store_unavailable until it is back",
            self.where,
            self._scrub(reason.strip().splitlines()[0] if reason.strip() else "no reason given"),
        )

    def up(self) -> None:
        """A statement succeeded: an outage in progress is over once they have for :data:`QUIET` seconds."""
        if self.since is None:  # the common case, without taking the lock
            return
        with self._mutex:
            if self.since is None:
                return
            now = time.monotonic()
            if self._back is None:
                self._back = now
            if now - self._back < QUIET:
                return
            took, failures = self._back - self.since, self.failures
            self.since, self.failures, self._back = None, 0, None
            self.durations.append(took)
        LOGGER.warning("%s is reachable again after %.1f s (%d failures meanwhile)", self.where, took, failures)


class _PoolFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.WARNING or not isinstance(record.msg, str) or not record.msg.startswith(_NOISE):
            return True
        name = record.args[0] if isinstance(record.args, tuple) and record.args else None
        with _pools_mutex:
            # A message that names no pool is put down to the only one, if there is one.
            outage = _pools.get(name) if isinstance(name, str) else None
            if outage is None and len(_pools) == 1:
                outage = next(iter(_pools.values()))
        if outage is not None and record.msg.startswith("error connecting in"):
            # Not being able to connect is an outage; a broken connection thrown away is not
            # one by itself (the statement that used it failed, and said so).
            error = record.args[1] if isinstance(record.args, tuple) and len(record.args) > 1 else record.msg
            outage.down(str(error))
        return False


_FILTER = _PoolFilter()


def quiet_pool(name: str, outage: Outage) -> None:
    """Route the warnings of the pool called ``name`` to ``outage`` (installs the filter once)."""
    with _pools_mutex:
        _pools[name] = outage
    logger = logging.getLogger(_POOL_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def forget_pool(name: str) -> None:
    """Stop routing a closed pool's warnings."""
    with _pools_mutex:
        _pools.pop(name, None)
