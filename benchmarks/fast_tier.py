"""Time `make check` part by part and hold the fast tier to the rule in ``tests/tiers.py``.

Runs what `make check` runs, each part timed on the wall clock: ``ruff check``, ``ruff format
--check``, ``mypy`` (warm, with the cache a developer has; ``--cold`` removes ``.mypy_cache``
first) and the fast tier (``pytest -m "not slow"`` with the Makefile's ``FAST_IGNORE`` and the
hypothesis profile ``dev``), the last with a JUnit report for each test's time (setup, call
and teardown; a module-scoped fixture is charged to the first test that uses it). Then:

- the wall time of each part and of all (bar: 90 s), with the load average before and after,
  since other work on a shared machine stretches every figure;
- the fast tier's share of the suite, tests and modules, per area (the folder under tests/);
- every fast-tier test over ``--test-budget`` seconds (default 1) and module over
  ``--module-budget`` (default 3): each belongs in ``tests/tiers.py``, or should be made cheaper.

Exits 1 when the total is over the bar or a test or module is over its budget. A timing is
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


def timed(name: str, cmd: list[str], env: dict[str, str] | None = None) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"{name} failed (exit {done.returncode}): make check would stop here")
    return seconds


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
    ap.add_argument("--test-budget", type=float, default=1.0, help="seconds a fast-tier test may take")
    ap.add_argument("--module-budget", type=float, default=3.0, help="seconds a fast-tier module may take")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()

    ignore = fast_ignore()
    load_before = os.getloadavg()
    if args.cold:
        shutil.rmtree(ROOT / ".mypy_cache", ignore_errors=True)
    parts: dict[str, float] = {}
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
    total = sum(parts.values())

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

    per_module: dict[str, float] = collections.Counter()
    for module, _, seconds in times:
        per_module[module] += seconds
    slow_tests = sorted(((s, f"{m}::{n}") for m, n, s in times if s > args.test_budget), reverse=True)
    slow_modules = sorted(((s, m) for m, s in per_module.items() if s > args.module_budget), reverse=True)
    over = total > BAR_SECONDS or bool(slow_tests) or bool(slow_modules)

    figures: dict[str, Any] = {
        "seconds": {**{k: round(v, 2) for k, v in parts.items()}, "total": round(total, 2)},
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
        "over_test_budget": [{"test": t, "seconds": round(s, 2)} for s, t in slow_tests],
        "over_module_budget": [{"module": m, "seconds": round(s, 2)} for s, m in slow_modules],
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 1 if over else 0
    for name, seconds in parts.items():
        print(f"{name:20} {seconds:6.1f} s")
    verdict = "over the bar" if total > BAR_SECONDS else "within the bar"
    print(f"{'make check':20} {total:6.1f} s  ({verdict} of {BAR_SECONDS:.0f} s; mypy cache {figures['mypy_cache']})")
    print(f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after ({os.cpu_count()} cores)")
    print(
        f"fast tier: {len(fast)} of {len(everything)} tests ({100 * len(fast) / len(everything):.0f}%), "
        f"{figures['modules']['fast']} of {figures['modules']['all']} modules"
    )
    for a, row in figures["areas"].items():
        (tf, ta), (mf, ma) = row["tests"], row["modules"]
        print(f"  {a:14} tests {tf:5} / {ta:5}   modules {mf:3} / {ma:3}")
    for s, t in slow_tests:
        print(f"over the test budget ({args.test_budget} s): {s:.2f} s {t}")
    for s, m in slow_modules:
        print(f"over the module budget ({args.module_budget} s): {s:.2f} s {m}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
