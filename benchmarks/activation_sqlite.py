"""Activation into a large OpenClaw 2026.9 store: plan, apply, verify, rollback, timed; the store's size.

Issue 28's bar: on a 110 MB store whose main key holds a 3,000-turn session, the lead's
``rescue apply`` (stitch + check + plan + apply + verify) in under 6 s. This measures the
activation's share, in process (the library calls the CLI makes), and how the store's file
grows at apply and what rollback gives back.

The store (built once, cached under ``bench-data/``): the 2026.9.6 sample store
(``tests/data/openclaw/2026.9.6-full``, written by OpenClaw itself), its main session (three
turns, ``/reset``, two turns) continued by ``--turns`` generated turns, user lines of ~0.8 KB and
replies of ~12 KB (a long answer or a tool's output: the size real stores grow by), written
into the store by Kurahi's own writer as the key's session, then checkpointed. The candidate
C is that session with its reset bypassed and a new id (what ``lineage stitch`` makes).

Each round copies the cached store into a fresh state dir and runs plan, apply, verify and
rollback on it, each timed with ``time.perf_counter``; the figures are medians over
``--rounds``. ``--profile STEP`` prints cProfile's top functions of that step (one round).

Usage::

    .venv/bin/python benchmarks/activation_sqlite.py [--turns 3000] [--rounds 3] [--profile apply] [--json]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from kurahi.gateway.activation_host import OfflineHost  # noqa: E402
from kurahi.lifecycle.activation import apply_package, plan_activation, rollback_package, verify_package  # noqa: E402
from kurahi.runtimes.openclaw.sqlite import write as oc  # noqa: E402
from kurahi.runtimes.openclaw.sqlite.read import export_session_jsonl  # noqa: E402
from support.reset_bypass import bypass_reset  # noqa: E402

SAMPLE = ROOT / "tests" / "data" / "openclaw" / "2026.9.6-full" / "state"
STORE = Path("agents") / "main" / "agent" / "openclaw-agent.sqlite"
KEY = "agent:main:main"
CACHE = ROOT / "bench-data"
MARKERS = ("TEAL-HERON-ALPHA", "AMBER-OTTER-OMEGA")


def _text(rng: random.Random, size: int, tag: str) -> str:
    words = [
        "copper",
        "sextant",
        "harbour",
        "lantern",
        "meridian",
        "quartz",
        "willow",
        "ember",
        "tundra",
        "orbit",
        "ledger",
        "saffron",
        "granite",
        "falcon",
        "cobalt",
        "thistle",
        "marble",
        "canyon",
        "juniper",
        "velvet",
    ]
    out, n = [tag], len(tag)
    while n < size:
        w = rng.choice(words) + str(rng.randrange(1000))
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


def _turns(last_id: str, start_ms: int, turns: int) -> list[str]:
    rng = random.Random(28)
    lines, parent, t = [], last_id, start_ms
    for i in range(turns):
        for role, size in (("user", 800), ("assistant", 12_000)):
            eid, t = str(uuid.UUID(int=rng.getrandbits(128))), t + 1_000
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t / 1000)) + f".{t % 1000:03d}Z"
            text = _text(rng, size, f"turn-{i}-{role}")
            if role == "user":
                message: dict[str, Any] = {"role": "user", "content": text, "timestamp": t}
            else:
                message = {
                    "role": "assistant",
                    "content": [{"type": "text", "text": text}],
                    "api": "openai-completions",
                    "provider": "standin",
                    "model": "stand-in",
                    "stopReason": "stop",
                    "timestamp": t,
                    "usage": {"input": 10, "output": 7, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 17},
                }
            entry = {"type": "message", "id": eid, "parentId": parent, "timestamp": stamp, "message": message}
            lines.append(json.dumps(entry, separators=(",", ":"), ensure_ascii=False))
            parent = eid
    return lines


def build(turns: int) -> tuple[Path, Path]:
    """The cached large state dir and its candidate (built when missing)."""
    folder = CACHE / f"openclaw-2026.9-store-t{turns}"
    state, candidate = folder / "state", folder / "C.jsonl"
    if candidate.is_file():
        return state, candidate
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(SAMPLE, state)
    db = state / STORE
    with oc.open_store(db, write=True) as con:
        old = oc.node_row(con, KEY)["current_session_id"]  # type: ignore[index]
        lines = export_session_jsonl(db, old).decode().splitlines()
        last = json.loads(lines[-1])
        big = str(uuid.uuid4())
        header = json.loads(lines[0]) | {"id": big}
        lines = [json.dumps(header, separators=(",", ":")), *lines[1:], *_turns(last["id"], 1796173000000, turns)]
        oc.install_session(con, KEY, lines, old, big, 1796173000000)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    candidate.write_bytes(bypass_reset(export_session_jsonl(db, big), str(uuid.uuid4())))
    return state, candidate


def _mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6


def one_round(state_src: Path, candidate: Path, profile: str | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="kurahi-bench-") as tmp:
        state, pkg = Path(tmp) / "state", Path(tmp) / "pkg"
        shutil.copytree(state_src, state)
        db = state / STORE
        out: dict[str, float] = {"storeMB": _mb(db)}
        host = OfflineHost(state)
        steps = {
            "plan": lambda: plan_activation(state, "main", KEY, candidate, pkg, markers=MARKERS),
            "apply": lambda: apply_package(pkg, state, host),
            "verify": lambda: verify_package(pkg, state),
            "rollback": lambda: rollback_package(pkg, state, host),
        }
        for name, step in steps.items():
            prof = cProfile.Profile() if profile == name else None
            t0 = time.perf_counter()
            if prof is not None:
                prof.enable()
            result = step()
            if prof is not None:
                prof.disable()
            out[name] = time.perf_counter() - t0
            if name == "verify":
                assert result.ok, result.to_dict()
            out[f"storeMB-after-{name}"] = _mb(db)
            if prof is not None:
                pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--turns", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", choices=["plan", "apply", "verify", "rollback"])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    state, candidate = build(args.turns)
    built = time.perf_counter() - t0
    rounds = [one_round(state, candidate, args.profile if i == 0 else None) for i in range(args.rounds)]
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    con = sqlite3.connect(f"file:{state / STORE}?mode=ro&immutable=1", uri=True)
    events = con.execute("SELECT count(*) FROM transcript_events").fetchone()[0]
    con.close()
    doc = {"turns": args.turns, "events": events, "candidateMB": candidate.stat().st_size / 1e6,
           "buildSeconds": built, "rounds": args.rounds, "median": med}  # fmt: skip
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(f"store {med['storeMB']:.0f} MB, {events} events; candidate {doc['candidateMB']:.0f} MB; "
              f"median of {args.rounds}:")  # fmt: skip
        for step in ("plan", "apply", "verify", "rollback"):
            print(f"  {step:9s} {med[step]:6.2f} s   store after: {med[f'storeMB-after-{step}']:.0f} MB")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
