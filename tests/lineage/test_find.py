"""`find_lineage` and `kurahi lineage find` on real OpenClaw state directories of both eras."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kurahi.cli.common import EXIT
from kurahi.cli.lineage.find import find_cmd
from kurahi.errors import TranscriptReadError, UsageError
from kurahi.lineage.find import Piece, export_piece, find_lineage
from kurahi.pi.transcript import Transcript
from kurahi.runtimes.openclaw.sqlite.read import export_session_jsonl, list_sqlite_sessions
from support.testdata import JSON_ERA, SQLITE_ERA, openclaw_state

JSON_STATE = openclaw_state(JSON_ERA)
SQLITE_STATE = openclaw_state(SQLITE_ERA)
OLD_ID = "fe0cc71e-f9a6-41ee-8e2a-ecb95f96fc86"
NEW_ID = "ed83c604-551f-41af-9a44-65881d6be000"
SQLITE_ID = "d3b1d651-8d78-4ca9-8fb6-be6778f74d05"
BEFORE, AFTER = "PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for path in [dst, *dst.rglob("*")]:
        path.chmod(0o700 if path.is_dir() else 0o600)  # the samples are read-only
    return dst


@pytest.fixture
def json_state(tmp_path: Path) -> Path:
    return _copy(JSON_STATE, tmp_path / "json-era")


@pytest.fixture
def sqlite_state(tmp_path: Path) -> Path:
    return _copy(SQLITE_STATE, tmp_path / "sqlite-era")


def db_of(state: Path) -> Path:
    return state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (names included) with the sha256 of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def entry_texts(piece: Piece) -> str:
    """Every entry's JSON text of a piece, read through the store."""
    data = export_session_jsonl(piece.db_path, piece.session_id) if piece.db_path else None
    t = Transcript.from_bytes(data, name=piece.source) if data is not None else Transcript.open(piece.source)
    with t:
        return "\n".join(json.dumps(e.data) for e in t.entries())


# -- JSON era -------------------------------------------------------------------------------


def test_json_era_lists_the_reset_archive_then_the_live_file(json_state: Path) -> None:
    before = snapshot(json_state)
    lineage = find_lineage(json_state)
    assert snapshot(json_state) == before
    assert (lineage.layout, lineage.agent, lineage.key) == ("json", "main", "agent:main:main")
    assert lineage.current_session_id == NEW_ID
    old, new = lineage.pieces
    assert (old.session_id, old.kind) == (OLD_ID, "reset-archive")
    assert (new.session_id, new.kind) == (NEW_ID, "live")
    assert new.found_by[0] == "catalog sessionFile"  # absolute path of a moved state dir, resolved
    assert old.found_by == ("reset time = next header time",)
    # the heuristic's evidence: the archive's name stamp is the new header's timestamp
    assert old.archived_ms == new.header_ms is not None
    assert old.last_ms is not None and new.first_ms is not None and old.last_ms < new.first_ms
    assert (old.entry_count, new.entry_count) == (21, 15)
    (boundary,) = lineage.boundaries
    assert (boundary.kind, boundary.before, boundary.after) == ("between-pieces", old.source, new.source)
    assert (boundary.from_ms, boundary.to_ms) == (old.last_ms, new.first_ms)
    assert boundary.gap_seconds == pytest.approx((new.first_ms - old.last_ms) / 1000)
    assert lineage.unlinked == () and lineage.notes == ()


def test_json_era_markers_sit_on_their_side_of_the_reset(json_state: Path) -> None:
    old, new = find_lineage(json_state, agent="main", key="agent:main:main").pieces
    assert BEFORE in entry_texts(old) and AFTER not in entry_texts(old)
    assert AFTER in entry_texts(new) and BEFORE not in entry_texts(new)


def test_to_dict_is_json_with_iso_times(json_state: Path) -> None:
    data = json.loads(json.dumps(find_lineage(json_state).to_dict()))
    assert [p["sessionId"] for p in data["pieces"]] == [OLD_ID, NEW_ID]
    assert data["pieces"][0]["archivedAt"] == data["pieces"][1]["headerAt"] == "2026-11-30T08:24:46.695Z"
    assert data["boundaries"][0]["gapSeconds"] == pytest.approx(4.352)


def test_an_orphan_transcript_is_reported_unlinked(json_state: Path) -> None:
    sessions = json_state / "agents" / "main" / "sessions"
    orphan = sessions / "0000aaaa-0000-4000-8000-000000000000.jsonl"
    orphan.write_bytes(b'{"type":"session","version":3,"id":"0000aaaa","timestamp":"2020-01-01T00:00:00.000Z"}\n')
    lineage = find_lineage(json_state)
    assert [p.session_id for p in lineage.pieces] == [OLD_ID, NEW_ID]
    assert lineage.unlinked == (str(orphan),)


def test_export_of_a_file_piece_copies_bytes_and_never_overwrites(json_state: Path, tmp_path: Path) -> None:
    old = find_lineage(json_state).pieces[0]
    out = export_piece(old, tmp_path / "a.jsonl")
    assert out.read_bytes() == Path(old.source).read_bytes()
    with pytest.raises(UsageError, match="already exists"):
        export_piece(old, out)
    with pytest.raises(UsageError, match="state directory"):
        export_piece(old, json_state / "agents" / "main" / "copy.jsonl")
    with pytest.raises(UsageError, match="state directory"):
        export_piece(old, json_state / "copy.jsonl")


# -- SQLite era -----------------------------------------------------------------------------


def test_sqlite_era_finds_the_in_transcript_reset(sqlite_state: Path) -> None:
    before = snapshot(sqlite_state)
    lineage = find_lineage(sqlite_state)
    assert snapshot(sqlite_state) == before  # no -wal, -shm or -journal left behind either
    assert (lineage.layout, lineage.current_session_id) == ("sqlite", SQLITE_ID)
    (piece,) = lineage.pieces
    assert piece.source == f"sqlite:{db_of(sqlite_state)}#{SQLITE_ID}"
    assert piece.found_by[0] == "session_nodes current_session_id"
    (reset,) = piece.reset_entries
    assert (reset.id, reset.reason) == ("106cd4ae", "reset")
    (boundary,) = lineage.boundaries
    assert (boundary.kind, boundary.entry_id, boundary.reason) == ("reset-entry", "106cd4ae", "reset")
    assert boundary.from_ms is not None and boundary.to_ms is not None
    assert boundary.from_ms <= (reset.at_ms or 0) <= boundary.to_ms


def test_sqlite_export_opens_with_every_event(sqlite_state: Path, tmp_path: Path) -> None:
    before = snapshot(sqlite_state)
    (piece,) = find_lineage(sqlite_state).pieces
    out = export_piece(piece, tmp_path / "export.jsonl")
    with sqlite3.connect(f"file:{db_of(sqlite_state)}?mode=ro", uri=True) as conn:
        (count,) = conn.execute("SELECT count(*) FROM transcript_events WHERE session_id = ?", (SQLITE_ID,)).fetchone()
        stored = [r[0] for r in conn.execute("SELECT event_json FROM transcript_events ORDER BY seq")]
    conn.close()
    assert out.read_bytes() == "".join(text + "\n" for text in stored).encode()
    with Transcript.open(out) as t:
        assert t.session_id == SQLITE_ID
        assert len(t) == count - 1 == piece.entry_count  # seq 0 is the header
        assert [e.type for e in t.entries()].count("reset") == 1
    text = out.read_text()
    assert text.index(BEFORE) < text.index('"type":"reset"') < text.index(AFTER)
    assert text.rindex(BEFORE) < text.index('"type":"reset"')
    [session] = list_sqlite_sessions(db_of(sqlite_state))
    assert (session.session_key, session.event_count) == ("agent:main:main", count)
    with pytest.raises(UsageError, match="already exists"):
        export_piece(piece, out)
    assert snapshot(sqlite_state) == before


def test_wal_store_without_a_writer_leaves_no_files(sqlite_state: Path) -> None:
    # A mode=ro reader of a WAL database with no -wal file would create -wal and -shm.
    conn = sqlite3.connect(db_of(sqlite_state))
    assert conn.execute("PRAGMA journal_mode = wal").fetchone() == ("wal",)
    conn.close()
    before = snapshot(sqlite_state)
    assert find_lineage(sqlite_state).pieces[0].entry_count == 36
    assert snapshot(sqlite_state) == before


# -- bad input ------------------------------------------------------------------------------


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=f"{tmp_path / 'nope'}: no such directory"):
        find_lineage(tmp_path / "nope")


def test_directory_of_neither_layout(tmp_path: Path) -> None:
    (tmp_path / "agents" / "main").mkdir(parents=True)
    with pytest.raises(UsageError, match=f"{tmp_path}: neither a Kurahi home nor an OpenClaw state directory"):
        find_lineage(tmp_path)


def test_unknown_agent_and_key(json_state: Path) -> None:
    with pytest.raises(UsageError, match=r"no agent 'ghost'; agents present: main"):
        find_lineage(json_state, agent="ghost")
    with pytest.raises(UsageError, match=r"no session key 'agent:main:nope'; keys: agent:main:main"):
        find_lineage(json_state, key="agent:main:nope")


def test_several_agents_need_a_choice(json_state: Path) -> None:
    (json_state / "agents" / "other" / "sessions").mkdir(parents=True)
    with pytest.raises(UsageError, match="several agents, pick one with --agent: main, other"):
        find_lineage(json_state)
    assert len(find_lineage(json_state, agent="main").pieces) == 2


def test_corrupt_sqlite_store(sqlite_state: Path) -> None:
    db_of(sqlite_state).write_bytes(b"this is not a database\x00" * 40)
    with pytest.raises(TranscriptReadError, match="not an SQLite database") as info:
        find_lineage(sqlite_state)
    assert info.value.path == str(db_of(sqlite_state))


def test_damaged_sqlite_pages(sqlite_state: Path) -> None:
    db = db_of(sqlite_state)
    data = bytearray(db.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # keep the header, wreck the schema page
    db.write_bytes(bytes(data))
    with pytest.raises(TranscriptReadError, match=str(db)):
        find_lineage(sqlite_state)


@pytest.fixture
def held_lock(sqlite_state: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(db_of(sqlite_state), isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    try:
        yield conn
    finally:
        conn.execute("ROLLBACK")
        conn.close()


def test_locked_sqlite_store(sqlite_state: Path, held_lock: sqlite3.Connection) -> None:
    with pytest.raises(TranscriptReadError, match="database is locked") as info:
        list_sqlite_sessions(db_of(sqlite_state), busy_timeout=0.1)
    assert info.value.path == str(db_of(sqlite_state))
    with pytest.raises(TranscriptReadError, match="locked"):
        find_lineage(sqlite_state)


def test_unknown_sqlite_session(sqlite_state: Path) -> None:
    with pytest.raises(UsageError, match="no transcript events for session 'nope'"):
        export_session_jsonl(db_of(sqlite_state), "nope")


# -- CLI ------------------------------------------------------------------------------------


def cli() -> typer.Typer:
    app = typer.Typer()
    app.command("find")(find_cmd)

    @app.command("other")
    def _other() -> None:  # a second command keeps "find" a subcommand
        """Nothing."""

    return app


runner = CliRunner()


def test_cli_table(json_state: Path) -> None:
    result = runner.invoke(cli(), ["find", "--state-dir", str(json_state)])
    assert result.exit_code == 0, result.output
    for text in ("agent:main:main", "reset-archive", "live", "between-pieces", "reset time = next header time"):
        assert text in result.output
    assert result.output.index("reset-archive") < result.output.index("live")


def test_cli_json_and_export(sqlite_state: Path, tmp_path: Path) -> None:
    out = tmp_path / "exported"
    args = ["find", "--state-dir", str(sqlite_state), "--key", "agent:main:main", "--export", str(out), "--json"]
    result = runner.invoke(cli(), args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["boundaries"][0]["kind"] == "reset-entry"
    assert data["exported"] == [str(out / f"{SQLITE_ID}.jsonl")]
    with Transcript.open(out / f"{SQLITE_ID}.jsonl") as t:
        assert len(t) == data["pieces"][0]["entryCount"]
    again = runner.invoke(cli(), args)
    assert again.exit_code == EXIT.USAGE and "already exists" in again.output
    inside = runner.invoke(cli(), [*args[:5], "--export", str(sqlite_state / "x")])
    assert inside.exit_code == EXIT.USAGE and "inside the state directory" in inside.output
    assert not (sqlite_state / "x").exists()


def test_cli_errors_name_the_path(tmp_path: Path, sqlite_state: Path) -> None:
    missing = runner.invoke(cli(), ["find", "--state-dir", str(tmp_path / "nope")])
    assert missing.exit_code == EXIT.NOT_FOUND and "no such directory" in missing.output  # README: not found
    db_of(sqlite_state).write_bytes(b"garbage" * 100)
    corrupt = runner.invoke(cli(), ["find", "--state-dir", str(sqlite_state)])
    assert corrupt.exit_code == EXIT.NOT_FOUND and "not an SQLite database" in corrupt.output
    assert "Traceback" not in corrupt.output
