"""The SIGKILL campaigns at full size: the runtime during turns, or the gateway under mixed load.

``runtime`` runs ``tests/support/turn_campaign.py`` (the suite runs it at 80 turns): a
process in a loop of turns with tool calls, killed at random moments and restarted.
``gateway`` runs ``tests/support/gateway_campaign.py`` (the suite runs it with 6 kills): the
gateway killed under chat turns with tools, jobs, resets, config applies and pairings.
Either prints what was acknowledged and every invariant that failed (none, or exit 1).

Usage::

    .venv/bin/python benchmarks/crash_campaigns.py runtime [--turns 1000] [--seed 1] [--json]
    .venv/bin/python benchmarks/crash_campaigns.py gateway [--kills 1000] [--seed 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.gateway_campaign import run_gateway_campaign  # noqa: E402
from support.gateways import make_gateway_home  # noqa: E402
from support.residents import make_home  # noqa: E402
from support.turn_campaign import run_campaign  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", choices=["runtime", "gateway"])
    ap.add_argument("--turns", type=int, default=1000, help="runtime: turns to acknowledge")
    ap.add_argument("--kills", type=int, default=1000, help="gateway: kills")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-kill-after", type=float, default=None, help="seconds (default 0.15 runtime, 1.0 gateway)")
    ap.add_argument("--activate-share", type=float, default=0.2, help="gateway: share of rounds with an activation")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = ROOT / "bench-data"
    base.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(dir=base, prefix=f"crash-{args.target}-"))
    try:
        t0 = time.monotonic()
        report: Any
        if args.target == "runtime":
            report = run_campaign(
                make_home(root), args.turns, seed=args.seed, max_kill_after=args.max_kill_after or 0.15
            )
        else:
            report = run_gateway_campaign(
                make_gateway_home(root),
                args.kills,
                seed=args.seed,
                max_kill_after=args.max_kill_after or 1.0,
                activate_share=args.activate_share,
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
