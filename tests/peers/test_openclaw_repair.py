"""Repair a real OpenClaw resident end to end, and see OpenClaw's own next request.

Per era: a real OpenClaw gateway on loopback against the logging stand-in model; turns with a
phrase A, a reset, turns with a phrase B, a clean stop. Kurahi, as a user runs it (the console
script in a subprocess): ``lineage find``, the candidate C (JSON era: ``lineage stitch`` of the
reset archive and the live transcript; SQLite era: the live session with its in-transcript
reset bypassed), ``lineage check``, ``activate plan`` and ``apply --offline``. OpenClaw starts
again and takes one turn: the request it sends the model must hold A and B. Then it stops,
``activate rollback --force`` (the activated session was used by that turn), it starts again,
takes one turn: the request lacks A, holds B, and OpenClaw answered. Phrases are made per run.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.openclaw_model import REPLY_PREFIX
from support.openclaw_peer import JSON_ERA, MAIN_KEY, SQLITE_ERA, OpenClawFactory, OpenClawPeer, phrases_in
from support.testdata import UPGRADED, openclaw_state_copy

pytestmark = pytest.mark.openclaw

KURAHI_DEADLINE = 120.0


def phrase(tag: str) -> str:
    """A phrase no earlier run (and nothing in OpenClaw's own prompt) can contain."""
    return f"{tag}-{secrets.token_hex(5).upper()}"


def kurahi(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``kurahi ARGS`` as the console script runs it, in a process of its own; with ``check``, fails the test
    on a non-zero exit."""
    code = "import sys; from kurahi.cli import main; sys.argv[0] = 'kurahi'; sys.exit(main())"
    env = {k: v for k, v in os.environ.items() if k not in ("KOLO_HOME", "COLUMNS")} | {"COLUMNS": "200"}
    res = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=KURAHI_DEADLINE, env=env
    )
    assert res.returncode == 0 or not check, (
        f"kurahi {' '.join(args[:2])} exited {res.returncode}:\n{res.stdout}\n{res.stderr}"
    )
    assert "Traceback" not in res.stderr, res.stderr
    return res


def converse(peer: OpenClawPeer) -> tuple[str, str]:
    """Two turns saying A, a reset, two saying B, a clean stop; returns (A, B)."""
    a, b = phrase("BEFORE"), phrase("AFTER")
    peer.start()
    peer.turn(f"Please keep {a} in mind.")
    peer.turn(f"Say {a} back later.")
    peer.reset()
    peer.turn(f"New topic: {b}.")
    peer.turn(f"And again {b}.")
    assert peer.stop() == 0, "OpenClaw did not stop cleanly on SIGTERM"
    return a, b


def one_turn(peer: OpenClawPeer) -> tuple[dict[str, Any], str]:
    """Start, one turn with a fresh phrase, stop: the request that carried it and the reply."""
    probe = phrase("PROBE")
    seen = len(peer.requests())
    peer.start()
    reply = peer.turn(f"Do you remember? {probe}")
    assert peer.stop() == 0, "OpenClaw did not stop cleanly on SIGTERM"
    carrying = [body for body in peer.requests()[seen:] if phrases_in(body, [probe])]
    assert carrying, "OpenClaw sent the model no request for the turn"
    return carrying[-1], reply


def activate_and_roll_back(peer: OpenClawPeer, candidate: Path, a: str, b: str, pkg: Path) -> None:
    """plan, apply --offline, verify; a turn holds A and B; rollback --force; a turn lacks A, holds B."""
    state = str(peer.state_dir)
    kurahi("activate", "plan", "--home", state, "--agent", "main", "--key", MAIN_KEY,
           "--candidate", str(candidate), "--out", str(pkg), "--marker", a, "--marker", b)  # fmt: skip
    applied = json.loads(kurahi("activate", "apply", str(pkg), "--home", state, "--offline", "--json").stdout)
    assert applied["outcome"] == "applied" and applied["validation"]["ok"], applied
    kurahi("activate", "verify", str(pkg), "--home", state)

    body, reply = one_turn(peer)
    assert phrases_in(body, [a, b]) == {a, b}, "after activation OpenClaw's request lacks a phrase"
    assert reply.startswith(REPLY_PREFIX), reply

    kurahi("activate", "rollback", str(pkg), "--home", state, "--offline", "--force")
    body, reply = one_turn(peer)
    assert phrases_in(body, [a, b]) == {b}, "after rollback OpenClaw's request is not the post-reset session's"
    assert reply.startswith(REPLY_PREFIX), f"OpenClaw did not answer after rollback: {reply!r}"


def test_repair_json_era(openclaw: OpenClawFactory, tmp_path: Path) -> None:
    """2026.5.28: the reset archive and the live transcript stitched into C, activated, rolled back."""
    peer = openclaw(JSON_ERA)
    a, b = converse(peer)
    state = str(peer.state_dir)
    found = json.loads(kurahi("lineage", "find", "--state-dir", state, "--agent", "main", "--json").stdout)
    kinds = [p["kind"] for p in found["pieces"]]
    assert kinds == ["reset-archive", "live"], kinds
    candidate = tmp_path / "C.jsonl"
    kurahi("lineage", "stitch", *(p["source"] for p in found["pieces"]), "--out", str(candidate))
    kurahi("lineage", "check", str(candidate), "--marker", a, "--marker", b)
    activate_and_roll_back(peer, candidate, a, b, tmp_path / "pkg")


def test_repair_sqlite_era(openclaw: OpenClawFactory, tmp_path: Path) -> None:
    """2026.9.6: the live session exported, stitched across its in-transcript reset (C), checked as
    OpenClaw 2026.9 would send it, activated into the SQLite store, rolled back."""
    peer = openclaw(SQLITE_ERA)
    a, b = converse(peer)
    state = str(peer.state_dir)
    export = tmp_path / "export"
    found = json.loads(
        kurahi("lineage", "find", "--state-dir", state, "--agent", "main", "--export", str(export), "--json").stdout
    )
    live = [p for p in found["pieces"] if p["sessionId"] == found["currentSessionId"]]
    assert len(live) == 1 and len(live[0]["resetEntries"]) == 1, found
    exported = export / f"{found['currentSessionId']}.jsonl"
    assert exported.is_file(), sorted(p.name for p in export.iterdir())
    # Before the repair, OpenClaw's own view of the live session lacks the pre-reset phrase.
    before = kurahi("lineage", "check", str(exported), "--runtime", "openclaw-2026.9", "--marker", a, check=False)
    assert before.returncode == 1, before.stdout + before.stderr
    candidate = tmp_path / "C.jsonl"
    kurahi("lineage", "stitch", str(exported), "--out", str(candidate))
    kurahi("lineage", "check", str(candidate), "--runtime", "openclaw-2026.9", "--marker", a, "--marker", b)
    activate_and_roll_back(peer, candidate, a, b, tmp_path / "pkg")


def test_repair_upgraded_dir(openclaw: OpenClawFactory, tmp_path: Path) -> None:
    """A 2026.5.28 dir upgraded by 2026.9.6's doctor (the sample it made): the leftover reset archive
    stitched with the live SQLite session, activated into the store, run by 2026.9.6, rolled back."""
    root = tmp_path / "upgraded"
    openclaw_state_copy(UPGRADED, root / "state")
    peer = openclaw(SQLITE_ERA, root=root)
    a, b = "PURPLE-GIRAFFE-ALPHA", "ORANGE-WALRUS-OMEGA"  # the sample's phrases (tests/data/openclaw/README.md)
    state, export = str(peer.state_dir), tmp_path / "export"
    found = json.loads(
        kurahi("lineage", "find", "--state-dir", state, "--agent", "main", "--export", str(export), "--json").stdout
    )
    (archive,) = peer.sessions_dir.glob("*.jsonl.reset.*")
    candidate = tmp_path / "C.jsonl"
    kurahi(
        "lineage", "stitch", str(archive), str(export / f"{found['currentSessionId']}.jsonl"), "--out", str(candidate)
    )
    kurahi("lineage", "check", str(candidate), "--marker", a, "--marker", b)
    activate_and_roll_back(peer, candidate, a, b, tmp_path / "pkg")
