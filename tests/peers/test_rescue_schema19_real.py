"""Issue 38 on real OpenClaw: the schema-19 store OpenClaw 2026.9.4 made (``2026.9.4-reset``) is
brought back once 2026.9.6 has migrated it, and 2026.9.6's next request holds the lost phrases.

A copy of the sample, its paths put back at the copy's place (OpenClaw follows them); then two
start-ups of 2026.9.6: the first only starts and stops its gateway, which migrates the store
from 19 to 23 (a user's upgrade, leaving ``session_nodes`` without the column 2026.9.6 adds on
first use), the second takes the turn whose request is checked. Listing and refusal before the
migration: ``tests/lifecycle/test_rescue.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.openclaw_peer import MAIN_KEY, SQLITE_ERA, OpenClawPeer, phrases_in, require
from support.openclaw_samples import SAMPLE_HOME, SAMPLE_STATE, rewrite_store
from support.rescue_scenario import phrase
from support.testdata import SQLITE_SCHEMA_19, openclaw_state

pytestmark = pytest.mark.openclaw

KURAHI = [sys.executable, "-m", "kurahi.cli"]
LOST = ("CRIMSON-IBEX-ALPHA", "9127", "sextant")
KEPT = ("SLATE-MARLIN-OMEGA", "6502", "kelp forests")


def kurahi(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KOLO_", "KURAHI_", "OPENCLAW_"))}
    out = subprocess.run([*KURAHI, *args], capture_output=True, text=True, env=env, timeout=300)
    assert "Traceback" not in out.stderr, out.stderr
    assert out.returncode == code, f"kurahi {' '.join(args[:3])}: exit {out.returncode}\n{out.stdout}{out.stderr}"
    return out


def schema_of(db: Path) -> tuple[int, set[str]]:
    con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
    try:
        (version,) = con.execute("SELECT schema_version FROM schema_meta WHERE meta_key = 'primary'").fetchone()
        columns = {str(row[1]) for row in con.execute("PRAGMA table_info(session_nodes)")}
    finally:
        con.close()
    return int(version), columns


def test_a_2026_9_4_store_is_brought_back_after_2026_9_6_migrates_it(tmp_path: Path) -> None:
    require(SQLITE_ERA)
    root = tmp_path / "run"
    state = root / "state"
    shutil.copytree(openclaw_state(SQLITE_SCHEMA_19), state)
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    rewrite_store(db, [(SAMPLE_STATE, str(state)), (SAMPLE_HOME, str(root))])
    assert schema_of(db)[0] == 19

    # The user upgrades: 2026.9.6's gateway starts on the dir (and migrates the store), then stops.
    with OpenClawPeer(SQLITE_ERA, root) as new:
        new.start()
        assert new.stop() == 0
    version, columns = schema_of(db)
    assert version == 23 and "legacy_acp_migration_json" not in columns

    listed: list[dict[str, Any]] = json.loads(kurahi("rescue", "--openclaw", str(state), "--json", code=1).stdout)[
        "losses"
    ]
    (loss,) = listed
    assert (loss["kind"], loss["key"], loss["applyRefused"]) == ("reset", MAIN_KEY, None), loss
    args = ["rescue", "apply", loss["id"], "--openclaw", str(state), "--yes", "--json", "--out", str(tmp_path / "p")]
    done = json.loads(kurahi(*args).stdout)
    assert done["verified"] and done["plan"]["broughtBack"] == loss["lostMessages"] == 6, done

    probe = phrase("PROBE")
    with OpenClawPeer(SQLITE_ERA, root) as new:
        new.start()
        new.turn(f"Do you remember? {probe}")
        assert new.stop() == 0
        carrying = [body for body in new.requests() if phrases_in(body, [probe])]
    assert carrying, "OpenClaw 2026.9.6 sent the model no request for the turn"
    assert phrases_in(carrying[-1], [*LOST, *KEPT]) == {*LOST, *KEPT}, "a lost phrase is not in OpenClaw's request"
