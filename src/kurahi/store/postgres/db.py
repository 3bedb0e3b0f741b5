"""The connection pool, and turning the driver's failures into Kurahi's errors (without secrets).

:class:`Database` is what every part of the backend talks to: ``with db.transaction() as
conn`` runs one transaction on a pooled connection (committed when the block ends, rolled
back when it raises). A connection that broke is dropped by the pool and the next one is
new, so a database that went away and came back is reconnected to without anyone asking.
A transaction that fails because the server went away in the middle of it raises
:class:`~kurahi.errors.DatabaseUnavailableError`; it was rolled back (or, for an append
whose commit was under way, the append finds out which, see
:mod:`kurahi.store.postgres.transcripts`).
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import psycopg
import psycopg_pool

from kurahi.errors import DatabaseUnavailableError, StoreDatabaseError
from kurahi.store.postgres.outage import Outage, forget_pool, quiet_pool
from kurahi.store.postgres.url import connection_string, safe_url, scrub

__all__ = ["Conn", "Database"]

Conn = psycopg.Connection[tuple[Any, ...]]
"""A connection (rows are tuples)."""

_POOL_NUMBERS = itertools.count(1)


class Database:
    """A pool of connections to one database (see the module docstring).

    Args:
        url: the ``postgres://`` URL (it may hold a password).
        password: a password from elsewhere (a file, a prompt); ``PGPASSWORD`` and libpq's
            password file work as usual.
        max_connections: the pool's ceiling.
        connect_timeout: seconds to wait for the server when connecting.
        idle_in_transaction: seconds after which the server ends a connection of ours that
            sits in an open transaction doing nothing (``idle_in_transaction_session_timeout``):
            a gateway stopped or stalled in the middle of a write must not hold its row locks,
            and with them every other gateway's open of those sessions, for as long as it
            stays stopped. ``None``: the server's setting.

    Raises:
        UsageError: not a URL libpq can read.
        DatabaseUnavailableError: the server cannot be reached or refuses us (host and database named).
    """

    def __init__(
        self,
        url: str,
        *,
        password: str | None = None,
        max_connections: int = 10,
        connect_timeout: float = 5.0,
        idle_in_transaction: float | None = None,
    ) -> None:
        conninfo, params = connection_string(url, password=password)
        self.where = safe_url(params)
        self._secrets = (params.get("password"), password)
        self._timeout = connect_timeout
        self._idle_since: dict[int, float] = {}
        extra: dict[str, str | int] = {"connect_timeout": max(1, round(connect_timeout))}
        if idle_in_transaction is not None:
            ms = max(1, round(idle_in_transaction * 1000))
            extra["options"] = f"{params.get('options', '')} -c idle_in_transaction_session_timeout={ms}".strip()
        self._conninfo = psycopg.conninfo.make_conninfo(conninfo, **extra)
        self.outage = Outage(self.where, lambda text: scrub(text, self._secrets))
        """Whether the server is away now, and how long it was each time (one warning per outage)."""
        # Connect once by hand first: a server that is down fails here at once, with libpq's
        # reason, instead of after the pool's whole wait.
        with self.connect():
            pass
        self._pool_name = f"kurahi-{next(_POOL_NUMBERS)}"
        quiet_pool(self._pool_name, self.outage)
        self._pool: psycopg_pool.ConnectionPool[Conn] = psycopg_pool.ConnectionPool(
            self._conninfo,
            min_size=1,
            max_size=max(1, max_connections),
            open=False,
            timeout=connect_timeout,
            reconnect_timeout=connect_timeout,
            name=self._pool_name,
            kwargs={"autocommit": True},
            check=self._check,
            reset=self._returned,
        )
        try:
            self._pool.open(wait=True, timeout=connect_timeout)
        except psycopg_pool.PoolTimeout as exc:
            self.close()
            raise self.unavailable(exc) from None

    def __repr__(self) -> str:
        return f"Database({self.where!r})"

    # A connection that sat in the pool for a while is checked (an empty query) before it is
    # handed out, so one the server dropped meanwhile (a restart, a failover, an idle
    # timeout) is replaced instead of failing the caller's work. One used moments ago is
    # not: checking every time would add a round trip to every append. If the server went
    # away in between anyway, that one call fails cleanly (DatabaseUnavailableError) and the
    # pool replaces the broken connection.
    _CHECK_AFTER_IDLE = 1.0

    def _returned(self, conn: Conn) -> None:
        self._idle_since[id(conn)] = time.monotonic()

    def _check(self, conn: Conn) -> None:
        since = self._idle_since.pop(id(conn), None)
        if since is None or time.monotonic() - since > self._CHECK_AFTER_IDLE:
            psycopg_pool.ConnectionPool.check_connection(conn)

    def unavailable(self, exc: BaseException, *, unsent: bool = False) -> DatabaseUnavailableError:
        """The error for a connection that could not be made or broke (the driver's words, scrubbed)."""
        reason = scrub(str(exc).strip() or type(exc).__name__, self._secrets)
        self.outage.down(reason)
        return DatabaseUnavailableError(f"cannot reach the database: {reason}", where=self.where, unsent=unsent)

    def failed(self, exc: psycopg.Error, what: str) -> StoreDatabaseError:
        """The error for a statement the database refused."""
        if isinstance(exc, psycopg.OperationalError):
            return self.unavailable(exc)
        reason = scrub(str(exc).strip(), self._secrets)
        return StoreDatabaseError(f"{what}: {reason}", where=self.where)

    @contextlib.contextmanager
    def connect(self) -> Iterator[Conn]:
        """A connection of its own, outside the pool (migrations; the first contact)."""
        try:
            conn = psycopg.connect(self._conninfo)
        except psycopg.Error as exc:
            raise self.unavailable(exc) from None
        try:
            yield conn
        finally:
            conn.close()

    def own_connection(self) -> Conn:
        """A connection of its own in autocommit mode, outside the pool, for the caller to keep and close.

        Raises:
            DatabaseUnavailableError: the server cannot be reached.
        """
        try:
            return psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.Error as exc:
            raise self.unavailable(exc) from None

    @contextlib.contextmanager
    def connection(self) -> Iterator[Conn]:
        """A pooled connection in autocommit mode: each statement is a transaction of its own.

        For work that is one statement (an append without records, a read): one round trip.

        Raises:
            DatabaseUnavailableError: no connection could be had, or it broke.
        """
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg_pool.PoolTimeout as exc:  # no connection to be had: nothing was sent
            raise self.unavailable(exc, unsent=True) from None
        except psycopg.OperationalError as exc:
            raise self.unavailable(exc) from None
        self.outage.up()

    def query(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None, *, binary: bool = False
    ) -> list[tuple[Any, ...]]:
        """Run one reading statement and return its rows, once more on a new connection if the first broke.

        Only for statements that change nothing (running one twice is harmless). ``binary``
        asks for results in binary form: ``bytea`` comes as its bytes, not twice as many hex digits.

        Raises:
            DatabaseUnavailableError: it failed twice.
        """
        try:
            with self.connection() as conn:
                return conn.execute(sql, params, binary=binary).fetchall()
        except DatabaseUnavailableError:
            with self.connection() as conn:
                return conn.execute(sql, params, binary=binary).fetchall()

    @contextlib.contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[Conn]:
        """One transaction on a pooled connection: committed when the block ends, rolled back when it raises.

        Args:
            durable: ``False`` commits without waiting for the WAL to reach disk
                (``synchronous_commit = off`` for this transaction only): a killed client
                loses nothing, a crashed server may lose the last moments, until a durable
                commit after it (which flushes everything before it).

        Raises:
            DatabaseUnavailableError: no connection could be had, or it broke.
        """
        try:
            with self._pool.connection() as conn, conn.transaction():
                if not durable:
                    conn.execute("SET LOCAL synchronous_commit TO off")
                yield conn
        except psycopg_pool.PoolTimeout as exc:
            raise self.unavailable(exc) from None
        except psycopg.OperationalError as exc:
            raise self.unavailable(exc) from None
        self.outage.up()

    def close(self) -> None:
        """Close every connection."""
        self._pool.close()
        forget_pool(self._pool_name)
