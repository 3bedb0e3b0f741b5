"""Both targets' packages keep their on-disk format: ``activation.json``'s keys in their order, version 1.

The two plans share a head written once (:class:`kurahi.lifecycle.activation.package.PlanHead`);
this pins that sharing it changed no byte of either kind of package's plan layout.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kurahi.cli.activate import app
from support.activations import KEY, make_home
from support.sqlite_activations import PHRASE_A, PHRASE_B, sqlite_setup

runner = CliRunner()

BACKEND_KEYS = [
    "version", "id", "createdAt", "tool", "home", "agent", "key", "sessionsDir", "candidateSessionId",
    "targetFile", "replacesLive", "installs", "compactionCount", "markers", "preconditions", "oldEntry",
    "newEntry", "projection", "oldCatalogSha256",
]  # fmt: skip
SQLITE_KEYS = [
    "version", "store", "id", "createdAt", "tool", "home", "agent", "key", "db", "oldSessionId", "newSessionId",
    "candidateSha256", "candidateEvents", "markers", "preconditions", "oldNode", "wasPending", "projection",
]  # fmt: skip


def plan(home: Path, agent: str, key: str, candidate: Path, out: Path, *markers: str) -> dict[str, Any]:
    args = ["plan", "--home", str(home), "--agent", agent, "--key", key, "--candidate", str(candidate)]
    res = runner.invoke(app, [*args, "--out", str(out), *(a for m in markers for a in ("--marker", m))])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "activation.json").read_bytes())
    listed = sorted(line.split("  ", 1)[1] for line in (out / "SHA256SUMS").read_text().splitlines())
    assert "activation.json" in listed and "candidate.jsonl" in listed
    return doc


def test_a_backend_plan_keeps_its_keys_in_order(tmp_path: Path) -> None:
    s = make_home(tmp_path)
    doc = plan(s.home, s.agent, s.key, s.candidate, tmp_path / "pkg", *s.markers)
    assert list(doc) == BACKEND_KEYS
    assert doc["version"] == 1 and doc["key"] == KEY


def test_a_sqlite_plan_keeps_its_keys_in_order(tmp_path: Path) -> None:
    s = sqlite_setup(tmp_path)
    doc = plan(s.home, "main", "agent:main:main", s.candidate, tmp_path / "pkg", PHRASE_A, PHRASE_B)
    assert list(doc) == SQLITE_KEYS
    assert doc["version"] == 1 and doc["store"] == "openclaw-sqlite" and doc["newSessionId"] == s.new_sid
