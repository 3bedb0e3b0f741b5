"""``kurahi rescue --claude DIR --json`` over a projects folder of 2,000 sessions and about 1 GB (issue 39's bar).

The folder is generated in a temporary directory by :func:`kurahi.testing.claude_code.write_projects`
(working sessions: nine attachments a turn, 0-4 tool calls with mostly short and a few long
outputs, thinking and a reply; about 1 KB a row), with ``--damaged`` of them given a
``null-parent`` loss so that the listing has something to say. Bar: under 5 s and 300 MB, and
not one byte, size or modification time of the folder changed.

Each round is the console script as a user runs it, in a process of its own: wall time, and the
child's peak RSS from ``os.wait4`` (what ``/usr/bin/time -v`` reports). *Cold-ish*: before each
round every session file is flushed and dropped from the page cache with
``posix_fadvise(DONTNEED)`` (only these files; the machine's other caches are left alone), so
the run reads them from the disk again. A warm round (the files cached) is reported beside.

Usage::

    .venv/bin/python benchmarks/claude_rescue.py [--sessions 2000] [--megabytes 1024] [--rounds 3] [--json]
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

from kurahi.testing.claude_code import write_projects

KURAHI = [sys.executable, "-m", "kurahi.cli"]


def run(*args: str, env: dict[str, str]) -> tuple[float, float, float, int, str]:
    """Wall seconds, peak RSS in MB, CPU seconds, exit code and stdout of ``kurahi ARGS`` in a child process."""
    start = time.perf_counter()
    proc = subprocess.Popen([*KURAHI, *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - start, usage.ru_maxrss / 1024, cpu, proc.returncode, out


def fingerprint(root: Path) -> str:
    """Every name, its bytes, size and modification time."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        st = os.lstat(path)
        h.update(f"{path.relative_to(root)}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
        if path.is_file() and not path.is_symlink():
            h.update(path.read_bytes())
    return h.hexdigest()


def drop_cache(root: Path) -> None:
    """Flush each session file and drop its pages from the page cache (these files only)."""
    for path in root.rglob("*.jsonl"):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--megabytes", type=float, default=1024)
    parser.add_argument("--damaged", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kurahi-claude-bench-"))
    try:
        root = work / "claude"
        t0 = time.perf_counter()
        files, size = write_projects(root, sessions=args.sessions, megabytes=args.megabytes, damaged=args.damaged)
        built = time.perf_counter() - t0
        rows = sum(p.read_bytes().count(b"\n") for p in root.rglob("*.jsonl"))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "KURAHI_", "KOLO_"))}
        env["HOME"] = str(work / "home")  # nothing of the user's own is read
        before = fingerprint(root)
        drop_cache(root)  # the generator's writes reach the disk before the first timed round
        cold: list[tuple[float, float, float]] = []
        listed = -1
        for _ in range(args.rounds):
            drop_cache(root)
            wall, rss, cpu, code, out = run("rescue", "--claude", str(root), "--json", env=env)
            assert code == (1 if args.damaged else 0), f"exit {code}"
            listed = len(json.loads(out)["losses"])
            cold.append((wall, rss, cpu))
        warm_wall, warm_rss, warm_cpu, _, _ = run("rescue", "--claude", str(root), "--json", env=env)
        unchanged = fingerprint(root) == before
        result: dict[str, Any] = {
            "sessions": files,
            "bytes": size,
            "rows": rows,
            "buildSeconds": round(built, 1),
            "losses": listed,
            "coldSeconds": [round(w, 2) for w, _, _ in cold],
            "coldMedianSeconds": round(statistics.median(w for w, _, _ in cold), 2),
            "coldCpuSeconds": [round(c, 2) for _, _, c in cold],
            "peakRssMb": round(max(r for _, r, _ in cold), 1),
            "warmSeconds": round(warm_wall, 2),
            "warmCpuSeconds": round(warm_cpu, 2),
            "warmRssMb": round(warm_rss, 1),
            "unchanged": unchanged,
            "loadAverage": [round(x, 1) for x in os.getloadavg()],
            "bar": {"seconds": 5, "rssMb": 300},
        }
        result["meetsBar"] = unchanged and result["coldMedianSeconds"] < 5 and result["peakRssMb"] < 300
        if args.json:
            print(json.dumps(result))
        else:
            print(
                f"{files} sessions, {size / 1e6:,.0f} MB, {rows:,} rows (built in {built:.0f} s); "
                f"{listed} loss(es) listed\n"
                f"cold-ish: {', '.join(f'{w:.2f} s' for w, _, _ in cold)} (median {result['coldMedianSeconds']} s; "
                f"CPU {', '.join(f'{c:.2f}' for _, _, c in cold)} s), peak RSS {result['peakRssMb']} MB; "
                f"warm: {warm_wall:.2f} s ({warm_cpu:.2f} s CPU), {warm_rss:.0f} MB\n"
                f"not one byte or mtime changed: {unchanged}; load average {result['loadAverage']}\n"
                f"bar (< 5 s, < 300 MB, unchanged): {'met' if result['meetsBar'] else 'NOT met'}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
