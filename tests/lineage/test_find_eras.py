"""`kurahi lineage find` on every era OpenClaw wrote, strictly read-only (issue 16, deliverable 1).

Each test hashes the whole state directory (``-wal`` and ``-shm`` included) before and after.
The upgraded samples were written by OpenClaw 2026.9.6's own ``doctor --fix``: their store is
in WAL mode with the zero-byte ``-wal`` and the ``-shm`` a clean stop leaves.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from kurahi.errors import SqliteSchemaError, SqliteStoreError
from kurahi.lineage.find import find_lineage
from kurahi.runtimes.openclaw.sqlite.snapshot import open_store_snapshot
from support.testdata import IDLE_UPGRADED, JSON_ERA, SQLITE_ERA, UPGRADED, OpenClawEra, openclaw_state_copy, tree_hash

OLD_ID = "fe0cc71e-f9a6-41ee-8e2a-ecb95f96fc86"
NEW_ID = "ed83c604-551f-41af-9a44-65881d6be000"
SQLITE_ID = "d3b1d651-8d78-4ca9-8fb6-be6778f74d05"
ROLLED_ID = "5e55a0e1-0000-4000-8000-00000000beef"
runner = CliRunner()


def db_of(state: Path) -> Path:
    return state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def find_json(state: Path, *extra: str) -> tuple[int, Any, str]:
    before = tree_hash(state)
    res = runner.invoke(app, ["lineage", "find", "--state-dir", str(state), *extra, "--json"])
    assert tree_hash(state) == before, "lineage find changed the state directory"
    data = json.loads(res.stdout) if res.exit_code == 0 else None
    return res.exit_code, data, res.output


@pytest.mark.parametrize("era", [JSON_ERA, SQLITE_ERA, UPGRADED, IDLE_UPGRADED])
def test_find_changes_no_byte_of_any_sample(era: OpenClawEra, tmp_path: Path) -> None:
    state = openclaw_state_copy(era, tmp_path / "state")
    code, data, out = find_json(state)
    assert code == 0, out
    assert data["pieces"]
    table = runner.invoke(app, ["lineage", "find", "--state-dir", str(state)])  # the table for people, too
    assert table.exit_code == 0, table.output


def test_upgraded_dir_zero_byte_wal_is_a_real_sample(tmp_path: Path) -> None:
    state = openclaw_state_copy(UPGRADED, tmp_path / "state")
    wal = db_of(state).with_name("openclaw-agent.sqlite-wal")
    assert wal.stat().st_size == 0 and db_of(state).with_name("openclaw-agent.sqlite-shm").exists()
    # What the old reader did: mode=ro on a WAL store with a -wal present rewrites -shm.
    shm_before = hashlib.sha256(wal.with_name("openclaw-agent.sqlite-shm").read_bytes()).hexdigest()
    conn = sqlite3.connect(f"file:{db_of(state)}?mode=ro", uri=True)
    conn.execute("SELECT count(*) FROM transcript_events").fetchone()
    conn.close()
    shm_after = hashlib.sha256(wal.with_name("openclaw-agent.sqlite-shm").read_bytes()).hexdigest()
    assert shm_before != shm_after  # the hazard the snapshot avoids is real on this sample


def test_upgraded_dir_offers_the_leftover_archive_then_the_store(tmp_path: Path) -> None:
    state = openclaw_state_copy(UPGRADED, tmp_path / "state")
    code, data, out = find_json(state)
    assert code == 0, out
    assert data["layout"] == "json+sqlite" and data["unlinked"] == []
    old, new = data["pieces"]
    assert (old["sessionId"], old["kind"], old["foundBy"]) == (
        OLD_ID,
        "reset-archive",
        ["reset time = next header time"],
    )
    assert (new["sessionId"], new["kind"]) == (NEW_ID, "sqlite")
    assert old["lastEntryAt"] < new["firstEntryAt"]
    assert data["boundaries"][0]["kind"] == "between-pieces"


def test_idle_orphan_moved_to_a_recovered_key_is_offered_in_time_order(tmp_path: Path) -> None:
    state = openclaw_state_copy(IDLE_UPGRADED, tmp_path / "state")
    code, data, out = find_json(state)
    assert code == 0, out
    old, new = data["pieces"]
    assert old["sessionId"] == OLD_ID and old["foundBy"] == [
        f"recovered key agent:main:recovered:{OLD_ID} (orphan imported by OpenClaw's doctor; main is the only key)"
    ]
    assert old["confidence"] == "matched", "nothing the doctor kept names the orphan's key: an inference"
    assert new["sessionId"] == NEW_ID and old["lastEntryAt"] < new["firstEntryAt"]
    # The recovered key itself is still a key of its own.
    code, data, out = find_json(state, "--key", f"agent:main:recovered:{OLD_ID}")
    assert code == 0, out
    assert [p["sessionId"] for p in data["pieces"]] == [OLD_ID]


def _octet_length(value: Any) -> int | None:
    """SQLite 3.43's octet_length(), for the CHECK constraints of OpenClaw's schema."""
    if value is None:
        return None
    return len(value.encode("utf-8") if isinstance(value, str) else bytes(value))


def _rollover(conn: sqlite3.Connection) -> None:
    """An idle rollover after the reset: a new window whose previous_session_id is the old session."""
    conn.create_function("octet_length", 1, _octet_length, deterministic=True)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(transcript_events)")]
    row = dict(zip(cols, conn.execute("SELECT * FROM transcript_events WHERE seq = 0").fetchone(), strict=True))
    header = json.loads(row["event_json"])
    header.update(id=ROLLED_ID, timestamp="2026-11-30T09:30:00.000Z")
    message = {
        "type": "message",
        "id": "aaaabbbb",
        "parentId": None,
        "timestamp": "2026-11-30T09:30:01.000Z",
        "message": {"role": "user", "content": "after the idle rollover: CYAN-HERON-9", "timestamp": 1796031001000},
    }
    with conn:
        wcols = [r[1] for r in conn.execute("PRAGMA table_info(session_windows)")]
        win = dict(zip(wcols, conn.execute("SELECT * FROM session_windows").fetchone(), strict=True))
        win.update(session_id=ROLLED_ID, previous_session_id=SQLITE_ID, reason="rollover")
        conn.execute(
            f"INSERT INTO session_windows ({', '.join(wcols)}) VALUES ({', '.join('?' * len(wcols))})",
            [win[c] for c in wcols],
        )
        for seq, event in enumerate((header, message)):
            new = {**row, "session_id": ROLLED_ID, "seq": seq, "event_json": json.dumps(event, separators=(",", ":"))}
            if "event_id" in new:
                new["event_id"] = f"{ROLLED_ID}:{seq}"
            conn.execute(
                f"INSERT INTO transcript_events ({', '.join(new)}) VALUES ({', '.join('?' * len(new))})",
                list(new.values()),
            )
        conn.execute(
            "UPDATE session_nodes SET current_session_id = ? WHERE session_key = 'agent:main:main'", (ROLLED_ID,)
        )


def test_uncheckpointed_wal_is_read_right_and_left_alone(tmp_path: Path) -> None:
    work = openclaw_state_copy(SQLITE_ERA, tmp_path / "work")
    conn = sqlite3.connect(db_of(work), isolation_level=None)
    assert conn.execute("PRAGMA journal_mode = wal").fetchone() == ("wal",)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.isolation_level = ""
    _rollover(conn)
    # Copy while the writer is still open: a state dir whose last stop was not clean.
    state = tmp_path / "state"
    shutil.copytree(work, state)
    conn.close()
    wal = db_of(state).with_name("openclaw-agent.sqlite-wal")
    assert wal.stat().st_size > 0 and db_of(state).with_name("openclaw-agent.sqlite-shm").exists()
    # immutable=1 would ignore the WAL: the rollover is only there.
    imm = sqlite3.connect(f"file:{db_of(state)}?immutable=1", uri=True)
    assert imm.execute("SELECT count(*) FROM session_windows").fetchone() == (1,)
    imm.close()
    code, data, out = find_json(state)
    assert code == 0, out
    assert data["currentSessionId"] == ROLLED_ID
    first, second = data["pieces"]
    assert first["sessionId"] == SQLITE_ID and second["sessionId"] == ROLLED_ID
    assert "session_windows previous_session_id" in first["foundBy"]
    assert [b["kind"] for b in data["boundaries"]] == ["reset-entry", "between-pieces"]


def test_a_writer_in_a_transaction_neither_blocks_nor_leaks(tmp_path: Path) -> None:
    state = openclaw_state_copy(UPGRADED, tmp_path / "state")
    conn = sqlite3.connect(db_of(state), isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("UPDATE session_nodes SET current_session_id = 'uncommitted' WHERE session_key = 'agent:main:main'")
    try:
        with open_store_snapshot(db_of(state), busy_timeout=0.5) as snap:
            (current,) = snap.conn.execute("SELECT current_session_id FROM session_nodes").fetchone()
            assert current == NEW_ID  # the last commit, not the open transaction
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def test_unknown_schema_version_is_refused_by_name(tmp_path: Path) -> None:
    state = openclaw_state_copy(UPGRADED, tmp_path / "state")
    conn = sqlite3.connect(db_of(state))
    with conn:
        conn.execute("UPDATE schema_meta SET schema_version = 31")
    conn.close()
    with pytest.raises(SqliteSchemaError, match="schema version 31 in schema_meta") as info:
        find_lineage(state)
    assert (info.value.version, info.value.known) == (31, (19, 21, 23))
    assert "a newer OpenClaw than Kurahi knows" in str(info.value)
    code, _, out = find_json(state)
    assert code == EXIT.INVALID and "schema version 31" in out and "Traceback" not in out


@pytest.mark.parametrize(
    ("version", "writer"),
    [
        (22, "no published OpenClaw release or prerelease"),  # only source builds between 2026.9.5 and 2026.9.6
        (17, "prereleases 2026.8.1-beta.2, 2026.8.1-beta.3 and 2026.9.1-beta.1 only"),
        (20, None),  # no build Kurahi knows of
    ],
)
def test_a_schema_no_release_writes_is_refused_with_the_way_forward(
    version: int, writer: str | None, tmp_path: Path
) -> None:
    """Issue 38: Kurahi reads only the schemas it has read a real store of (19, 21, 23); an older
    one is refused, naming who writes it and how OpenClaw 2026.9.6 turns it into 23."""
    state = openclaw_state_copy(SQLITE_ERA, tmp_path / "state")
    conn = sqlite3.connect(db_of(state))
    with conn:
        conn.execute("UPDATE schema_meta SET schema_version = ?", (version,))
    conn.close()
    with pytest.raises(SqliteSchemaError) as info:
        find_lineage(state)
    message = " ".join(str(info.value).split())
    assert f"schema version {version} in schema_meta" in message and "nothing was read" in message
    assert writer is None or writer in message, message
    assert "start OpenClaw 2026.9.6 once" in message and "openclaw doctor --fix" in message, message
    code, _, out = find_json(state)
    assert code == EXIT.INVALID and "start OpenClaw 2026.9.6 once" in " ".join(out.split())


def test_no_schema_meta_is_refused(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_ERA, tmp_path / "state")
    conn = sqlite3.connect(db_of(state))
    with conn:
        conn.execute("DROP TABLE schema_meta")
    conn.close()
    code, _, out = find_json(state)
    assert code == EXIT.INVALID and "no schema_meta table" in out


def test_corrupt_wal_store_is_a_clear_error(tmp_path: Path) -> None:
    state = openclaw_state_copy(UPGRADED, tmp_path / "state")
    db = db_of(state)
    data = bytearray(db.read_bytes())
    data[100:8192] = b"\xa5" * (8192 - 100)
    db.write_bytes(bytes(data))
    with pytest.raises(SqliteStoreError, match=str(db)):
        find_lineage(state)
    code, _, out = find_json(state)
    assert code == EXIT.NOT_FOUND and "openclaw-agent.sqlite" in out and "Traceback" not in out


def test_locked_rollback_store_is_busy(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_ERA, tmp_path / "state")  # rollback-journal mode, as reduced
    conn = sqlite3.connect(db_of(state), isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        with (
            pytest.raises(SqliteStoreError, match="database is locked"),
            open_store_snapshot(db_of(state), busy_timeout=0.1),
        ):
            pass
    finally:
        conn.execute("ROLLBACK")
        conn.close()
