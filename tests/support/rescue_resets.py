"""A 2026.9.6 store whose main key was reset many times: the real sample, its session grown.

The kept full store (``2026.9.6-full``: three turns, ``/reset``, two turns) is copied, its
main session exported, and ``resets`` more ``/reset`` + one-turn stretches appended, each
saying a phrase of its own, in the lines OpenClaw 2026.9.6 writes (a ``reset`` entry with its
reason, a user message in its envelope, the assistant's answer). The grown session goes into
the store through Kurahi's own activation (plan, apply offline, verify), as any repair does:
the store keeps every table's shape OpenClaw wrote.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from datetime import datetime, timedelta
from pathlib import Path

from kurahi.runtimes.openclaw.sqlite.read import export_session_jsonl, list_sqlite_nodes
from support.testdata import data_path

KEY = "agent:main:main"
FIRST = "TEAL-HERON-ALPHA"
"""The phrase of the sample's first stretch (lost at its own reset)."""
SECOND = "AMBER-OTTER-OMEGA"
"""The phrase of the sample's second stretch."""


def phrase_of(n: int) -> str:
    """The phrase said in the stretch after the ``n``-th added reset (1-based)."""
    return f"RESET-PHRASE-{n:02d}-QUOKKA"


def _stamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _grown(exported: bytes, resets: int, reason: str) -> bytes:
    lines = exported.decode().rstrip("\n").split("\n")
    header = json.loads(lines[0])
    header["id"] = str(uuid.uuid4())
    last = json.loads(lines[-1])
    parent = last["id"]
    t = datetime.fromisoformat(last["timestamp"].replace("Z", "+00:00"))
    out = [json.dumps(header, separators=(",", ":")), *lines[1:]]
    for n in range(1, resets + 1):
        t += timedelta(minutes=10)
        said = phrase_of(n)
        reset = {"type": "reset", "id": uuid.uuid4().hex[:8], "parentId": parent, "timestamp": _stamp(t)}
        reset["reason"] = reason
        t += timedelta(seconds=5)
        user = {
            "type": "message", "id": str(uuid.uuid4()), "parentId": reset["id"], "timestamp": _stamp(t),
            "message": {"role": "user", "content": f"[Mon 2026-12-07 04:00 UTC] Keep {said} in mind.",
                        "timestamp": int(t.timestamp() * 1000)},
        }  # fmt: skip
        t += timedelta(seconds=1)
        answer = {
            "type": "message", "id": str(uuid.uuid4()), "parentId": user["id"], "timestamp": _stamp(t),
            "message": {"role": "assistant", "content": [{"type": "text", "text": f"Noted: {said}."}],
                        "api": "openai-completions", "provider": "standin", "model": "stand-in",
                        "stopReason": "stop", "timestamp": int(t.timestamp() * 1000)},
        }  # fmt: skip
        out += [json.dumps(e, separators=(",", ":")) for e in (reset, user, answer)]
        parent = answer["id"]
    return ("\n".join(out) + "\n").encode()


def many_resets(tmp_path: Path, resets: int, *, reason: str = "reset") -> Path:
    """The state dir of a copy of the full store whose main key has ``1 + resets`` resets, each a loss
    (the added ones record ``reason``, as OpenClaw records ``reset``)."""
    state = tmp_path / "state"
    shutil.copytree(data_path("openclaw", "2026.9.6-full", "state"), state)
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    (node,) = [n for n in list_sqlite_nodes(db) if n.session_key == KEY]
    candidate = tmp_path / "grown.jsonl"
    candidate.write_bytes(_grown(export_session_jsonl(db, node.current_session_id), resets, reason))
    pkg = tmp_path / "grown-pkg"
    kurahi = [sys.executable, "-m", "kurahi.cli"]
    for args in (
        ["activate", "plan", "--home", str(state), "--agent", "main", "--key", KEY,
         "--candidate", str(candidate), "--out", str(pkg), "--marker", phrase_of(resets)],
        ["activate", "apply", str(pkg), "--home", str(state), "--offline"],
    ):  # fmt: skip
        done = subprocess.run(args=[*kurahi, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"kurahi {' '.join(args)}: {done.stdout}{done.stderr}"
    shutil.rmtree(pkg)
    candidate.unlink()
    return state
