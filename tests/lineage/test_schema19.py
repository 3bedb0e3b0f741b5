"""A store OpenClaw 2026.9.4 wrote (schema 19, as 2026.8.1-2026.9.4 do) is read like 2026.9.6's (issue 38).

On copies of ``2026.9.4-reset`` (three turns, ``/reset``, two turns, in one session): ``lineage
find`` and its export, ``lineage check`` and ``kurahi mcp``'s recall, each with the state dir's
bytes and names compared before and after (2026.9.4 leaves no ``-wal``: none may appear). The
listing and apply's refusal are in ``tests/lifecycle/test_rescue.py``, the repair after 2026.9.6
migrated the store in ``tests/peers/test_rescue_schema19_real.py``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from mcp import Client
from typer.testing import CliRunner

from kurahi.cli import app
from kurahi.cli.common import EXIT
from kurahi.lineage.find import find_lineage
from kurahi.mcp_server.served import Served
from kurahi.mcp_server.server import build_server
from kurahi.runtimes.openclaw.sqlite.snapshot import open_store_snapshot
from support.mcp_states import structured
from support.openclaw_samples import SCHEMA19_AFTER, SCHEMA19_BEFORE
from support.testdata import SQLITE_SCHEMA_19, openclaw_state_copy, openclaw_turns, tree_hash

BEFORE, AFTER = "CRIMSON-IBEX-ALPHA", "SLATE-MARLIN-OMEGA"
runner = CliRunner()


def session_id() -> str:
    (sid,) = {json.loads(line)["sessionId"] for line in openclaw_turns(SQLITE_SCHEMA_19).read_text().splitlines()}
    return str(sid)


def test_the_snapshot_reads_schema_19_and_leaves_no_wal_behind(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_SCHEMA_19, tmp_path / "state")
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    before = tree_hash(state)
    with open_store_snapshot(db) as snap:
        assert snap.schema_version == 19 and snap.wal_mode
        assert [f.name for f in snap.files] == ["openclaw-agent.sqlite"]
    assert tree_hash(state) == before


def test_lineage_find_and_export_read_every_turn(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_SCHEMA_19, tmp_path / "state")
    before = tree_hash(state)
    res = runner.invoke(app, ["lineage", "find", "--state-dir", str(state), "--json", "--export", str(tmp_path / "x")])
    assert res.exit_code == EXIT.OK, res.output
    data = json.loads(res.stdout)
    (piece,) = data["pieces"]
    assert (piece["kind"], piece["sessionId"], piece["confidence"]) == ("sqlite", session_id(), "recorded")
    assert [b["kind"] for b in data["boundaries"]] == ["reset-entry"]
    assert tree_hash(state) == before, "lineage find changed the state directory"
    exported = (tmp_path / "x" / f"{session_id()}.jsonl").read_text(encoding="utf-8")
    lines = [json.loads(line) for line in exported.splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["id"] == session_id()
    reset = [e["type"] for e in lines].index("reset")
    said_before, said_after = json.dumps(lines[:reset]), json.dumps(lines[reset + 1 :])
    for text in SCHEMA19_BEFORE:
        assert json.dumps(text)[1:-1] in said_before and BEFORE not in said_after
    for text in SCHEMA19_AFTER:
        assert json.dumps(text)[1:-1] in said_after and AFTER not in said_before


def test_lineage_check_judges_the_schema_19_session_as_openclaw_2026_9_sends_it(tmp_path: Path) -> None:
    """2026.9.4 sends only what follows the last reset (its model requests showed it), as 2026.9.6 does."""
    state = openclaw_state_copy(SQLITE_SCHEMA_19, tmp_path / "state")
    (piece,) = find_lineage(state).pieces
    before = tree_hash(state)
    res = runner.invoke(app, ["lineage", "check", piece.source, "--marker", BEFORE, "--marker", AFTER, "--json"])
    assert res.exit_code == EXIT.FAILED, res.output
    data = json.loads(res.stdout)
    assert data["runtime"] == "openclaw-2026.9"
    assert {m["marker"]: m["found"] for m in data["markers"]} == {BEFORE: False, AFTER: True}
    res = runner.invoke(app, ["lineage", "check", piece.source, "--marker", BEFORE, "--runtime", "pi", "--json"])
    assert res.exit_code == EXIT.OK, res.output
    assert tree_hash(state) == before


def call(served: Served, name: str, args: dict[str, Any]) -> dict[str, Any]:
    async def run() -> Any:
        async with Client(build_server(served)) as c:
            return await c.call_tool(name, args)

    return structured(asyncio.run(run()))


def test_mcp_recall_reaches_past_the_reset_of_a_schema_19_store(tmp_path: Path) -> None:
    state = openclaw_state_copy(SQLITE_SCHEMA_19, tmp_path / "state")
    before = tree_hash(state)
    served = Served("openclaw", state)
    top = call(served, "recall", {"query": BEFORE})["hits"][0]
    assert BEFORE in top["text"] and top["match"] == "exact phrase"
    assert top["inViewNow"] is False and top["standing"] == "before a reset"
    assert any(h["inViewNow"] and AFTER in h["text"] for h in call(served, "recall", {"query": AFTER})["hits"])
    losses = call(served, "losses", {})
    assert losses["total"] == 1 and losses["losses"][0]["kind"] == "reset"
    assert losses["losses"][0]["lostMessages"] == 2 * len(SCHEMA19_BEFORE)
    assert tree_hash(state) == before, "kurahi mcp changed the state directory"
