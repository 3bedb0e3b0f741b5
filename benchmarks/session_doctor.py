"""``kurahi session doctor`` on the 200,000-entry tree, against ``kurahi session context --json``.

Two files, generated once with :mod:`kurahi.testing.sessions` and cached under ``bench-data/``:
the open + project benchmark's tree (``tree-e200000-s7-ks1.jsonl``: 200,000 entries with
branches and compactions), and :mod:`context_json`'s linear path without compaction (every
entry is in the context: the doctor converts and checks every message, its worst case).
Each round runs, as fresh processes, stdout to a file:

* **doctor**: ``kurahi session doctor FILE --json`` (projection, conversion for three
  provider families, their rules, file health);
* **context**: ``kurahi session context FILE --json``;
* **pi-1.6.0**: Pi opening the file and building its context (``pi_peer.mjs context
  --no-copy``), for scale.

Medians over ``--rounds``, the order rotating each round. Checks that no program changed a
file. The doctor does find things in both (exit 1, counted in the output): the generator writes
thinking signatures that are not JSON for an OpenAI Responses model, which Pi's Responses
conversion cannot parse, and the linear file's 89 MB of messages are over Anthropic's 32 MB
request limit. The check's own tests hold the "no false alarm" bar.

Bar: the doctor within 3x of ``session context --json``.

Usage::

    .venv/bin/python benchmarks/session_doctor.py [--entries 200000] [--rounds 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _pi

from kurahi.testing.sessions import write_session

ROOT = Path(__file__).resolve().parents[1]
KURAHI = Path(sys.executable).with_name("kurahi")


def _run(argv: list[str], env: dict[str, str], stdin: str | None, out: Path) -> tuple[float, int]:
    with open(out, "wb") as f:
        t0 = time.perf_counter()
        proc = subprocess.run(argv, input=None if stdin is None else stdin.encode(), stdout=f, env=env, check=False)
        return time.perf_counter() - t0, proc.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entries", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--data-dir", type=Path, default=ROOT / "bench-data")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = ap.parse_args(argv)

    _pi.check("1.6.0")
    a.data_dir.mkdir(exist_ok=True)
    tree = a.data_dir / f"tree-e{a.entries}-s7-ks1.jsonl"
    if not tree.exists():
        print(f"generating {tree.name} ...", file=sys.stderr)
        write_session(tree, entries=a.entries, seed=7)
    linear = a.data_dir / f"context-linear-{a.entries}-s8-nocompaction-ks1.jsonl"
    if not linear.exists():
        print(f"generating {linear.name} ...", file=sys.stderr)
        write_session(linear, entries=a.entries, seed=8, branch=0, compact_every=0)
    results = [_bench(tree, a.rounds, expect_clean=False), _bench(linear, a.rounds, expect_clean=False)]
    if a.json:
        print(json.dumps(results, indent=2))
    else:
        for result in results:
            print(
                f"{result['file']}: {result['bytes'] / 1e6:.0f} MB, {result['messages']} messages in the context, "
                f"{result['findings']} finding(s)"
            )
            for n, med in result["median_s"].items():
                print(f"  {n:10} median {med:.2f} s   ({', '.join(f'{t:.2f}' for t in result['samples_s'][n])})")
            print(f"  doctor / context --json: {result['doctor_over_context']:.2f}x (bar: within 3x)")
    problems = [p for r in results for p in r["problems"]]
    for p in problems:
        print(f"!!! {p}", file=sys.stderr)
    return 1 if problems else 0


def _bench(data: Path, rounds: int, *, expect_clean: bool) -> dict[str, Any]:
    before = data.stat().st_mtime_ns, data.stat().st_size
    env = dict(os.environ)
    commands: dict[str, tuple[list[str], dict[str, str], str | None]] = {
        "doctor": ([str(KURAHI), "session", "doctor", str(data), "--json"], env, None),
        "context": ([str(KURAHI), "session", "context", str(data), "--json"], env, None),
        "pi-1.6.0": (
            [_pi.node(), str(_pi.PI_PEER), "context", "--no-copy"],
            {**env, "PI_PKG": str(_pi.package_dir("1.6.0"))},
            str(data),
        ),
    }
    names = list(commands)
    times: dict[str, list[float]] = {n: [] for n in names}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kurahi-bench-") as tmp:
        outs = {n: Path(tmp) / f"{n}.out" for n in names}
        for r in range(rounds):
            for n in names[r % len(names) :] + names[: r % len(names)]:
                cmd, cmd_env, stdin = commands[n]
                elapsed, code = _run(cmd, cmd_env, stdin, outs[n])
                if code != 0 and not (n == "doctor" and code == 1 and not expect_clean):
                    problems.append(f"{n} exited {code}")
                times[n].append(elapsed)
            print(f"round {r + 1}: " + "  ".join(f"{n} {times[n][-1]:.2f}s" for n in names), file=sys.stderr)
        report = json.loads(outs["doctor"].read_bytes())
        if expect_clean and report["findings"]:
            problems.append(f"the doctor found {len(report['findings'])} finding(s) on a valid file")
        messages = len(json.loads(outs["context"].read_bytes())["messages"])
    if (data.stat().st_mtime_ns, data.stat().st_size) != before:
        problems.append(f"{data} changed during the run")
    med = {n: statistics.median(v) for n, v in times.items()}
    return {
        "file": data.name,
        "bytes": data.stat().st_size,
        "messages": messages,
        "findings": len(report["findings"]),
        "rounds": rounds,
        "median_s": med,
        "samples_s": times,
        "doctor_over_context": med["doctor"] / med["context"],
        "problems": problems,
    }


if __name__ == "__main__":
    raise SystemExit(main())
