"""One writer per transcript across gateways: lease rows with expiry and fencing tokens.

A lease row says which owner (a gateway's lease owner id) may append to a transcript, until
when (``expires_at``, on the database's clock, so gateways' clocks never disagree), and with
which fencing token. Taking a lease that is free or expired raises its token by one, so a
token names one tenure. Every append runs, in its own transaction::

    UPDATE leases SET expires_at = now() + lease
    WHERE transcript_id = $t AND owner_id = $me AND token = $mine   -- still ours?
    ... INSERT the entry (and its ledger records) only if that matched

so a writer whose lease was taken over writes nothing and learns so
(:class:`~kurahi.errors.LeaseLostError`). The check is the token, not the clock: a lease
that expired but was not taken keeps its token, and renewing it is safe, because any
takeover would have changed the token. Row locks order a renewal and a takeover of the
same lease: whichever commits first wins, the other sees its result.

Leases are held while a transcript is open: renewed by every append, and by a light
background renewal (:class:`Heartbeat`, a thread that every ``lease_seconds / 4`` extends
the owner row and every lease this process holds in one statement) or on demand
(:meth:`~kurahi.store.postgres.backend.PostgresBackend.renew`). Nothing uses session-level
advisory locks, which leak through transaction pooling (PgBouncer): every claim is a row.

Owners: a process claims its owner id in ``owners`` (with a random instance id and an
expiry the heartbeat renews). A second live process with the same owner id is refused
(:class:`~kurahi.errors.OwnerInUseError`); once the first is known dead, the newcomer takes
the id over and frees the leases the dead instance held under it, so its sessions are
writable again at once, by anyone.

**Knowing an owner is dead without waiting for its lease.** Waiting out a lease is the only
proof of death that works whatever happened (a host that lost power, a network cut), but it
costs the whole lease every time a gateway dies. A process that dies the common way (killed,
crashed, out of memory) leaves a faster proof behind: the kernel closes its sockets, and the
server ends the backend of every connection it had. So each process keeps one connection of
its own, outside the pool (its *liveness connection*, the one its heartbeat renews on), and
its owner row names that connection's server process (``conn_pid``, with ``conn_start``, its
start, so a reused pid is not mistaken for it). An owner whose named connection is no longer
in ``pg_stat_activity`` is dead: its leases may be taken at once (:data:`SQL_ACQUIRE`) and its
owner id claimed at once (:data:`SQL_CLAIM_OWNER`). Every other case waits for the lease: a
process that is stopped or stalled still has its connection, and so does one on a host that
vanished until TCP gives up on it; an owner row with no connection named (written before
schema version 2) is alive until it expires; a role that may not see another role's
``backend_start`` compares the pid alone. A wrong verdict of "dead" (an administrator
terminating the liveness connection; a connection pooler in transaction mode, where the
pid is a shared server connection) costs a live gateway its sessions, never a stale write:
fencing is the token, checked in every write transaction, whoever decided the takeover. The
heartbeat reconnects a broken liveness connection and names the new one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

__all__ = [
    "SQL_ACQUIRE",
    "SQL_CLAIM_OWNER",
    "SQL_FREE_DEAD_OWNER_LEASES",
    "SQL_HOLDER",
    "SQL_LIVE_INSTANCES",
    "SQL_OWNER_HOLDER",
    "SQL_RELEASE",
    "SQL_RELEASE_OWNER",
    "SQL_RENEW_ALL",
    "SQL_RENEW_OWNER",
    "Heartbeat",
    "Leased",
]

_OWNER_ALIVE = """(o.conn_pid IS NULL OR EXISTS (
    SELECT 1 FROM pg_stat_activity a
    WHERE a.pid = o.conn_pid AND (a.backend_start IS NULL OR a.backend_start = o.conn_start)))"""
"""Whether the owner row ``o`` may still be alive: its liveness connection is still there (or none is named)."""

_THIS_CONNECTION = "pg_backend_pid(), (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())"
"""The server process of the connection running the statement, and its start (what an owner row names)."""

SQL_ACQUIRE = f"""
INSERT INTO kurahi.leases AS l (transcript_id, owner_id, token, expires_at)
VALUES (%(t)s, %(owner)s, 1, now() + make_interval(secs => %(secs)s))
ON CONFLICT (transcript_id) DO UPDATE
SET owner_id = excluded.owner_id, token = l.token + 1, expires_at = excluded.expires_at
WHERE l.owner_id IS NULL OR l.expires_at <= now()
   OR EXISTS (SELECT 1 FROM kurahi.owners o WHERE o.owner_id = l.owner_id AND NOT {_OWNER_ALIVE})
RETURNING token
"""
"""Take the lease of transcript ``t`` if it is free, expired, or its owner is known dead; the new token, or no row."""

SQL_HOLDER = """
SELECT owner_id, greatest(0, extract(epoch FROM expires_at - now()))::float8
FROM kurahi.leases WHERE transcript_id = %s
"""
"""Who holds a lease and for how many more seconds (for the refusal's message)."""

SQL_RELEASE = """
UPDATE kurahi.leases SET owner_id = NULL, expires_at = now()
WHERE transcript_id = %(t)s AND owner_id = %(owner)s AND token = %(token)s
"""
"""Give a lease up (only if it is still ours); the token stays, so the next holder's is higher."""

SQL_RENEW_ALL = """
UPDATE kurahi.leases SET expires_at = now() + make_interval(secs => %(secs)s)
WHERE owner_id = %(owner)s AND (transcript_id, token) IN (SELECT * FROM unnest(%(ts)s::bigint[], %(tokens)s::bigint[]))
RETURNING transcript_id
"""
"""Extend every lease this process holds (by transcript and token); the ones still ours."""

SQL_CLAIM_OWNER = f"""
INSERT INTO kurahi.owners AS o (owner_id, instance, expires_at, conn_pid, conn_start)
VALUES (%(owner)s, %(instance)s, now() + make_interval(secs => %(secs)s), {_THIS_CONNECTION})
ON CONFLICT (owner_id) DO UPDATE
SET instance = excluded.instance, started_at = now(), expires_at = excluded.expires_at,
    conn_pid = excluded.conn_pid, conn_start = excluded.conn_start
WHERE o.expires_at <= now() OR o.instance = excluded.instance OR NOT {_OWNER_ALIVE}
RETURNING (SELECT instance FROM kurahi.owners WHERE owner_id = %(owner)s)
"""
"""Claim an owner id (on the liveness connection) unless a live process holds it; the previous instance, or no row.

Its holder is dead when its claim expired or its liveness connection is gone."""

SQL_OWNER_HOLDER = """
SELECT started_at, greatest(0, extract(epoch FROM expires_at - now()))::float8
FROM kurahi.owners WHERE owner_id = %s
"""

SQL_LIVE_INSTANCES = f"SELECT instance FROM kurahi.owners o WHERE expires_at > now() AND {_OWNER_ALIVE}"
"""The instances whose claim runs and whose liveness connection is there: the processes alive on this database."""

SQL_FREE_DEAD_OWNER_LEASES = "UPDATE kurahi.leases SET owner_id = NULL, expires_at = now() WHERE owner_id = %s"
"""Free every lease held under an owner id whose previous process is known dead."""

SQL_RENEW_OWNER = """
UPDATE kurahi.owners SET expires_at = now() + make_interval(secs => %(secs)s),
    conn_pid = pg_backend_pid(), conn_start = (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())
WHERE owner_id = %(owner)s AND instance = %(instance)s
RETURNING 1
"""
"""Extend this process's claim, naming the connection it runs on (the liveness connection, new after a reconnect)."""

SQL_RELEASE_OWNER = "DELETE FROM kurahi.owners WHERE owner_id = %(owner)s AND instance = %(instance)s"


class Leased(Protocol):
    """What holds a lease this process renews: a transcript open for appending, or an activation's claim."""

    transcript_id: int
    token: int

    def lost(self) -> None:
        """The renewal found the lease taken over: refuse every later write."""

    def close(self) -> None:
        """Give the lease up."""


class Heartbeat:
    """A daemon thread calling ``beat`` every ``every`` seconds until :meth:`stop`.

    It waits on an event, not a sleep, so :meth:`stop` ends it at once. ``beat`` must not
    raise for a database that is briefly away (it logs nothing with secrets; the next beat
    tries again, and appends are fenced whatever happens here).
    """

    def __init__(self, beat: Callable[[], None], every: float, *, name: str = "kurahi-lease-renewal") -> None:
        self._beat = beat
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self._beat()

    def stop(self) -> None:
        """End the thread and wait for it."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
