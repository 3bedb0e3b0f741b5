"""The PostgreSQL backend: every store of :mod:`kurahi.store.base` in one database, for many gateways.

::

    backend = PostgresBackend("postgres://kurahi@db.internal/kurahi", home=home, owner_id="gw-1")
    agent = backend.agent("main", create=True)
    with Session.create_in(agent.transcripts, "s1.jsonl") as s: ...

Connections come from a pool (:mod:`kurahi.store.postgres.db`); the schema is created or
brought up to date at start (:mod:`~kurahi.store.postgres.migrations`; ``migrate=False`` refuses
an old one instead) and a schema newer than the code is refused. The process claims its
lease owner id (:mod:`~kurahi.store.postgres.leases`) on a connection of its own, its
liveness connection (the server ends it when the process dies, which is how the others know
at once), and renews its claim and its leases on it in the background every ``lease_seconds / 4``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg

from kurahi.errors import OwnerInUseError, StoreDatabaseError, UsageError
from kurahi.store.base import AgentStore, Backend, LogName
from kurahi.store.names import check_agent_id
from kurahi.store.postgres.audit import PostgresAudit
from kurahi.store.postgres.catalog import PostgresCatalog
from kurahi.store.postgres.db import Conn, Database
from kurahi.store.postgres.leases import (
    SQL_CLAIM_OWNER,
    SQL_FREE_DEAD_OWNER_LEASES,
    SQL_LIVE_INSTANCES,
    SQL_OWNER_HOLDER,
    SQL_RELEASE_OWNER,
    SQL_RENEW_ALL,
    SQL_RENEW_OWNER,
    Heartbeat,
)
from kurahi.store.postgres.logs import PostgresLog
from kurahi.store.postgres.migrations import MigrationResult, check_version, migrate
from kurahi.store.postgres.transcripts import PostgresTranscripts

if TYPE_CHECKING:
    from kurahi.store.postgres.leases import Leased

__all__ = ["DEFAULT_LEASE_SECONDS", "PostgresAgentStore", "PostgresBackend"]

DEFAULT_LEASE_SECONDS = 4.0
"""How long a lease outlives its last renewal: how long a gateway that is alive but silent (stopped, cut off) keeps
its sessions. One that died frees them as soon as the database has ended its liveness connection."""

SQL_ENSURE_AGENT = "INSERT INTO kurahi.agents (id) VALUES (%s) ON CONFLICT DO NOTHING"
SQL_AGENT_IDS = "SELECT id FROM kurahi.agents"


class PostgresAgentStore(AgentStore):
    """One agent's stores in the database."""

    def __init__(self, backend: PostgresBackend, agent_id: str) -> None:
        self.backend = backend
        self.agent_id = check_agent_id(agent_id)
        self._known = False
        self.transcripts = PostgresTranscripts(self)
        self.catalog = PostgresCatalog(self)

    def __repr__(self) -> str:
        return f"PostgresAgentStore({self.backend.describe()!r}, {self.agent_id!r})"

    def ensure_agent(self, conn: Conn) -> None:
        """Make the agent's row in ``conn``'s transaction, unless it is known to exist (agents are never removed)."""
        if not self._known:
            conn.execute(SQL_ENSURE_AGENT, (self.agent_id,))

    def known(self) -> None:
        """Note that the agent's row exists (a transaction that made it committed)."""
        self._known = True

    def log(self, name: LogName, *, durable: bool = True) -> PostgresLog:
        """See :meth:`AgentStore.log` (``durable=False`` commits without waiting for the disk)."""
        if name not in ("ledger", "jobs", "queue"):
            raise UsageError(f"no record log {name!r}: ledger, jobs or queue")
        return PostgresLog(self, name, durable=durable)


class PostgresBackend(Backend):
    """Everything in one PostgreSQL database (see the module docstring).

    Args:
        url: ``postgres://`` or ``postgresql://`` URL; a password in it is used, never shown.
        home: the Kurahi home (identity, memory, config and secrets stay files there).
        owner_id: this process's lease owner id, unique among live gateways on this database
            (default: ``<host>-<pid>-<random>``).
        lease_seconds: how long a lease lasts past its last renewal.
        renew_in_background: renew the owner claim and every lease held every
            ``lease_seconds / 4`` in a daemon thread; ``False`` renews only on appends and
            :meth:`renew` (tests that let leases lapse on purpose).
        password: a password from elsewhere (``--password-file``); ``PGPASSWORD`` works too.
        migrate: create or update the schema at start (else an old schema is refused).
        max_connections: the pool's size.
        connect_timeout: seconds to wait for the server.

    Raises:
        UsageError: not a URL libpq reads.
        DatabaseUnavailableError: the server cannot be reached (host and database named, no password).
        SchemaVersionError: the schema is newer than this code (or old, with ``migrate=False``).
        OwnerInUseError: another live process uses ``owner_id`` here.
    """

    kind = "postgres"
    shared = True  # gateways on several machines, each with its leases
    fences_writers = True  # a lease taken over makes the old writer's fencing token stale
    persistent = True
    directory = None

    def __init__(
        self,
        url: str,
        *,
        home: str | os.PathLike[str],
        owner_id: str | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        renew_in_background: bool = True,
        password: str | None = None,
        migrate: bool = True,
        max_connections: int = 10,
        connect_timeout: float = 5.0,
    ) -> None:
        if not lease_seconds > 0:
            raise UsageError("lease_seconds must be positive")
        self.home = Path(home)
        self.lease_seconds = float(lease_seconds)
        self.owner_id = owner_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._instance = uuid.uuid4().hex
        self.fault_point: Callable[[str], None] = _no_fault
        """Called at named points inside write transactions (tests inject failures here)."""
        self._held: dict[int, Leased] = {}
        self._held_mutex = threading.Lock()
        self._heartbeat: Heartbeat | None = None
        self._liveness: Conn | None = None
        self._liveness_mutex = threading.Lock()
        """Serialises the transactions on the liveness connection (the heartbeat, :meth:`renew`, :meth:`close`)."""
        self._closed = False
        self.migration: MigrationResult | None = None
        # A transaction left open by a process that stopped mid-write ends after a lease: by
        # then that process has lost its leases anyway, and its row locks no longer stall
        # the gateway taking its sessions.
        self.db = Database(
            url,
            password=password,
            max_connections=max_connections,
            connect_timeout=connect_timeout,
            idle_in_transaction=self.lease_seconds,
        )
        try:
            with self.db.connect() as conn:
                if migrate:
                    self.migration = _migrate(conn, self.db)
                else:
                    check_version(conn, self.db.where)
            self._claim_owner()
            if renew_in_background:
                self._heartbeat = Heartbeat(self.renew, self.lease_seconds / 4)
        except BaseException:
            self._drop_liveness()
            self.db.close()
            raise
        self._audit = PostgresAudit(self.db, self.db.where)

    def __repr__(self) -> str:
        return f"PostgresBackend({self.db.where!r}, owner_id={self.owner_id!r})"

    @property
    def instance(self) -> str:
        """The instance id of this process (a new one each start; its owner id may be reused)."""
        return self._instance

    def live_instances(self) -> frozenset[str] | None:
        """The instances whose claim runs and whose liveness connection is there (the gateways alive here)."""
        return frozenset(str(r[0]) for r in self.db.query(SQL_LIVE_INSTANCES))

    def describe(self) -> str:
        """``postgresql://user@host:port/db``, never the password."""
        return self.db.where

    # -- owners and leases ---------------------------------------------------------------------

    def _liveness_connection(self) -> Conn:
        """The liveness connection, made again if it broke (call with ``_liveness_mutex`` held)."""
        conn = self._liveness
        if conn is None or conn.closed or conn.broken:
            self._drop_liveness()
            conn = self._liveness = self.db.own_connection()
        return conn

    def _drop_liveness(self) -> None:
        conn, self._liveness = self._liveness, None
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                conn.close()

    def _claim_owner(self) -> None:
        params = {"owner": self.owner_id, "instance": self.instance, "secs": self.lease_seconds}
        # On the liveness connection: the claim names the connection it is made on.
        with self._liveness_mutex:
            conn = self._liveness_connection()
            try:
                self._claim_on(conn, params)
            except psycopg.Error as exc:
                raise self.db.failed(exc, "claim the lease owner id") from None

    def _claim_on(self, conn: Conn, params: dict[str, object]) -> None:
        with conn.transaction():
            row = conn.execute(SQL_CLAIM_OWNER, params).fetchone()
            if row is None:
                holder = conn.execute(SQL_OWNER_HOLDER, (self.owner_id,)).fetchone()
                since, left = (holder[0], float(holder[1])) if holder else ("?", 0.0)
                raise OwnerInUseError(
                    f"lease owner id {self.owner_id!r} is in use by another live process on this database "
                    f"(since {since}; its connection is open and its claim runs {left:.1f} s more unless "
                    "renewed); give each gateway its own owner id",
                    path=self.db.where,
                )
            if row[0] is not None and row[0] != self.instance:
                # The previous process with this owner id is gone (its liveness connection
                # closed, or it stopped renewing), and so are its leases. Free them now
                # rather than after each one expires.
                conn.execute(SQL_FREE_DEAD_OWNER_LEASES, (self.owner_id,))

    def hold(self, handle: Leased) -> None:
        """Count ``handle``'s lease among those renewed in the background."""
        with self._held_mutex:
            self._held[handle.transcript_id] = handle

    def drop(self, handle: Leased) -> None:
        """Stop renewing ``handle``'s lease."""
        with self._held_mutex:
            if self._held.get(handle.transcript_id) is handle:
                del self._held[handle.transcript_id]

    def renew(self) -> None:
        """Renew this process's owner claim and every lease it holds (what the background renewal runs).

        A lease that turns out to be gone (taken over after it lapsed) marks its handle lost,
        so its next append fails at once. A database that is away is tried again next time.
        """
        with self._held_mutex:
            held = dict(self._held)
        with self._liveness_mutex:
            if self._closed:
                return
            # A connection that broke since the last beat is found broken only by using it:
            # then once more on a new one, so that the others take this process for dead
            # (and may take its leases, which fencing keeps safe) for as short a time as can be.
            for _ in range(2):
                try:
                    self._renew_on(self._liveness_connection(), held)
                    return
                except (StoreDatabaseError, psycopg.Error):
                    self._drop_liveness()  # the database is away: the next beat tries again

    def _renew_on(self, conn: Conn, held: dict[int, Leased]) -> None:
        kept: set[int] = set()
        with conn.transaction():
            mine = {"owner": self.owner_id, "instance": self.instance, "secs": self.lease_seconds}
            conn.execute(SQL_RENEW_OWNER, mine)
            if held:
                params = {
                    "owner": self.owner_id,
                    "secs": self.lease_seconds,
                    "ts": list(held),
                    "tokens": [h.token for h in held.values()],
                }
                kept = {int(r[0]) for r in conn.execute(SQL_RENEW_ALL, params)}
        for tid, handle in held.items():
            if tid not in kept:
                handle.lost()

    # -- the stores ---------------------------------------------------------------------------

    def agent(self, agent_id: str, *, create: bool = False) -> PostgresAgentStore:
        """See :meth:`Backend.agent`."""
        store = PostgresAgentStore(self, agent_id)
        if create:
            with self.db.transaction() as conn:
                store.ensure_agent(conn)
            store.known()
        return store

    def agent_ids(self) -> list[str]:
        """See :meth:`Backend.agent_ids`."""
        return sorted(r[0] for r in self.db.query(SQL_AGENT_IDS))

    def audit(self) -> PostgresAudit:
        """See :meth:`Backend.audit`."""
        return self._audit

    def close(self) -> None:
        """Stop renewing, give up every lease and the owner claim, close the pool. Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        if self._heartbeat is not None:
            self._heartbeat.stop()
        with self._held_mutex:
            held = list(self._held.values())
        for handle in held:
            handle.close()
        with self._liveness_mutex:
            with contextlib.suppress(StoreDatabaseError, psycopg.Error), self.db.transaction() as conn:
                conn.execute(SQL_RELEASE_OWNER, {"owner": self.owner_id, "instance": self.instance})
            self._drop_liveness()
        self.db.close()


def _no_fault(point: str) -> None:
    """No failure injected."""


def _migrate(conn: Conn, db: Database) -> MigrationResult:
    return migrate(conn, db.where)
