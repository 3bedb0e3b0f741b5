"""Append throughput and projection latency: the PostgreSQL backend against the file backend, same run.

For each backend (files in a temporary directory under ``bench-data/``, on the repository's
disk; a PostgreSQL database), through the backend interface as the runtime uses it:

a. append ``--count`` realistic messages (~600-byte lines) through ``Session.create_in`` with
   fsync policy ``always`` (each entry durable before the append returns: one commit per
   entry on the database);
b. the same with policy ``turn`` (``sync()`` every 10 appends: the database commits each
   entry without waiting for its WAL flush, and the sync is one durable commit);
c. open + project a 10,000-entry session: ``Session.open_in`` (the writer's claim, a lease on
   the database), read it, build the context of its leaf, close; ``--trials`` times, median.

Loops alternate between the backends trial by trial, so drift in the machine's speed hits
both alike. The database is ``--store URL`` (password from ``PGPASSWORD`` or ``~/.pgpass``)
or ``KURAHI_BENCH_STORE``; without either, a throwaway server from :mod:`kurahi.testing.postgres`
(whose ``fsync`` is off: say so when quoting its figures).

Usage::

    .venv/bin/python benchmarks/store_backends.py [--store URL] [--count 2000] [--trials 5] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from append_rate import realistic_messages

from kurahi.context.project import build_context
from kurahi.store.base import Backend, TranscriptStore
from kurahi.store.file_backend import FileBackend
from kurahi.store.postgres import PostgresBackend
from kurahi.store.session import Session

ROOT = Path(__file__).resolve().parents[1]
TURN_EVERY = 10
BIG = 10_000


def append_loop(ts: TranscriptStore, name: str, messages: list[dict[str, Any]], policy: str) -> float:
    """Seconds to append ``messages`` through a Session on ``ts`` with fsync ``policy``."""
    s = Session.create_in(ts, name, cwd="/home/bench", fsync=policy)
    try:
        t0 = time.perf_counter()
        for i, m in enumerate(messages, 1):
            s.append_message(m)
            if policy == "turn" and i % TURN_EVERY == 0:
                s.sync()
        s.sync()
        return time.perf_counter() - t0
    finally:
        s.close()


def open_project(ts: TranscriptStore, name: str) -> tuple[float, int]:
    """Seconds to open the session as its writer, read it and project its leaf; the message count."""
    t0 = time.perf_counter()
    with Session.open_in(ts, name) as s, s.transcript() as t:
        ctx = build_context(t.path(), t.leaf_id)
    return time.perf_counter() - t0, len(ctx.messages)


@contextlib.contextmanager
def database(url: str | None) -> Iterator[tuple[str, str]]:
    """A database URL and what to call it in the report."""
    if url:
        yield url, "given"
        return
    from kurahi.testing.postgres import ThrowawayPostgres

    with ThrowawayPostgres() as pg:
        yield pg.create_database("bench"), "throwaway (fsync off)"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", default=os.environ.get("KURAHI_BENCH_STORE"), help="postgres:// URL of the database")
    ap.add_argument("--count", type=int, default=2000, help="appends per loop (default 2000)")
    ap.add_argument("--trials", type=int, default=5, help="rounds; medians reported (default 5)")
    ap.add_argument("--dir", type=Path, default=ROOT / "bench-data", help="where the file backend's home goes")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)
    if args.count < 1 or args.trials < 1:
        ap.error("--count and --trials must be positive")
    args.dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="store-backends-", dir=args.dir))
    messages = realistic_messages(args.count)
    big = realistic_messages(BIG, seed=2)
    rates: dict[str, dict[str, list[float]]] = {}
    opens: dict[str, list[float]] = {}
    try:
        with database(args.store) as (url, db_kind):
            backends: dict[str, Backend] = {
                "file": FileBackend(work / "home"),
                "postgres": PostgresBackend(url, home=work / "home"),
            }
            try:
                stores = {k: b.agent("bench", create=True).transcripts for k, b in backends.items()}
                for k, ts in stores.items():
                    append_loop(ts, "big.jsonl", big, "never")
                    rates[k] = {"always": [], "turn": []}
                    opens[k] = []
                for trial in range(args.trials):
                    for k, ts in stores.items():
                        for policy in ("always", "turn"):
                            secs = append_loop(ts, f"{policy}-{trial}.jsonl", messages, policy)
                            rates[k][policy].append(args.count / secs)
                        secs, count = open_project(ts, "big.jsonl")
                        assert count == BIG, count
                        opens[k].append(secs)
                where = backends["postgres"].describe()
            finally:
                for b in backends.values():
                    b.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    med = {k: {p: statistics.median(v) for p, v in r.items()} for k, r in rates.items()}
    open_med = {k: statistics.median(v) for k, v in opens.items()}
    result = {
        "count": args.count,
        "trials": args.trials,
        "database": where,
        "database_kind": db_kind,
        "appends_per_s": {k: {p: round(v, 1) for p, v in r.items()} for k, r in med.items()},
        "open_project_10k_s": {k: round(v, 4) for k, v in open_med.items()},
        "samples": {"appends_per_s": rates, "open_project_10k_s": opens},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"database: {where} ({db_kind}); {args.count} appends x {args.trials} trials, medians")
    print(f"{'':34}{'file':>12}{'postgres':>12}{'pg/file':>10}")
    for p, label in (("always", "appends/s, fsync always"), ("turn", f"appends/s, fsync turn (sync/{TURN_EVERY})")):
        f, g = med["file"][p], med["postgres"][p]
        print(f"{label:34}{f:12,.0f}{g:12,.0f}{g / f:10.2f}")
    f, g = open_med["file"], open_med["postgres"]
    print(f"{'open + project 10k entries, ms':34}{f * 1000:12.1f}{g * 1000:12.1f}{g / f:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
