"""A transcript's lease held to replace or remove it whole (an activation), fenced like an append.

:meth:`PostgresTranscripts.claim <kurahi.store.postgres.transcripts.PostgresTranscripts.claim>`
takes the transcript's lease as a writer would (free, expired, or its owner known dead), or,
asked to take over, from a live gateway too: the token goes up by one, so that gateway's next
append (and its next renewal) finds its token stale and writes nothing. The claim is renewed
in the background like any lease this process holds. Every change runs in one transaction
that locks the transcript's row (an append takes the same lock, so the two never interleave),
checks the lease is still ours with our token, compares the stored bytes' sha256 with what
the caller expects, and only then replaces every line, or deletes the transcript.
"""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

import psycopg

from kurahi.errors import LeaseLostError, LockHeldError, StoreDatabaseError, TranscriptChangedError
from kurahi.store.base import TranscriptClaim
from kurahi.store.postgres.db import Conn
from kurahi.store.postgres.leases import SQL_ACQUIRE, SQL_HOLDER, SQL_RELEASE
from kurahi.store.postgres.rows import SQL_CREATE, SQL_INSERT_LINES, split_lines
from kurahi.store.postgres.scope import AgentScope

__all__ = ["SQL_TAKE_OVER", "ClaimedStore", "PostgresClaim", "take_claim"]


class ClaimedStore(Protocol):
    """The transcripts a claim is taken on, as the claim uses them.

    :class:`~kurahi.store.postgres.transcripts.PostgresTranscripts` is one.
    """

    @property
    def agent(self) -> AgentScope:
        """The agent whose transcripts they are."""
        ...

    def sha256(self, name: str) -> str | None:
        """The stored bytes' sha256 (``None``: no such transcript)."""
        ...

    def locator(self, name: str) -> str:
        """Where ``name`` is, for messages (without the database's secret)."""
        ...


SQL_TAKE_OVER = """
UPDATE kurahi.leases SET owner_id = %(owner)s, token = token + 1, expires_at = now() + make_interval(secs => %(secs)s)
WHERE transcript_id = %(t)s
RETURNING token
"""
"""Take a lease from whoever holds it: a new token, so the holder is fenced off at its next write."""
SQL_FIND_LOCKED = "SELECT id FROM kurahi.transcripts WHERE agent_id = %s AND name = %s FOR UPDATE"
SQL_FENCE = """
SELECT 1 FROM kurahi.leases WHERE transcript_id = %(t)s AND owner_id = %(owner)s AND token = %(token)s FOR UPDATE
"""
SQL_LINES = "SELECT line FROM kurahi.entries WHERE transcript_id = %s ORDER BY seq"
SQL_CLEAR = "DELETE FROM kurahi.entries WHERE transcript_id = %s"
SQL_RESIZE = "UPDATE kurahi.transcripts SET size = %s, last_seq = %s, modified_at = now() WHERE id = %s"
SQL_DROP = "DELETE FROM kurahi.transcripts WHERE id = %s"
"""Remove a transcript; its lines and its lease go with it (``ON DELETE CASCADE``)."""


def take_claim(store: ClaimedStore, name: str, *, take_over: bool) -> PostgresClaim:
    """The claim on ``name`` (see the module docstring).

    Raises:
        LockHeldError: a live writer holds the lease and ``take_over`` is false.
    """
    backend = store.agent.backend
    params: dict[str, Any] = {"owner": backend.owner_id, "secs": backend.lease_seconds}
    try:
        with backend.db.transaction() as conn:
            row = conn.execute(SQL_FIND_LOCKED, (store.agent.agent_id, name)).fetchone()
            if row is None:
                return PostgresClaim(store, name, None, None)  # created by put, under a lease of ours
            params["t"] = tid = int(row[0])
            got = conn.execute(SQL_ACQUIRE, params).fetchone()
            if got is None:
                if not take_over:
                    holder = conn.execute(SQL_HOLDER, (tid,)).fetchone()
                    who = holder[0] if holder else "?"
                    raise LockHeldError(f"transcript {name} is open for writing by {who}", path=store.locator(name))
                got = conn.execute(SQL_TAKE_OVER, params).fetchone()
            assert got is not None  # the lease row exists: SQL_ACQUIRE made or kept it
    except psycopg.Error as exc:
        raise backend.db.failed(exc, "claim a transcript") from None
    return PostgresClaim(store, name, tid, int(got[0]))


class PostgresClaim(TranscriptClaim):
    """A lease on one transcript, held to replace or remove it (see the module docstring)."""

    def __init__(self, store: ClaimedStore, name: str, tid: int | None, token: int | None) -> None:
        self._store = store
        self._backend = store.agent.backend
        self.name = name
        self.locator = store.locator(name)
        self.transcript_id = tid if tid is not None else 0
        self.token = token if token is not None else 0
        self._held = tid is not None
        self._lost = False
        if self._held:
            self._backend.hold(self)

    def sha256(self) -> str | None:
        """See :meth:`TranscriptClaim.sha256`."""
        return self._store.sha256(self.name)

    def lost(self) -> None:
        """The background renewal found the lease taken: every later change is refused."""
        self._lost = True

    def _sha(self, conn: Conn, tid: int) -> str:
        h = hashlib.sha256()
        with conn.cursor(binary=True) as cur:
            for (line,) in cur.execute(SQL_LINES, (tid,)):
                h.update(line)
        return h.hexdigest()

    def _locked(self, conn: Conn, expected: str | None) -> int | None:
        """The transcript's id, its row locked, once it is as expected and the lease still ours."""
        row = conn.execute(SQL_FIND_LOCKED, (self._store.agent.agent_id, self.name)).fetchone()
        tid = None if row is None else int(row[0])
        actual = None if tid is None else self._sha(conn, tid)
        if actual != expected:
            raise TranscriptChangedError(
                "changed since it was looked at; nothing was written",
                path=self.locator,
                expected=expected,
                actual=actual,
            )
        if tid is not None:
            fence = {"t": tid, "owner": self._backend.owner_id, "token": self.token}
            if self._lost or tid != self.transcript_id or conn.execute(SQL_FENCE, fence).fetchone() is None:
                self._lost = True
                raise LeaseLostError(
                    "this activation's lease was taken by another writer; nothing was changed", path=self.locator
                )
        return tid

    def put(self, data: bytes, *, expected: str | None) -> None:
        """See :meth:`TranscriptClaim.put` (one transaction: the check, the fence and every line)."""
        agent = self._store.agent
        lines = split_lines(data)
        seqs = list(range(1, len(lines) + 1))
        created: tuple[int, int] | None = None
        try:
            with self._backend.db.transaction() as conn:
                agent.ensure_agent(conn)
                tid = self._locked(conn, expected)
                if tid is None:
                    row = conn.execute(SQL_CREATE, (agent.agent_id, self.name, len(data), len(lines))).fetchone()
                    if row is None:  # made meanwhile by someone else (our lock could not cover a missing row)
                        raise TranscriptChangedError(
                            "appeared meanwhile; never written over", path=self.locator, expected=None, actual="?"
                        )
                    tid = int(row[0])
                    conn.execute(SQL_INSERT_LINES, (tid, seqs, lines))
                    params = {"t": tid, "owner": self._backend.owner_id, "secs": self._backend.lease_seconds}
                    token = conn.execute(SQL_ACQUIRE, params).fetchone()
                    assert token is not None  # a new transcript has no lease yet
                    created = (tid, int(token[0]))
                else:
                    conn.execute(SQL_CLEAR, (tid,))
                    conn.execute(SQL_INSERT_LINES, (tid, seqs, lines))
                    conn.execute(SQL_RESIZE, (len(data), len(lines), tid))
            agent.known()
        except psycopg.Error as exc:
            raise self._backend.db.failed(exc, "replace a transcript") from None
        if created is not None:
            self._backend.drop(self)
            self.transcript_id, self.token = created
            self._held = True
            self._backend.hold(self)

    def remove(self, *, expected: str) -> None:
        """See :meth:`TranscriptClaim.remove` (its lines and its lease go with it)."""
        try:
            with self._backend.db.transaction() as conn:
                tid = self._locked(conn, expected)
                conn.execute(SQL_DROP, (tid,))
        except psycopg.Error as exc:
            raise self._backend.db.failed(exc, "remove a transcript") from None
        self._backend.drop(self)
        self._held = False

    def release(self) -> None:
        """Give the lease up (the token stays, so the next holder's is higher). Releasing twice is harmless."""
        if not self._held:
            return
        self._held = False
        self._backend.drop(self)
        if self._lost:
            return
        params = {"t": self.transcript_id, "owner": self._backend.owner_id, "token": self.token}
        try:
            with self._backend.db.connection() as conn:
                conn.execute(SQL_RELEASE, params)
        except (StoreDatabaseError, psycopg.Error):
            pass  # the database is away: the lease expires on its own

    def close(self) -> None:
        """:meth:`release` (what the backend calls on every lease it holds when it closes)."""
        self.release()
