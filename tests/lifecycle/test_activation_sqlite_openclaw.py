"""OpenClaw 2026.9.6 itself reads a session row Kurahi's activation wrote, and the one its rollback restored.

The store is the sample 2026.9.6 wrote (``tests/data/openclaw/2026.9.6-full``); the reader is
OpenClaw's own CLI, ``openclaw sessions --json``, with the gateway stopped. That CLI opens the
store read-only, so OpenClaw's schema upkeep (which settles rows left pending on a writable
open) never runs first: it takes the row exactly as the activation left it, and it refuses a
row left at ``entry_valid`` 0 ("invalid persisted session row requires repair ... run openclaw
doctor --fix"), which is what a gateway under load sometimes did after an activation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kurahi.cli.activate import app
from support.openclaw_peer import SQLITE_ERA, OpenClawFactory, OpenClawPeer
from support.sqlite_activations import KEY, PHRASE_A, PHRASE_B, sqlite_setup

pytestmark = pytest.mark.openclaw

runner = CliRunner()


def sessions(peer: OpenClawPeer) -> dict[str, Any]:
    """``openclaw sessions --json``: key -> session id; fails the test with OpenClaw's own words."""
    res = peer.cli("sessions", "--json", check=False)
    assert res.returncode == 0, f"OpenClaw refused the store:\n{res.stdout[-1500:]}\n{res.stderr}"
    doc = json.loads(res.stdout[res.stdout.index("{") :])
    return {s["key"]: s["sessionId"] for s in doc["sessions"]}


def test_openclaw_reads_the_activated_row_and_the_restored_one(openclaw: OpenClawFactory, tmp_path: Path) -> None:
    s = sqlite_setup(tmp_path)
    peer = openclaw(SQLITE_ERA, root=tmp_path)
    assert peer.state_dir == s.home
    assert sessions(peer) == {KEY: s.old_sid}
    pkg = str(tmp_path / "pkg")
    res = runner.invoke(app, ["plan", "--home", str(s.home), "--agent", "main", "--candidate", str(s.candidate),
                              "--out", pkg, "--marker", PHRASE_A, "--marker", PHRASE_B])  # fmt: skip
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["apply", pkg, "--home", str(s.home), "--offline"])
    assert res.exit_code == 0, res.output
    assert sessions(peer) == {KEY: s.new_sid}
    res = runner.invoke(app, ["rollback", pkg, "--home", str(s.home), "--offline"])
    assert res.exit_code == 0, res.output
    assert sessions(peer) == {KEY: s.old_sid}
