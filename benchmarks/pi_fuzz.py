"""Kurahi against Pi 1.6.0 on thousands of files Pi's own SessionManager wrote (by hand).

    KURAHI_PEER_DIR=... .venv/bin/python benchmarks/pi_fuzz.py [--seeds 1-20] [--programs 150] [--points 3]

Each seed's programs run through ``tests/peers/pi_fuzz.mjs`` (``--deep`` on odd seeds), and
every file is compared, at the leaf and ``--points`` other entries, with each of Kurahi's
readers with and without the C scanner (``tests/support/pi_fuzzing.py``, the suite's comparison).
Prints one line per seed and the total: files, projections, identical, explained,
unexplained, with the first few unexplained differences in full. Exit 1 when any is unexplained.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.pi_fuzzing import Tally, compare, run_pi


def main() -> int:
    """Run the seeds, compare, print the tally."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-20", help="a range A-B or one seed")
    ap.add_argument("--programs", type=int, default=150, help="programs per seed")
    ap.add_argument("--points", type=int, default=3, help="entries projected besides the leaf")
    args = ap.parse_args()
    lo, _, hi = args.seeds.partition("-")
    total = Tally()
    pi_s = kurahi_s = 0.0
    for seed in range(int(lo), int(hi or lo) + 1):
        with tempfile.TemporaryDirectory(prefix="pi-fuzz-") as d:
            t0 = time.perf_counter()
            records = run_pi(seed, args.programs, Path(d), points=args.points, deep=seed % 2 == 1)
            t1 = time.perf_counter()
            tally = Tally()
            compare(records, tally)
            t2 = time.perf_counter()
        pi_s += t1 - t0
        kurahi_s += t2 - t1
        print(f"seed {seed}: {tally.line()} (Pi {t1 - t0:.1f} s, Kurahi {t2 - t1:.1f} s)", flush=True)
        for key in ("programs", "calls", "files", "projections", "identical", "explained"):
            setattr(total, key, getattr(total, key) + getattr(tally, key))
        total.flags.update(tally.flags)
        total.unexplained += tally.unexplained
    print(f"total: {total.line()} (Pi {pi_s:.0f} s, Kurahi {kurahi_s:.0f} s)")
    for u in total.unexplained[:10]:
        print(u)
    return 1 if total.unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
