"""What the viewer's pages show, made as a user makes it: sessions in a home, a stitch and its
activation package (through the `kurahi` command), continuity reports (a real suite run)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from kurahi.pi.transcript import Transcript
from kurahi.resident.home import Home
from kurahi.store.catalog import Catalog
from kurahi.testing.sessions import write_session

KURAHI = [sys.executable, "-m", "kurahi.cli"]
MARKUP = "<img src=x onerror=\"window.__pwned=1;alert('key')\"><script>window.__pwned=1</script>"
"""Markup planted in a session key, entry ids and message text: it must show as text, never run."""
BEFORE, AFTER = "BEFORE-RESET-FACT", "AFTER-RESET-FACT"


def sessions_dir(home: Home, agent: str = "alice") -> Path:
    return home.root / "agents" / agent / "sessions"


def add_session(home: Home, key: str, path: Path, **catalog: Any) -> str:
    """Put the transcript at ``path`` (in the sessions folder) under ``key`` in the catalog."""
    with Transcript.open(path) as t:
        sid = t.session_id
    Catalog(sessions_dir(home) / "sessions.json").upsert(
        key, {"sessionId": sid, "sessionFile": path.name, "updatedAt": 1_796_000_000_000, **catalog}
    )
    return sid


def add_big_tree(home: Home, key: str, entries: int = 100_000) -> dict[str, Any]:
    """A generated tree of ``entries`` entries (branches, compactions, context edits) under ``key``."""
    tmp = sessions_dir(home) / "big.tmp"
    g = write_session(tmp, entries=entries, branch=0.05, new_kinds=True, seed=7)
    with Transcript.open(tmp) as t:
        sid = t.session_id
    final = tmp.with_name(f"{sid}.jsonl")
    tmp.rename(final)
    add_session(home, key, final, compactionCount=g.compactions, status="done")
    return {"entries": g.entries, "branches": g.branches, "compactions": g.compactions, "bytes": g.size}


def add_markup_session(home: Home) -> dict[str, Any]:
    """A session whose key, entry ids, label and text are markup, with one line of 1 MiB."""
    sid = "markup-session"
    ids = [f"{MARKUP}-{i}" for i in range(4)]
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": sid, "timestamp": "2026-11-01T08:00:00.000Z", "cwd": "/w"}
    ]
    texts = [MARKUP, f"reply {MARKUP}", "x" * (1024 * 1024), f"last {MARKUP}"]
    for i, (eid, text) in enumerate(zip(ids, texts, strict=True)):
        role = "user" if i % 2 == 0 else "assistant"
        content: Any = text if role == "user" else [{"type": "text", "text": text}]
        lines.append(
            {
                "type": "message",
                "id": eid,
                "parentId": ids[i - 1] if i else None,
                "timestamp": f"2026-11-01T08:00:0{i + 1}.000Z",
                "message": {"role": role, "content": content, "timestamp": 1_793_520_000_000 + i},
            }
        )
    lines.append(
        {
            "type": "label",
            "id": f"{MARKUP}-label",
            "parentId": ids[-1],
            "timestamp": "2026-11-01T08:00:09.000Z",
            "targetId": ids[0],
            "label": MARKUP,
        }
    )
    path = sessions_dir(home) / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    key = f"agent:alice:{MARKUP}"
    add_session(home, key, path, label=MARKUP)
    return {"key": key, "ids": ids, "path": path}


def kurahi(*args: str, home: Home) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*KURAHI, *args], capture_output=True, text=True, timeout=300, env=_env(home))
    assert r.returncode == 0, f"kurahi {' '.join(args)}: {r.stdout}\n{r.stderr}"
    return r


def _env(home: Home) -> dict[str, str]:
    import os

    env = {**os.environ, "KOLO_HOME": str(home.root)}
    env.pop("KOLO_GATEWAY_TOKEN", None)
    return env


def add_repair(home: Home, scratch: Path) -> dict[str, Any]:
    """A reset session (an archive A and a live B), stitched and planned for activation under repairs/."""
    folder = sessions_dir(home)
    a_tmp, b_tmp = scratch / "a.jsonl", scratch / "b.jsonl"
    write_session(a_tmp, entries=300, branch=0.1, compact_every=0, markers=(BEFORE,), seed=11)
    later = "2026-10-09T08:00:00Z"
    write_session(b_tmp, entries=120, branch=0.0, compact_every=0, markers=(AFTER,), seed=12, start=later)
    with Transcript.open(a_tmp) as ta, Transcript.open(b_tmp) as tb:
        sid_a, sid_b = ta.session_id, tb.session_id
    a = folder / f"{sid_a}.jsonl.reset.2026-10-08T08-00-00.000Z"
    b = folder / f"{sid_b}.jsonl"
    shutil.move(a_tmp, a)
    shutil.move(b_tmp, b)
    key = "agent:alice:support"
    add_session(home, key, b, previousSessionId=sid_a)
    candidate = scratch / "C.jsonl"
    kurahi("lineage", "stitch", str(a), str(b), "--out", str(candidate), home=home)
    out = home.root / "repairs" / "support-stitch"
    out.parent.mkdir(mode=0o700)
    kurahi(
        "activate", "plan", "--home", str(home.root), "--agent", "alice", "--key", key,
        "--candidate", str(candidate), "--out", str(out), "--marker", BEFORE, "--marker", AFTER,
        home=home,
    )  # fmt: skip
    return {"key": key, "package": out, "sources": [a.name, b.name]}


def add_reports(home: Home, scratch: Path) -> dict[str, Path]:
    """A real continuity report (one disruption) and a copy edited so that it no longer verifies."""
    good = home.root / "reports" / "model-swap"
    env = _env(home)
    env["KOLO_SMOKE_HOME"] = str(scratch / "suite.kolo-test")
    r = subprocess.run(
        [*KURAHI, "continuity", "run", "--throwaway", "--disruption", "model-swap", "--out", str(good)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    bad = home.root / "reports" / "edited"
    bad.mkdir(parents=True)
    data = (good / "continuity-report.json").read_bytes()
    # Still canonical JSON, but one invariant's detail says something else: the digest no longer holds.
    edited = data.replace(b'"status":"pass"', b'"status":"pazz"', 1)
    assert edited != data
    (bad / "continuity-report.json").write_bytes(edited)
    return {"good": good, "bad": bad}
