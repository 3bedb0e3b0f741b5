"""Issue 38 on real OpenClaw: a store 2026.9.5 made (schema 21) is listed, then, once 2026.9.6's
gateway has migrated it (to 23), brought back, and 2026.9.6's next request holds every lost phrase.

One start-up of 2026.9.5 (turns, ``/reset``, turns), then two of 2026.9.6: the first only starts
and stops its gateway, which migrates the store (a user's upgrade), the second takes the turn
whose request is checked. The phrases are made at run time (:func:`rescue_scenario.phrase`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.openclaw_peer import MAIN_KEY, SCHEMA_21, SQLITE_ERA, OpenClawPeer, phrases_in, require
from support.rescue_scenario import phrase
from support.testdata import tree_hash

pytestmark = pytest.mark.openclaw

KURAHI = [sys.executable, "-m", "kurahi.cli"]


def kurahi(*args: str, code: int | None = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOLO_", "KURAHI_", "OPENCLAW_"))}
    out = subprocess.run([*KURAHI, *args], capture_output=True, text=True, env=env, timeout=300)
    assert "Traceback" not in out.stderr, out.stderr
    if code is not None:
        assert out.returncode == code, f"kurahi {' '.join(args[:3])}: exit {out.returncode}\n{out.stdout}{out.stderr}"
    return out


def losses(state: Path) -> list[dict[str, Any]]:
    out = kurahi("rescue", "--openclaw", str(state), "--json", code=1)
    found: list[dict[str, Any]] = json.loads(out.stdout)["losses"]
    return found


def schema_version(db: Path) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        (version,) = con.execute("SELECT schema_version FROM schema_meta WHERE meta_key = 'primary'").fetchone()
    finally:
        con.close()
    return int(version)


def test_a_2026_9_5_store_is_listed_then_brought_back_after_2026_9_6_migrates_it(tmp_path: Path) -> None:
    require(SCHEMA_21)
    require(SQLITE_ERA)
    root = tmp_path / "run"
    lost = (phrase("MIGRATE-LOST-A"), phrase("MIGRATE-LOST-B"))
    kept = phrase("MIGRATE-KEPT")
    with OpenClawPeer(SCHEMA_21, root) as old:
        old.start()
        old.turn(f"Please keep {lost[0]} in mind.")
        old.turn(f"Say {lost[1]} back later.")
        old.reset()
        old.turn(f"And now: {kept}.")
        assert old.stop() == 0
        db = old.sqlite_store
    state = root / "state"
    assert schema_version(db) == 21

    # While the store is still 2026.9.5's: listed, read-only, and no promise apply would break.
    before = tree_hash(state)
    (loss,) = losses(state)
    assert (loss["kind"], loss["key"]) == ("reset", MAIN_KEY), loss
    assert "start OpenClaw 2026.9.6 once" in loss["applyRefused"], loss["applyRefused"]
    assert tree_hash(state) == before, "kurahi rescue changed the state dir"
    out = kurahi(
        "rescue", "apply", loss["id"], "--openclaw", str(state), "--yes", "--out", str(tmp_path / "p0"), code=4
    )
    assert "start OpenClaw 2026.9.6 once" in " ".join(out.stderr.split()), out.stderr
    assert tree_hash(state) == before, "a refused apply changed the state dir"

    # The user upgrades: 2026.9.6's gateway starts on the dir (and migrates the store), then stops.
    with OpenClawPeer(SQLITE_ERA, root) as new:
        new.start()
        assert new.stop() == 0
    assert schema_version(db) == 23

    (again,) = losses(state)
    assert again["id"] == loss["id"] and again["applyRefused"] is None, again
    args = ["rescue", "apply", loss["id"], "--openclaw", str(state), "--yes", "--json", "--out", str(tmp_path / "p")]
    done = json.loads(kurahi(*args).stdout)
    assert done["verified"], done

    probe = phrase("PROBE")
    with OpenClawPeer(SQLITE_ERA, root) as new:
        new.start()
        new.turn(f"Do you remember? {probe}")
        assert new.stop() == 0
        carrying = [body for body in new.requests() if phrases_in(body, [probe])]
    assert carrying, "OpenClaw 2026.9.6 sent the model no request for the turn"
    assert phrases_in(carrying[-1], [*lost, kept]) == {*lost, kept}, "a lost phrase is not in OpenClaw's request"
