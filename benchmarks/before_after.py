"""Two checkouts of Kurahi, alternated in the same run: does a change cost speed?

A refactoring that moves code between rooms must not slow what users run. This script takes two
checkouts, each with its own ``.venv`` (``make install`` in each), and runs the same whole-process
measures with each in turn, ``--pairs`` times, before then after in every pair, so both see the
same machine load:

- ``rescue``: ``kurahi rescue --openclaw STATE --json`` on a fresh copy of the 110 MB OpenClaw
  2026.9 store ``benchmarks/activation_sqlite.py`` builds (wall time of the child);
- ``open + project``: a fresh process that imports Kurahi and projects the 200k-entry tree
  ``benchmarks/open_project.py`` generates (``kurahi.context.files.project_file``);
- ``gateway load``: each checkout's own ``benchmarks/gateway_load.py --json`` (turns per second,
  the gateway's CPU per turn).

Both checkouts read the very same files (built once, by this checkout's code). Medians of the
pairs are printed, with each pair's after/before ratio.

Usage::

    .venv/bin/python benchmarks/before_after.py --before ../base-checkout [--after .] [--pairs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from activation_sqlite import build
from open_project import ensure_file

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "import sys\nfrom kurahi.context.files import project_file\nproject_file(sys.argv[1])\n"


def _child(cmd: list[str], cwd: Path) -> tuple[float, str]:
    """Wall seconds and stdout of one child process (exit 0, or 1 for "losses found")."""
    t0 = time.perf_counter()
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if res.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return wall, res.stdout


def measure(checkout: Path, store: Path, tree: Path) -> dict[str, float]:
    """One round of the three measures with ``checkout``'s Python."""
    python = str(checkout / ".venv" / "bin" / "python")
    with tempfile.TemporaryDirectory(prefix="kurahi-ba-") as tmp:
        state = Path(tmp) / "state"
        shutil.copytree(store, state)
        rescue_s, out = _child([python, "-m", "kurahi.cli", "rescue", "--openclaw", str(state), "--json"], checkout)
        losses = len(json.loads(out)["losses"])
    project_s, _ = _child([python, "-c", PROJECT, str(tree)], checkout)
    _, out = _child([python, str(checkout / "benchmarks" / "gateway_load.py"), "--json"], checkout)
    load = json.loads(out.strip().splitlines()[-1])
    return {
        "rescue_s": rescue_s,
        "losses": losses,
        "project_s": project_s,
        "turns_per_s": load["turnsPerSecond"],
        "cpu_ms_per_turn": load["gatewayCpuMsPerTurn"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--before", type=Path, required=True, help="the checkout before the change (with its .venv)")
    ap.add_argument("--after", type=Path, default=ROOT, help="the checkout after it (default: this one)")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--turns", type=int, default=3000, help="turns of the large store (default 3000: ~110 MB)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    store, _ = build(args.turns)
    tree = ensure_file(ROOT / "bench-data", "tree", 200_000, 7, {}, lambda m: print(m, file=sys.stderr))
    for checkout in (args.before, args.after):
        python = checkout / ".venv" / "bin" / "python"
        subprocess.run([str(python), "-m", "compileall", "-q", str(checkout / "src")], check=True)
    pairs: list[dict[str, dict[str, float]]] = []
    for n in range(args.pairs):
        before = measure(args.before.resolve(), store, tree)
        after = measure(args.after.resolve(), store, tree)
        if before["losses"] != after["losses"]:
            raise SystemExit(f"the two checkouts list different losses: {before['losses']} vs {after['losses']}")
        pairs.append({"before": before, "after": after})
        print(f"pair {n + 1}: before {before}  after {after}", file=sys.stderr)
    keys = ("rescue_s", "project_s", "turns_per_s", "cpu_ms_per_turn")
    summary = {
        k: {
            "before": statistics.median(p["before"][k] for p in pairs),
            "after": statistics.median(p["after"][k] for p in pairs),
            "ratio": statistics.median(p["after"][k] / p["before"][k] for p in pairs),
        }
        for k in keys
    }
    if args.json:
        print(json.dumps({"pairs": pairs, "summary": summary}))
    else:
        print(f"{'measure':<18} {'before':>10} {'after':>10} {'after/before':>13}")
        for k, v in summary.items():
            print(f"{k:<18} {v['before']:>10.3f} {v['after']:>10.3f} {v['ratio']:>13.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
