"""The manifest Kurahi takes of an OpenClaw state dir: read-only, both eras, no secrets, observer-signed.

On copies of the state dirs real OpenClaw wrote (``tests/data/openclaw``), with a config that
holds an API key and a gateway token, a workspace with identity and memory files, and a
symlink pointing out of the workspace.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from kurahi.continuity.manifest import verify_manifest
from kurahi.continuity.targets.openclaw.manifest import build_openclaw_manifest, observer_key
from kurahi.errors import UsageError
from kurahi.runtimes.openclaw.config import open_state
from support.testdata import JSON_ERA, SQLITE_ERA, UPGRADED, OpenClawEra, openclaw_state_copy, tree_hash

API_KEY = "sk-live-0123456789abcdef"
GATEWAY_TOKEN = "gw-token-fedcba9876543210"


def _resident(era: OpenClawEra, tmp_path: Path) -> Path:
    state = openclaw_state_copy(era, tmp_path / "state")
    config = {
        "gateway": {"bind": "loopback", "auth": {"mode": "token", "token": GATEWAY_TOKEN}},
        "agents": {"defaults": {"model": {"primary": "standin/stand-in"}, "thinkingDefault": "low"}},
        "models": {"providers": {"standin": {"apiKey": API_KEY, "models": [{"id": "stand-in"}]}}},
        "tools": {"deny": ["exec"]},
    }
    (state / "openclaw.json").write_text(json.dumps(config))
    ws = state / "workspace"
    (ws / "memory").mkdir(parents=True)
    (ws / "SOUL.md").write_text("calm and exact\n")
    (ws / "IDENTITY.md").write_text("name: Tern\n")
    (ws / "MEMORY.md").write_text("- lantern: cobalt\n")
    (ws / "memory" / "2026-12-01.md").write_text("- gate code 4471\n")
    (ws / "LEAK.md").symlink_to("/etc/passwd")
    return state


@pytest.mark.parametrize("era", [JSON_ERA, SQLITE_ERA, UPGRADED])
def test_manifest_of_each_era_read_only(era: OpenClawEra, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = _resident(era, tmp_path)
    monkeypatch.setenv("KOLO_HOME", str(tmp_path / "kurahi"))
    before = tree_hash(state)
    mtimes = {p: p.stat().st_mtime_ns for p in state.rglob("*") if not p.is_symlink()}
    manifest = build_openclaw_manifest(state)
    assert tree_hash(state) == before, "taking the manifest changed the state dir"
    assert {p: p.stat().st_mtime_ns for p in state.rglob("*") if not p.is_symlink()} == mtimes
    assert verify_manifest(manifest).ok
    entries = {(e["kind"], e["name"]): e["value"] for e in manifest["entries"]}
    names = {k: sorted(n for kind, n in entries if kind == k) for k in ("identity", "memory", "transcript", "session")}
    assert names["identity"] == ["IDENTITY.md", "SOUL.md"], "a symlink out of the workspace was followed"
    assert names["memory"] == ["MEMORY.md", "memory/2026-12-01.md"]
    assert entries[("model", "primary")] == {"provider": "standin", "model": "stand-in", "profile": None}
    assert entries[("role", "tools")] == {"deny": ["exec"]}
    assert entries[("role", "gateway")] == {"bind": "loopback", "authMode": "token"}
    assert names["session"], names
    text = json.dumps(manifest)
    assert API_KEY not in text and GATEWAY_TOKEN not in text
    transcripts = {n: entries[("transcript", n)] for n in names["transcript"]}
    if era == JSON_ERA:
        assert any(".jsonl.reset." in n for n in transcripts), transcripts
    if era == SQLITE_ERA:
        assert any(v.get("resets") == 1 for v in transcripts.values()), transcripts
    if era == UPGRADED:  # the reset archive the upgrade left in sessions/ is part of the past too
        assert any(".jsonl.reset." in n for n in transcripts) and any("events" in v for v in transcripts.values())
    # Signed by Kurahi's observer key, which lives in Kurahi's home and nowhere in the state dir.
    key = observer_key(create=False)
    assert key.path == tmp_path / "kurahi" / "identity" / "continuity-observer.json"
    assert manifest["fingerprint"] == key.fingerprint
    assert stat.S_IMODE(os.stat(key.path).st_mode) == 0o600
    assert not [p for p in state.rglob("*") if "observer" in p.name]


def test_an_edited_identity_file_changes_its_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = _resident(JSON_ERA, tmp_path)
    monkeypatch.setenv("KOLO_HOME", str(tmp_path / "kurahi"))
    first = build_openclaw_manifest(state)
    (state / "workspace" / "SOUL.md").write_text("someone else\n")
    second = build_openclaw_manifest(state)
    changed = [a["name"] for a, b in zip(first["entries"], second["entries"], strict=True) if a["value"] != b["value"]]
    assert changed == ["SOUL.md"]
    assert first["fingerprint"] == second["fingerprint"]


def test_not_an_openclaw_state_dir(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError, match="not an OpenClaw state dir"):
        open_state(plain)
    kurahi_home = tmp_path / "home"
    kurahi_home.mkdir()
    (kurahi_home / "config.json").write_text("{}")
    with pytest.raises(UsageError, match="a Kurahi home, not an OpenClaw state dir"):
        open_state(kurahi_home)
    with pytest.raises(UsageError, match="not a directory"):
        open_state(tmp_path / "missing")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "openclaw.json").write_text("{not json")
    with pytest.raises(UsageError, match="not JSON Kurahi can read"):
        open_state(broken)
