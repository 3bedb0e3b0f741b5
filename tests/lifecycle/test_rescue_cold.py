"""`kurahi rescue` across a session OpenClaw 2026.9's cold storage archived (issue 38).

On a copy of ``2026.9.6-cold``: the only session's events, a ``/reset`` among them, are in
``sessions/cold/<sha256>.jsonl.zst`` and not in the store. The state dir is hashed before and
after every command.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kurahi.cli import app
from support.cold_archives import make_cold
from support.sqlite_activations import PHRASE_A, sqlite_setup
from support.testdata import SQLITE_COLD, openclaw_state_copy, tree_hash

COLD_ID = "9ab960fd-ef4e-4b7a-8a66-8bbded52e6b7"
runner = CliRunner()


def rescue(state: Path, *extra: str) -> tuple[int, str]:
    before = tree_hash(state)
    res = runner.invoke(app, ["rescue", "--openclaw", str(state), *extra])
    assert tree_hash(state) == before, "rescue changed the state directory"
    assert "Traceback" not in res.output
    return res.exit_code, res.stdout


def test_rescue_sees_the_reset_inside_the_cold_archive(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_COLD, tmp_path / "state")
    code, out = rescue(state, "--json")
    assert code == 1, out  # a loss was found
    report: dict[str, Any] = json.loads(out)
    (loss,) = report["losses"]
    assert (loss["kind"], loss["sessionId"], loss["key"]) == ("reset", COLD_ID, "agent:main:main")
    assert loss["lostMessages"] == 12  # the six turns before the /reset, each a question and a reply
    assert any(e.startswith("reset entry ") for e in loss["evidence"])
    assert report["targets"][0]["notes"] == []
    code, table = rescue(state)
    assert code == 1 and loss["id"] in table


def test_a_missing_archive_is_named_by_rescue(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_COLD, tmp_path / "state")
    (archive,) = (state / "agents" / "main" / "sessions" / "cold").iterdir()
    archive.unlink()
    _, out = rescue(state, "--json")
    report = json.loads(out)
    assert report["losses"] == []
    (note,) = report["targets"][0]["notes"]
    assert str(archive) in note and "is missing or unreadable" in note
    assert report["targets"][0]["unread"], report  # the source that could not be read, by name
    _, table = rescue(state)
    assert str(archive) in table
    # Not "every session's past is still sent": the unread history was not judged, and it says so.
    assert "every session's past is still" not in table, table
    assert "No loss found in what could be read" in table and "could not be read" in table, table


def test_rescue_apply_brings_back_what_a_cold_live_session_lost(tmp_path: Path) -> None:
    # 2026.9.6-full (a reset inside its one session) with that session moved to a cold archive.
    s = sqlite_setup(tmp_path)
    make_cold(s.db, s.old_sid)
    code, out = rescue(s.home, "--json")
    assert code == 1, out
    (loss,) = json.loads(out)["losses"]
    assert loss["sessionId"] == s.old_sid
    res = runner.invoke(
        app, ["rescue", "apply", loss["id"], "--openclaw", str(s.home), "--yes", "--out", str(tmp_path / "pkg")]
    )
    assert res.exit_code == 0, res.output
    assert "verified: yes" in res.output and PHRASE_A in res.output
    code, out = rescue(s.home, "--json")
    assert code == 0 and json.loads(out)["losses"] == [], out
    found = runner.invoke(app, ["lineage", "find", "--state-dir", str(s.home), "--json"])
    kinds = [p["kind"] for p in json.loads(found.stdout)["pieces"]]
    assert kinds == ["sqlite-cold", "sqlite"]  # the archived session, then the one apply wrote
