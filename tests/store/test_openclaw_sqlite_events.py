"""OpenClaw 2026.9 keeps large transcript events zstd-compressed: Kurahi reads them as the same bytes.

A compaction's summary or a long message is stored as ``event_zstd`` (one zstd frame) with
``event_utf8_bytes`` its length, instead of ``event_json``. The real store sample has none,
so its events are compressed here the way OpenClaw stores them (and as its CHECK constraint
demands); the export, the activation's digest and ``lineage find`` must read them exactly as
the plain ones, and a frame that lies about its size is named, never guessed.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
import zstandard

from kurahi.errors import TranscriptReadError
from kurahi.runtimes.openclaw.sqlite.events import event_bytes
from kurahi.runtimes.openclaw.sqlite.read import export_session_jsonl, list_sqlite_nodes
from kurahi.runtimes.openclaw.sqlite.write import open_store, register_octet_length, session_digest
from support.testdata import data_path

NAVIGATION = (
    '{"version":1,"report":{"kind":"canonical"},"navigation":{},"reset":{},"model":{},'
    '"modelBytes":0,"modelWithoutCheckpointBytes":0,"withoutCustomDataBytes":0}'
)


def _store(tmp_path: Path) -> tuple[Path, str]:
    home = tmp_path / "state"
    shutil.copytree(data_path("openclaw", "2026.9.6-full", "state"), home)
    db = home / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    (node,) = list_sqlite_nodes(db)
    return db, node.current_session_id


def _compress(db: Path, sid: str, min_bytes: int) -> int:
    """Store every event of ``sid`` of at least ``min_bytes`` as OpenClaw stores a large one; how many."""
    con = sqlite3.connect(db)
    register_octet_length(con)
    rows = con.execute(
        "SELECT seq, event_json FROM transcript_events WHERE session_id = ? AND length(CAST(event_json AS BLOB)) >= ?",
        (sid, min_bytes),
    ).fetchall()
    for seq, text in rows:
        data = text.encode()
        con.execute(
            "UPDATE transcript_events SET event_json = NULL, event_zstd = ?, event_utf8_bytes = ?, navigation_json = ? "
            "WHERE session_id = ? AND seq = ?",
            (zstandard.ZstdCompressor().compress(data), len(data), NAVIGATION, sid, seq),
        )
    con.commit()
    con.close()
    return len(rows)


def test_compressed_events_read_as_the_same_bytes(tmp_path: Path) -> None:
    db, sid = _store(tmp_path)
    plain = export_session_jsonl(db, sid)
    with open_store(db, write=False) as con:
        digest = session_digest(con, sid)
    assert _compress(db, sid, 500) >= 3
    assert export_session_jsonl(db, sid) == plain
    with open_store(db, write=False) as con:
        assert session_digest(con, sid) == digest


def test_a_frame_that_lies_about_its_size_is_named(tmp_path: Path) -> None:
    db, sid = _store(tmp_path)
    assert _compress(db, sid, 500)
    con = sqlite3.connect(db)
    register_octet_length(con)
    (seq,) = con.execute(
        "SELECT min(seq) FROM transcript_events WHERE session_id = ? AND event_zstd IS NOT NULL", (sid,)
    ).fetchone()
    con.execute(
        "UPDATE transcript_events SET event_utf8_bytes = event_utf8_bytes + 1 WHERE session_id = ? AND seq = ?",
        (sid, seq),
    )
    con.commit()
    con.close()
    with pytest.raises(TranscriptReadError, match=f"event seq {seq}: its zstd frame inflates to"):
        export_session_jsonl(db, sid)


@pytest.mark.parametrize(
    ("zstd", "size", "words"),
    [
        (None, None, "has no event_json and no event_zstd"),
        (b"not a frame", 11, "does not inflate"),
        (zstandard.ZstdCompressor().compress(b"{}"), 0, "event_utf8_bytes is 0"),
    ],
)
def test_an_event_that_cannot_be_read_is_named(zstd: bytes | None, size: int | None, words: str) -> None:
    with pytest.raises(TranscriptReadError, match=words):
        event_bytes(None, zstd, size, where="session s: event seq 3", path="store.sqlite")


def test_plain_text_is_taken_as_it_is() -> None:
    assert event_bytes("héllo", None, None, where="w", path="p") == "héllo".encode()
    assert event_bytes(b"raw", b"ignored", 99, where="w", path="p") == b"raw"
