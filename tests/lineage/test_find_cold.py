"""`kurahi lineage find` reads a session OpenClaw 2026.9's cold storage archived (issue 38).

On a copy of ``2026.9.6-cold``: real OpenClaw 2026.9.6 moved the only session's events into
``sessions/cold/<sha256>.jsonl.zst`` and deleted its ``transcript_events`` rows. The state dir
is hashed before and after every command.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from support.testdata import SQLITE_COLD, openclaw_state_copy, tree_hash

COLD_ID = "9ab960fd-ef4e-4b7a-8a66-8bbded52e6b7"
BEFORE_RESET, AFTER_RESET = "PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"
runner = CliRunner()


def archive_of(state: Path) -> Path:
    (path,) = (state / "agents" / "main" / "sessions" / "cold").iterdir()
    return path


def find(state: Path, *extra: str) -> tuple[int, Any, str]:
    before = tree_hash(state)
    res = runner.invoke(app, ["lineage", "find", "--state-dir", str(state), *extra, "--json"])
    assert tree_hash(state) == before, "lineage find changed the state directory"
    return res.exit_code, json.loads(res.stdout) if res.exit_code == 0 else None, res.output


def test_the_cold_session_is_a_piece_read_from_its_archive(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_COLD, tmp_path / "state")
    code, data, out = find(state)
    assert code == 0, out
    (piece,) = data["pieces"]
    assert (piece["sessionId"], piece["kind"], piece["current"]) == (COLD_ID, "sqlite-cold", True)
    assert piece["entryCount"] == 36  # 37 archived events, the header not counted
    (reset,) = piece["resetEntries"]
    assert reset["reason"] == "reset"
    assert [b["kind"] for b in data["boundaries"]] == ["reset-entry"]
    assert data["notes"] == [] and data["unlinked"] == []


def test_export_writes_the_archived_transcript(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_COLD, tmp_path / "state")
    out_dir = tmp_path / "out"
    code, _, out = find(state, "--export", str(out_dir))
    assert code == 0, out
    (written,) = out_dir.iterdir()
    lines = written.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 37 and json.loads(lines[0])["id"] == COLD_ID
    text = "\n".join(lines)
    assert BEFORE_RESET in text and AFTER_RESET in text


def alter_row(state: Path, sql: str, *args: object) -> None:
    from kurahi.runtimes.openclaw.sqlite.write import register_octet_length

    con = sqlite3.connect(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    try:
        register_octet_length(con)
        con.execute(f"UPDATE session_transcript_cold_archives SET {sql}", args)
        con.commit()
    finally:
        con.close()


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


BAD = {
    "missing": (lambda s: archive_of(s).unlink(), "is missing or unreadable"),
    "truncated": (lambda s: truncate(archive_of(s)), "failed verification: 2207 bytes, archive_bytes says 4415"),
    "altered": (lambda s: flip_a_byte(archive_of(s)), "failed verification: sha256 "),
    "count": (lambda s: alter_row(s, "event_count = 38"), "it holds 37 events, event_count says 38"),
    "last seq": (lambda s: alter_row(s, "last_seq = 40"), "its last event is seq 36, last_seq says 40"),
    "generation": (lambda s: alter_row(s, "generation = 'g2'"), "generation '649f4d8857f147d58b9c9dc11652eeff'"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_archive_is_named_and_never_read(case: str, tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_COLD, tmp_path / "state")
    archive = archive_of(state)
    spoil, what = BAD[case]
    spoil(state)
    code, data, out = find(state)
    assert code == 0, out
    assert data["pieces"] == []  # not a shorter or empty history
    (note,) = data["notes"]
    assert str(archive) in note and what in note, note
    assert "not read" in note
    table = runner.invoke(app, ["lineage", "find", "--state-dir", str(state)])
    assert table.exit_code == 0 and "Traceback" not in table.output


def test_an_archive_kept_in_the_store_is_read_and_checked(tmp_path: Path) -> None:
    # storage = 'sqlite': the compressed bytes are the row's archive_blob (OpenClaw's backups).
    state = openclaw_state_copy(SQLITE_COLD, tmp_path / "state")
    archive = archive_of(state)
    alter_row(state, "storage = 'sqlite', archive_blob = ?", archive.read_bytes())
    archive.unlink()
    code, data, out = find(state)
    assert code == 0, out
    (piece,) = data["pieces"]
    assert piece["kind"] == "sqlite-cold" and piece["entryCount"] == 36
    blob = archive.read_bytes() if archive.exists() else b""
    assert blob == b""
    alter_row(state, "archive_blob = ?", b"\x28\xb5\x2f\xfd" + b"\0" * 4411)
    code, data, out = find(state)
    assert code == 0 and data["pieces"] == [], out
    (note,) = data["notes"]
    assert "archive_blob of session" in note and "failed verification: sha256" in note, note
