"""The runtime's SIGKILL campaign at full size: 1,000 turns with tool calls, killed at random moments.

Runs ``tests/crash/turn_campaign.py`` (the same code the test suite runs at 80 turns) and
prints what it found: turns acknowledged, kills, tool calls, results settled on restart
(from the ledger, by lookup, or as an explicit unknown outcome), side effects counted on
disk, and every invariant that failed (none, or the script exits 1).

Usage::

    .venv/bin/python benchmarks/crash_turns.py [--turns 1000] [--seed 1] [--max-kill-after 0.15] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "crash")]

from turn_campaign import run_campaign  # noqa: E402

from residents import make_home  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-kill-after", type=float, default=0.15)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = ROOT / "bench-data"
    base.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(dir=base, prefix="crash-turns-"))
    try:
        t0 = time.monotonic()
        report = run_campaign(make_home(root), args.turns, seed=args.seed, max_kill_after=args.max_kill_after)
        out = {**report.to_dict(), "seconds": round(time.monotonic() - t0, 1)}
    finally:
        shutil.rmtree(root)
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>22}: {v}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
