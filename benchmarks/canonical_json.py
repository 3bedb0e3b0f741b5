"""What the msgspec path of ``kurahi.js.jcs.canonical_json`` buys over the plain path (``rfc8785.dumps``).

Everything Kurahi hashes goes through ``canonical_json``: each audit record as it is
appended and again as it is verified (the memory and PostgreSQL backends verify every line
with ``LineChecker``, which hashes the record's canonical form), each continuity-manifest
entry, each catalog entry an activation package pins. This times both paths, in one
process, on payloads of those shapes, and checks that they give the same bytes:

- ``audit record``: 1,000 gateway records as ``benchmarks/audit_verify.py`` writes them (the
  record without ``hash``, as it is hashed; about 1 in 100 has a float, a few non-ASCII text);
- ``audit record with a float``: the same shape with a float in its details (the msgspec
  path with the float written by ``rfc8785`` as raw text);
- ``catalog entry``: the main session's entry of OpenClaw 2026.5.28's ``sessions.json``
  (``tests/data/openclaw/2026.5.28-reset``, 11 KB, the skills snapshot included);
- ``manifest entry``: 1,000 continuity-manifest bodies (``{"kind", "name", "value"}``);
- ``non-ASCII keys``: a catalog entry with one key in Māori, which takes the plain path
  either way (what the fallback costs).

Each figure is the median of ``--repeat`` timings of a loop over the payloads, per payload.
Then 100,000 audit records are hashed as ``LineChecker`` hashes them, once with each path
(the part of a memory or PostgreSQL chain's ``verify()`` that the path changes).

Usage::

    .venv/bin/python benchmarks/canonical_json.py [--repeat 7] [--records 100000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rfc8785

from kurahi.js.jcs import canonical_json
from kurahi.store.audit.record import AuditRecord, build_record

sys.path.insert(0, str(Path(__file__).resolve().parent))
from audit_verify import realistic_event  # the same records as the audit benchmark

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "tests/data/openclaw/2026.5.28-reset/state/agents/main/sessions/sessions.json"
TS = "2026-11-01T00:00:00.000Z"


def audit_bodies(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` realistic audit records without ``hash``: what is hashed when one is appended or verified."""
    rng = random.Random(seed)
    prev: AuditRecord | None = None
    out = []
    for i in range(count):
        actor, action, details = realistic_event(rng, i)
        prev = build_record(prev, actor, action, details, ts=TS)
        body = prev.to_dict()
        body.pop("hash")
        out.append(body)
    return out


def payloads() -> dict[str, list[Any]]:
    """The named payload sets, each a list of values."""
    audit = audit_bodies(1000)
    floated = [{**b, "details": {**b["details"], "durationS": 12.5 + i / 7}} for i, b in enumerate(audit[:200])]
    entry = next(iter(json.loads(CATALOG.read_text()).values()))
    rng = random.Random(3)
    kinds = ["identity", "memory", "role", "job", "session", "transcript"]
    manifest = [
        {
            "kind": rng.choice(kinds),
            "name": f"file-{i}.md",
            "value": {"sha256": f"{rng.getrandbits(256):064x}", "size": rng.randrange(100, 90_000)},
        }
        for i in range(1000)
    ]
    return {
        "audit record": audit,
        "audit record with a float": floated,
        "catalog entry": [entry],
        "manifest entry": manifest,
        "non-ASCII keys": [{**entry, "kōrero": "a key beyond ASCII"}],
    }


def per_call(fn: Callable[[Any], bytes], values: list[Any], repeat: int) -> float:
    """Median seconds per value of ``fn`` over ``values``."""
    number = max(1, 2000 // len(values))
    times = timeit.repeat(lambda: [fn(v) for v in values], number=number, repeat=repeat)
    return statistics.median(times) / number / len(values)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=7, help="timings of each loop (default 7)")
    ap.add_argument("--records", type=int, default=100_000, help="audit records hashed at the end (default 100000)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.records < 1:
        ap.error("--repeat and --records must be positive")

    rows = []
    for name, values in payloads().items():
        same = all(canonical_json(v) == rfc8785.dumps(v) for v in values)
        fast = per_call(canonical_json, values, args.repeat)
        plain = per_call(rfc8785.dumps, values, args.repeat)
        size = statistics.median(len(canonical_json(v)) for v in values)
        rows.append(
            {
                "payload": name,
                "count": len(values),
                "medianBytes": round(size),
                "msgspecMicroseconds": round(fast * 1e6, 2),
                "plainMicroseconds": round(plain * 1e6, 2),
                "speedup": round(plain / fast, 2),
                "sameBytes": same,
            }
        )

    bodies = audit_bodies(args.records)
    chain = {}
    for label, fn in (("msgspec", canonical_json), ("plain", rfc8785.dumps)):
        t0 = time.perf_counter()
        for body in bodies:
            fn(body)
        chain[label] = time.perf_counter() - t0
    result = {
        "payloads": rows,
        "chainRecords": args.records,
        "chainSeconds": {k: round(v, 3) for k, v in chain.items()},
        "chainSpeedup": round(chain["plain"] / chain["msgspec"], 2),
        "cpus": os.cpu_count(),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for r in rows:
            print(
                f"{r['payload']:<28} {r['count']:>5} x {r['medianBytes']:>6} B:"
                f" msgspec {r['msgspecMicroseconds']:8.2f} µs,"
                f" plain {r['plainMicroseconds']:8.2f} µs, {r['speedup']:5.2f}x"
                + ("" if r["sameBytes"] else "  DIFFERENT BYTES")
            )
        print(
            f"{args.records:,} audit records hashed: msgspec {chain['msgspec']:.3f} s, plain {chain['plain']:.3f} s"
            f" ({result['chainSpeedup']}x)"
        )
    return 0 if all(r["sameBytes"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
