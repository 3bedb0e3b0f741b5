"""``kurahi rescue`` on a large OpenClaw 2026.9 store: listing, apply, and the idle cost of ``watch``.

Issue 28's bars, on the store ``benchmarks/activation_sqlite.py`` builds (the 2026.9.6 sample's
main session continued to ``--turns`` turns, ~110 MB at 3,000): ``kurahi rescue`` under 2 s and
300 MB; ``rescue apply`` of its session under 6 s; not one byte of the state dir changed before
apply; ``rescue watch`` idle under 1% of one core.

Each figure is the console script as a user runs it, in a process of its own, on a fresh copy
of the cached store: wall time and peak RSS from ``/usr/bin/time``-like accounting
(``os.wait4``'s usage of the child), the median of ``--rounds``. The watch runs for
``--watch-seconds`` after its first read, its CPU time taken from ``/proc/<pid>/stat``.

Usage::

    .venv/bin/python benchmarks/rescue.py [--turns 3000] [--rounds 3] [--watch-seconds 60] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from activation_sqlite import build

KURAHI = [sys.executable, "-m", "kurahi.cli"]


def run(*args: str) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS in MB, exit code and stdout of ``kurahi ARGS`` in a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen([*KURAHI, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak, not the largest child's so far
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, proc.returncode, out


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(str(path.relative_to(root)).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def watch_idle(state: Path, seconds: float) -> dict[str, float]:
    """CPU seconds a watch spends polling an unchanged store every second, after its first read."""
    proc = subprocess.Popen(
        [*KURAHI, "rescue", "watch", "--openclaw", str(state), "--interval", "1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        proc.stderr.readline()  # "watching ...": the first read is done
        start_cpu, start = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(seconds)  # the idle period being measured, not a synchronisation
        used, elapsed = cpu_seconds(proc.pid) - start_cpu, time.monotonic() - start
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"cpuSeconds": round(used, 3), "seconds": round(elapsed, 1), "coreShare": round(used / elapsed, 5)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--turns", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--watch-seconds", type=float, default=60.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cached, _ = build(args.turns)
    size = sum(p.stat().st_size for p in cached.rglob("*") if p.is_file()) / 1e6
    lists, applies, unchanged = [], [], []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="kurahi-bench-rescue-") as tmp:
            state = Path(tmp) / "state"
            shutil.copytree(cached, state)
            before = tree_hash(state)
            wall, mb, code, out = run("rescue", "--openclaw", str(state), "--json")
            assert code == 1, out
            lists.append((wall, mb))
            loss = json.loads(out)["losses"][0]["id"]
            unchanged.append(tree_hash(state) == before)
            wall, mb, code, out = run("rescue", "apply", loss, "--openclaw", str(state), "--yes", "--out", f"{tmp}/pkg")
            assert code == 0, out
            applies.append((wall, mb))
    with tempfile.TemporaryDirectory(prefix="kurahi-bench-watch-") as tmp:
        state = Path(tmp) / "state"
        shutil.copytree(cached, state)
        idle = watch_idle(state, args.watch_seconds)
    result: dict[str, Any] = {
        "storeMB": round(size, 1),
        "turns": args.turns,
        "rescueSeconds": round(statistics.median(w for w, _ in lists), 2),
        "rescuePeakMB": round(max(m for _, m in lists), 1),
        "applySeconds": round(statistics.median(w for w, _ in applies), 2),
        "applyPeakMB": round(max(m for _, m in applies), 1),
        "unchangedBeforeApply": all(unchanged),
        "watchIdle": idle,
        "loadAverage": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:22} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
