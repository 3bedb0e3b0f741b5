"""Time ``AuditChain.verify()`` on a realistic 100,000-record chain, in a fresh process.

The chain is built in ``bench-data/audit-verify/chain.jsonl`` (git-ignored) from the same
code the appender uses (``build_record`` and ``AuditRecord.to_line``), written in bulk
rather than one ``fdatasync`` per record, then finished with a few real ``append()`` calls
(so the file ends exactly as a live one does). Its records look like a gateway's: starts
and stops, config applies with hashes, device pairings with redacted tokens, session
resets, job state changes with session keys; about 1 in 100 has a float in its details
(which takes the general RFC 8785 path), and some carry non-ASCII text.

``verify()`` is then timed in ``--runs`` fresh Python processes (the file is in the page
cache, as it is for a running gateway; the import of Kurahi is not timed). The median wall
time is the figure; the bar is 1 s. Alternating with it, the same number of processes time
the plain path on the same file: every line through ``LineChecker`` (the rules themselves,
which is how the memory and PostgreSQL backends verify), read with the same ``iter_lines``.
What the quick path (``kurahi.store.audit.quick_verify``) buys is the ratio of the medians;
each process's whole wall time (start-up and import included) is printed too, and the CPU
time of the verifying: on a machine shared with other work the wall time varies with the
load, the CPU time much less. Verification runs in one process (the library never forks).
Exits 1 when the median is over the bar or the chain does not verify.

Usage::

    .venv/bin/python benchmarks/audit_verify.py [--records 100000] [--runs 5] [--bar 1.0] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kurahi.store.audit.log_file import AuditChain
from kurahi.store.audit.record import AuditRecord, build_record, format_ts

ROOT = Path(__file__).resolve().parents[1]
TAIL_APPENDS = 5

TIMER = """
import json, os, sys, time
from kurahi.store.audit.log_file import AuditChain
from kurahi.store.audit.quick_verify import iter_lines
from kurahi.store.audit.record import LineChecker


def plain(path):
    # The rules alone, line by line: what LineAuditLog (memory, PostgreSQL) does with its lines.
    fd = os.open(path, os.O_RDONLY)
    try:
        checker = LineChecker()
        for number, line in enumerate(iter_lines(fd, 0, os.fstat(fd).st_size), 1):
            if not checker.feed(line, number):
                break
        return checker.reason is None, checker.entries
    finally:
        os.close(fd)


cpu_now = lambda: sum(os.times()[:4])  # user and system, of this process and its reaped children
c0 = cpu_now()
t0 = time.perf_counter()
if sys.argv[2] == "quick":
    result = AuditChain(sys.argv[1]).verify()
    ok, entries = result.ok, result.entries
else:
    ok, entries = plain(sys.argv[1])
seconds = time.perf_counter() - t0
cpu = cpu_now() - c0
print(json.dumps({"seconds": seconds, "cpu": cpu, "ok": ok, "entries": entries}))
"""


def realistic_event(rng: random.Random, i: int) -> tuple[str, str, dict[str, Any]]:
    """One (actor, action, details) as a gateway would record it."""
    device = f"device:{rng.choice(['phone', 'laptop', 'watch', 'tablet'])}-{rng.randrange(16):x}"
    key = f"agent:{rng.choice(['main', 'ops', 'writer'])}:{rng.choice(['main', 'telegram:4411', 'cron'])}"
    roll = rng.random()
    if roll < 0.02:
        return "gateway", "gateway.start", {"pid": rng.randrange(1000, 99999), "port": 8787, "version": "0.1.0"}
    if roll < 0.05:
        return (
            "owner",
            "config.apply",
            {"hash": f"{rng.getrandbits(256):064x}", "changed": ["model", "tools.policy"], "dryRun": False},
        )
    if roll < 0.08:
        return "owner", "device.pair", {"device": device, "scopes": ["chat", "read"], "pairingToken": "secret-x"}
    if roll < 0.09:
        return "owner", "device.revoke", {"device": device, "reason": "lost phone — révoqué"}
    if roll < 0.20:
        return "cli", "session.reset", {"sessionKey": key, "sessionId": f"{rng.getrandbits(128):032x}"}
    if roll < 0.21:
        return device, "job.done", {"jobId": f"job-{i}", "durationS": round(rng.uniform(0.1, 90.0), 3)}
    return (
        device,
        "job.running",
        {"jobId": f"job-{i}", "sessionKey": key, "attempt": rng.randint(1, 3), "note": "résumé of the day's notes"},
    )


def build_chain(path: Path, records: int, seed: int = 7) -> None:
    """Write ``records`` records to a new chain at ``path``, the last few through ``append()``."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    for stale in path.parent.glob(path.name + "*"):
        stale.unlink()
    when = datetime(2026, 11, 1, tzinfo=UTC)
    prev: AuditRecord | None = None
    bulk = max(records - TAIL_APPENDS, 0)
    with open(path, "wb", buffering=1 << 20) as fh:
        os.fchmod(fh.fileno(), 0o600)
        for i in range(bulk):
            when += timedelta(milliseconds=rng.randint(5, 60_000))
            actor, action, details = realistic_event(rng, i)
            prev = build_record(prev, actor, action, details, ts=format_ts(when))
            fh.write(prev.to_line())
    chain = AuditChain(path)
    for i in range(bulk, records):
        actor, action, details = realistic_event(rng, i)
        chain.append(actor, action, details)


def time_verify(path: Path, way: str = "quick") -> dict[str, Any]:
    """Verify once in a fresh interpreter, ``way`` ``quick`` (``verify()``) or ``plain``; its timing, as JSON."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", TIMER, str(path), way], check=True, capture_output=True, text=True)
    process = time.perf_counter() - t0
    result: dict[str, Any] = json.loads(out.stdout)
    result["process"] = process
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000, help="records in the chain (default 100000)")
    ap.add_argument("--runs", type=int, default=5, help="fresh processes for each way (default 5)")
    ap.add_argument("--bar", type=float, default=1.0, help="most seconds the median may take (default 1.0)")
    ap.add_argument("--dir", type=Path, default=ROOT / "bench-data", help="where the chain is built")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    if args.records < 1 or args.runs < 1:
        ap.error("--records and --runs must be positive")

    path = args.dir / "audit-verify" / "chain.jsonl"
    t0 = time.perf_counter()
    build_chain(path, args.records)
    build_s = time.perf_counter() - t0
    runs: list[dict[str, Any]] = []
    plains: list[dict[str, Any]] = []
    for _ in range(args.runs):  # alternating, so both ways see the same load
        runs.append(time_verify(path, "quick"))
        plains.append(time_verify(path, "plain"))
    seconds = [r["seconds"] for r in runs]
    cpu = [r["cpu"] for r in runs]
    median = statistics.median(seconds)
    plain_median = statistics.median(r["seconds"] for r in plains)
    process_median = statistics.median(r["process"] for r in runs)
    plain_process_median = statistics.median(r["process"] for r in plains)
    cpu_median = statistics.median(cpu)
    plain_cpu_median = statistics.median(r["cpu"] for r in plains)
    verified = all(r["ok"] and r["entries"] == args.records for r in runs + plains)
    passed = verified and median <= args.bar
    result = {
        "records": args.records,
        "fileBytes": path.stat().st_size,
        "buildSeconds": round(build_s, 2),
        "verifySeconds": [round(s, 3) for s in seconds],
        "cpuSeconds": [round(s, 3) for s in cpu],
        "medianSeconds": round(median, 3),
        "recordsPerSecond": round(args.records / median),
        "processMedianSeconds": round(process_median, 3),
        "plain": {
            "verifySeconds": [round(r["seconds"], 3) for r in plains],
            "cpuSeconds": [round(r["cpu"], 3) for r in plains],
            "medianSeconds": round(plain_median, 3),
            "processMedianSeconds": round(plain_process_median, 3),
        },
        "speedup": round(plain_median / median, 2),
        "processSpeedup": round(plain_process_median / process_median, 2),
        "cpuSpeedup": round(plain_cpu_median / cpu_median, 2),
        "verified": verified,
        "bar": args.bar,
        "pass": passed,
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        mb = result["fileBytes"] / 1e6
        print(f"chain: {args.records:,} records, {mb:.1f} MB, built in {build_s:.1f} s ({path})")
        print(f"verify(), {args.runs} fresh processes: " + ", ".join(f"{s:.3f} s" for s in seconds))
        print("  CPU time: " + ", ".join(f"{s:.3f} s" for s in cpu))
        print("plain path (LineChecker), same run: " + ", ".join(f"{r['seconds']:.3f} s" for r in plains))
        print("  CPU time: " + ", ".join(f"{r['cpu']:.3f} s" for r in plains))
        print(
            f"quick path {result['speedup']}x the plain path (medians {median:.3f} s / {plain_median:.3f} s); "
            f"whole processes {process_median:.3f} s / {plain_process_median:.3f} s ({result['processSpeedup']}x); "
            f"CPU {cpu_median:.3f} s / {plain_cpu_median:.3f} s ({result['cpuSpeedup']}x)"
        )
        verdict = "PASS" if passed else "FAIL"
        state = "verifies" if verified else "DOES NOT VERIFY"
        rate = args.records / median
        print(f"{verdict}: median {median:.3f} s ({rate:,.0f} records/s), bar {args.bar} s; chain {state}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
