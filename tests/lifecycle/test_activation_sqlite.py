"""Activation into OpenClaw 2026.9's SQLite store, on a real store OpenClaw wrote: the CLI as a user runs it."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli.activate import app
from kurahi.cli.common import EXIT
from kurahi.runtimes.openclaw.sqlite.write import octet_length, register_octet_length
from support.sqlite_activations import PHRASE_A, PHRASE_B, SqliteSetup, sqlite_setup, store_content

runner = CliRunner()


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args))


@pytest.fixture
def s(tmp_path: Path) -> SqliteSetup:
    return sqlite_setup(tmp_path)


def plan(s: SqliteSetup, out: Path, *extra: str) -> Any:
    return cli(
        "plan", "--home", str(s.home), "--agent", "main", "--candidate", str(s.candidate), "--out", str(out),
        "--marker", PHRASE_A, "--marker", PHRASE_B, *extra,
    )  # fmt: skip


def files(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


def test_plan_apply_verify_rollback_restores_the_store_content_exactly(s: SqliteSetup, tmp_path: Path) -> None:
    before, content = files(s.home), store_content(s.db)
    res = plan(s, tmp_path / "pkg")
    assert res.exit_code == 0, res.output
    assert files(s.home) == before, "plan changed the state dir"
    assert "schema version 23" in " ".join(res.output.split())
    res = cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline", "--json")
    assert res.exit_code == 0, res.output
    con = sqlite3.connect(f"file:{s.db}?mode=ro", uri=True)
    node = con.execute("SELECT current_session_id, entry_json FROM session_nodes").fetchone()
    assert node[0] == s.new_sid and s.new_sid in node[1] and s.old_sid not in node[1]
    prev = con.execute("SELECT previous_session_id FROM session_windows WHERE session_id = ?", (s.new_sid,)).fetchone()
    assert prev == (s.old_sid,), "the new session is linked to the old one"
    old_events = con.execute("SELECT count(*) FROM transcript_events WHERE session_id = ?", (s.old_sid,)).fetchone()
    assert old_events == (22,), "the old session is kept"
    con.close()
    assert not (s.home / "audit").exists(), "activation wrote an audit/ folder into an OpenClaw dir"
    assert cli("verify", str(tmp_path / "pkg"), "--home", str(s.home)).exit_code == 0
    res = cli("rollback", str(tmp_path / "pkg"), "--home", str(s.home), "--offline")
    assert res.exit_code == 0, res.output
    assert store_content(s.db) == content
    assert cli("verify", str(tmp_path / "pkg"), "--home", str(s.home)).exit_code == EXIT.FAILED


def _refused(s: SqliteSetup, tmp_path: Path, code: int, words: str) -> None:
    before = files(s.home)
    res = plan(s, tmp_path / "pkg")
    assert res.exit_code == code, res.output
    assert words in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output
    assert files(s.home) == before, "a refusal changed the state dir"


def test_a_running_openclaw_is_refused(s: SqliteSetup, tmp_path: Path) -> None:
    lock_dir = s.home / "tmp" / f"openclaw-{os.getuid()}"
    lock_dir.mkdir(parents=True, exist_ok=True)
    holder = sqlite3.connect(lock_dir / "gateway.state.lock.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # what a running 2026.9 gateway holds
    try:
        _refused(s, tmp_path, EXIT.BUSY, "OpenClaw gateway is running")
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_schema_version_kurahi_does_not_know_is_refused(s: SqliteSetup, tmp_path: Path) -> None:
    con = sqlite3.connect(s.db)
    con.execute("UPDATE schema_meta SET schema_version = 24")
    con.commit()
    con.close()
    _refused(s, tmp_path, EXIT.INVALID, "schema version 24")


def test_a_corrupt_database_is_refused(s: SqliteSetup, tmp_path: Path) -> None:
    data = bytearray(s.db.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)
    s.db.write_bytes(bytes(data))
    res = plan(s, tmp_path / "pkg")
    assert res.exit_code in (EXIT.INVALID, EXIT.NOT_FOUND), res.output
    assert "Traceback" not in res.output and "corrupt" in res.output


def test_a_locked_database_is_refused_at_apply(s: SqliteSetup, tmp_path: Path) -> None:
    assert plan(s, tmp_path / "pkg").exit_code == 0
    holder = sqlite3.connect(s.db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        res = cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert res.exit_code == EXIT.BUSY, res.output
    assert "locked" in res.output


def test_a_wal_not_checkpointed_is_refused(s: SqliteSetup, tmp_path: Path) -> None:
    s.db.with_name(s.db.name + "-wal").write_bytes(b"\0" * 32)
    _refused(s, tmp_path, EXIT.INVALID, "not yet checkpointed")


def test_a_candidate_older_than_the_live_session_is_refused(s: SqliteSetup, tmp_path: Path) -> None:
    lines = s.candidate.read_bytes().split(b"\n")
    s.candidate.write_bytes(b"\n".join(lines[:-2]) + b"\n")
    _refused(s, tmp_path, EXIT.INVALID, "older than the live session")


def test_a_turn_after_planning_makes_apply_refuse_and_change_nothing(s: SqliteSetup, tmp_path: Path) -> None:
    assert plan(s, tmp_path / "pkg").exit_code == 0
    con = sqlite3.connect(s.db)
    register_octet_length(con)
    con.execute(
        "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, 22, '{}', 0)", (s.old_sid,)
    )
    con.commit()
    con.close()
    before = store_content(s.db)
    res = cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline")
    assert res.exit_code == EXIT.FAILED and "changed since planning" in res.output, res.output
    assert store_content(s.db) == before


@pytest.mark.parametrize(
    ("value", "expected"),
    [("héllo", 6), (b"\x00\x01\x02", 3), (None, None), (12345, 5), (-7, 2), (1.5, 3), (100.0, 5), ("", 0)],
)
def test_octet_length_has_sqlite_semantics(value: Any, expected: int | None) -> None:
    assert octet_length(value) == expected
    if sqlite3.sqlite_version_info >= (3, 43, 0):
        native = sqlite3.connect(":memory:").execute("SELECT octet_length(?)", (value,)).fetchone()[0]
        assert native == expected


@pytest.mark.parametrize("command", ["apply", "rollback"])
def test_timeout_is_a_usage_error_for_the_sqlite_store_and_changes_nothing(
    s: SqliteSetup, tmp_path: Path, command: str
) -> None:
    assert plan(s, tmp_path / "pkg").exit_code == 0
    if command == "rollback":
        assert cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    before, journal = store_content(s.db), (tmp_path / "pkg" / "journal.jsonl")
    logged = journal.read_bytes() if journal.exists() else None
    res = cli(command, str(tmp_path / "pkg"), "--home", str(s.home), "--offline", "--timeout", "5")
    assert res.exit_code == EXIT.USAGE, res.output
    assert "--timeout does not apply" in " ".join(res.output.split()) and "Traceback" not in res.output
    assert store_content(s.db) == before
    assert (journal.read_bytes() if journal.exists() else None) == logged
    assert "Refused (usage error) for a package into OpenClaw 2026.9" in " ".join(
        cli(command, "--help").output.replace("│", " ").split()
    )


def test_no_stop_is_honoured_for_the_sqlite_store(s: SqliteSetup, tmp_path: Path) -> None:
    """--no-stop is what the SQLite path always does: a running OpenClaw is refused (exit 5), else it applies."""
    assert plan(s, tmp_path / "pkg").exit_code == 0
    lock_dir = s.home / "tmp" / f"openclaw-{os.getuid()}"
    lock_dir.mkdir(parents=True, exist_ok=True)
    holder = sqlite3.connect(lock_dir / "gateway.state.lock.sqlite", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        before = store_content(s.db)
        res = cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline", "--no-stop")
        assert res.exit_code == EXIT.BUSY and "OpenClaw gateway is running" in res.output, res.output
        assert store_content(s.db) == before
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    res = cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline", "--no-stop")
    assert res.exit_code == 0, res.output
    assert "always so" in " ".join(cli("apply", "--help").output.replace("│", " ").split())


def test_sqlite_errors_in_the_callers_block_are_translated_by_open_store(s: SqliteSetup) -> None:
    from kurahi.errors import SqliteStoreError
    from kurahi.runtimes.openclaw.sqlite.write import open_store

    with pytest.raises(SqliteStoreError, match="no such table"), open_store(s.db, write=False) as con:
        con.execute("SELECT * FROM no_such_table")


def test_a_reader_sees_changes_still_in_the_wal_and_changes_no_byte(s: SqliteSetup) -> None:
    """verify and rollback read the store while OpenClaw may run: committed changes not yet
    checkpointed must be seen (an immutable open would miss them), and nothing may be written."""
    from kurahi.runtimes.openclaw.sqlite.write import open_store

    writer = sqlite3.connect(s.db, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode = WAL")
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("UPDATE schema_meta SET updated_at = 4242")
        assert Path(str(s.db) + "-wal").stat().st_size > 0
        before = files(s.home)
        with open_store(s.db, write=False) as con:
            assert con.execute("SELECT updated_at FROM schema_meta").fetchone()[0] == 4242
        assert files(s.home) == before
    finally:
        writer.close()


def _row_and_pending(db: Path) -> tuple[dict[str, Any], bool]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        from kurahi.runtimes.openclaw.sqlite.write import node_row

        node = node_row(con, "agent:main:main")
        pending = con.execute(
            "SELECT 1 FROM session_canonical_validation_pending WHERE session_key = 'agent:main:main'"
        )
        assert node is not None
        return node, pending.fetchone() is not None
    finally:
        con.close()


def test_the_activated_row_is_settled_as_openclaws_own_writer_leaves_it(s: SqliteSetup, tmp_path: Path) -> None:
    """OpenClaw reads a session row only at ``entry_valid`` 1; its triggers reset that to 0 on the
    activation's update. The row must come out valid and, as it was not pending before, not
    pending (a real OpenClaw's own read of it is in tests/peers/test_openclaw_activated_row.py)."""
    from kurahi.runtimes.openclaw.sqlite.write import entry_problem

    old, was_pending = _row_and_pending(s.db)
    assert old["entry_valid"] == 1 and not was_pending
    assert plan(s, tmp_path / "pkg").exit_code == 0
    assert cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    new, pending = _row_and_pending(s.db)
    assert new["current_session_id"] == s.new_sid
    assert (new["entry_valid"], pending, entry_problem(new)) == (1, False, None)
    assert cli("rollback", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    assert _row_and_pending(s.db) == (old, False)


def test_a_row_openclaw_had_not_yet_validated_stays_pending_for_it(s: SqliteSetup, tmp_path: Path) -> None:
    """Kurahi checks only what it changes (the session ids): a key OpenClaw still had to validate stays queued."""
    con = sqlite3.connect(s.db)
    con.execute("INSERT INTO session_canonical_validation_pending (session_key) VALUES ('agent:main:main')")
    con.commit()
    con.close()
    content = store_content(s.db)
    assert plan(s, tmp_path / "pkg").exit_code == 0
    assert cli("apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    new, pending = _row_and_pending(s.db)
    assert (new["entry_valid"], pending) == (1, True)
    assert cli("rollback", str(tmp_path / "pkg"), "--home", str(s.home), "--offline").exit_code == 0
    assert store_content(s.db) == content


def test_a_row_openclaw_would_not_read_is_refused_and_nothing_changes(s: SqliteSetup, tmp_path: Path) -> None:
    """A row whose entry disagrees with its columns: plan refuses it, and so does the write itself."""
    from kurahi.errors import SqliteStoreError
    from kurahi.runtimes.openclaw.sqlite.write import install_session, open_store

    con = sqlite3.connect(s.db)
    con.execute("UPDATE session_nodes SET updated_at = updated_at + 1")
    con.commit()
    con.close()
    _refused(s, tmp_path, EXIT.INVALID, "is not one OpenClaw reads (entry_json's updatedAt")
    content = store_content(s.db)
    lines = s.candidate.read_bytes().decode().splitlines()
    with open_store(s.db, write=True) as con, pytest.raises(SqliteStoreError, match="would not be one OpenClaw reads"):
        install_session(con, "agent:main:main", lines, s.old_sid, s.new_sid, 1764489600000)
    assert store_content(s.db) == content
