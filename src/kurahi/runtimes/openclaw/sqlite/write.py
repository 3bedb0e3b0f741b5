"""Write a session into an OpenClaw 2026.9 agent store (``openclaw-agent.sqlite``), and take it out again.

Only activation writes the store, and only with OpenClaw stopped. A session is installed as
new rows under a new session id, in one transaction, and the key's ``session_nodes`` row is
pointed at it; the old session's rows stay untouched (the new window names it as
``previous_session_id``). What each table gets, as OpenClaw 2026.9.6 keeps them:

- ``session_windows``: the old session's window with the new id, ``previous_session_id`` set
  and reason ``recovery``;
- ``transcript_events``: one row per transcript line, ``seq`` 0 the header, the line's text
  as ``event_json``;
- ``transcript_event_identities``: one row per entry with an id (message idempotency keys
  carried over from the old session for the same entry);
- ``session_transcript_active_events``, ``session_transcript_index_state``: the projection
  index OpenClaw reads context through, complete (``needs_rebuild`` 0) for a linear path;
- ``transcript_rewrite_watermarks``: a fresh generation (the index is read only with one);
- ``session_transcript_fts_rows`` + ``session_transcript_fts``: the search rows of each
  user or assistant message with text;
- ``session_nodes``: ``current_session_id`` and every ``sessionId`` inside ``entry_json``
  that named the old session, then settled as OpenClaw's own entry writer settles it (below).

Settling the row. OpenClaw's triggers answer any change of a ``session_nodes`` row by
setting ``entry_valid`` to 0 and adding the key to ``session_canonical_validation_pending``.
OpenClaw reads a row only with ``entry_valid`` 1 (``validateCanonicalSessionRow``; anything
else is "invalid persisted session row requires repair ... run openclaw doctor --fix"), and
only its schema upkeep on a writable open settles rows left at 0, so a read-only reader (the
CLI's ``openclaw sessions``) or a gateway whose first read comes before that upkeep refuses
the store. OpenClaw's writer (``writeSessionEntry``) therefore, in the transaction that
wrote the entry, sets ``entry_valid`` to 1 for an entry that parses as a session entry
(``parseSqliteSessionEntryRecord``: a JSON object whose ``sessionId`` is the row's
``current_session_id`` and whose numeric ``updatedAt`` is the row's ``updated_at``), then
validates the row and takes its key off the pending list. :func:`install_session` does the
same, with one difference: it takes the key off the list only when it was not on it before
the transaction. Kurahi changes nothing in the row but session ids, so a row OpenClaw had
already validated stays validated; one OpenClaw had not yet validated stays for OpenClaw.

Some CHECK constraints call ``octet_length()``, which SQLite gained in 3.43: on an older
library :func:`register_octet_length` supplies it with SQLite's semantics.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kurahi.errors import SqliteSchemaError, SqliteStoreBusyError, SqliteStoreError, SqliteStoreFullError
from kurahi.js import deepjson
from kurahi.pi.vocab import MESSAGE
from kurahi.runtimes.openclaw.sqlite.cold import cold_archives, cold_events
from kurahi.runtimes.openclaw.sqlite.events import EVENT_COLUMNS, event_bytes
from kurahi.runtimes.openclaw.sqlite.snapshot import open_store_snapshot
from kurahi.runtimes.openclaw.versions import SCHEMA_WRITERS, WRITE_SCHEMA_VERSIONS

__all__ = [
    "KNOWN_SCHEMA_VERSIONS",
    "check_schema",
    "content_sha256",
    "entry_problem",
    "event_facts",
    "install_session",
    "node_row",
    "octet_length",
    "open_store",
    "openclaw_running",
    "register_octet_length",
    "schema_refusal",
    "schema_version",
    "session_digest",
    "uninstall_session",
    "wal_pending",
]

KNOWN_SCHEMA_VERSIONS = WRITE_SCHEMA_VERSIONS
"""``schema_meta.schema_version`` values activation opens and writes (OpenClaw 2026.9.6: 23); a reader
takes more (:data:`~kurahi.runtimes.openclaw.versions.READ_SCHEMA_VERSIONS`)."""

_FTS = "session_transcript_fts"
# Tables holding rows of one session, children before parents (deleted in this order).
_SESSION_TABLES = (
    "session_transcript_fts_rows",
    "session_transcript_active_events",
    "session_transcript_index_state",
    "transcript_event_identities",
    "transcript_rewrite_watermarks",
    "transcript_events",
    "session_windows",
)
_render = sqlite3.connect(":memory:", check_same_thread=False)


def octet_length(value: Any) -> int | None:
    """SQLite's ``octet_length(X)``: bytes of text as UTF-8, of a blob; numbers as their text form."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    # A number counts as the text SQLite itself would render it as.
    text = _render.execute("SELECT CAST(? AS TEXT)", (value,)).fetchone()[0]
    return len(text.encode())


def register_octet_length(con: sqlite3.Connection) -> bool:
    """Give ``con`` an ``octet_length()`` when its SQLite lacks one; whether it had to."""
    try:
        con.execute("SELECT octet_length('x')")
        return False
    except sqlite3.OperationalError:
        con.create_function("octet_length", 1, octet_length, deterministic=True)
        return True


def openclaw_running(state_dir: Path) -> Path | None:
    """The gateway lock a running OpenClaw holds in ``state_dir``, or ``None``.

    A running 2026.9 gateway keeps an exclusive SQLite lock on
    ``tmp/openclaw-<uid>/gateway.*.lock.sqlite`` in its state dir. Taking a shared lock in a
    read-only connection tells whether it is held, and writes nothing.
    """
    lock_dir = state_dir / "tmp" / f"openclaw-{os.getuid()}"
    for lock in sorted(lock_dir.glob("gateway.*.lock.sqlite")):
        try:
            with contextlib.closing(
                sqlite3.connect(f"file:{quote(str(lock.absolute()))}?mode=ro", uri=True, timeout=0)
            ) as con:
                con.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return lock
    return None


def wal_pending(db: Path) -> bool:
    """Whether ``db`` has a write-ahead log with frames not yet checkpointed into the file."""
    wal = db.with_name(db.name + "-wal")
    try:
        return wal.stat().st_size > 0
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def open_store(db: Path, *, write: bool, busy_timeout: float = 0.5) -> Iterator[sqlite3.Connection]:
    """Open the store; SQLite's errors become :class:`SqliteStoreError` naming the file.

    The translation covers the caller's ``with`` block too (the one place SQLite errors are
    turned into Kurahi's): an error raised there passes back through this generator.

    Read-only opens never create a file; a writer gets foreign keys on (so OpenClaw's
    cascades and references hold for what is written) and ``octet_length``.

    Raises:
        SqliteStoreError: missing, not SQLite, corrupt, not an OpenClaw agent store.
        SqliteStoreBusyError: another process holds the database lock.
        SqliteSchemaError: a schema version this module does not know.
    """
    if not db.is_file():
        raise SqliteStoreError("no such file (expected an OpenClaw SQLite store)", path=db)
    if not write and wal_pending(db):
        # Changes still in the WAL (OpenClaw runs, or did not stop cleanly): an immutable
        # open would not see them, and a plain one would write -shm into the state dir. Read
        # a private consistent copy of the database and its WAL instead.
        with open_store_snapshot(db, busy_timeout=busy_timeout) as snap, _translated(db):
            yield snap.conn
        return
    # A reader with an empty WAL opens immutable: nothing is pending, and a plain read-only
    # open would leave a -shm file behind in the state dir.
    uri = f"file:{quote(str(db.absolute()))}?mode={'rw' if write else 'ro&immutable=1'}"
    try:
        con = sqlite3.connect(uri, uri=True, timeout=busy_timeout, isolation_level=None)
    except sqlite3.Error as exc:
        raise SqliteStoreError(f"cannot open: {exc}", path=db) from exc
    try:
        with _translated(db):
            if write:
                con.execute("PRAGMA foreign_keys = ON")
                register_octet_length(con)
            version = schema_version(con, db)
            if version not in KNOWN_SCHEMA_VERSIONS:
                raise SqliteSchemaError(_version_refusal(version) + "; nothing was changed", path=db)
            yield con
    finally:
        con.close()


@contextlib.contextmanager
def _translated(db: Path) -> Iterator[None]:
    # sqlite3.Error -> SqliteStoreBusyError / SqliteStoreError; used only by open_store, around its yield.
    try:
        yield
    except sqlite3.Error as exc:
        text = str(exc)
        name = getattr(exc, "sqlite_errorname", "")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
            raise SqliteStoreBusyError("database is locked by another process; nothing was changed", path=db) from exc
        if name.startswith(("SQLITE_FULL", "SQLITE_IOERR")) or "disk is full" in text or "disk I/O error" in text:
            # A full disk shows as SQLITE_FULL, or as an I/O error when not even the WAL could grow.
            raise SqliteStoreFullError(
                f"the disk refused a write ({text}: full, or failing); the transaction was rolled back and "
                "nothing was changed: free some space and run the command again",
                path=db,
            ) from exc
        if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or "malformed" in text or "not a database" in text:
            raise SqliteStoreError(f"corrupt SQLite database ({text}); nothing was changed", path=db) from exc
        raise SqliteStoreError(f"SQLite error: {text}", path=db) from exc


def schema_version(con: sqlite3.Connection, db: Path) -> int:
    """``schema_meta.schema_version`` of the primary agent store.

    Raises:
        SqliteStoreError: no ``schema_meta`` (not an OpenClaw agent store).
    """
    try:
        row = con.execute(
            "SELECT schema_version FROM schema_meta WHERE meta_key = 'primary' AND role = 'agent'"
        ).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            raise SqliteStoreError("not an OpenClaw agent store (no schema_meta table)", path=db) from exc
        raise
    if row is None:
        raise SqliteStoreError("not an OpenClaw agent store (schema_meta has no agent row)", path=db)
    return int(row[0])


def node_row(con: sqlite3.Connection, key: str) -> dict[str, Any] | None:
    """The key's ``session_nodes`` row, every column, or ``None``."""
    cur = con.execute("SELECT * FROM session_nodes WHERE session_key = ?", (key,))
    row = cur.fetchone()
    return None if row is None else dict(zip([d[0] for d in cur.description], row, strict=True))


def session_digest(con: sqlite3.Connection, session_id: str) -> tuple[int, int, str, str | None]:
    """``(event count, last seq, sha256 of the events' text, last entry id)`` of one session."""
    h = hashlib.sha256()
    count, last = 0, -1
    tail: list[bytes] = []
    db = con.execute("PRAGMA database_list").fetchone()[2] or ":memory:"
    for seq, text, zstd, size in con.execute(
        f"SELECT seq, {EVENT_COLUMNS} FROM transcript_events WHERE session_id = ? ORDER BY seq", (session_id,)
    ):
        count, last = count + 1, seq
        data = event_bytes(text, zstd, size, where=f"session {session_id}: event seq {seq}", path=db)
        h.update(b"%d:%d:" % (seq, len(data)) + data)
        if seq > 0:
            # Only the last entry with an id is wanted: parse from the end, not every event.
            tail.append(data)
            if len(tail) > 64:
                del tail[:32]
    if count == 0 and (archive := cold_archives(con).get(session_id)) is not None:
        # A cold session: its events are its archive's (verified, or TranscriptReadError), and
        # an activation over it must know them as it knows a hot session's.
        for seq, data in cold_events(archive, Path(db)):
            count, last = count + 1, seq
            h.update(b"%d:%d:" % (seq, len(data)) + data)
            if seq > 0:
                tail.append(data)
        return count, last, h.hexdigest(), _last_id(tail)
    leaf = _last_id(tail)
    if leaf is None and count > len(tail) + 1:
        leaf = _last_id_in(con, session_id, db)
    return count, last, h.hexdigest(), leaf


def event_facts(con: sqlite3.Connection, session_id: str) -> tuple[int, int]:
    """``(event count, last seq)`` of one session: its rows, or, for a cold session, its archive's row."""
    count, last = con.execute(
        "SELECT count(*), coalesce(max(seq), -1) FROM transcript_events WHERE session_id = ?", (session_id,)
    ).fetchone()
    if count == 0 and (archive := cold_archives(con).get(session_id)) is not None:
        return archive.event_count, archive.last_seq
    return int(count), int(last)


def _last_id(events: list[bytes]) -> str | None:
    for data in reversed(events):
        with contextlib.suppress(ValueError, TypeError):
            obj = deepjson.parse(data)
            if isinstance(obj, dict) and isinstance(obj.get("id"), str):
                return str(obj["id"])
    return None


def _last_id_in(con: sqlite3.Connection, session_id: str, db: str) -> str | None:
    # The kept tail had no entry with an id (rare: a long run of id-less events): walk back over all.
    rows = con.execute(
        f"SELECT seq, {EVENT_COLUMNS} FROM transcript_events WHERE session_id = ? AND seq > 0 ORDER BY seq DESC",
        (session_id,),
    )
    for seq, text, zstd, size in rows:
        found = _last_id([event_bytes(text, zstd, size, where=f"session {session_id}: event seq {seq}", path=db)])
        if found is not None:
            return found
    return None


_MIGRATE = (
    "start OpenClaw 2026.9.6 once so that its gateway migrates the store, stop it, then run `kurahi rescue` again"
)
_FOREIGN = (
    "Kurahi writes only into a store whose tables it writes, their unique indexes and triggers mean what "
    "OpenClaw 2026.9.6's do, so that a write does what it was checked to do"
)


def _version_refusal(version: int) -> str:
    known = ", ".join(str(v) for v in KNOWN_SCHEMA_VERSIONS)
    if version < min(KNOWN_SCHEMA_VERSIONS):
        writer = SCHEMA_WRITERS.get(version)
        what = f"the store of {writer}" if writer is not None else "a store of an older OpenClaw"
        return f"schema version {version} is {what}; Kurahi writes only schema {known} (OpenClaw 2026.9.6): {_MIGRATE}"
    return f"schema version {version}: Kurahi writes only schema {known} (OpenClaw 2026.9.6), not a newer one"


def schema_refusal(con: sqlite3.Connection, db: Path) -> str | None:
    """Why activation would refuse to write into this store, with what to do; ``None``: it writes."""
    from kurahi.runtimes.openclaw.sqlite.schema import schema_problems

    version = schema_version(con, db)
    if version not in KNOWN_SCHEMA_VERSIONS:
        return _version_refusal(version)
    problems = schema_problems(con)
    if not problems:
        return None
    shown = "; ".join(problems[:4]) + (f"; and {len(problems) - 4} more" if len(problems) > 4 else "")
    return f"the schema differs from OpenClaw 2026.9.6's where a write would notice ({shown}); {_FOREIGN}"


def check_schema(con: sqlite3.Connection, db: Path) -> None:
    """Refuse a store whose schema differs from OpenClaw 2026.9.6's where a write would notice.

    What that is: :mod:`kurahi.runtimes.openclaw.sqlite.schema`; the listing asks the same
    question through :func:`schema_refusal` on its snapshot.

    Raises:
        SqliteSchemaError: a schema version activation does not write (what to do said); a
            trigger or unique index on a table activation writes that OpenClaw does not create,
            one defined otherwise or missing, a column of another type, NOT NULL or default, a
            table missing; each named.
    """
    refusal = schema_refusal(con, db)
    if refusal is not None:
        raise SqliteSchemaError(
            f"{refusal}; nothing was changed", path=db, version=schema_version(con, db), known=KNOWN_SCHEMA_VERSIONS
        )


def content_sha256(con: sqlite3.Connection) -> str:
    """sha256 over every row of every table, in primary-key order: the store's content.

    Full-text tables count by their rows (their private shadow tables are skipped: how FTS
    lays out its segments is not content). Rows are hashed as MessagePack, a few hundred at
    a time: the same rows give the same bytes, and a 100 MB store hashes in about a second.
    """
    import msgspec

    names = [
        r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    ]
    virtual = {
        r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'")
    }
    shadow = {n for n in names for v in virtual if n.startswith(v + "_") and n not in virtual}
    h = hashlib.sha256()
    encode = msgspec.msgpack.Encoder().encode
    for name in sorted(set(names) - shadow):
        q = f'"{name}"'
        info = sorted((r for r in con.execute(f"PRAGMA table_info({q})") if r[5]), key=lambda r: r[5])
        order = ", ".join(f'"{r[1]}"' for r in info) if info and name not in virtual else "rowid"
        sel = "rowid, *" if name in virtual else "*"
        h.update(f"table {name}\n".encode())
        cur = con.execute(f"SELECT {sel} FROM {q} ORDER BY {order}")
        while rows := cur.fetchmany(256):
            h.update(encode(rows))
    return h.hexdigest()


def _ms(value: Any, fallback: int) -> int:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    return fallback


def _message_text(message: Any) -> str | None:
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content.strip() or None
    if not isinstance(content, list):
        text = message.get("text")
        return text.strip() or None if isinstance(text, str) else None
    parts = [
        b["text"]
        for b in content
        if isinstance(b, dict)
        and b.get("type") in ("text", "input_text", "output_text")
        and isinstance(b.get("text"), str)
        and b["text"].strip()
    ]
    return "\n".join(parts) if parts else None


def _swap_ids(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {k: (new if k == "sessionId" and v == old else _swap_ids(v, old, new)) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap_ids(v, old, new) for v in value]
    return value


def entry_problem(node: dict[str, Any]) -> str | None:
    """Why OpenClaw would not take ``node`` (a ``session_nodes`` row) as a session entry, or ``None``.

    The rule OpenClaw applies before it sets ``entry_valid`` to 1 (2026.9.6,
    ``parseSqliteSessionEntryRecord``): ``entry_json`` is a JSON object, its ``sessionId`` a
    string equal to ``current_session_id``, its ``updatedAt`` a finite number equal to
    ``updated_at``.
    """
    try:
        entry = deepjson.parse(node.get("entry_json") or "")
    except ValueError:
        return "entry_json is not JSON"
    if not isinstance(entry, dict):
        return "entry_json is not a JSON object"
    sid, updated = entry.get("sessionId"), entry.get("updatedAt")
    if not isinstance(sid, str):
        return "entry_json has no string sessionId"
    if isinstance(updated, bool) or not isinstance(updated, int | float) or not math.isfinite(updated):
        return "entry_json has no numeric updatedAt"
    if sid != node.get("current_session_id"):
        return f"entry_json names session {sid}, current_session_id is {node.get('current_session_id')}"
    if updated != node.get("updated_at"):
        return f"entry_json's updatedAt {updated} is not the row's updated_at {node.get('updated_at')}"
    return None


def install_session(
    con: sqlite3.Connection,
    key: str,
    lines: Sequence[str],
    old_sid: str,
    new_sid: str,
    now_ms: int,
    *,
    check: Callable[[sqlite3.Connection], None] | None = None,
    verify: Callable[[sqlite3.Connection], None] | None = None,
) -> None:
    """Write ``lines`` as session ``new_sid`` and point ``key`` at it, in one transaction.

    ``lines`` is a transcript, header first, its header id already ``new_sid`` (see the
    module docstring for the rows written and how the key's row is settled). ``check`` runs
    first inside the transaction (the write lock held: what it sees cannot change before the
    commit), ``verify`` last, before the commit: either raising rolls everything back.

    Raises:
        SqliteStoreError: the key's row would not be a session entry OpenClaw reads; rolled back.
        sqlite3.Error: anything SQLite refuses; the transaction is rolled back.
        Exception: whatever ``check`` or ``verify`` raise; rolled back.
    """
    con.execute("BEGIN IMMEDIATE")
    try:
        if check is not None:
            check(con)
        _insert_rows(con, key, lines, old_sid, new_sid, now_ms)
        if verify is not None:
            verify(con)
        con.execute("COMMIT")
    except BaseException:
        _rollback(con)
        raise


def _rollback(con: sqlite3.Connection) -> None:
    # SQLite has already rolled back after some errors (a full disk among them): a ROLLBACK then
    # fails with "no transaction is active" and would hide the error that matters.
    if con.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            con.execute("ROLLBACK")


def _insert_rows(con: sqlite3.Connection, key: str, lines: Sequence[str], old: str, new: str, now: int) -> None:
    cur = con.execute("SELECT * FROM session_windows WHERE session_id = ?", (old,))
    window = dict(zip([d[0] for d in cur.description], cur.fetchone(), strict=True))
    window |= {
        "session_id": new,
        "previous_session_id": old,
        "reason": "recovery",
        "created_at": now,
        "updated_at": now,
        "transcript_updated_at": now,
        "transcript_observed_at": now,
    }
    cols = ", ".join(f'"{c}"' for c in window)
    con.execute(f"INSERT INTO session_windows ({cols}) VALUES ({', '.join('?' * len(window))})", tuple(window.values()))
    idem = dict(
        con.execute(
            "SELECT event_id, message_idempotency_key FROM transcript_event_identities "
            "WHERE session_id = ? AND message_idempotency_key IS NOT NULL",
            (old,),
        ).fetchall()
    )
    # Rows are gathered per table and inserted with executemany: one statement prepared per
    # table instead of one per row (a 3,000-turn session is some 12,000 rows).
    events: list[tuple[Any, ...]] = []
    identities: list[tuple[Any, ...]] = []
    active_rows: list[tuple[Any, ...]] = []
    searchable: list[tuple[str, str, str, int]] = []
    active = messages = 0
    leaf: str | None = None
    for seq, line in enumerate(lines):
        entry = deepjson.parse(line)
        created = _ms(entry.get("timestamp"), now)
        events.append((new, seq, line, created, len(line.encode("utf-8", "surrogatepass"))))
        eid = entry.get("id")
        if isinstance(eid, str) and eid:
            parent = entry.get("parentId") if isinstance(entry.get("parentId"), str) else None
            identities.append((new, eid, seq, entry.get("type"), parent, idem.get(eid), created))
        if seq == 0:
            continue
        has_message = "message" in entry
        if (isinstance(eid, str) and eid) or has_message:
            message = entry.get("message")
            excluded = isinstance(message, dict) and message.get("excludeFromContext") is True
            active_rows.append((new, active, seq, messages if has_message else None, 0 if excluded else 1))
            active += 1
            messages += 1 if has_message else 0
            leaf = eid if isinstance(eid, str) else leaf
        text = _message_text(entry.get("message")) if entry.get("type") == MESSAGE else None
        if text is not None and isinstance(eid, str):
            searchable.append((text, eid, entry["message"]["role"], created))
    con.executemany(
        "INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_utf8_bytes) "
        "VALUES (?, ?, ?, ?, ?)",
        events,
    )
    con.executemany(
        "INSERT INTO transcript_event_identities (session_id, event_id, seq, event_type, parent_id, "
        "message_idempotency_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        identities,
    )
    con.executemany(
        "INSERT INTO session_transcript_active_events (session_id, active_position, event_seq, message_position, "
        "context_eligible) VALUES (?, ?, ?, ?, ?)",
        active_rows,
    )
    for text, eid, role, created in searchable:
        # The search row's rowid keys the full-text row: each needs the one just made.
        rowid = con.execute(
            "INSERT INTO session_transcript_fts_rows (session_id, message_id) VALUES (?, ?)", (new, eid)
        ).lastrowid
        con.execute(
            f"INSERT INTO {_FTS} (rowid, text, session_id, message_id, role, timestamp) VALUES (?, ?, ?, ?, ?, ?)",
            (rowid, text, new, eid, role, created),
        )
    con.execute(
        "INSERT INTO session_transcript_index_state (session_id, indexed_seq, leaf_event_id, needs_rebuild, "
        "active_event_count, active_message_count, updated_at) VALUES (?, ?, ?, 0, ?, ?, ?)",
        (new, len(lines) - 1, leaf, active, messages, now),
    )
    con.execute(
        "INSERT INTO transcript_rewrite_watermarks (session_id, generation, updated_at) VALUES (?, ?, ?)",
        (new, secrets.token_hex(16), now),
    )
    node = node_row(con, key)
    assert node is not None
    was_pending = _pending(con, key)
    entry_json = deepjson.dumps_compact(_swap_ids(deepjson.parse(node["entry_json"]), old, new))
    con.execute(
        "UPDATE session_nodes SET current_session_id = ?, entry_json = ? WHERE session_key = ?", (new, entry_json, key)
    )
    _settle(con, key, was_pending)


def _pending(con: sqlite3.Connection, key: str) -> bool:
    found = con.execute("SELECT 1 FROM session_canonical_validation_pending WHERE session_key = ?", (key,))
    return found.fetchone() is not None


def _settle(con: sqlite3.Connection, key: str, was_pending: bool) -> None:
    # After the triggers have reset entry_valid and queued the key: what OpenClaw's own entry
    # writer does next in its transaction (see the module docstring).
    node = node_row(con, key)
    assert node is not None
    problem = entry_problem(node)
    if problem is not None:
        raise SqliteStoreError(
            f"the session row of {key} would not be one OpenClaw reads ({problem}); nothing was changed",
            path=con.execute("PRAGMA database_list").fetchone()[2] or None,
        )
    # Updating entry_valid alone fires no trigger that resets it (they watch entry_json,
    # current_session_id and updated_at).
    con.execute("UPDATE session_nodes SET entry_valid = 1 WHERE session_key = ?", (key,))
    if not was_pending:
        con.execute("DELETE FROM session_canonical_validation_pending WHERE session_key = ?", (key,))


def uninstall_session(
    con: sqlite3.Connection, key: str, new_sid: str, old_node: dict[str, Any], was_pending: bool
) -> None:
    """Remove session ``new_sid`` and put the key's node row back exactly, in one transaction.

    ``was_pending``: whether ``session_canonical_validation_pending`` held the key before
    apply (OpenClaw's triggers add it on every change of the node; it is put back as it was).
    """
    con.execute("BEGIN IMMEDIATE")
    try:
        for table in _SESSION_TABLES:
            con.execute(f'DELETE FROM "{table}" WHERE session_id = ?', (new_sid,))
        cols = [c for c in old_node if c not in ("session_key", "entry_valid")]
        con.execute(
            f"UPDATE session_nodes SET {', '.join(f'{c!s} = ?' for c in cols)} WHERE session_key = ?",
            (*[old_node[c] for c in cols], key),
        )
        # After the triggers that reset entry_valid have run: its old value.
        con.execute("UPDATE session_nodes SET entry_valid = ? WHERE session_key = ?", (old_node["entry_valid"], key))
        if not was_pending:
            con.execute("DELETE FROM session_canonical_validation_pending WHERE session_key = ?", (key,))
        con.execute("COMMIT")
    except BaseException:
        _rollback(con)
        raise
