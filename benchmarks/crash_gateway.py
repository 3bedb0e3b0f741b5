"""The gateway's SIGKILL campaign at full size: kill it at random moments under a mixed workload.

Runs ``tests/crash/gateway_campaign.py`` (the test suite runs it with 6 kills) and prints
what was acknowledged and every invariant that failed (none, or the script exits 1).

Usage::

    .venv/bin/python benchmarks/crash_gateway.py [--kills 1000] [--seed 1] [--max-kill-after 1.0] [--json]
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

from gateway_campaign import run_gateway_campaign  # noqa: E402

from gateways import make_gateway_home  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kills", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-kill-after", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = ROOT / "bench-data"
    base.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(dir=base, prefix="crash-gateway-"))
    try:
        t0 = time.monotonic()
        report = run_gateway_campaign(
            make_gateway_home(root), args.kills, seed=args.seed, max_kill_after=args.max_kill_after
        )
        out = {**report.to_dict(), "seconds": round(time.monotonic() - t0, 1)}
    finally:
        shutil.rmtree(root)
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k:>26}: {v}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
