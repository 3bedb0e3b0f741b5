"""Activation over a live session OpenClaw 2026.9's cold storage archived (issue 38).

On a copy of ``2026.9.6-full`` whose one session was moved into a cold archive as OpenClaw's
worker moves it (:mod:`support.cold_archives`): the activation's preconditions read that
session's events from the archive, as they read a hot session's rows.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from support.cold_archives import make_cold
from support.sqlite_activations import PHRASE_A, PHRASE_B, SqliteSetup, sqlite_setup, store_content

runner = CliRunner()


@pytest.fixture
def s(tmp_path: Path) -> SqliteSetup:
    setup = sqlite_setup(tmp_path)
    make_cold(setup.db, setup.old_sid)
    return setup


def cli(*args: str) -> Any:
    res = runner.invoke(app, list(args))
    assert "Traceback" not in res.output
    return res


def plan(s: SqliteSetup, out: Path) -> Any:
    return cli(
        "activate", "plan", "--home", str(s.home), "--agent", "main", "--candidate", str(s.candidate),
        "--out", str(out), "--marker", PHRASE_A, "--marker", PHRASE_B,
    )  # fmt: skip


def files(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


def test_the_plan_knows_the_cold_live_sessions_events_and_apply_keeps_them(s: SqliteSetup, tmp_path: Path) -> None:
    before, content = files(s.home), store_content(s.db)
    res = plan(s, tmp_path / "pkg")
    assert res.exit_code == 0, res.output
    assert files(s.home) == before, "plan changed the state dir"
    pre = json.loads((tmp_path / "pkg" / "activation.json").read_text(encoding="utf-8"))["preconditions"]
    assert (pre["eventCount"], pre["lastSeq"]) == (22, 21)  # the archive's, not the empty rows'
    res = cli("activate", "apply", str(tmp_path / "pkg"), "--home", str(s.home), "--offline", "--json")
    assert res.exit_code == 0, res.output
    con = sqlite3.connect(f"file:{s.db}?mode=ro", uri=True)
    cold = con.execute("SELECT event_count FROM session_transcript_cold_archives WHERE session_id = ?", (s.old_sid,))
    assert cold.fetchone() == (22,), "the cold session stays cold"
    con.close()
    found = cli("lineage", "find", "--state-dir", str(s.home), "--json")
    assert found.exit_code == 0, found.output
    pieces = json.loads(found.stdout)["pieces"]
    assert [(p["sessionId"], p["kind"]) for p in pieces] == [(s.old_sid, "sqlite-cold"), (s.new_sid, "sqlite")]
    res = cli("activate", "rollback", str(tmp_path / "pkg"), "--home", str(s.home), "--offline")
    assert res.exit_code == 0, res.output
    assert store_content(s.db) == content


def test_a_candidate_older_than_the_cold_live_session_is_refused(s: SqliteSetup, tmp_path: Path) -> None:
    lines = s.candidate.read_bytes().split(b"\n")
    s.candidate.write_bytes(b"\n".join(lines[:-2]) + b"\n")
    before = files(s.home)
    res = plan(s, tmp_path / "pkg")
    assert res.exit_code == EXIT.INVALID, res.output
    assert "older than the live session" in " ".join(res.output.split())
    assert files(s.home) == before


def test_a_cold_live_session_whose_archive_is_gone_is_refused(s: SqliteSetup, tmp_path: Path) -> None:
    (archive,) = (s.home / "agents" / "main" / "sessions" / "cold").iterdir()
    archive.unlink()
    before = files(s.home)
    res = plan(s, tmp_path / "pkg")
    assert res.exit_code == EXIT.NOT_FOUND, res.output
    assert archive.name in " ".join(res.output.split()).replace("\n", "")
    assert files(s.home) == before
