"""Open + project a 200k-entry transcript in Kurahi and in both Pis, in the same run.

Two files, generated once with :mod:`kurahi.testing.sessions` and cached under
``bench-data/`` (git-ignored):

* ``tree``: ``--entries 200000 --seed 7`` (a branching tree with compactions, ~110 MB);
* ``linear``: ``--entries 200000 --seed 8 --branch 0`` (one 200k-entry path).

For each file, in the same run:

* **Pi 0.73.1 and Pi 1.6.0**, each through the project's harness
  (``tests/peers/pi_peer.mjs time``: ``SessionManager.open`` + ``buildSessionContext`` of a
  fresh copy of the file). ``--pi-runs`` fresh node processes that open the file once give
  the whole-process time (spawn to exit, less the harness's copying), the cold in-process
  time and the peak RSS (medians over the runs); one more process opens it ``--repeat``
  times after one warm-up and gives the in-process (JIT-warm) median.
* **Kurahi** (``kurahi.context.files.project_file``: reads from the end, stops once the
  projection is settled): ``--repeat`` fresh processes that only import Kurahi and project
  the file give the whole-process time; ``--repeat`` more, each timing the call inside with
  ``time.perf_counter`` and reporting ``ru_maxrss``, give the in-process times ("cold" is
  the first sample) and the digest of the messages.
* **Kurahi full index** (``Transcript.open`` + path + ``build_context``): in-process, the same way.

Kurahi's bytecode is compiled first (``compileall``), as installing a wheel or any first run
does: where ``PYTHONDONTWRITEBYTECODE`` is set (as on our benchmark machine) every fresh
process would otherwise compile each module it imports from source, a cost no installed
Kurahi pays (``benchmarks/stitch_check.py`` does the same).

Bars (the tree): open + project, whole process, at least 10x faster than Pi 1.6.0 and at
least 20x faster than Pi 0.73.1 (medians); Kurahi's peak RSS at most a third of Pi 1.6.0's.
Pi's whole process is reported two ways, each checked against the bars: with only its
session module imported (the stricter figure), and with its whole agent loaded first, as
Pi's own command does (``pi_peer.mjs --full-import``).

Correctness is checked in the same run and the script exits 1 loudly if any check fails:
every Kurahi sample must give the same sha256 of the canonical JSON of the messages, the
same model and thinking level as each Pi (``pi_peer.mjs read``), and each Pi's timing runs
must give the message count of its own context.

Usage::

    .venv/bin/python benchmarks/open_project.py [--entries 200000] [--repeat 5] [--json] [--skip-linear]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _pi

from kurahi.testing.sessions import write_session

ROOT = Path(__file__).resolve().parents[1]
WHOLE_SRC = "import sys\nfrom kurahi.context.files import project_file\nproject_file(sys.argv[1])\n"

# One source for the digest, used by the parent and pasted into every child so that a
# child imports nothing but kurahi (its RSS is Kurahi's, not this script's).
DIGEST_SRC = r"""
import hashlib as _hashlib
import json as _json
import math as _math

def _canon(v):
    # JSON values as JavaScript sees them: integral floats are integers, integers
    # beyond 2**53 are rounded through a double, keys are sorted (by json.dumps).
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, int):
        if abs(v) > 2**53:
            v = float(v)
        else:
            return v
    if isinstance(v, float):
        if _math.isfinite(v) and v == int(v) and abs(v) < 1e21:
            return int(v)
        return v
    if isinstance(v, dict):
        return {str(k): _canon(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_canon(x) for x in v]
    raise TypeError(f"not a JSON value: {type(v).__name__}")

def messages_digest(messages):
    text = _json.dumps(_canon(messages), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
"""

_digest_ns: dict[str, Any] = {}
exec(DIGEST_SRC, _digest_ns)
messages_digest = _digest_ns["messages_digest"]

CHILD_SRC = (
    DIGEST_SRC
    + r"""
import json, resource, sys, time
mode, path = sys.argv[1], sys.argv[2]
if mode == "project":
    from kurahi.context.files import project_file
    t0 = time.perf_counter()
    fc = project_file(path)
    ctx = fc.context
    seconds = time.perf_counter() - t0
    extra = {"entries_read": fc.entries_read}
else:
    from kurahi.context import build_context
    from kurahi.pi import Transcript
    t0 = time.perf_counter()
    t = Transcript.open(path)
    ctx = build_context(t.path_entries(t.path_indices(len(t) - 1)), t.leaf_id)
    seconds = time.perf_counter() - t0
    extra = {"entries_read": len(t)}
rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {"seconds": seconds, "peak_rss_mb": rss_kb / 1024, "messages": len(ctx.messages),
       "sha256": messages_digest(ctx.messages), "model": ctx.model,
       "thinkingLevel": None if ctx.thinking_level is None else str(ctx.thinking_level), **extra}
print(json.dumps(out))
"""
)


class BenchError(RuntimeError):
    """A check failed: the figures are not comparable."""


# -- data ------------------------------------------------------------------------------


def ensure_file(data_dir: Path, kind: str, entries: int, seed: int, options: dict[str, Any], log: Any) -> Path:
    """The cached transcript, generated (atomically, via a ``.part`` file) if missing."""
    out = data_dir / f"{kind}-e{entries}-s{seed}-ks1.jsonl"  # ks1: made by kurahi.testing.sessions
    if out.exists():
        return out
    data_dir.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    log(f"generating {out} ({entries} entries) ...")
    t0 = time.perf_counter()
    write_session(part, entries=entries, seed=seed, **options)
    os.replace(part, out)
    log(f"  done in {time.perf_counter() - t0:.1f} s ({out.stat().st_size / 1e6:.1f} MB)")
    return out


# -- runners ---------------------------------------------------------------------------


def run_json(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 900) -> dict[str, Any]:
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if res.returncode != 0:
        raise BenchError(f"{' '.join(cmd[:3])} ... failed (exit {res.returncode}):\n{res.stderr[-4000:]}")
    lines = [ln for ln in res.stdout.splitlines() if ln.strip()]
    if not lines:
        raise BenchError(f"{' '.join(cmd[:3])} ... printed nothing; stderr:\n{res.stderr[-4000:]}")
    value: dict[str, Any] = json.loads(lines[-1])
    return value


def measure_pi(version: str, path: Path, runs: int, repeat: int) -> dict[str, Any]:
    cold_runs = [_pi.time_open(version, path, runs=1, warmup=0) for _ in range(runs)]
    agent_runs = [_pi.time_open(version, path, runs=1, warmup=0, full_import=True) for _ in range(runs)]
    warm = _pi.time_open(version, path, runs=repeat, warmup=1)
    counts = {r["messages"] for r in [*cold_runs, warm]}
    if len(counts) != 1:
        raise BenchError(f"{path.name}: Pi {version} gave different message counts across runs: {sorted(counts)}")
    return {
        "version": version,
        "process_s": statistics.median(r["process_s"] for r in cold_runs),
        # The same after loading Pi's whole agent first, as Pi's own command does.
        "process_agent_s": statistics.median(r["process_s"] for r in agent_runs),
        "process_agent_samples_s": [r["process_s"] for r in agent_runs],
        "cold_s": statistics.median(r["ms"][0] / 1000 for r in cold_runs),
        "median_s": warm["medianMs"] / 1000,
        # Peak RSS from the single-open processes: one that opens the file several times keeps
        # the garbage of earlier opens and reports about twice as much.
        "peak_rss_mb": statistics.median(r["peakRssMb"] for r in cold_runs),
        "process_samples_s": [r["process_s"] for r in cold_runs],
        "repeat_samples_s": [ms / 1000 for ms in warm["ms"]],
        "rss_samples_mb": [r["peakRssMb"] for r in cold_runs],
        "messages": counts.pop(),
    }


def measure_kurahi(mode: str, path: Path, samples: int) -> dict[str, Any]:
    runs = [run_json([sys.executable, "-c", CHILD_SRC, mode, str(path)]) for _ in range(samples)]
    digests = {r["sha256"] for r in runs}
    counts = {r["messages"] for r in runs}
    if len(digests) != 1 or len(counts) != 1:
        raise BenchError(f"{path.name}: Kurahi ({mode}) is not deterministic: {sorted(digests)} {sorted(counts)}")
    out = {
        "cold_s": runs[0]["seconds"],
        "median_s": statistics.median(r["seconds"] for r in runs),
        "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
        "samples_s": [r["seconds"] for r in runs],
        "rss_samples_mb": [r["peak_rss_mb"] for r in runs],
        "messages": runs[0]["messages"],
        "sha256": runs[0]["sha256"],
        "model": runs[0]["model"],
        "thinkingLevel": runs[0]["thinkingLevel"],
        "entries_read": runs[0]["entries_read"],
    }
    if mode == "project":
        whole = []
        for _ in range(samples):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", WHOLE_SRC, str(path)], check=True)
            whole.append(time.perf_counter() - t0)
        out["process_s"] = statistics.median(whole)
        out["process_samples_s"] = whole
    return out


def pi_reference(version: str, path: Path) -> dict[str, Any]:
    """Pi's own context of the file, reduced to the digest."""
    out = _pi.context(version, path)
    return {
        "messages": len(out["messages"]),
        "sha256": messages_digest(out["messages"]),
        "model": out.get("model"),
        "thinkingLevel": out.get("thinkingLevel"),
        "leafId": out.get("leafId"),
    }


# -- one file --------------------------------------------------------------------------


def bench_file(label: str, path: Path, args: argparse.Namespace, log: Any) -> dict[str, Any]:
    pis = {}
    for version in _pi.VERSIONS:
        log(f"[{label}] {path.name}: Pi {version} ({args.pi_runs} single-open processes + 1 x {args.repeat}) ...")
        pis[version] = measure_pi(version, path, args.pi_runs, args.repeat)
    log(f"[{label}] Kurahi project_file ({args.repeat} + {args.repeat} fresh processes) ...")
    kp = measure_kurahi("project", path, args.repeat)
    log(f"[{label}] Kurahi full index ({args.repeat} fresh processes) ...")
    kf = measure_kurahi("full", path, args.repeat)
    problems: list[str] = []
    if kp["sha256"] != kf["sha256"]:
        problems.append("Kurahi project_file and full-index messages differ")
    refs = {}
    for version, pi in pis.items():
        log(f"[{label}] Pi {version}'s messages (pi_peer.mjs read) ...")
        ref = refs[version] = pi_reference(version, path)
        if ref["messages"] != pi["messages"]:
            problems.append(f"Pi {version}: read gives {ref['messages']} messages, time gives {pi['messages']}")
        if ref["sha256"] != kp["sha256"]:
            problems.append(
                f"messages differ from Pi {version}'s: sha256 Kurahi {kp['sha256'][:16]}… Pi {ref['sha256'][:16]}…"
            )
        if ref["model"] != kp["model"]:
            problems.append(f"model differs: Kurahi {kp['model']} Pi {version} {ref['model']}")
        if ref["thinkingLevel"] != kp["thinkingLevel"]:
            problems.append(
                f"thinking level differs: Kurahi {kp['thinkingLevel']!r} Pi {version} {ref['thinkingLevel']!r}"
            )
    for k in (kp, kf):
        k["speedup"] = {v: pi["median_s"] / k["median_s"] for v, pi in pis.items()}
        k["speedup_cold"] = {v: pi["cold_s"] / k["cold_s"] for v, pi in pis.items()}
        k["rss_ratio"] = {v: k["peak_rss_mb"] / pi["peak_rss_mb"] for v, pi in pis.items()}
    kp["speedup_process"] = {v: pi["process_s"] / kp["process_s"] for v, pi in pis.items()}
    kp["speedup_process_agent"] = {v: pi["process_agent_s"] / kp["process_s"] for v, pi in pis.items()}
    return {
        "file": label,
        "path": str(path),
        "size_mb": path.stat().st_size / 1e6,
        "pi": pis,
        "kurahi_project": kp,
        "kurahi_full": kf,
        "pi_reference": refs,
        "messages_identical": not problems,
        "problems": problems,
    }


# -- output ----------------------------------------------------------------------------


BARS = {"1.6.0": 10.0, "0.73.1": 20.0}
"""Whole-process speed-up of open + project of the tree that Kurahi must reach against each Pi."""


def bars(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        if r["file"] != "tree":
            continue
        k = r["kurahi_project"]
        for version, bar in BARS.items():
            for key, what in (("speedup_process", "session module"), ("speedup_process_agent", "agent loaded")):
                value = k[key][version]
                name = f"tree: open + project, whole process, >= {bar:.0f}x faster than Pi {version} ({what})"
                out.append({"bar": name, "value": value, "ok": value >= bar})
        ratio = k["rss_ratio"]["1.6.0"]
        out.append({"bar": "tree: peak RSS <= 1/3 of Pi 1.6.0's", "value": ratio, "ok": ratio <= 1 / 3})
    return out


def print_table(results: list[dict[str, Any]], checks: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console() if sys.stdout.isatty() else Console(width=170)
    table = Table(title="Open + project: Pi 0.73.1 and Pi 1.6.0 vs Kurahi", header_style="bold")
    cols = (
        "file",
        "implementation",
        "process s",
        "+agent s",
        "cold s",
        "median s",
        "peak RSS MB",
        "vs 1.6.0",
        "vs 0.73.1",
        "messages",
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("file", "implementation") else "right")

    def speed(k: dict[str, Any], version: str) -> str:
        whole = k.get("speedup_process", {}).get(version)
        median = f"{k['speedup'][version]:.1f}x"
        return median if whole is None else f"{whole:.1f}x ({median})"

    for r in results:
        name = f"{r['file']} ({r['size_mb']:.0f} MB)"
        for version, pi in r["pi"].items():
            row = [
                f"{pi['process_s']:.3f}",
                f"{pi['process_agent_s']:.3f}",
                f"{pi['cold_s']:.3f}",
                f"{pi['median_s']:.3f}",
                f"{pi['peak_rss_mb']:.0f}",
            ]
            table.add_row(name, f"Pi {version}", *row, "", "", str(pi["messages"]))
            name = ""
        for key, impl in (("kurahi_project", "Kurahi project_file"), ("kurahi_full", "Kurahi full index")):
            k = r[key]
            process = f"{k['process_s']:.3f}" if "process_s" in k else ""
            row = [process, "", f"{k['cold_s']:.3f}", f"{k['median_s']:.3f}", f"{k['peak_rss_mb']:.0f}"]
            table.add_row("", impl, *row, speed(k, "1.6.0"), speed(k, "0.73.1"), str(k["messages"]))
        table.add_section()
    console.print(table)
    console.print(
        "process s = spawn to exit of a fresh process that opens and projects once (Pi: less the harness's copying); "
        "+agent s = the same after loading Pi's whole agent (dist/index.js), as Pi's command does; "
        "vs Pi = Pi's time / Kurahi's: whole process (session module), then (in-process medians)."
    )
    for r in results:
        if r["messages_identical"]:
            console.print(
                f"[green]{r['file']}: messages identical to both Pis'[/] (sha256 {r['kurahi_project']['sha256']})"
            )
    for c in checks:
        mark = "[green]PASS[/]" if c["ok"] else "[red]FAIL[/]"
        console.print(f"{mark} {c['bar']}: {c['value']:.3f}")


# -- main ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=200_000, help="entries per generated file (default 200000)")
    ap.add_argument(
        "--repeat", type=int, default=5, help="Kurahi samples (fresh processes) and Pi in-process repeats (default 5)"
    )
    ap.add_argument("--pi-runs", type=int, default=3, help="fresh Pi processes for cold time and RSS (default 3)")
    ap.add_argument("--skip-linear", action="store_true", help="only the tree file")
    ap.add_argument("--data-dir", type=Path, default=ROOT / "bench-data", help="cache of generated files")
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.pi_runs < 1 or args.entries < 1:
        ap.error("--repeat, --pi-runs and --entries must be positive")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    pkg = subprocess.run(
        [sys.executable, "-c", "import kurahi, os; print(os.path.dirname(kurahi.__file__))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    subprocess.run([sys.executable, "-m", "compileall", "-q", pkg], check=True)

    try:
        for version in _pi.VERSIONS:
            _pi.check(version)
    except _pi.PiMissing as exc:
        log(f"error: {exc}; without both Pis there is no ratio to report")
        return 2

    files = [("tree", ensure_file(args.data_dir, "tree", args.entries, 7, {}, log))]
    if not args.skip_linear:
        files.append(("linear", ensure_file(args.data_dir, "linear", args.entries, 8, {"branch": 0}, log)))

    results = [bench_file(label, path, args, log) for label, path in files]
    checks = bars(results)
    if args.json:
        print(json.dumps({"results": results, "bars": checks}, indent=2))
    else:
        print_table(results, checks)
    problems = [f"{r['file']}: {p}" for r in results for p in r["problems"]]
    if problems:
        log("\n!!! KURAHI AND PI DISAGREE — the timings above are not comparable !!!")
        for p in problems:
            log(f"!!! {p}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
