"""OpenClaw's SQLite store as an activation reads it: refusals, the key's facts, its state, the write's checks.

Everything that can refuse is decided before the store is opened for writing: no symlink on
the way to it, OpenClaw not running, an empty write-ahead log, a writable store, a schema
that is exactly OpenClaw 2026.9.6's, and the preconditions, all read through an immutable
open that writes nothing (not even ``-shm``). The write is one transaction that checks the
key again first and, before it commits, reads what it wrote back (:class:`InstallChecks`:
the new session byte for byte, the old one untouched, the row counts grown by exactly what
was inserted, the schema unchanged): anything else rolls it back there.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any, Protocol

import msgspec

from kurahi.errors import (
    ActivationError,
    OpenClawRunningError,
    PreconditionError,
    SqliteSchemaError,
    SqliteStoreError,
)
from kurahi.runtimes.openclaw.sqlite import write as oc

__all__ = [
    "InstallChecks",
    "Planned",
    "SqlitePreconditions",
    "check_preconditions",
    "key_pending",
    "live_state",
    "read_preconditions",
    "read_store",
    "refuse_if_running",
    "refuse_wal",
    "session_bytes",
    "session_taken",
    "sha256_bytes",
]


class SqlitePreconditions(msgspec.Struct, rename="camel", frozen=True):
    """What the store held at planning; apply changes nothing unless all of it still holds."""

    schema_version: int
    """``schema_meta.schema_version``."""
    current_session_id: str
    """The key's ``session_nodes.current_session_id``."""
    event_count: int
    """Rows of that session in ``transcript_events`` (a cold session's: its archive's events)."""
    last_seq: int
    """Its highest ``seq``."""
    events_sha256: str
    """sha256 over its events' ``seq`` and text (:func:`~kurahi.runtimes.openclaw.sqlite.write.session_digest`)."""
    node_sha256: str
    """sha256 of the key's ``session_nodes`` row (canonical JSON of every column)."""
    content_sha256: str
    """:func:`~kurahi.runtimes.openclaw.sqlite.write.content_sha256` of the whole store."""


class Planned(Protocol):
    """What the activation's plan says of the store (its ``SqlitePlan``), as these checks read it."""

    @property
    def key(self) -> str:
        """The session key activated."""

    @property
    def old_session_id(self) -> str:
        """The session the key points at before."""

    @property
    def new_session_id(self) -> str:
        """The session apply writes."""

    @property
    def candidate_events(self) -> int:
        """Rows apply writes into ``transcript_events``."""

    @property
    def candidate_sha256(self) -> str:
        """sha256 of the candidate."""

    @property
    def preconditions(self) -> SqlitePreconditions:
        """The store's facts at planning."""


def _node_sha(node: dict[str, Any] | None) -> str:
    from kurahi.js.jcs import canonical_json, sha256_hex

    return "absent" if node is None else sha256_hex(canonical_json(node))


def refuse_if_running(home: Path) -> None:
    """Raise :class:`OpenClawRunningError` when a gateway holds its lock on ``home``."""
    lock = oc.openclaw_running(home)
    if lock is not None:
        raise OpenClawRunningError(
            f"an OpenClaw gateway is running on {home} (it holds {lock}); stop it first "
            "(`openclaw gateway stop`); nothing was changed"
        )


def refuse_wal(db: Path) -> None:
    """Raise :class:`SqliteStoreError` when the WAL holds frames not yet checkpointed (an unclean stop)."""
    if oc.wal_pending(db):
        raise SqliteStoreError(
            "the write-ahead log holds changes not yet checkpointed (OpenClaw did not stop cleanly); "
            "start and stop OpenClaw once, then plan again; nothing was changed",
            path=db.with_name(db.name + "-wal"),
        )


def read_preconditions(con: Any, db: Path, key: str) -> tuple[SqlitePreconditions, dict[str, Any]]:
    """The store's facts for ``key`` and its node row.

    Raises:
        ActivationError: no such key in the store.
        SqliteStoreError: the key's row is not a session entry OpenClaw reads.
        SqliteSchemaError: the schema is not exactly OpenClaw 2026.9.6's.
    """
    pre, node, _ = read_store(con, db, key, content=True)
    return pre, node


def read_store(
    con: Any, db: Path, key: str, *, content: bool
) -> tuple[SqlitePreconditions, dict[str, Any], str | None]:
    """:func:`read_preconditions` and the live session's last entry id.

    The whole store's hash only with ``content``: apply compares everything else, and the
    hash is rollback's evidence, taken once, at plan.
    """
    oc.check_schema(con, db)
    node = oc.node_row(con, key)
    if node is None:
        raise ActivationError(f"{db}: no session key {key!r} in session_nodes; nothing to activate over")
    problem = oc.entry_problem(node)
    if problem is not None:
        # Activation changes only the row's session ids, so OpenClaw would refuse the new row too.
        raise SqliteStoreError(
            f"the session row of {key} is not one OpenClaw reads ({problem}); "
            "let OpenClaw repair it first (`openclaw doctor --fix`), then plan again",
            path=db,
        )
    sid = node["current_session_id"]
    count, last, sha, leaf = oc.session_digest(con, sid)
    whole = oc.content_sha256(con) if content else ""
    pre = SqlitePreconditions(oc.schema_version(con, db), sid, count, last, sha, _node_sha(node), whole)
    return pre, node, leaf


def live_state(con: Any, plan: Planned) -> str:
    """``old``, ``new``, ``used`` (the new session has more events since) or ``other``."""
    node = oc.node_row(con, plan.key)
    if node is None:
        return "other"
    sid = node["current_session_id"]
    new_count = con.execute("SELECT count(*) FROM transcript_events WHERE session_id = ?", (plan.new_session_id,))
    count = new_count.fetchone()[0]
    if sid == plan.old_session_id and count == 0:
        return "old" if _node_sha(node) == plan.preconditions.node_sha256 else "other"
    if sid == plan.new_session_id:
        return "new" if count == plan.candidate_events else "used" if count > plan.candidate_events else "other"
    return "other"


def check_preconditions(con: Any, db: Path, plan: Planned) -> None:
    """Raise :class:`PreconditionError` when the key's facts are not what the plan recorded."""
    pre, _, _ = read_store(con, db, plan.key, content=False)
    want = plan.preconditions
    for field in ("schema_version", "current_session_id", "event_count", "last_seq", "events_sha256", "node_sha256"):
        if getattr(pre, field) != getattr(want, field):
            raise PreconditionError(
                "the store changed since planning (a turn was taken?): plan again; nothing was changed",
                part=field,
                expected=str(getattr(want, field)),
                actual=str(getattr(pre, field)),
            )


# Tables whose row counts the in-transaction read-back checks, with what one install adds.
_COUNTED = ("session_windows", "transcript_events", "session_nodes")


def session_bytes(con: sqlite3.Connection, db: Path, session_id: str) -> bytes:
    """One session's events as a JSONL transcript, read on ``con`` (inside its transaction, if any).

    The same bytes ``lineage find --export`` writes (:func:`~kurahi.runtimes.openclaw.sqlite.read.export_session_jsonl`
    does).
    """
    from kurahi.runtimes.openclaw.sqlite.read import export_session_jsonl
    from kurahi.runtimes.openclaw.sqlite.snapshot import StoreSnapshot

    return export_session_jsonl(StoreSnapshot(db, con, 0, True, (), 1), session_id)


def _counts(con: sqlite3.Connection) -> dict[str, int]:
    return {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in _COUNTED}


def _unknown_write(db: Path, what: str) -> SqliteSchemaError:
    return SqliteSchemaError(
        f"what the activation wrote did not read back inside its transaction ({what}): the store does something "
        "Kurahi does not know (a trigger?); rolled back there, nothing was changed",
        path=db,
    )


class InstallChecks:
    """The checks around the one write transaction (:func:`~kurahi.runtimes.openclaw.sqlite.write.install_session`).

    Args:
        plan: the package's plan.
        db: the store.
    """

    def __init__(self, plan: Planned, db: Path) -> None:
        self.plan, self.db = plan, db
        self.before: dict[str, int] = {}
        self.data = b""

    def check(self, con: sqlite3.Connection) -> None:
        """Under the write lock: the schema, and the key and its session as the read-only check saw them."""
        oc.check_schema(con, self.db)
        if live_state(con, self.plan) != "old":
            raise PreconditionError(
                "the store changed since it was checked (a turn was taken?): plan again; nothing was changed",
                part="store",
                expected="old",
                actual=live_state(con, self.plan),
            )
        pre = self.plan.preconditions
        count, last = oc.event_facts(con, pre.current_session_id)
        if (count, last) != (pre.event_count, pre.last_seq):
            raise PreconditionError(
                "the live session changed since it was checked (a turn was taken?): plan again; nothing was changed",
                part="events",
                expected=f"{pre.event_count} events, last seq {pre.last_seq}",
                actual=f"{count} events, last seq {last}",
            )
        self.before = _counts(con)

    def verify(self, con: sqlite3.Connection) -> None:
        """Before the commit: what was written is exactly what was meant, and nothing else moved."""
        plan, pre = self.plan, self.plan.preconditions
        oc.check_schema(con, self.db)
        want = dict(self.before)
        want["session_windows"] += 1
        want["transcript_events"] += plan.candidate_events
        got = _counts(con)
        if got != want:
            moved = ", ".join(f"{t} {self.before[t]} → {got[t]} (expected {want[t]})" for t in _COUNTED)
            raise _unknown_write(self.db, f"row counts: {moved}")
        count, last = oc.event_facts(con, pre.current_session_id)
        if (count, last) != (pre.event_count, pre.last_seq):
            raise _unknown_write(self.db, f"the old session has {count} events, last seq {last}")
        self.data = session_bytes(con, self.db, plan.new_session_id)
        if sha256_bytes(self.data) != plan.candidate_sha256:
            raise _unknown_write(self.db, f"the new session's events hash to {sha256_bytes(self.data)}")
        node = oc.node_row(con, plan.key)
        if node is None or node["current_session_id"] != plan.new_session_id or node["entry_valid"] != 1:
            raise _unknown_write(self.db, "the key's row does not point at the new session as a valid entry")


def sha256_bytes(data: bytes) -> str:
    """Lowercase hex sha256."""
    return hashlib.sha256(data).hexdigest()


def session_taken(con: sqlite3.Connection, session_id: str) -> bool:
    """Whether the store already has a window or events for ``session_id``."""
    taken = con.execute("SELECT 1 FROM session_windows WHERE session_id = ?", (session_id,)).fetchone()
    events = con.execute("SELECT 1 FROM transcript_events WHERE session_id = ?", (session_id,)).fetchone()
    return bool(taken or events)


def key_pending(con: sqlite3.Connection, key: str) -> bool:
    """Whether ``session_canonical_validation_pending`` holds ``key``."""
    row = con.execute("SELECT 1 FROM session_canonical_validation_pending WHERE session_key = ?", (key,))
    return bool(row.fetchone())
