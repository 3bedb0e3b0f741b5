"""A moved OpenClaw 2026.5.28 state dir, repaired, and OpenClaw's own next request from the new place.

OpenClaw 2026.5 keeps ``sessionFile`` as an absolute path. A user converses (phrase A), resets,
converses (phrase B), stops OpenClaw and moves the whole state dir. Every catalog entry still
names the old folder. Kurahi stitches the reset archive and the live transcript found in the
moved dir, activates C there, and OpenClaw, started from the new place, sends the model a
request holding A and B: the activated entry names the transcript where it now is.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_openclaw_repair import converse, kurahi, one_turn

from kurahi.runtimes.openclaw.json_links import moved_session_file
from kurahi.store.catalog import Catalog
from support.openclaw_model import REPLY_PREFIX
from support.openclaw_peer import JSON_ERA, MAIN_KEY, OpenClawFactory, phrases_in

pytestmark = pytest.mark.openclaw


def test_repair_in_a_moved_json_era_dir(openclaw: OpenClawFactory, tmp_path: Path) -> None:
    first = openclaw(JSON_ERA, root=tmp_path / "before")
    a, b = converse(first)
    first.close()
    moved_root = tmp_path / "after"
    moved_root.mkdir()
    shutil.move(first.state_dir, moved_root / "state")
    assert not first.state_dir.exists()

    peer = openclaw(JSON_ERA, root=moved_root)
    sessions = peer.sessions_dir
    entry = Catalog(sessions / "sessions.json").get(MAIN_KEY)
    assert entry is not None and entry["sessionFile"].startswith(str(tmp_path / "before"))
    moved = moved_session_file(peer.state_dir, "main", entry)
    assert moved is not None and moved.outside and moved.missing, moved
    assert moved.actual.name == f"{entry['sessionId']}.jsonl"

    (archive,) = sessions.glob("*.jsonl.reset.*")
    candidate = tmp_path / "C.jsonl"
    kurahi("lineage", "stitch", str(archive), str(moved.actual), "--out", str(candidate))
    state, pkg = str(peer.state_dir), tmp_path / "pkg"
    kurahi("activate", "plan", "--home", state, "--agent", "main", "--key", MAIN_KEY,
           "--candidate", str(candidate), "--out", str(pkg), "--marker", a, "--marker", b)  # fmt: skip
    applied = json.loads(kurahi("activate", "apply", str(pkg), "--home", state, "--offline", "--json").stdout)
    assert applied["outcome"] == "applied" and applied["validation"]["ok"], applied
    verified = json.loads(kurahi("activate", "verify", str(pkg), "--home", state, "--json").stdout)
    part = {p["part"]: p for p in verified["parts"]}["sessionFile"]
    assert part["ok"] and part["actual"].startswith(str(moved_root.resolve())), part
    activated = Catalog(sessions / "sessions.json").get(MAIN_KEY)
    assert activated is not None and moved_session_file(peer.state_dir, "main", activated) is None

    body, reply = one_turn(peer)
    assert phrases_in(body, [a, b]) == {a, b}, "OpenClaw started from the moved dir without the history"
    assert reply.startswith(REPLY_PREFIX), reply
    assert not (tmp_path / "before" / "state").exists(), "OpenClaw wrote into the old place"
