"""Time `make check` part by part and hold the fast tier to the rule in ``tests/support/tiers.py``.

Runs what `make check` runs, each part timed on the wall clock: ``ruff check``, ``ruff format
--check``, ``mypy`` (warm, with the cache a developer has; ``--cold`` removes ``.mypy_cache``
first) and the fast tier (``pytest -m "not slow"`` with the Makefile's ``FAST_IGNORE`` and the
hypothesis profile ``dev``), the last with a JUnit report for each test's time (setup, call
and teardown; a module-scoped fixture is charged to the first test that uses it). Then:

- the wall time of each part and of all (bar: 90 s), with the load average before and after,
  since other work on a shared machine stretches every wall time, and the CPU time of each
  (user + system, with every child process), which other work stretches far less;
- the fast tier's share of the suite, tests and modules, per area (the folder under tests/);
- every fast-tier test case over ``--case-budget`` seconds (default 1) and every test over
  ``--test-budget`` (default 3) for all its cases: each belongs in ``tests/support/tiers.py`` (the rule
  written there), or should be made cheaper; and the costliest modules, for reference.

Exits 1 when the total is over the bar or a test is over its budget. A timing is
no verdict inside the test suite (a loaded machine would fail it), so this rule is checked
here, by hand, as the other speed bars are. The rule that needs no clock (no peer in the
fast tier) is checked in every run: ``tiers.no_peer_in_the_fast_tier``.

Usage::

    .venv/bin/python benchmarks/fast_tier.py [--cold] [--json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BAR_SECONDS = 90.0


def fast_ignore() -> list[str]:
    """The Makefile's FAST_IGNORE, so the folders left out are named in one place."""
    for line in (ROOT / "Makefile").read_text().splitlines():
        if line.startswith("FAST_IGNORE"):
            return shlex.split(line.split(":=", 1)[1])
    raise SystemExit("Makefile: no FAST_IGNORE line")


def timed(name: str, cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the command and its children) of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"{name} failed (exit {done.returncode}): make check would stop here")
    return seconds, cpu


def collected(*args: str) -> list[str]:
    """Node ids pytest collects with ``args`` (no test runs)."""
    out = subprocess.run(
        [str(BIN / "pytest"), "--collect-only", "-q", "-p", "no:randomly", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [line for line in out.splitlines() if "::" in line]


def module_of(classname: str) -> str:
    """``tests.store.test_x.TestY`` -> ``tests/store/test_x.py``."""
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        candidate = "/".join(parts[:i]) + ".py"
        if (ROOT / candidate).is_file():
            return candidate
    return classname


def area(module: str) -> str:
    inner = module.removeprefix("tests/")
    return inner.split("/", 1)[0] if "/" in inner else "(top level)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cold", action="store_true", help="remove .mypy_cache first (a fresh clone's first run)")
    ap.add_argument("--case-budget", type=float, default=1.0, help="seconds one case of a fast-tier test may take")
    ap.add_argument("--test-budget", type=float, default=3.0, help="seconds a fast-tier test may take, all cases")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()

    ignore = fast_ignore()
    load_before = os.getloadavg()
    if args.cold:
        shutil.rmtree(ROOT / ".mypy_cache", ignore_errors=True)
    parts: dict[str, tuple[float, float]] = {}
    parts["ruff check"] = timed("ruff check", [str(BIN / "ruff"), "check", "src", "tests", "benchmarks"])
    parts["ruff format"] = timed("ruff format", [str(BIN / "ruff"), "format", "--check", "src", "tests", "benchmarks"])
    parts["mypy"] = timed("mypy", [str(BIN / "mypy")])
    with tempfile.TemporaryDirectory(prefix="kurahi-fast-tier-") as scratch:
        report = Path(scratch) / "junit.xml"
        env = {**os.environ, "KURAHI_HYPOTHESIS_PROFILE": "dev"}
        pytest = [str(BIN / "pytest"), "-q", "-m", "not slow", *ignore, f"--junitxml={report}"]
        parts["pytest (fast tier)"] = timed("pytest", pytest, env)
        cases = ET.parse(report).getroot().iter("testcase")
        times = [(module_of(c.get("classname", "")), c.get("name", ""), float(c.get("time", 0))) for c in cases]
    load_after = os.getloadavg()
    total = sum(wall for wall, _ in parts.values())
    total_cpu = sum(cpu for _, cpu in parts.values())

    everything = collected()
    fast = set(collected("-m", "not slow", *ignore))
    tests_all = collections.Counter(area(n.split("::")[0]) for n in everything)
    tests_fast = collections.Counter(area(n.split("::")[0]) for n in everything if n in fast)
    modules_all: dict[str, set[str]] = collections.defaultdict(set)
    modules_fast: dict[str, set[str]] = collections.defaultdict(set)
    for n in everything:
        module = n.split("::")[0]
        modules_all[area(module)].add(module)
        if n in fast:
            modules_fast[area(module)].add(module)

    per_module: collections.Counter[str] = collections.Counter()
    per_test: collections.Counter[str] = collections.Counter()
    for module, name, seconds in times:
        per_module[module] += seconds
        per_test[f"{module}::{name.split('[', 1)[0]}"] += seconds
    slow_cases = sorted(((s, f"{m}::{n}") for m, n, s in times if s > args.case_budget), reverse=True)
    slow_tests = sorted(((s, t) for t, s in per_test.items() if s > args.test_budget), reverse=True)
    over = total > BAR_SECONDS or bool(slow_cases) or bool(slow_tests)

    figures: dict[str, Any] = {
        "seconds": {**{k: round(v[0], 2) for k, v in parts.items()}, "total": round(total, 2)},
        "cpu_seconds": {**{k: round(v[1], 2) for k, v in parts.items()}, "total": round(total_cpu, 2)},
        "bar_seconds": BAR_SECONDS,
        "mypy_cache": "cold" if args.cold else "warm",
        "load_average": {"before": load_before[0], "after": load_after[0]},
        "tests": {"fast": len(fast), "all": len(everything)},
        "modules": {
            "fast": sum(len(v) for v in modules_fast.values()),
            "all": sum(len(v) for v in modules_all.values()),
        },
        "areas": {
            a: {
                "tests": [tests_fast[a], tests_all[a]],
                "modules": [len(modules_fast[a]), len(modules_all[a])],
            }
            for a in sorted(tests_all)
        },
        "over_case_budget": [{"case": t, "seconds": round(s, 2)} for s, t in slow_cases],
        "over_test_budget": [{"test": t, "seconds": round(s, 2)} for s, t in slow_tests],
        "costliest_modules": [{"module": m, "seconds": round(s, 2)} for m, s in per_module.most_common(10)],
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 1 if over else 0
    print(f"{'':20} {'wall':>8} {'cpu':>8}")
    for name, (wall, cpu) in parts.items():
        print(f"{name:20} {wall:7.1f}s {cpu:7.1f}s")
    verdict = "over the bar" if total > BAR_SECONDS else "within the bar"
    cache = figures["mypy_cache"]
    print(f"{'make check':20} {total:7.1f}s {total_cpu:7.1f}s  ({verdict} of {BAR_SECONDS:.0f} s; mypy cache {cache})")
    print("(cpu: user + system time of every process; on an idle machine the wall time is about this or less)")
    print(f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after ({os.cpu_count()} cores)")
    print(
        f"fast tier: {len(fast)} of {len(everything)} tests ({100 * len(fast) / len(everything):.0f}%), "
        f"{figures['modules']['fast']} of {figures['modules']['all']} modules"
    )
    for a, row in figures["areas"].items():
        (tf, ta), (mf, ma) = row["tests"], row["modules"]
        print(f"  {a:14} tests {tf:5} / {ta:5}   modules {mf:3} / {ma:3}")
    print("costliest fast-tier modules:")
    for m, s in per_module.most_common(10):
        print(f"  {s:6.2f} s  {m}")
    for s, t in slow_cases:
        print(f"over the case budget ({args.case_budget} s): {s:.2f} s {t}")
    for s, t in slow_tests:
        print(f"over the test budget ({args.test_budget} s, all cases): {s:.2f} s {t}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
