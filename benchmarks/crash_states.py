"""Explore the crash states of every write protocol in both models (issue 20), at full size.

Each protocol runs once under strace (``tests/crashstates``), larger than in the test suite
(``--scale``); its crash states in the ``ext4`` and the ``strict`` model are replayed into its
directory and checked (``--budget`` choices per crash point, ``--tears`` torn variants of each
in the strict model). Then each fsync the protocol's checker must miss is left out, one kind at
a time, and the ext4 model must catch it. Prints the table for RELIABILITY.md and
docs/hostile.md; exits 1 when an ext4 state breaks an invariant or a left-out fsync is not caught.

Usage::

    .venv/bin/python benchmarks/crash_states.py [--scale 3] [--budget 600] [--tears 8] [--seed 1]
        [--only NAME,...] [--work DIR] [--json]
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

from support.crashstates.explore import explore  # noqa: E402
from support.crashstates.fstrace import record  # noqa: E402
from support.crashstates.protocols import PROTOCOLS  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=3, help="operations per protocol, as a multiple of the test's")
    ap.add_argument(
        "--budget", type=int, default=600, help="states per crash point beyond which they are sampled (/ cost)"
    )
    ap.add_argument("--tears", type=int, default=8, help="strict model: torn variants per choice, at least")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated protocol names")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    names = a.only.split(",") if a.only else list(PROTOCOLS)
    work = Path(tempfile.mkdtemp(prefix="crash-states-", dir=a.work))
    rows: list[dict[str, Any]] = []
    failed = False
    began = time.monotonic()
    try:
        for name in names:
            t0 = time.monotonic()
            rec = record(name, work / f"rec-{name}", seed=a.seed, scale=a.scale)
            row: dict[str, Any] = {"protocol": name}
            budget = max(8, a.budget // PROTOCOLS[name].cost)
            for model in ("ext4", "strict"):
                res = explore(name, model, work, budget=budget, seed=a.seed, tears=a.tears, recording=rec)
                row["ops"] = res.ops_text
                row[model] = res.states
                row[f"{model}_violations"] = len(res.violations)
                row[f"{model}_examples"] = [v[2][0] for v in res.violations[:3]]
                failed |= model == "ext4" and bool(res.violations)
            caught = {}
            for drop in PROTOCOLS[name].drops:
                rec_d = record(name, work / f"rec-{name}-{drop}", drop=drop, seed=a.seed, scale=a.scale)
                res = explore(name, "ext4", work, budget=budget, seed=a.seed, recording=rec_d, stop_at_first=True)
                caught[drop] = bool(res.violations)
                failed |= not res.violations
            row["drops_caught"] = caught
            row["seconds"] = round(time.monotonic() - t0, 1)
            rows.append(row)
            if not a.json:
                drops = ", ".join(f"{k} {'caught' if v else 'MISSED'}" for k, v in caught.items()) or "-"
                print(
                    f"{name:26} ext4 {row['ext4']:>7,} ({row['ext4_violations']} bad)  "
                    f"strict {row['strict']:>7,} ({row['strict_violations']} bad)  drops: {drops}  "
                    f"{row['seconds']} s  [{row['ops']}]",
                    flush=True,
                )
                for ex in row["ext4_examples"] + row["strict_examples"]:
                    print(f"    {ex}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = sum(r["ext4"] + r["strict"] for r in rows)
    summary = {
        "protocols": len(rows),
        "states": total,
        "ext4_violations": sum(r["ext4_violations"] for r in rows),
        "strict_violations": sum(r["strict_violations"] for r in rows),
        "seconds": round(time.monotonic() - began, 1),
        "scale": a.scale,
        "budget": a.budget,
        "tears": a.tears,
        "seed": a.seed,
    }
    if a.json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=1))
    else:
        print(
            f"\n{summary['protocols']} protocols, {total:,} crash states checked in {summary['seconds']} s; "
            f"violations: ext4 {summary['ext4_violations']}, strict {summary['strict_violations']}"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
