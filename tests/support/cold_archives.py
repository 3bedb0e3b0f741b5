"""Move a session of an OpenClaw 2026.9 store into a cold archive, as its cold-storage worker does.

What the worker did on real OpenClaw 2026.9.6 (``tests/data/openclaw/2026.9.6-cold``):
the events go, as zstd-compressed JSONL (a header line, then
one ``event`` record per row in ``seq`` order), into ``sessions/cold/<sha256>.jsonl.zst``;
the session's rows leave ``transcript_events`` and the tables beside it in the same
transaction that records the archive in ``session_transcript_cold_archives``; its node and
window stay. Only the header and event records are written here (the identity, active, index
and fts records are not needed to read the transcript back).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

import zstandard

from kurahi.runtimes.openclaw.sqlite.events import EVENT_COLUMNS, event_bytes
from kurahi.runtimes.openclaw.sqlite.write import register_octet_length

_ROWS_OF_A_SESSION = (
    "session_transcript_active_events",
    "session_transcript_index_state",
    "session_transcript_fts_rows",  # its trigger removes the full-text rows
    "transcript_event_identities",
    "transcript_events",
)


def make_cold(db: Path, session_id: str) -> Path:
    """Archive ``session_id`` of store ``db`` (stopped, checkpointed); return the archive's path."""
    con = sqlite3.connect(db)
    try:
        register_octet_length(con)
        rows = con.execute(
            f"SELECT seq, created_at, {EVENT_COLUMNS} FROM transcript_events WHERE session_id = ? ORDER BY seq",
            (session_id,),
        ).fetchall()
        assert rows, f"{db}: no events for {session_id}"
        generation = os.urandom(16).hex()
        events = [(seq, at, event_bytes(t, z, n, where=f"seq {seq}", path=db).decode()) for seq, at, t, z, n in rows]
        records = [{"kind": "header", "version": 1, "sessionId": session_id, "generation": generation}]
        records += [{"kind": "event", "row": {"seq": s, "event_json": e, "created_at": at}} for s, at, e in events]
        text = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n" for r in records).encode()
        packed = zstandard.ZstdCompressor().compress(text)
        digest = hashlib.sha256(packed).hexdigest()
        folder = db.parent.parent / "sessions" / "cold"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{digest}.jsonl.zst"
        path.write_bytes(packed)
        raw = sum(len(e.encode()) for _, _, e in events) + len(events) - 1
        with con:
            for table in _ROWS_OF_A_SESSION:
                con.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            con.execute(
                "INSERT INTO session_transcript_cold_archives (session_id, generation, archive_name, archive_sha256, "
                "event_count, raw_bytes, archive_bytes, last_seq, archived_at, storage, archive_blob) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'file', NULL)",
                (session_id, generation, path.name, digest, len(events), raw, len(packed), events[-1][0],
                 int(time.time() * 1000)),
            )  # fmt: skip
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    return path
