"""Transcripts as rows: one row per line, exactly as written, appended under a lease.

A transcript is ``transcripts`` (its name, size, last ``seq``) and its lines in ``entries``;
reading it back is the concatenation of its lines in ``seq`` order, byte for byte what the
file backend would hold. An append is one transaction: check and renew the lease (see
:mod:`kurahi.store.postgres.leases`), insert the line at the next ``seq``, and insert the
ledger records that belong with it, so an entry and its records are stored together or not
at all.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import msgspec
import psycopg

from kurahi.errors import (
    AppendError,
    AppendOutcomeUnknownError,
    DatabaseUnavailableError,
    LeaseLostError,
    LockHeldError,
    TranscriptReadError,
    UsageError,
)
from kurahi.pi.transcript import Transcript
from kurahi.store.base import RecordLog, TranscriptHandle, TranscriptInfo, TranscriptStore
from kurahi.store.names import check_transcript_name
from kurahi.store.postgres.leases import SQL_ACQUIRE, SQL_HOLDER, SQL_RELEASE
from kurahi.store.postgres.logs import SQL_APPEND_RECORDS, PostgresLog
from kurahi.store.postgres.rows import SQL_CREATE, SQL_INSERT_LINES, split_lines
from kurahi.store.postgres.scope import AgentScope
from kurahi.store.record_log import encode_record

if TYPE_CHECKING:
    from kurahi.store.postgres.claims import PostgresClaim

__all__ = ["PostgresHandle", "PostgresTranscripts"]

SQL_FIND = "SELECT id FROM kurahi.transcripts WHERE agent_id = %s AND name = %s"
SQL_APPEND = """
WITH lease AS (
    UPDATE kurahi.leases SET expires_at = now() + make_interval(secs => %(secs)s)
    WHERE transcript_id = %(t)s AND owner_id = %(owner)s AND token = %(token)s
    RETURNING transcript_id
), grown AS (
    UPDATE kurahi.transcripts SET last_seq = %(seq)s, size = size + %(n)s, modified_at = now()
    WHERE id IN (SELECT transcript_id FROM lease) AND last_seq = %(seq)s - 1
    RETURNING id
)
INSERT INTO kurahi.entries (transcript_id, seq, line)
SELECT id, %(seq)s, %(line)s FROM grown, (SELECT set_config('synchronous_commit', %(sync)s, true)) AS durability
RETURNING seq
"""
"""Append one line at ``seq`` if the lease is still ours (renewing it) and ``seq`` is next; the seq or no row.

One statement, so in autocommit it is one transaction and one round trip; ``sync`` is
``on`` (the commit waits for the WAL to reach disk) or ``off`` (a later durable commit does).
"""
SQL_HAS_LINE = "SELECT line = %s FROM kurahi.entries WHERE transcript_id = %s AND seq = %s"
SQL_LAST_LINE = """
SELECT t.last_seq, (SELECT e.line FROM kurahi.entries e WHERE e.transcript_id = t.id AND e.seq = t.last_seq)
FROM kurahi.transcripts t WHERE t.id = %s
"""
SQL_EXPORT = """
SELECT e.line FROM kurahi.transcripts t LEFT JOIN kurahi.entries e ON e.transcript_id = t.id
WHERE t.agent_id = %s AND t.name = %s ORDER BY e.seq
"""
"""A transcript's lines in order (no row: no such transcript; one NULL: no line yet)."""
SQL_NAMES = "SELECT name FROM kurahi.transcripts WHERE agent_id = %s"
SQL_INFO = """
SELECT size, (extract(epoch FROM modified_at) * 1000)::bigint
FROM kurahi.transcripts WHERE agent_id = %s AND name = %s
"""
SQL_SYNC = """
SELECT txid_current(), (SELECT line = %(line)s FROM kurahi.entries WHERE transcript_id = %(t)s AND seq = %(seq)s)
"""
"""A durable commit that also says whether this writer's last line is still there.

``txid_current()`` gives the transaction an id, so its commit writes a record and waits for
the WAL up to it: every commit before it (the appends made with ``synchronous_commit`` off)
is on disk once it returns. A transaction that changed nothing would commit without waiting.
"""
SQL_WHY_NOT = """
SELECT t.last_seq, (l.owner_id = %(owner)s AND l.token = %(token)s)
FROM kurahi.transcripts t LEFT JOIN kurahi.leases l ON l.transcript_id = t.id WHERE t.id = %(t)s
"""
"""Why an append matched nothing: the transcript's last ``seq``, and whether the lease is still ours."""


class PostgresHandle(TranscriptHandle):
    """A transcript open for appending under this process's lease (see the module docstring)."""

    def __init__(self, store: PostgresTranscripts, name: str, tid: int, token: int, seq: int, torn: bool) -> None:
        self._store = store
        self._db = store.agent.backend.db
        self.name = name
        self.locator = store.locator(name)
        self.transcript_id = tid
        self.token = token
        """This tenure's fencing token."""
        self._seq = seq
        self._last_line: bytes | None = None
        """The last line this writer appended (what :meth:`sync` looks for at ``_seq``)."""
        self._needs_newline = torn
        self._dirty = False
        self._open = True
        self._lost = False
        self._broken = False
        self._mutex = threading.Lock()
        store.agent.backend.hold(self)

    def append(
        self, line: bytes, *, durable: bool, records: Sequence[tuple[RecordLog, Mapping[str, Any]]] = ()
    ) -> None:
        """See :meth:`TranscriptHandle.append` (the line and the records of this database in one transaction)."""
        if not line.endswith(b"\n"):
            raise AppendError("a line must end with a newline", path=self.locator)
        ours: list[tuple[PostgresLog, bytes]] = []
        later: list[tuple[RecordLog, Mapping[str, Any]]] = []
        for log, rec in records:
            if isinstance(log, PostgresLog) and log.db is self._db:
                try:
                    ours.append((log, encode_record(rec)))
                except (TypeError, ValueError, msgspec.EncodeError) as exc:
                    raise AppendError(f"a record is not JSON ({exc}); nothing was appended", path=self.locator) from exc
            else:
                later.append((log, rec))
        with self._mutex:
            if not self._open:
                raise AppendError("session is closed", path=self.locator)
            if self._lost:
                raise LeaseLostError("this writer's lease was taken over; nothing was appended", path=self.locator)
            if self._broken:
                raise AppendOutcomeUnknownError(
                    "this writer stopped after an append whose outcome is unknown; open the transcript again",
                    path=self.locator,
                )
            if self._needs_newline:
                line = b"\n" + line  # the transcript ends in a torn line; ours starts on a line of its own
            seq = self._seq + 1
            # Ledger records are an intent before its tool runs, or an outcome: they wait for the
            # disk whatever the policy, so a server crash cannot forget an intent whose side
            # effect then happens (the turn retried would run it a second time).
            self._append_once(seq, line, durable or bool(ours), ours)
            self._seq = seq
            self._last_line = line
            self._needs_newline = False
            self._dirty = self._dirty or not durable
        for log, rec in later:
            log.append(rec)

    def _append_once(self, seq: int, line: bytes, durable: bool, records: list[tuple[PostgresLog, bytes]]) -> None:
        """Append at ``seq`` exactly once, through a connection that breaks (a restart, a failover).

        A connection that broke during the statement leaves it unknown whether the commit
        happened. We are the only writer (the lease), so the row at ``seq`` says which:
        there with our line, it did; absent, nothing was written and trying again on a new
        connection is safe (the fencing and the ``seq`` check still hold). When the database
        stays away so that nobody can say, this writer stops: its next append is refused
        until the transcript is opened again (and read, which tells).
        """
        failure: DatabaseUnavailableError | None = None
        absent = False  # known not to be stored
        for attempt in range(3):
            try:
                if self._append(seq, line, durable, records):
                    return
            except DatabaseUnavailableError as exc:
                # Not sent at all: this attempt wrote nothing; whether an earlier one did is
                # what we knew before it.
                failure, absent = exc, (absent or attempt == 0) if exc.unsent else False
            else:
                # No row: the lease is not ours, or (on a retry) our first attempt did commit.
                try:
                    if attempt and self._landed(seq, line):
                        return
                    self._refused(seq)
                except DatabaseUnavailableError as exc:
                    failure, absent = exc, False
                    continue
            if absent:
                continue
            try:
                if self._landed(seq, line):
                    return
                absent = True
            except DatabaseUnavailableError as exc:
                failure = exc
        if absent:
            raise AppendError(f"append failed, nothing was appended ({failure})", path=self.locator) from failure
        self._broken = True
        raise AppendOutcomeUnknownError(
            f"the database went away during the append ({failure}); whether it was stored is unknown, "
            "so this writer stops: open the transcript again",
            path=self.locator,
        ) from failure

    def _append(self, seq: int, line: bytes, durable: bool, records: list[tuple[PostgresLog, bytes]]) -> bool:
        """One attempt; ``False`` when the lease (or ``seq``) did not match and nothing was written."""
        backend = self._store.agent.backend
        params = {
            "t": self.transcript_id,
            "owner": backend.owner_id,
            "token": self.token,
            "secs": backend.lease_seconds,
            "seq": seq,
            "n": len(line),
            "line": line,
            "sync": "on" if durable else "off",
        }
        try:
            if not records:
                with self._db.connection() as conn:  # one statement: its own transaction
                    return conn.execute(SQL_APPEND, params).fetchone() is not None
            with self._db.transaction(durable=durable) as conn:
                if conn.execute(SQL_APPEND, params).fetchone() is None:
                    return False
                backend.fault_point("append.after_entry")
                for log, data in records:
                    log.ensure_agent(conn)
                    conn.execute(SQL_APPEND_RECORDS, (log.agent_id, log.name, [data]))
            return True
        except psycopg.Error as exc:
            raise AppendError(
                f"append refused by the database: {self._db.failed(exc, 'append')}; nothing was appended",
                path=self.locator,
            ) from None

    def _refused(self, seq: int) -> NoReturn:
        """An append matched nothing: say why (the lease is gone, or the database forgot lines) and stop.

        Raises:
            LeaseLostError: the lease is not ours any more.
            AppendOutcomeUnknownError: the lease is ours but the transcript ends before ``seq - 1``:
                the server lost appends committed without waiting for the disk (it crashed).
            DatabaseUnavailableError: the database went away while we asked.
        """
        rows = self._db.query(
            SQL_WHY_NOT, {"t": self.transcript_id, "owner": self._store.agent.backend.owner_id, "token": self.token}
        )
        if rows and rows[0][1] and int(rows[0][0]) < seq - 1:
            self._broken = True
            raise AppendOutcomeUnknownError(
                f"the database holds {int(rows[0][0])} lines of this transcript, not the {seq - 1} this writer "
                "appended (a server that crashed loses commits that did not wait for the disk); nothing was "
                "appended: open the transcript again",
                path=self.locator,
            )
        self._lose()

    def _lose(self) -> NoReturn:
        self._lost = True
        raise LeaseLostError(
            "this writer's lease was taken over by another gateway (its fencing token is stale); nothing was appended",
            path=self.locator,
        )

    def _landed(self, seq: int, line: bytes) -> bool:
        rows = self._db.query(SQL_HAS_LINE, (line, self.transcript_id, seq))
        return bool(rows and rows[0][0])

    def sync(self) -> None:
        """Make earlier appends durable: one durable commit flushes every commit before it.

        It also reads back this writer's last line: a server that crashed since forgot the
        appends that had not reached its disk, and then they are not acknowledged.

        Raises:
            AppendOutcomeUnknownError: the last line is not there (this writer stops).
            AppendError: the database could not be reached (the appends may or may not last).
        """
        with self._mutex:
            if not self._open or not self._dirty:
                return
            try:
                with self._db.transaction() as conn:
                    row = conn.execute(
                        SQL_SYNC, {"t": self.transcript_id, "seq": self._seq, "line": self._last_line}
                    ).fetchone()
            except DatabaseUnavailableError as exc:
                raise AppendError(f"cannot make appends durable: {exc}", path=self.locator) from exc
            if self._last_line is not None and (row is None or row[1] is not True):
                self._broken = True
                raise AppendOutcomeUnknownError(
                    f"line {self._seq} is no longer in the database (a server that crashed loses commits that "
                    "did not wait for the disk); open the transcript again",
                    path=self.locator,
                )
            self._dirty = False

    def read(self) -> Transcript:
        """See :meth:`TranscriptHandle.read`."""
        return self._store.read(self.name)

    def close(self) -> None:
        """Give the lease up (no sync: :class:`~kurahi.store.session.Session` decides). Closing twice is harmless."""
        with self._mutex:
            if not self._open:
                return
            self._open = False
        backend = self._store.agent.backend
        backend.drop(self)
        if self._lost:
            return
        try:
            with self._db.connection() as conn:
                conn.execute(SQL_RELEASE, {"t": self.transcript_id, "owner": backend.owner_id, "token": self.token})
        except DatabaseUnavailableError:
            pass  # the lease expires on its own

    def lost(self) -> None:
        """Mark the lease as taken over (the renewal found it gone): every later append is refused."""
        self._lost = True

    @property
    def fenced(self) -> bool:
        """See :attr:`TranscriptHandle.fenced`."""
        return self._lost


class PostgresTranscripts(TranscriptStore):
    """An agent's transcripts in the database."""

    def __init__(self, agent: AgentScope) -> None:
        self.agent = agent
        self._prefix = f"{agent.backend.describe()}#{agent.agent_id}/"

    def __repr__(self) -> str:
        return f"PostgresTranscripts({self._prefix!r})"

    def locator(self, name: str) -> str:
        """``postgresql://user@host:port/db#<agent>/<name>``."""
        return self._prefix + check_transcript_name(name)

    def _failed(self, exc: psycopg.Error, name: str, what: str) -> TranscriptReadError:
        return TranscriptReadError(str(self.agent.backend.db.failed(exc, what)), path=self.locator(name))

    def create(self, name: str, header_line: bytes, *, durable: bool) -> PostgresHandle:
        """See :meth:`TranscriptStore.create` (the row, its header line and its lease in one transaction)."""
        check_transcript_name(name)
        backend = self.agent.backend
        lines = split_lines(header_line)
        try:
            with backend.db.transaction(durable=durable) as conn:
                self.agent.ensure_agent(conn)
                row = conn.execute(SQL_CREATE, (self.agent.agent_id, name, len(header_line), len(lines))).fetchone()
                if row is None:
                    raise UsageError(f"{self.locator(name)}: already exists; Kurahi never overwrites a transcript")
                tid = int(row[0])
                conn.execute(SQL_INSERT_LINES, (tid, list(range(1, len(lines) + 1)), lines))
                token = conn.execute(
                    SQL_ACQUIRE, {"t": tid, "owner": backend.owner_id, "secs": backend.lease_seconds}
                ).fetchone()
                assert token is not None  # a new transcript has no lease yet
            self.agent.known()
        except DatabaseUnavailableError as exc:
            raise AppendError(f"cannot create: {exc}; nothing was created", path=self.locator(name)) from exc
        except psycopg.Error as exc:
            raise self._failed(exc, name, "create") from None
        torn = bool(lines) and not lines[-1].endswith(b"\n")
        return PostgresHandle(self, name, tid, int(token[0]), len(lines), torn)

    def open(self, name: str) -> PostgresHandle:
        """See :meth:`TranscriptStore.open` (takes the lease, or says who holds it and for how long)."""
        check_transcript_name(name)
        backend = self.agent.backend
        try:
            with backend.db.transaction() as conn:
                row = conn.execute(SQL_FIND, (self.agent.agent_id, name)).fetchone()
                if row is None:
                    raise TranscriptReadError("no such transcript", path=self.locator(name))
                tid = int(row[0])
                got = conn.execute(
                    SQL_ACQUIRE, {"t": tid, "owner": backend.owner_id, "secs": backend.lease_seconds}
                ).fetchone()
                if got is None:
                    holder = conn.execute(SQL_HOLDER, (tid,)).fetchone()
                    who, left = (holder[0], float(holder[1])) if holder else ("?", 0.0)
                    raise LockHeldError(
                        f"transcript {name} is open for writing by {who} (its lease runs {left:.1f} s more "
                        "unless renewed)",
                        path=self.locator(name),
                    )
                last = conn.execute(SQL_LAST_LINE, (tid,)).fetchone()
        except psycopg.Error as exc:
            raise self._failed(exc, name, "open") from None
        assert last is not None
        seq, tail = int(last[0]), last[1]
        return PostgresHandle(self, name, tid, int(got[0]), seq, tail is not None and not bytes(tail).endswith(b"\n"))

    def read(self, name: str) -> Transcript:
        """See :meth:`TranscriptStore.read`."""
        return Transcript.from_bytes(self.export(name), name=self.locator(name))

    def claim(self, name: str, *, take_over: bool = False, tag: str | None = None) -> PostgresClaim:
        """See :meth:`TranscriptStore.claim`: the transcript's lease (:mod:`kurahi.store.postgres.claims`)."""
        from kurahi.store.postgres.claims import take_claim

        return take_claim(self, check_transcript_name(name), take_over=take_over)

    def exists(self, name: str) -> bool:
        """See :meth:`TranscriptStore.exists`."""
        check_transcript_name(name)
        return bool(self.agent.backend.db.query(SQL_FIND, (self.agent.agent_id, name)))

    def names(self) -> list[str]:
        """See :meth:`TranscriptStore.names` (sorted here, by code point, whatever the database's collation)."""
        return sorted(r[0] for r in self.agent.backend.db.query(SQL_NAMES, (self.agent.agent_id,)))

    def info(self, name: str) -> TranscriptInfo | None:
        """See :meth:`TranscriptStore.info` (``modified_ms``: the last append's commit time)."""
        check_transcript_name(name)
        rows = self.agent.backend.db.query(SQL_INFO, (self.agent.agent_id, name))
        return TranscriptInfo(int(rows[0][0]), int(rows[0][1])) if rows else None

    def export(self, name: str) -> bytes:
        """See :meth:`TranscriptStore.export` (the lines in order, concatenated)."""
        check_transcript_name(name)
        try:
            rows = self.agent.backend.db.query(SQL_EXPORT, (self.agent.agent_id, name), binary=True)
        except DatabaseUnavailableError as exc:
            raise TranscriptReadError(str(exc), path=self.locator(name)) from exc
        if not rows:
            raise TranscriptReadError("no such transcript", path=self.locator(name))
        return b"".join(r[0] for r in rows if r[0] is not None)

    def import_bytes(self, name: str, data: bytes) -> None:
        """See :meth:`TranscriptStore.import_bytes` (one transaction: the row and every line)."""
        check_transcript_name(name)
        lines = split_lines(data)
        with self.agent.backend.db.transaction() as conn:
            self.agent.ensure_agent(conn)
            row = conn.execute(SQL_CREATE, (self.agent.agent_id, name, len(data), len(lines))).fetchone()
            if row is None:
                raise UsageError(f"{self.locator(name)}: already exists; Kurahi never overwrites a transcript")
            with conn.cursor() as cur, cur.copy("COPY kurahi.entries (transcript_id, seq, line) FROM STDIN") as copy:
                for seq, line in enumerate(lines, 1):
                    copy.write_row((row[0], seq, line))
        self.agent.known()
