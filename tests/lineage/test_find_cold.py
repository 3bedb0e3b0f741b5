"""`kurahi lineage find` reads a session OpenClaw 2026.9's cold storage archived (issue 38).

On a copy of ``2026.9.6-cold``: real OpenClaw 2026.9.6 moved the only session's events into
``sessions/cold/<sha256>.jsonl.zst`` and deleted its ``transcript_events`` rows. The state dir
is hashed before and after every command.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
