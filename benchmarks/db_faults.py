"""Issue 29's faults: two gateways on one PostgreSQL while the database crashes, freezes and drops them.

Runs :mod:`db_fault_campaign` (``tests/crash``): ``--gateways`` gateways on a throwaway
PostgreSQL of its own (``synchronous_commit`` on), ``--workers`` clients sending chat turns
with a ``memory_append`` call on ``--sessions`` keys as ``docs/backends.md`` says (an
idempotency key per message, the next gateway on 409, again after a 503), and ``--rounds``
rounds of the three faults: ``pg_ctl stop -m immediate`` then start after ``--down`` s,
SIGSTOP of the server for ``--freeze`` s, ``pg_terminate_backend`` of every gateway
connection; ``--load`` s of load between faults. No gateway is restarted. Prints each
fault's recovery (from its end to every key served again) and the campaign's checks
(``--json``: one object); exit 1 if any check failed.

Usage::

    .venv/bin/python benchmarks/db_faults.py [--rounds 3] [--sessions 16] [--freeze 20] [--seed 1] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kurahi.testing.postgres import ThrowawayPostgres  # noqa: E402
from support.db_fault_campaign import FAULTS, DatabaseFaultCampaign  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--faults", default=",".join(FAULTS), help="comma-separated, in order (restart,freeze,terminate)")
    ap.add_argument("--gateways", type=int, default=2)
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--load", type=float, default=20.0, help="seconds of load before and between faults")
    ap.add_argument("--down", type=float, default=2.0, help="seconds the crashed server stays down")
    ap.add_argument("--freeze", type=float, default=20.0, help="seconds the server stays SIGSTOPped")
    ap.add_argument("--serve-bar", type=float, default=10.0, help="seconds from a fault's end to every key served")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the homes (bench-data/db-faults-*) for a look")
    ap.add_argument("-v", "--verbose", action="store_true", help="say what happens as it happens (stderr)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    faults = [f for f in args.faults.split(",") if f]
    unknown = [f for f in faults if f not in FAULTS]
    if unknown:
        ap.error(f"unknown faults {unknown}; known: {', '.join(FAULTS)}")
    base = ROOT / "bench-data"
    base.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(dir=base, prefix="db-faults-"))
    t0 = time.monotonic()

    def log(msg: str) -> None:
        if args.verbose:
            print(f"[{time.monotonic() - t0:7.1f}] {msg}", file=sys.stderr, flush=True)

    try:
        with ThrowawayPostgres() as pg:
            campaign = DatabaseFaultCampaign(
                root,
                pg,
                faults=faults,
                rounds=args.rounds,
                load_seconds=args.load,
                down=args.down,
                freeze_seconds=args.freeze,
                gateways=args.gateways,
                sessions=args.sessions,
                workers=args.workers,
                serve_bar=args.serve_bar,
                seed=args.seed,
                log=log,
            )
            report = campaign.run()
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    out = report.to_dict()
    out["faults"] = campaign.fault_table()
    out["loadAverage"] = os.getloadavg()
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            if k not in ("failures", "faults"):
                print(f"{k:>24}: {json.dumps(v) if isinstance(v, dict | tuple) else v}")
        for f in out["faults"]:
            print(f"{'fault':>24}: {json.dumps(f)}")
        for f in report.failures[:50]:
            print(f"FAILED {f}")
        print("every check held" if not report.failures else f"{len(report.failures)} failures")
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
