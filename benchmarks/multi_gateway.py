"""Issue 17's first bar: several gateways on one PostgreSQL database, a random one SIGKILLed over and over.

Three gateways (``--gateways``) share one database and one workspace, each with a home of
its own; ``--workers`` client threads send chat turns with tool calls, jobs and resets on
``--sessions`` session keys to random live gateways (on ``409 busy``, the next one) for
``--minutes``, while every 20-40 s (``--kill-every``) a random gateway's process group is
SIGKILLed and restarted. Then everything is stopped and the database is read back:
nothing acknowledged lost, no line accepted from a stale lease, every session of a killed
gateway served again within 5 s (``--serve-bar``), no side effect twice. How each is checked:
``tests/support/multi_gateway_campaign.py``.

The database is a throwaway cluster (``kurahi.testing.postgres``) unless ``KOLO_STORE`` names one
(``postgres://user:password@host/db``; it must be empty, and is written to). Prints a table
(``--json``: one object); exit 1 if any invariant failed.

Usage::

    .venv/bin/python benchmarks/multi_gateway.py [--minutes 10] [--sessions 64] [--seed 1] [--json]
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from kurahi.testing.postgres import ThrowawayPostgres  # noqa: E402
from support.multi_gateway_campaign import MultiGatewayCampaign  # noqa: E402


def _range(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition("-")
    return float(lo), float(hi or lo)


def _show(out: dict[str, Any]) -> None:
    rows = [(k, v) for k, v in out.items() if k != "failures"]
    failures = out["failures"]
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table(title="multi-gateway SIGKILL campaign")
        table.add_column("measure")
        table.add_column("value", justify="right")
        for k, v in rows:
            table.add_row(k, json.dumps(v) if isinstance(v, dict) else str(v))
        console = Console()
        console.print(table)
        for f in failures[:50]:
            console.print(f"[red]FAILED[/] {f}", markup=True, highlight=False)
        console.print("[green]every invariant held[/]" if not failures else f"[red]{len(failures)} failures[/]")
        return
    for k, v in rows:
        print(f"{k:>24}: {json.dumps(v) if isinstance(v, dict) else v}")
    for f in failures[:50]:
        print(f"FAILED {f}")
    print("every invariant held" if not failures else f"{len(failures)} failures")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--gateways", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=64)
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--kill-every", type=_range, default=(20.0, 40.0), metavar="LO-HI", help="seconds (20-40)")
    ap.add_argument("--down", type=_range, default=(0.5, 2.0), metavar="LO-HI", help="seconds dead (0.5-2)")
    ap.add_argument(
        "--stall-share",
        type=float,
        default=0.0,
        help="share of disruptions that SIGSTOP a gateway for --stall-seconds instead of killing it (fencing)",
    )
    ap.add_argument("--stall-seconds", type=float, default=6.0)
    ap.add_argument("--serve-bar", type=float, default=5.0, help="seconds from a kill to its sessions served again")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the homes (bench-data/multi-gw-*) for a look")
    ap.add_argument("-v", "--verbose", action="store_true", help="say what happens as it happens (stderr)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    base = ROOT / "bench-data"
    base.mkdir(exist_ok=True)
    root = Path(tempfile.mkdtemp(dir=base, prefix="multi-gw-"))
    t0 = time.monotonic()

    def log(msg: str) -> None:
        if args.verbose:
            print(f"[{time.monotonic() - t0:7.1f}] {msg}", file=sys.stderr, flush=True)

    pg: ThrowawayPostgres | None = None
    try:
        url = os.environ.get("KOLO_STORE")
        if not url:
            pg = ThrowawayPostgres().start()
            url = pg.url
        campaign = MultiGatewayCampaign(
            root,
            url,
            gateways=args.gateways,
            sessions=args.sessions,
            seconds=args.minutes * 60,
            workers=args.workers,
            kill_every=args.kill_every,
            down=args.down,
            serve_bar=args.serve_bar,
            seed=args.seed,
            stall_share=args.stall_share,
            stall_seconds=args.stall_seconds,
            log=log,
        )
        report = campaign.run()
    finally:
        if pg is not None:
            pg.stop()
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    out = report.to_dict()
    if args.json:
        print(json.dumps(out))
    else:
        _show(out)
    return 1 if report.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
