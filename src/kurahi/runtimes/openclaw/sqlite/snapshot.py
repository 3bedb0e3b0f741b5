"""A consistent, read-only snapshot of an OpenClaw agent store, taken without touching it.

OpenClaw 2026.9 keeps each agent's sessions in ``agents/<id>/agent/openclaw-agent.sqlite``
in WAL mode. No way of opening such a file through SQLite is both read-only and right:

- ``mode=ro`` still writes the ``-shm`` index (it takes read marks there, and rebuilds it),
  and creates ``-wal`` and ``-shm`` when they are missing. OpenClaw leaves a zero-byte
  ``-wal`` after a clean stop, so the "no ``-wal``, use ``immutable``" shortcut does not apply
  and ``-shm`` is rewritten.
- ``immutable=1`` ignores the WAL: committed transactions not yet checkpointed are not seen.

So the store is copied. :func:`open_store_snapshot` copies the database and its ``-wal``
(never ``-shm``: SQLite rebuilds the index from the WAL) into a private temporary folder and
opens the copy. The copy is consistent when the files' size, modification time, inode and
the WAL header (its salts change when a checkpoint restarts the WAL) are the same before and
after it; otherwise it is taken again, a few times, then refused as busy. SQLite's recovery
on the copy keeps exactly the transactions committed in the WAL (a writer's unfinished
frames are dropped), and nothing ever checkpoints the original.

A store in rollback-journal mode (OpenClaw's own files are not, but a reduced copy may be)
is copied by SQLite's backup API through a ``mode=ro`` connection, which takes a shared lock
and creates no file: a writer holding the lock past ``busy_timeout`` gives
:class:`~kurahi.errors.SqliteStoreBusyError`.

The snapshot is the one interface to the store for every reader (``lineage find``, export,
check, stitch) and for activation planning: open it, query ``snapshot.conn``, close it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from kurahi.errors import SqliteSchemaError, SqliteStoreBusyError, SqliteStoreError
from kurahi.fs.os_errors import os_error, os_errors
from kurahi.runtimes.openclaw.versions import OTHER_SCHEMA_WRITERS, READ_SCHEMA_VERSIONS, SCHEMA_WRITERS

__all__ = [
    "DEFAULT_BUSY_TIMEOUT",
    "KNOWN_SCHEMA_VERSIONS",
    "REQUIRED_TABLES",
    "SnapshotFile",
    "StoreSnapshot",
    "open_store_snapshot",
]

DEFAULT_BUSY_TIMEOUT = 2.0
"""Seconds to wait for a writer's lock (rollback-journal stores), or for the files to stop changing."""
KNOWN_SCHEMA_VERSIONS: tuple[int, ...] = READ_SCHEMA_VERSIONS
"""``schema_meta.schema_version`` values Kurahi reads (``versions.READ_SCHEMA_VERSIONS``)."""
REQUIRED_TABLES = ("schema_meta", "session_nodes", "session_windows", "transcript_events")
"""Tables every reader relies on."""

_MAGIC = b"SQLite format 3\x00"
_WAL_HEADER = 32
_ATTEMPTS = 8


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """One file of the original store as it was copied."""

    name: str
    """``openclaw-agent.sqlite`` or ``openclaw-agent.sqlite-wal``."""
    size: int
    mtime_ns: int
    sha256: str
    """Of the bytes copied (for a rollback-journal store: of the original, read through SQLite's backup)."""


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """A private copy of a store, open read-only; valid inside :func:`open_store_snapshot`'s block."""

    source: Path
    """The original database file (never opened for writing, nor through SQLite in WAL mode)."""
    conn: sqlite3.Connection
    """Connection to the copy, ``query_only``, autocommit: every query sees the same content."""
    schema_version: int
    """``schema_meta.schema_version`` (one of :data:`KNOWN_SCHEMA_VERSIONS`)."""
    wal_mode: bool
    """Whether the original is a WAL-mode database."""
    files: tuple[SnapshotFile, ...]
    """The original files the copy was made from (``-shm`` is never copied)."""
    attempts: int
    """Copies taken until one was consistent (1 when nothing wrote meanwhile)."""


def _header(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise SqliteStoreError("no such file (expected an OpenClaw SQLite store)", path=path) from exc
    except IsADirectoryError as exc:
        raise SqliteStoreError("is a directory, expected an OpenClaw SQLite store", path=path) from exc
    except OSError as exc:
        raise os_error(SqliteStoreError, "cannot open", exc, path=path) from exc
    try:
        with os_errors(SqliteStoreError, "cannot read", path=path):
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SqliteStoreError("is not a regular file", path=path)
            head = os.read(fd, 100)
    finally:
        os.close(fd)
    if len(head) < 100 or not head.startswith(_MAGIC):
        raise SqliteStoreError("not an SQLite database (the file does not start with the SQLite header)", path=path)
    return head


def _state(path: Path) -> tuple[int, int, int, bytes] | None:
    """Size, mtime, inode and first bytes of a file; ``None`` when it does not exist."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            return st.st_size, st.st_mtime_ns, st.st_ino, f.read(_WAL_HEADER)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise os_error(SqliteStoreError, "cannot read", exc, path=path) from exc


def _copy(src: Path, dst: Path) -> SnapshotFile:
    digest = hashlib.sha256()
    with os_errors(SqliteStoreError, "cannot copy for reading", path=src), open(src, "rb") as f, open(dst, "wb") as out:
        st = os.fstat(f.fileno())
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    return SnapshotFile(src.name, st.st_size, st.st_mtime_ns, digest.hexdigest())


def _copy_wal_store(path: Path, folder: Path, busy_timeout: float) -> tuple[tuple[SnapshotFile, ...], int]:
    """Copy the database and its ``-wal`` until one copy is consistent; see the module docstring."""
    wal = path.with_name(path.name + "-wal")
    deadline = time.monotonic() + busy_timeout
    for attempt in range(1, _ATTEMPTS + 1):
        before = (_state(path), _state(wal))
        files = [_copy(path, folder / path.name)]
        target_wal = folder / wal.name
        target_wal.unlink(missing_ok=True)
        if before[1] is not None:
            files.append(_copy(wal, target_wal))
        if (_state(path), _state(wal)) == before:
            return tuple(files), attempt
        if time.monotonic() >= deadline:
            break
        time.sleep(min(0.2, 0.01 * 2**attempt))  # let the writer finish its transaction
    raise SqliteStoreBusyError(
        f"the store kept changing while it was copied for reading ({attempt} tries in {busy_timeout:g} s); "
        "try again when the gateway is idle",
        path=path,
    )


def _backup_rollback_store(path: Path, folder: Path, busy_timeout: float) -> tuple[SnapshotFile, ...]:
    st = path.stat()
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    target = folder / path.name
    with (
        contextlib.closing(sqlite3.connect(uri, uri=True, timeout=busy_timeout, isolation_level=None)) as src,
        contextlib.closing(sqlite3.connect(target)) as dst,
    ):
        # The shared lock first, under the busy timeout: Python's backup() would retry a busy
        # source forever. Held by the open read transaction, it keeps writers out until the copy is made.
        src.execute("BEGIN")
        src.execute("SELECT count(*) FROM sqlite_master").fetchone()
        src.backup(dst)
        src.execute("COMMIT")
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    return (SnapshotFile(path.name, st.st_size, st.st_mtime_ns, digest),)


def translate_sqlite_error(exc: sqlite3.Error, path: Path, busy_timeout: float) -> SqliteStoreError:
    """SQLite's error as ours, naming the original file."""
    name = getattr(exc, "sqlite_errorname", "")
    if name.startswith("SQLITE_BUSY") or "locked" in str(exc):
        return SqliteStoreBusyError(
            f"database is locked by another process (waited {busy_timeout:g} s); "
            "try again when the gateway is idle, or read a copy",
            path=path,
        )
    if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")) or "malformed" in str(exc):
        return SqliteStoreError(f"corrupt SQLite database: {exc}", path=path)
    return SqliteStoreError(f"cannot read the SQLite store: {exc}", path=path)


def _written_by(version: int | None) -> str:
    writer = None if version is None else (SCHEMA_WRITERS | OTHER_SCHEMA_WRITERS).get(version)
    return "" if writer is None else f" (written by {writer})"


def _way_forward(version: int | None, known: tuple[int, ...]) -> str:
    """What to do with a store of a schema version Kurahi does not read."""
    if version is None or not known:
        return ""
    if version > max(known):
        return "; a newer OpenClaw than Kurahi knows wrote it: a newer Kurahi may read it"
    return (
        "; OpenClaw 2026.9.6 migrates it to schema 23: start OpenClaw 2026.9.6 once (or run its "
        "`openclaw doctor --fix` with the gateway stopped), stop it, then run Kurahi again"
    )


def _schema_version(conn: sqlite3.Connection, path: Path, known: tuple[int, ...]) -> int:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    missing = [t for t in REQUIRED_TABLES if t not in tables]
    if "schema_meta" in missing:
        raise SqliteSchemaError(
            f"no schema_meta table: not an OpenClaw 2026.9 agent store, or a schema Kurahi does not know "
            f"(Kurahi reads schema version {', '.join(map(str, known))})",
            path=path,
            known=known,
        )
    # schema_meta may hold other rows (OpenClaw's doctor adds its own): the store's is the primary one.
    rows = conn.execute("SELECT schema_version FROM schema_meta WHERE meta_key = 'primary'")
    versions = sorted({v for (v,) in rows if isinstance(v, int)})
    version = versions[-1] if versions else None
    if version not in known:
        shown = "no schema version" if version is None else f"schema version {version}"
        raise SqliteSchemaError(
            f"{shown} in schema_meta{_written_by(version)}: Kurahi reads OpenClaw agent stores of schema version "
            f"{', '.join(map(str, known))} only; nothing was read{_way_forward(version, known)}",
            path=path,
            version=version,
            known=known,
        )
    if missing:
        raise SqliteSchemaError(
            f"schema version {version} but no table {', '.join(missing)}: not an OpenClaw agent store",
            path=path,
            version=version,
            known=known,
        )
    return version


@contextlib.contextmanager
def open_store_snapshot(
    db_path: str | os.PathLike[str],
    *,
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    known_schema_versions: tuple[int, ...] = KNOWN_SCHEMA_VERSIONS,
) -> Iterator[StoreSnapshot]:
    """Open a consistent read-only snapshot of an OpenClaw agent store; not a byte of it changes.

    Usage::

        with open_store_snapshot(state / "agents/main/agent/openclaw-agent.sqlite") as snap:
            rows = snap.conn.execute("SELECT session_key, current_session_id FROM session_nodes").fetchall()

    The copy lives in a private temporary folder (mode 0700) removed when the block ends.

    Raises:
        SqliteStoreError: missing, not a regular file, not SQLite, corrupt, unreadable.
        SqliteStoreBusyError: a writer held the lock past ``busy_timeout`` (rollback-journal
            mode), or the files kept changing for that long (WAL mode).
        SqliteSchemaError: no ``schema_meta``, a version not in ``known_schema_versions``, or
            a required table missing.
    """
    path = Path(db_path)
    head = _header(path)
    wal_mode = head[18] == 2 or head[19] == 2  # the file format's write/read versions: 2 means WAL
    folder = Path(tempfile.mkdtemp(prefix="kurahi-store-"))
    conn: sqlite3.Connection | None = None
    try:
        try:
            if wal_mode:
                files, attempts = _copy_wal_store(path, folder, busy_timeout)
            else:
                files, attempts = _backup_rollback_store(path, folder, busy_timeout), 1
            conn = sqlite3.connect(folder / path.name, isolation_level=None)
            conn.execute("PRAGMA query_only = ON")
            version = _schema_version(conn, path, known_schema_versions)
        except sqlite3.Error as exc:
            raise translate_sqlite_error(exc, path, busy_timeout) from exc
        snap = StoreSnapshot(path, conn, version, wal_mode, files, attempts)
        try:
            yield snap
        except sqlite3.Error as exc:
            raise translate_sqlite_error(exc, path, busy_timeout) from exc
    finally:
        if conn is not None:
            conn.close()
        shutil.rmtree(folder, ignore_errors=True)
