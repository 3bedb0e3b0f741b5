"""Helpers for activation into OpenClaw 2026.9's SQLite store: a real store OpenClaw wrote, a candidate."""

from __future__ import annotations

import shutil
import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path

from kurahi.runtimes.openclaw.sqlite.read import export_session_jsonl, list_sqlite_nodes
from support.reset_bypass import bypass_reset
from support.testdata import data_path

FULL_STORE = "2026.9.6-full"
"""A complete store written by OpenClaw 2026.9.6 (three turns, /reset, two turns; see the data README)."""
PHRASE_A = "TEAL-HERON-ALPHA"
PHRASE_B = "AMBER-OTTER-OMEGA"
KEY = "agent:main:main"


@dataclass
class SqliteSetup:
    home: Path
    db: Path
    candidate: Path
    old_sid: str
    new_sid: str


def sqlite_setup(tmp_path: Path) -> SqliteSetup:
    """A copy of the full store's state dir and a candidate C built from its live session."""
    home = tmp_path / "state"
    shutil.copytree(data_path("openclaw", FULL_STORE, "state"), home)
    db = home / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    (node,) = [n for n in list_sqlite_nodes(db) if n.session_key == KEY]
    old = node.current_session_id
    new = str(uuid.uuid4())
    candidate = tmp_path / "C.jsonl"
    candidate.write_bytes(bypass_reset(export_session_jsonl(db, old), new))
    return SqliteSetup(home, db, candidate, old, new)


def store_content(db: Path) -> str:
    """The store's content hash, read on a copy (never on the store itself)."""
    from kurahi.runtimes.openclaw.sqlite.write import content_sha256

    scratch = db.parent.parent.parent.parent.parent / f"copy-{uuid.uuid4().hex}.sqlite"
    shutil.copyfile(db, scratch)
    wal = db.with_name(db.name + "-wal")
    if wal.exists():
        shutil.copyfile(wal, scratch.with_name(scratch.name + "-wal"))
    con = sqlite3.connect(scratch)
    try:
        return content_sha256(con)
    finally:
        con.close()
