"""A moved OpenClaw 2026.5 state dir: its catalog names the old place; activation writes where the transcript is.

The JSON-era sample was made in ``/home/ava/.openclaw``: its entries' absolute ``sessionFile``
point there, as a dir copied or moved elsewhere keeps them. (Real OpenClaw reading the result
is in ``tests/peers/test_openclaw_moved.py``.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli.activate import app
from kurahi.cli.common import EXIT
from kurahi.lifecycle.activation import plan_activation
from kurahi.lineage.stitch import stitch
from kurahi.runtimes.openclaw.json_links import moved_session_file
from kurahi.store.catalog import Catalog
from support.activations import OC_NEW, OC_OLD, OPENCLAW

runner = CliRunner()
KEY = "agent:main:main"
MARKERS = ["PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"]


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args))


@pytest.fixture
def state(tmp_path: Path) -> Path:
    state = tmp_path / "moved" / "state"
    shutil.copytree(OPENCLAW, state)
    return state


def catalog(state: Path) -> Catalog:
    return Catalog(state / "agents" / "main" / "sessions" / "sessions.json")


def test_the_moved_entry_is_told_apart_and_activation_points_it_at_the_transcript(state: Path, tmp_path: Path) -> None:
    sessions = state / "agents" / "main" / "sessions"
    old = catalog(state).get(KEY)
    assert old is not None and old["sessionFile"].startswith("/home/ava/.openclaw/")
    moved = moved_session_file(state, "main", old)
    assert moved is not None and moved.outside and moved.missing
    assert moved.actual == sessions.resolve() / Path(old["sessionFile"]).name
    assert moved.to_dict()["recorded"] == old["sessionFile"]

    c = tmp_path / "C.jsonl"
    stitch([sessions / OC_OLD, sessions / OC_NEW], c)
    pkg = plan_activation(state, "main", KEY, c, tmp_path / "pkg", markers=MARKERS)
    res = cli("apply", str(pkg.root), "--home", str(state), "--offline", "--json")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["validation"]["ok"]
    new = catalog(state).get(KEY)
    assert new is not None and new["sessionFile"] == str(sessions.resolve() / pkg.plan.target_file)
    assert moved_session_file(state, "main", new) is None

    res = cli("verify", str(pkg.root), "--home", str(state), "--json")
    assert res.exit_code == 0, res.output
    parts = {p["part"]: p for p in json.loads(res.output)["parts"]}
    assert parts["sessionFile"]["ok"] and parts["sessionFile"]["actual"] == new["sessionFile"]

    assert cli("rollback", str(pkg.root), "--home", str(state), "--offline").exit_code == 0
    assert catalog(state).get(KEY) == old


def test_verify_fails_when_the_entry_still_names_the_old_place(state: Path, tmp_path: Path) -> None:
    """What an activation that kept the old folder left: the right id, a sessionFile OpenClaw cannot open."""
    sessions = state / "agents" / "main" / "sessions"
    c = tmp_path / "C.jsonl"
    stitch([sessions / OC_OLD, sessions / OC_NEW], c)
    pkg = plan_activation(state, "main", KEY, c, tmp_path / "pkg", markers=MARKERS)
    assert cli("apply", str(pkg.root), "--home", str(state), "--offline").exit_code == 0
    stale = f"/home/ava/.openclaw/agents/main/sessions/{pkg.plan.target_file}"
    catalog(state).upsert(KEY, {"sessionFile": stale})
    res = cli("verify", str(pkg.root), "--home", str(state), "--json")
    assert res.exit_code == EXIT.FAILED, res.output
    part = {p["part"]: p for p in json.loads(res.output)["parts"]}["sessionFile"]
    assert (part["ok"], part["actual"]) == (False, stale)


@pytest.mark.parametrize(
    ("entry", "moved"),
    [
        ({"sessionId": "s1", "sessionFile": "s1.jsonl"}, False),  # relative, present
        ({"sessionId": "s1"}, False),  # no sessionFile: OpenClaw uses <sessionId>.jsonl
        ({"sessionId": "s1", "sessionFile": "/elsewhere/agents/main/sessions/s1.jsonl"}, True),
        ({"sessionId": "s1", "sessionFile": "/elsewhere/agents/main/sessions/gone.jsonl"}, True),  # by sessionId
        ({"sessionId": "s2", "sessionFile": "/elsewhere/agents/main/sessions/s2.jsonl"}, False),  # gone everywhere
        ({"sessionId": "s1", "sessionFile": "other.jsonl"}, True),  # inside, missing, transcript by sessionId
        (None, False),
    ],
)
def test_moved_session_file_cases(tmp_path: Path, entry: dict[str, Any] | None, moved: bool) -> None:
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "s1.jsonl").write_text("{}\n")
    found = moved_session_file(tmp_path, "main", entry)
    assert (found is not None) == moved, found
    if found is not None:
        assert found.actual == sessions / "s1.jsonl"


def test_a_symlinked_transcript_is_not_taken_for_the_moved_one(tmp_path: Path) -> None:
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (tmp_path / "outside.jsonl").write_text("{}\n")
    (sessions / "s1.jsonl").symlink_to(tmp_path / "outside.jsonl")
    assert moved_session_file(tmp_path, "main", {"sessionId": "s1", "sessionFile": "/old/s1.jsonl"}) is None
