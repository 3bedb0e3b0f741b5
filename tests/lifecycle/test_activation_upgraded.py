"""Activation in a 2026.5 state dir upgraded by OpenClaw 2026.9.6's own doctor: the leftover reset
archive plus the SQLite live session, stitched and activated into the store, then rolled back.

The state dir is the sample OpenClaw's doctor made (``tests/data/openclaw/2026.5.28-upgraded``):
``agents/main/agent/openclaw-agent.sqlite`` holds the post-reset session (key
``agent:main:main``), and the pre-reset transcript stays in ``sessions/`` as
``<id>.jsonl.reset.<ts>``, referenced by nothing. The CLI runs as a user runs it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kurahi.cli.activate import app as activate_app
from kurahi.cli.common import EXIT
from kurahi.cli.lineage.commands import app as lineage_app
from support.sqlite_activations import store_content
from support.testdata import UPGRADED, openclaw_state_copy

runner = CliRunner()
BEFORE, AFTER = "PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"
KEY = "agent:main:main"


def ok(app: Any, *args: str) -> Any:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res


def files(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()}


def upgraded_candidate(tmp_path: Path) -> tuple[Path, Path, str]:
    """A copy of the upgraded dir and C = its reset archive + its live SQLite session; the live id."""
    home = openclaw_state_copy(UPGRADED, tmp_path / "state")
    export = tmp_path / "export"
    found = json.loads(
        ok(lineage_app, "find", "--state-dir", str(home), "--agent", "main", "--export", str(export), "--json").stdout
    )
    live = found["currentSessionId"]
    archives = sorted((home / "agents" / "main" / "sessions").glob("*.jsonl.reset.*"))
    assert len(archives) == 1, archives
    candidate = tmp_path / "C.jsonl"
    ok(lineage_app, "stitch", str(archives[0]), str(export / f"{live}.jsonl"), "--out", str(candidate))
    return home, candidate, live


def test_upgraded_dir_plan_apply_verify_rollback(tmp_path: Path) -> None:
    home, candidate, live = upgraded_candidate(tmp_path)
    db = home / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    before, content = files(home), store_content(db)
    pkg = tmp_path / "pkg"
    res = ok(activate_app, "plan", "--home", str(home), "--agent", "main", "--candidate", str(candidate),
             "--out", str(pkg), "--marker", BEFORE, "--marker", AFTER, "--json")  # fmt: skip
    plan = json.loads(res.stdout)["plan"]
    assert plan["store"] == "openclaw-sqlite" and plan["oldSessionId"] == live
    assert sorted(plan["projection"]["markersFound"]) == sorted([BEFORE, AFTER])
    assert files(home) == before, "plan changed the state dir"

    applied = json.loads(ok(activate_app, "apply", str(pkg), "--home", str(home), "--offline", "--json").stdout)
    assert applied["outcome"] == "applied" and applied["validation"]["ok"], applied
    new = plan["newSessionId"]
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        assert con.execute("SELECT current_session_id FROM session_nodes WHERE session_key = ?", (KEY,)).fetchone() == (
            new,
        )
        link = con.execute("SELECT previous_session_id FROM session_windows WHERE session_id = ?", (new,)).fetchone()
        assert link == (live,), "the new session is linked to the live one it replaces"
        stored = "\n".join(
            r[0] for r in con.execute("SELECT event_json FROM transcript_events WHERE session_id = ?", (new,))
        )
    finally:
        con.close()
    assert BEFORE in stored and AFTER in stored
    outside = {k: v for k, v in files(home).items() if not k.startswith("agents/main/agent/")}
    assert outside == {k: v for k, v in before.items() if not k.startswith("agents/main/agent/")}, (
        "apply wrote outside the store (the reset archive must stay as it was)"
    )
    ok(activate_app, "verify", str(pkg), "--home", str(home))

    ok(activate_app, "rollback", str(pkg), "--home", str(home), "--offline")
    assert store_content(db) == content, "rollback did not restore the store's content exactly"
    assert runner.invoke(activate_app, ["verify", str(pkg), "--home", str(home)]).exit_code == EXIT.FAILED
    assert {k: v for k, v in files(home).items() if not k.startswith("agents/main/agent/")} == {
        k: v for k, v in before.items() if not k.startswith("agents/main/agent/")
    }


def test_upgraded_dir_candidate_without_the_live_tail_is_refused(tmp_path: Path) -> None:
    """The archive alone is older than the live session: refused, nothing changed."""
    home = openclaw_state_copy(UPGRADED, tmp_path / "state")
    (archive,) = (home / "agents" / "main" / "sessions").glob("*.jsonl.reset.*")
    candidate = tmp_path / "C.jsonl"
    candidate.write_bytes(archive.read_bytes())
    before = files(home)
    res = runner.invoke(activate_app, ["plan", "--home", str(home), "--agent", "main", "--candidate", str(candidate),
                                       "--out", str(tmp_path / "pkg")])  # fmt: skip
    assert res.exit_code == EXIT.INVALID and "older than the live session" in " ".join(res.output.split()), res.output
    assert "Traceback" not in res.output
    assert files(home) == before
