"""Open + project a 200k-entry transcript in Kurahi and in Pi, in the same run.

Two files, generated once with ../shared/tools/gen_session.py and cached under
``bench-data/`` (git-ignored):

* ``tree``: ``--entries 200000 --seed 7`` (a branching tree with compactions, ~110 MB);
* ``linear``: ``--entries 200000 --seed 8 --branch 0`` (one 200k-entry path).

For each file:

* **Pi** (``benchmarks/pi_open_project.mjs``: ``SessionManager.open`` +
  ``buildSessionContext`` in a fresh node process). ``--pi-runs`` fresh processes that
  open the file once give the cold time and the peak RSS (medians over the runs); one
  more process opens it ``--repeat`` times and gives the in-process (JIT-warm) median.
  Peak RSS is taken from the single-open processes because a process that opens the
  file several times keeps the garbage of earlier opens and reports about twice as much.
* **Kurahi** (``kurahi.context.files.project_file``: reads from the end, stops once the
  projection is settled): ``--repeat`` fresh ``python -c`` processes, each timing one
  call with ``time.perf_counter`` and reporting ``ru_maxrss``. "cold" is the first
  sample, "median" the median of all.
* **Kurahi full index** (``Transcript.open`` + path + ``build_context``): the same way.

Correctness is checked in the same run and the script exits 1 loudly if any check
fails: every Kurahi sample must give Pi's message count and the same sha256 of the
canonical JSON of the messages, and (``--compare-messages``, on by default) that digest,
the model and the thinking level must equal what Pi prints through
../shared/peers/pi_context.mjs on the same file.

Usage::

    .venv/bin/python benchmarks/open_project.py [--repeat 5] [--json] [--skip-linear]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KURAHI_SHARED", ROOT.parent / "shared")).resolve()
DEFAULT_GEN = SHARED / "tools" / "gen_session.py"
PI_CONTEXT = SHARED / "peers" / "pi_context.mjs"
PI_OPEN = ROOT / "benchmarks" / "pi_open_project.mjs"
DEFAULT_PI_PKG = Path(
    os.environ.get("PI_PKG", ROOT / ".peer" / "node_modules" / "@mariozechner" / "pi-coding-agent")
).resolve()

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
    from kurahi.store import Transcript
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


def ensure_file(data_dir: Path, gen: Path, kind: str, entries: int, seed: int, extra: list[str], log: Any) -> Path:
    """The cached transcript, generated (atomically, via a ``.part`` file) if missing."""
    out = data_dir / f"{kind}-e{entries}-s{seed}.jsonl"
    if out.exists():
        return out
    data_dir.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    log(f"generating {out} ({entries} entries; this takes a while) ...")
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, str(gen), "--entries", str(entries), "--seed", str(seed), *extra, str(part)],
        check=True,
    )
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


def measure_pi(node: str, pkg: Path, path: Path, runs: int, repeat: int) -> dict[str, Any]:
    env = {**os.environ, "PI_PKG": str(pkg)}
    cold_runs = [run_json([node, str(PI_OPEN), str(path), "1"], env) for _ in range(runs)]
    warm = run_json([node, str(PI_OPEN), str(path), str(repeat)], env) if repeat > 1 else cold_runs[0]
    counts = {r["messages"] for r in [*cold_runs, warm]}
    if len(counts) != 1:
        raise BenchError(f"{path.name}: Pi gave different message counts across runs: {sorted(counts)}")
    return {
        "cold_s": statistics.median(r["seconds"][0] for r in cold_runs),
        "median_s": statistics.median(warm["seconds"]),
        "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in cold_runs),
        "cold_samples_s": [r["seconds"][0] for r in cold_runs],
        "repeat_samples_s": warm["seconds"],
        "rss_samples_mb": [r["peak_rss_mb"] for r in cold_runs],
        "peak_rss_mb_repeat_process": warm["peak_rss_mb"],
        "messages": counts.pop(),
    }


def measure_kurahi(mode: str, path: Path, samples: int) -> dict[str, Any]:
    runs = [run_json([sys.executable, "-c", CHILD_SRC, mode, str(path)]) for _ in range(samples)]
    digests = {r["sha256"] for r in runs}
    counts = {r["messages"] for r in runs}
    if len(digests) != 1 or len(counts) != 1:
        raise BenchError(f"{path.name}: Kurahi ({mode}) is not deterministic: {sorted(digests)} {sorted(counts)}")
    return {
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


def pi_reference(node: str, pkg: Path, path: Path) -> dict[str, Any]:
    """Pi's own messages for the file (pi_context.mjs), reduced to the digest."""
    out = run_json([node, str(PI_CONTEXT), "--mode", "open", str(path)], {**os.environ, "PI_PKG": str(pkg)})
    return {
        "messages": len(out["messages"]),
        "sha256": messages_digest(out["messages"]),
        "model": out.get("model"),
        "thinkingLevel": out.get("thinkingLevel"),
        "leafId": out.get("leafId"),
    }


# -- one file --------------------------------------------------------------------------


def bench_file(label: str, path: Path, args: argparse.Namespace, node: str, log: Any) -> dict[str, Any]:
    log(f"[{label}] {path.name}: Pi ({args.pi_runs} cold runs + 1 × {args.repeat} in-process) ...")
    pi = measure_pi(node, args.pi_pkg, path, args.pi_runs, args.repeat)
    log(f"[{label}] Kurahi project_file ({args.repeat} fresh processes) ...")
    kp = measure_kurahi("project", path, args.repeat)
    log(f"[{label}] Kurahi full index ({args.repeat} fresh processes) ...")
    kf = measure_kurahi("full", path, args.repeat)
    problems: list[str] = []
    for name, k in (("project_file", kp), ("full index", kf)):
        if k["messages"] != pi["messages"]:
            problems.append(f"Kurahi {name} gives {k['messages']} messages, Pi gives {pi['messages']}")
    if kp["sha256"] != kf["sha256"]:
        problems.append("Kurahi project_file and full-index messages differ")
    ref = None
    if args.compare_messages:
        log(f"[{label}] Pi reference messages (pi_context.mjs) ...")
        ref = pi_reference(node, args.pi_pkg, path)
        if ref["messages"] != pi["messages"]:
            problems.append(f"pi_context gives {ref['messages']} messages, pi_open_project {pi['messages']}")
        if ref["sha256"] != kp["sha256"]:
            problems.append(f"messages differ from Pi's: sha256 Kurahi {kp['sha256'][:16]}… Pi {ref['sha256'][:16]}…")
        if ref["model"] != kp["model"]:
            problems.append(f"model differs: Kurahi {kp['model']} Pi {ref['model']}")
        if ref["thinkingLevel"] != kp["thinkingLevel"]:
            problems.append(f"thinking level differs: Kurahi {kp['thinkingLevel']!r} Pi {ref['thinkingLevel']!r}")
    for k in (kp, kf):
        k["speedup_cold"] = pi["cold_s"] / k["cold_s"]
        k["speedup_median"] = pi["median_s"] / k["median_s"]
        k["rss_ratio"] = k["peak_rss_mb"] / pi["peak_rss_mb"]
    return {
        "file": label,
        "path": str(path),
        "size_mb": path.stat().st_size / 1e6,
        "pi": pi,
        "kurahi_project": kp,
        "kurahi_full": kf,
        "pi_reference": ref,
        "messages_identical": None if ref is None else not problems,
        "problems": problems,
    }


# -- output ----------------------------------------------------------------------------


def bars(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        k = r["kurahi_project"]
        out.append(
            {
                "bar": f"{r['file']}: open + project ≥ 10× faster than Pi (median)",
                "value": k["speedup_median"],
                "ok": k["speedup_median"] >= 10,
            }
        )
        if r["file"] == "tree":
            out.append({"bar": "tree: peak RSS ≤ 1/3 of Pi's", "value": k["rss_ratio"], "ok": k["rss_ratio"] <= 1 / 3})
    return out


def print_table(results: list[dict[str, Any]], checks: list[dict[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console() if sys.stdout.isatty() else Console(width=150)
    table = Table(title="Open + project: Pi 0.73.1 vs Kurahi", header_style="bold")
    cols = (
        "file",
        "implementation",
        "cold s",
        "median s",
        "peak RSS MB",
        "speed vs Pi",
        "cold speed",
        "RSS vs Pi",
        "messages",
    )
    for col in cols:
        table.add_column(col, justify="left" if col in ("file", "implementation") else "right")
    for r in results:
        pi = r["pi"]
        name = f"{r['file']} ({r['size_mb']:.0f} MB)"
        table.add_row(
            name,
            "Pi open+buildSessionContext",
            f"{pi['cold_s']:.3f}",
            f"{pi['median_s']:.3f}",
            f"{pi['peak_rss_mb']:.0f}",
            "1×",
            "1×",
            "1",
            str(pi["messages"]),
        )
        for key, impl in (("kurahi_project", "Kurahi project_file"), ("kurahi_full", "Kurahi full index")):
            k = r[key]
            table.add_row(
                "",
                impl,
                f"{k['cold_s']:.3f}",
                f"{k['median_s']:.3f}",
                f"{k['peak_rss_mb']:.0f}",
                f"{k['speedup_median']:.1f}×",
                f"{k['speedup_cold']:.1f}×",
                f"{k['rss_ratio']:.3f}",
                str(k["messages"]),
            )
        table.add_section()
    console.print(table)
    console.print(
        "speed vs Pi = Pi median / Kurahi median (Pi: in-process repeats, Kurahi: fresh processes); "
        "cold speed = the same for first opens; RSS vs Pi = Kurahi peak RSS / Pi peak RSS (Pi: single-open processes)."
    )
    for r in results:
        if r["messages_identical"] is None:
            console.print(f"[yellow]{r['file']}: messages compared by count only (--no-compare-messages)[/]")
        elif r["messages_identical"]:
            console.print(f"[green]{r['file']}: messages identical to Pi's[/] (sha256 {r['kurahi_project']['sha256']})")
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
    ap.add_argument("--gen", type=Path, default=DEFAULT_GEN, help="gen_session.py")
    ap.add_argument("--pi-pkg", type=Path, default=DEFAULT_PI_PKG, help="Pi package root (env PI_PKG)")
    ap.add_argument(
        "--compare-messages",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="compare the messages themselves with Pi's (pi_context.mjs), not only their count",
    )
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = ap.parse_args(argv)
    if args.repeat < 1 or args.pi_runs < 1 or args.entries < 1:
        ap.error("--repeat, --pi-runs and --entries must be positive")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    node = shutil.which("node")
    if node is None:
        log("error: node is not installed; Pi cannot be measured, so there is no ratio to report")
        return 2
    if not (args.pi_pkg / "package.json").exists():
        log(f"error: Pi is not installed at {args.pi_pkg} (run `make peer`)")
        return 2

    files = [("tree", ensure_file(args.data_dir, args.gen, "tree", args.entries, 7, [], log))]
    if not args.skip_linear:
        files.append(
            ("linear", ensure_file(args.data_dir, args.gen, "linear", args.entries, 8, ["--branch", "0"], log))
        )

    results = [bench_file(label, path, args, node, log) for label, path in files]
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
