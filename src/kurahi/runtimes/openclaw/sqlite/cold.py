"""OpenClaw 2026.9's cold transcript storage: a session's events moved out of the store into an archive.

With ``session.maintenance.coldStorage`` on, OpenClaw moves the events of a session idle for
``afterDays`` into one zstd-compressed JSONL file and deletes its ``transcript_events`` rows in
the same transaction that records the archive in ``session_transcript_cold_archives``; the
session's node and window stay. So a session with such a row and no events is cold, not empty:
its history is the archive.

The archive lives in ``cold/<sha256>.jsonl.zst`` of the store's artifact folder (``sessions/``
beside ``agent/`` in the standard layout), or, for ``storage = 'sqlite'``, in the row's
``archive_blob``. Its lines: a header ``{"kind": "header", "sessionId", "generation", ...}``,
then one ``{"kind": "event", "row": {"seq", "event_json", "created_at"}}`` per event in ``seq``
order, then identity, active, index and fts records (not needed to rebuild the transcript).

:func:`cold_events` checks an archive as OpenClaw does before it trusts one: the compressed
bytes' length against ``archive_bytes`` and their SHA-256 against ``archive_sha256``, then the
header's session and generation, the number of events and the last ``seq`` against the row.
Anything else is a :class:`~kurahi.errors.TranscriptReadError` naming the file and what did not
match; a bad archive is never read as a shorter or empty history. Nothing is written.
"""

from __future__ import annotations

import hashlib
import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kurahi.errors import TranscriptReadError
from kurahi.js import deepjson

__all__ = ["COLD_DIR", "ColdArchive", "cold_archives", "cold_dir", "cold_events"]

COLD_DIR = "cold"
"""The folder of archives inside the store's artifact folder."""
_TABLE = "session_transcript_cold_archives"
_NAME = re.compile(r"^[a-f0-9]{64}\.jsonl\.zst$")
"""The only archive names OpenClaw accepts (its SHA-256, then ``.jsonl.zst``)."""
_MAX_INFLATED = 64 * 1024 * 1024
"""OpenClaw's cap on an archive's decompressed size."""


@dataclass(frozen=True, slots=True)
class ColdArchive:
    """One ``session_transcript_cold_archives`` row: where a cold session's events are, and what they must be."""

    session_id: str
    """The session whose events the archive holds."""
    generation: str
    """The transcript generation at archive time (the header says it too)."""
    name: str
    """``<sha256>.jsonl.zst``."""
    sha256: str
    """Lowercase hex SHA-256 of the compressed bytes."""
    event_count: int
    """Events in the archive, the header (seq 0) included."""
    archive_bytes: int
    """Length of the compressed bytes."""
    last_seq: int
    """The last event's ``seq``."""
    storage: str
    """``file`` (in :func:`cold_dir`) or ``sqlite`` (in the row's ``archive_blob``)."""
    blob: bytes | None
    """The compressed bytes, for ``storage = 'sqlite'``."""


def cold_dir(db: Path) -> Path:
    """Where the archives of store ``db`` are: ``cold/`` in OpenClaw's artifact folder for it.

    The artifact folder is ``sessions/`` beside the store's folder when that is named ``agent``
    (``agents/<id>/agent/openclaw-agent.sqlite``), else the store's own folder.
    """
    folder = db.parent
    artifacts = folder.parent / "sessions" if folder.name == "agent" else folder
    return artifacts / COLD_DIR


def cold_archives(conn: sqlite3.Connection) -> dict[str, ColdArchive]:
    """Every cold archive the store records, by session id (none when it has no such table)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (_TABLE,)).fetchone() is None:
        return {}
    rows = conn.execute(
        "SELECT session_id, generation, archive_name, archive_sha256, event_count, archive_bytes, last_seq, "
        f"storage, archive_blob FROM {_TABLE} ORDER BY session_id"
    ).fetchall()
    out: dict[str, ColdArchive] = {}
    for sid, generation, name, sha, count, size, last, storage, blob in rows:
        out[_text(sid)] = ColdArchive(
            _text(sid), _text(generation), _text(name), _text(sha), int(count), int(size), int(last),
            _text(storage), bytes(blob) if blob is not None else None,
        )  # fmt: skip
    return out


def _fail(archive: ColdArchive, where: Path | str, what: str) -> TranscriptReadError:
    # The file is named in the text too: a lineage note carries the message, not the path.
    return TranscriptReadError(f"cold archive {where} of session {archive.session_id} {what}; not read", path=where)


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _compressed(archive: ColdArchive, db: Path) -> tuple[bytes, Path | str]:
    """The archive's compressed bytes and where they came from, checked against the row's size and hash."""
    where: Path | str
    if archive.storage == "sqlite":
        where = f"{db} ({_TABLE}.archive_blob of session {archive.session_id})"
        if archive.blob is None:
            raise _fail(archive, where, "has no bytes (archive_blob is NULL)")
        data = archive.blob
    elif archive.storage == "file":
        if not _NAME.match(archive.name):
            raise _fail(archive, db, f"is named {archive.name!r}, not <sha256>.jsonl.zst")
        where = cold_dir(db) / archive.name
        data = _read_file(where, archive)
    else:
        raise _fail(archive, db, f"is kept in an unknown storage {archive.storage!r}")
    if len(data) != archive.archive_bytes:
        raise _fail(
            archive, where, f"failed verification: {len(data)} bytes, archive_bytes says {archive.archive_bytes}"
        )
    digest = hashlib.sha256(data).hexdigest()
    if digest != archive.sha256:
        raise _fail(archive, where, f"failed verification: sha256 {digest}, archive_sha256 says {archive.sha256}")
    return data, where


def _read_file(path: Path, archive: ColdArchive) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _fail(archive, path, f"is missing or unreadable ({exc.strerror})") from exc
    try:
        size = os.fstat(fd).st_size
        if size != archive.archive_bytes:  # not read whole when it cannot be the archive
            raise _fail(archive, path, f"failed verification: {size} bytes, archive_bytes says {archive.archive_bytes}")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(archive.archive_bytes + 1)
    except OSError as exc:
        raise _fail(archive, path, f"is unreadable ({exc.strerror})") from exc
    finally:
        os.close(fd)


def cold_events(archive: ColdArchive, db: Path) -> list[tuple[int, bytes]]:
    """The archived events ``(seq, event_json bytes)`` in ``seq`` order, once the archive is verified.

    Raises:
        TranscriptReadError: the archive is missing or unreadable, its size or SHA-256 is not the
            row's, it does not inflate, or its header, event count or last ``seq`` is not the
            row's (the message names the file and what did not match).
    """
    import zstandard

    data, where = _compressed(archive, db)
    sid = archive.session_id

    def bad(what: str) -> TranscriptReadError:
        return _fail(archive, where, f"does not match its row: {what}")

    try:
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            text = reader.read(_MAX_INFLATED + 1)
    except zstandard.ZstdError as exc:
        raise bad(f"does not inflate ({exc})") from exc
    if len(text) > _MAX_INFLATED:
        raise bad(f"inflates to more than {_MAX_INFLATED} bytes")
    events: list[tuple[int, bytes]] = []
    for number, line in enumerate(text.split(b"\n"), 1):
        if not line.strip():
            continue
        try:
            record = deepjson.parse(line)
        except ValueError as exc:
            raise bad(f"line {number} is not JSON ({exc})") from exc
        kind = record.get("kind") if isinstance(record, dict) else None
        if number == 1:
            if kind != "header":
                raise bad("line 1 is not its header")
            if record.get("sessionId") != sid or record.get("generation") != archive.generation:
                raise bad(
                    f"its header names session {record.get('sessionId')!r} generation {record.get('generation')!r}, "
                    f"the store says {sid!r} generation {archive.generation!r}"
                )
        elif kind == "header":
            raise bad(f"line {number} is a second header")
        elif kind == "event":
            row = record.get("row")
            seq = row.get("seq") if isinstance(row, dict) else None
            event = row.get("event_json") if isinstance(row, dict) else None
            if isinstance(seq, bool) or not isinstance(seq, int) or not isinstance(event, str):
                raise bad(f"line {number} is an event without an integer seq and an event_json text")
            if events and seq <= events[-1][0]:
                raise bad(f"line {number}: seq {seq} does not follow seq {events[-1][0]}")
            events.append((seq, event.encode("utf-8", "surrogatepass")))
    if not events:
        raise bad("it holds no events")
    if len(events) != archive.event_count:
        raise bad(f"it holds {len(events)} events, event_count says {archive.event_count}")
    if events[-1][0] != archive.last_seq:
        raise bad(f"its last event is seq {events[-1][0]}, last_seq says {archive.last_seq}")
    return events
