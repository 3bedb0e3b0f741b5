"""Append rate of Kurahi's ``Session`` against a raw ``write`` + ``fdatasync`` loop, same disk.

Four loops, each on a fresh file in a temporary directory under ``bench-data/`` (so on
the disk the repository lives on), each appending ``--count`` lines:

a. raw: ``os.write`` of a ~600-byte line on an ``O_APPEND`` descriptor, then ``os.fdatasync``;
b. Kurahi ``Session`` with fsync policy ``always`` appending realistic messages
   (user and assistant turns whose entry lines average about 600 bytes);
c. policy ``turn``, ``sync()`` after every 10 appends;
d. policy ``never``.

The four loops run in turn ``--trials`` times (interleaved, so drift in the disk's
speed hits all of them alike) and the median rate of each is reported, with the bar
ratio (b)/(a) (the issue asks for at least 0.5).

Usage::

    .venv/bin/python benchmarks/append_rate.py [--count 2000] [--trials 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kurahi.store.session import Session

ROOT = Path(__file__).resolve().parents[1]
RAW_LINE_BYTES = 600
TURN_EVERY = 10
WORDS = (
    *("alpha", "beta", "gamma", "delta", "checklist", "meeting", "notes", "todo", "file", "write", "read"),
    *("harmony", "session", "lineage", "compaction", "summary", "branch", "marker", "restart", "resume"),
    *("tool", "result", "action", "item"),
)


def realistic_messages(n: int, seed: int = 1) -> list[dict[str, Any]]:
    """``n`` messages alternating user / assistant, entry lines of ~600 bytes on average."""
    rng = random.Random(seed)
    ts = 1_791_360_000_000

    def text(words: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(words))

    out: list[dict[str, Any]] = []
    for i in range(n):
        ts += 7000
        if i % 2 == 0:
            out.append(
                {"role": "user", "content": [{"type": "text", "text": text(rng.randint(44, 74))}], "timestamp": ts}
            )
        else:
            out.append(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": text(rng.randint(20, 45))}],
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": {
                        "input": rng.randint(100, 5000),
                        "output": rng.randint(10, 900),
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "totalTokens": 0,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                    },
                    "stopReason": "stop",
                    "timestamp": ts,
                }
            )
    return out


def raw_loop(path: Path, count: int) -> float:
    """(a) Seconds for ``count`` × (write of one line + fdatasync) on an O_APPEND fd."""
    line = (b"x" * (RAW_LINE_BYTES - 1)) + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        t0 = time.perf_counter()
        for _ in range(count):
            os.write(fd, line)
            os.fdatasync(fd)
        return time.perf_counter() - t0
    finally:
        os.close(fd)


def session_loop(path: Path, messages: list[dict[str, Any]], policy: str) -> float:
    """(b, c, d) Seconds for appending ``messages`` through a Kurahi ``Session``."""
    s = Session.create(path, cwd="/home/bench", fsync=policy)
    try:
        append = s.append_message
        t0 = time.perf_counter()
        if policy == "turn":
            for i, m in enumerate(messages, 1):
                append(m)
                if i % TURN_EVERY == 0:
                    s.sync()
            s.sync()
        else:
            for m in messages:
                append(m)
        return time.perf_counter() - t0
    finally:
        s.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=2000, help="appends per loop (default 2000)")
    ap.add_argument("--trials", type=int, default=5, help="rounds of the four loops; medians reported (default 5)")
    ap.add_argument("--dir", type=Path, default=ROOT / "bench-data", help="where the temporary directory goes")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    if args.count < 1 or args.trials < 1:
        ap.error("--count and --trials must be positive")

    args.dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="append-rate-", dir=args.dir))
    messages = realistic_messages(args.count)
    loops = ("raw", "always", "turn", "never")
    seconds: dict[str, list[float]] = {k: [] for k in loops}
    line_bytes = 0.0
    try:
        for trial in range(args.trials):
            for kind in loops:
                path = work / f"{kind}-{trial}.jsonl"
                if kind == "raw":
                    seconds[kind].append(raw_loop(path, args.count))
                else:
                    seconds[kind].append(session_loop(path, messages, kind))
                    if kind == "always" and not line_bytes:
                        lines = path.read_bytes().splitlines()[1:]  # without the header
                        line_bytes = sum(len(ln) + 1 for ln in lines) / len(lines)
                path.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rates = {k: [args.count / s for s in v] for k, v in seconds.items()}
    med = {k: statistics.median(v) for k, v in rates.items()}
    ratio = med["always"] / med["raw"]
    result = {
        "count": args.count,
        "trials": args.trials,
        "dir": str(args.dir),
        "raw_line_bytes": RAW_LINE_BYTES,
        "kurahi_mean_line_bytes": round(line_bytes, 1),
        "appends_per_s": {k: round(v, 1) for k, v in med.items()},
        "samples_appends_per_s": {k: [round(x, 1) for x in v] for k, v in rates.items()},
        "ratio_always_vs_raw": round(ratio, 3),
        "bar_ok": ratio >= 0.5,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0

    from rich.console import Console
    from rich.table import Table

    console = Console() if sys.stdout.isatty() else Console(width=120)
    table = Table(title=f"Appends per second ({args.count} appends × {args.trials} trials, medians)")
    for col in ("loop", "appends/s", "vs raw", "samples"):
        table.add_column(col, justify="left" if col == "loop" else "right")
    names = {
        "raw": f"(a) raw os.write + fdatasync, {RAW_LINE_BYTES} B",
        "always": f"(b) Session fsync=always, ~{line_bytes:.0f} B",
        "turn": f"(c) Session fsync=turn (sync every {TURN_EVERY})",
        "never": "(d) Session fsync=never",
    }
    for k in loops:
        table.add_row(names[k], f"{med[k]:,.0f}", f"{med[k] / med['raw']:.2f}", " ".join(f"{x:,.0f}" for x in rates[k]))
    console.print(table)
    mark = "[green]PASS[/]" if ratio >= 0.5 else "[red]FAIL[/]"
    console.print(f"{mark} fsync=always reaches {ratio:.2f} of the raw write + fdatasync rate (bar: ≥ 0.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
