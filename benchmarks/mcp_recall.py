"""``kurahi mcp``'s ``recall`` on the 110 MB OpenClaw 2026.9 store: first answer, later answers, memory, bytes changed.

Issue 33's bar: on the 3,000-turn, 110 MB store (built by ``benchmarks/activation_sqlite.py``
and cached under ``bench-data/``), ``recall``'s first answer under 1 s after the server has
started, later answers under 200 ms, the server's memory under 300 MB, and not one byte of
the state dir changed.

The server is started as a client starts it (``python -m kurahi.cli mcp --openclaw STATE``,
over stdio, through the official ``mcp`` client). Timed with ``time.perf_counter``: spawn to
handshake done ("started"), then the first ``recall`` (which reads the store through its
snapshot and builds the key's passages), then ``--rounds`` more with other queries (answered
from the kept history: the store did not change). Memory is the server's peak RSS
(``VmHWM`` in ``/proc/<pid>/status``, Linux). The state dir is hashed before and after.

Usage::

    .venv/bin/python benchmarks/mcp_recall.py [--turns 3000] [--rounds 20] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from activation_sqlite import MARKERS, build  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

QUERIES = ("TEAL-HERON-ALPHA", "what did we say about the deploy", "reset", "tide tables", "AMBER-OTTER-OMEGA")


def _hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def _server_rss(state: Path) -> int | None:
    """Peak RSS (bytes) of the ``kurahi mcp`` process serving ``state``."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"mcp" in cmd and str(state).encode() in cmd:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    return None


async def _run(state: Path, rounds: int) -> dict[str, Any]:
    env = {"PYTHONPATH": str(ROOT / "src"), "HOME": os.environ.get("HOME", "/tmp")}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kurahi.cli", "mcp", "--openclaw", str(state)], env=env
    )
    t0 = time.perf_counter()
    async with Client(params) as c:
        started = time.perf_counter()
        first = await c.call_tool("recall", {"query": MARKERS[0]})
        first_done = time.perf_counter()
        assert not first.is_error, first.content
        hits = json.loads(first.content[0].text)
        later: list[float] = []
        by_query: dict[str, list[float]] = {}
        for i in range(rounds):
            query = QUERIES[i % len(QUERIES)]
            t = time.perf_counter()
            res = await c.call_tool("recall", {"query": query, "limit": 10})
            later.append(time.perf_counter() - t)
            by_query.setdefault(query, []).append(later[-1] * 1000)
            assert not res.is_error, res.content
        rss = _server_rss(state)
    return {
        "startupS": started - t0,
        "firstAnswerS": first_done - started,
        "firstHits": hits["total"],
        "laterMedianMs": statistics.median(later) * 1000,
        "laterMaxMs": max(later) * 1000,
        "laterMedianMsByQuery": {q: round(statistics.median(ms), 1) for q, ms in by_query.items()},
        "serverPeakRssMB": rss / 1e6 if rss is not None else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    state, _ = build(args.turns)
    db = state / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    size = sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))
    before = _hash(state)
    out = asyncio.run(_run(state, args.rounds))
    out |= {"storeMB": size / 1e6, "unchanged": _hash(state) == before, "shm": any(db.parent.glob("*-shm"))}
    out["loadAverage"] = os.getloadavg()[0]  # this machine is shared: the figures scale with it
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for k, v in out.items():
            print(f"{k:>16}: {v:.3f}" if isinstance(v, float) else f"{k:>16}: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
