"""Turn rate of the runtime on one session: deterministic provider, fsync policy ``turn``.

Each turn is the whole path a real one takes, in one process: the lane, the pairing guard,
the user message appended, the context (kept current in memory), the system prompt read
from the workspace files, one model call to the deterministic provider, the reply
appended, and one ``fdatasync`` at the end of the turn before it is acknowledged.

The peer is the I/O floor measured in the same run, on the same disk: a raw loop that per
"turn" writes two lines of the same size as the turn's two entries and calls
``fdatasync`` once. The ratio says how much of a turn is Kurahi rather than the disk.

``--tools`` makes every turn also call the ``write`` tool (two more entries, a ledger intent
and outcome, each flushed, and the file written atomically), reported separately.

Usage::

    .venv/bin/python benchmarks/turn_rate.py [--turns 2000] [--trials 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from kurahi.agent.layout import AgentPaths
from kurahi.agent.runtime import Runtime

ROOT = Path(__file__).resolve().parents[1]
KEY = "agent:alice:main"


def _home(base: Path) -> Path:
    home = Path(tempfile.mkdtemp(dir=base, prefix="turns-"))
    ws = AgentPaths.of(home, "alice").ensure().workspace
    (ws / "IDENTITY.md").write_text("# Identity\n\nmarker: ALICE-7F3A\n")
    (ws / "SOUL.md").write_text("Calm and careful.\n")
    return home


async def _kurahi(home: Path, turns: int, tools: bool) -> tuple[float, int]:
    rt = Runtime(home, "alice")
    await rt.start()
    rt.conversation(KEY)
    text = 'note this [[tool:write {"path": "n.md", "content": "x"}]]' if tools else "note this: the harbour lantern"
    t0 = time.perf_counter()
    for i in range(turns):
        r = await rt.send(KEY, f"{text} {i}")
        assert r.status == "ok", r.error
    dt = time.perf_counter() - t0
    size = rt.conversation(KEY).file.stat().st_size
    await rt.close()
    return dt, size


def _raw(base: Path, turns: int, line_bytes: int, lines_per_turn: int) -> float:
    fd, name = tempfile.mkstemp(dir=base, prefix="raw-")
    os.close(fd)
    fd = os.open(name, os.O_WRONLY | os.O_APPEND)
    line = b"x" * (line_bytes - 1) + b"\n"
    t0 = time.perf_counter()
    for _ in range(turns):
        for _ in range(lines_per_turn):
            os.write(fd, line)
        os.fdatasync(fd)
    dt = time.perf_counter() - t0
    os.close(fd)
    os.unlink(name)
    return dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = ROOT / "bench-data"
    base.mkdir(exist_ok=True)
    rows: dict[str, list[float]] = {"kurahi": [], "raw": [], "kurahi+tool": []}
    for _ in range(args.trials):
        home = _home(base)
        try:
            dt, size = asyncio.run(_kurahi(home, args.turns, tools=False))
            rows["kurahi"].append(args.turns / dt)
            rows["raw"].append(args.turns / _raw(base, args.turns, size // (2 * args.turns), 2))
        finally:
            shutil.rmtree(home)
        home = _home(base)
        try:
            dt, _ = asyncio.run(_kurahi(home, max(1, args.turns // 4), tools=True))
            rows["kurahi+tool"].append(max(1, args.turns // 4) / dt)
        finally:
            shutil.rmtree(home)
    med = {k: statistics.median(v) for k, v in rows.items()}
    out: dict[str, Any] = {
        "turns": args.turns,
        "trials": args.trials,
        "turnsPerSecond": round(med["kurahi"]),
        "rawFloorTurnsPerSecond": round(med["raw"]),
        "ratioToFloor": round(med["kurahi"] / med["raw"], 2),
        "withToolTurnsPerSecond": round(med["kurahi+tool"]),
        "bar": ">= 1000 turns/s",
        "pass": med["kurahi"] >= 1000,
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(
            f"turns on one session, fsync 'turn', deterministic provider ({args.turns} turns, median of {args.trials})"
        )
        print(f"  kurahi          {out['turnsPerSecond']:>7} turns/s")
        print(f"  raw I/O floor   {out['rawFloorTurnsPerSecond']:>7} turns/s (2 writes + 1 fdatasync)")
        print(f"  ratio           {out['ratioToFloor']:>7}")
        print(f"  with write tool {out['withToolTurnsPerSecond']:>7} turns/s")
        print(f"  bar >= 1000 turns/s: {'PASS' if out['pass'] else 'FAIL'}")
    return 0 if out["pass"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
