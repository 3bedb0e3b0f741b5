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
time is the figure; the bar is 1 s. The CPU time of the verifying process is printed too:
on a machine shared with other work the wall time varies with the load, the CPU time much
less. Verification runs in one process (the library never forks). Exits 1 when the median
is over the bar or the chain does not verify.

Usage::

    .venv/bin/python benchmarks/audit_verify.py [--records 100000] [--runs 3] [--bar 1.0] [--json]
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
chain = AuditChain(sys.argv[1])
cpu_now = lambda: sum(os.times()[:4])  # user and system, of this process and its reaped children
c0 = cpu_now()
t0 = time.perf_counter()
result = chain.verify()
seconds = time.perf_counter() - t0
cpu = cpu_now() - c0
print(json.dumps({"seconds": seconds, "cpu": cpu, "ok": result.ok, "entries": result.entries}))
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


def time_verify(path: Path) -> dict[str, Any]:
    """Run ``verify()`` once in a fresh interpreter; its own timing, as JSON."""
    out = subprocess.run([sys.executable, "-c", TIMER, str(path)], check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=100_000, help="records in the chain (default 100000)")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes that time verify() (default 3)")
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
    runs = [time_verify(path) for _ in range(args.runs)]
    seconds = [r["seconds"] for r in runs]
    cpu = [r["cpu"] for r in runs]
    median = statistics.median(seconds)
    verified = all(r["ok"] and r["entries"] == args.records for r in runs)
    passed = verified and median <= args.bar
    result = {
        "records": args.records,
        "fileBytes": path.stat().st_size,
        "buildSeconds": round(build_s, 2),
        "verifySeconds": [round(s, 3) for s in seconds],
        "cpuSeconds": [round(s, 3) for s in cpu],
        "medianSeconds": round(median, 3),
        "recordsPerSecond": round(args.records / median),
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
        verdict = "PASS" if passed else "FAIL"
        state = "verifies" if verified else "DOES NOT VERIFY"
        rate = args.records / median
        print(f"{verdict}: median {median:.3f} s ({rate:,.0f} records/s), bar {args.bar} s; chain {state}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
