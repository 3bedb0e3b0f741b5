"""Time a continuity manifest over ~1 GB of transcripts against ``sha256sum`` on the same files.

The home is ``bench-data/manifest-hash/kolo`` (git-ignored): a seeded resident whose
sessions directory holds copies of one realistic 200,000-entry transcript (made once by
``python -m kurahi.testing.sessions --entries 200000 --seed 7``, ~110 MB) under different
names, until they add up to ``--mb`` megabytes. Copies, not links: each is its own inode.
Files made moments ago are given time to settle (the hash cache does not keep a digest of
a file changed in the last two seconds, which could still change unseen).

Every file is read once first, so all three measurements run from the page cache, as they
do for a running gateway. Then, in the same run, ``--runs`` times each:

- ``sha256sum`` on the transcripts (wall time of the process);
- a **cold** manifest: a fresh Python process, no ``run/hash-cache.json``;
  ``build_manifest()`` is timed inside the process (interpreter start and imports are not,
  and are printed separately);
- a **warm** manifest: another fresh process, with the cache the cold one left.

For reference, ``openssl dgst -sha256`` on the same files is timed too, when ``openssl`` is
installed: Debian's coreutils ``sha256sum`` does not use the CPU's SHA extensions, OpenSSL
(and so ``hashlib``) does, which makes it the stronger single-threaded baseline.

Medians are reported. Bars: cold throughput ≥ 70% of ``sha256sum``'s, warm ≥ 10× faster
than cold. The manifest's digests are checked against ``sha256sum``'s. Exits 1 when a bar
is missed or a digest differs.

Usage::

    .venv/bin/python benchmarks/manifest_hash.py [--mb 1000] [--runs 3] [--json]
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

from kurahi.testing.sessions import write_session

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench-data" / "manifest-hash"
AGENT = "bench"

TIMER = """
import json, os, sys, time
t_import = time.perf_counter()
from kurahi.continuity import build_manifest
from kurahi.resident.home import Home
home = Home.at(sys.argv[1])
t0 = time.perf_counter()
m = build_manifest(home, sys.argv[2])
seconds = time.perf_counter() - t0
digests = {e["name"]: e["value"]["sha256"] for e in m["entries"] if e["kind"] == "transcript"}
print(json.dumps({"seconds": seconds, "imports": t0 - t_import, "digests": digests, "root": m["root"]}))
"""


def prepare(megabytes: int) -> tuple[Path, list[Path]]:
    """The bench home and its transcripts (made when missing)."""
    from kurahi.continuity.hashcache import RACY_NS
    from kurahi.resident.init import init_home

    source = DATA / "tree-e200000-s7-ks1.jsonl"  # ks1: made by kurahi.testing.sessions
    if not source.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        print(f"generating {source.name} ...", file=sys.stderr)
        part = source.with_name(source.name + ".part")
        write_session(part, entries=200_000, seed=7)
        os.replace(part, source)
    home = DATA / "kolo"
    init_home(home, AGENT, marker="BENCH-1")
    sessions = home / "agents" / AGENT / "sessions"
    size = source.stat().st_size
    count = max(1, -(-megabytes * 1_000_000 // size))
    files = [sessions / f"bench-{i:02d}.jsonl" for i in range(count)]
    for stale in sessions.glob("bench-*.jsonl"):
        if stale not in files:
            stale.unlink()
    made = False
    for f in files:
        if not f.exists() or f.stat().st_size != size:
            shutil.copyfile(source, f)
            made = True
    if made:
        time.sleep(RACY_NS / 1e9 + 0.5)  # let the new files settle, as a resident's old transcripts have
    return home, files


def warm_page_cache(files: list[Path]) -> None:
    """Read every file once, so no measurement pays for the disk."""
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(8 << 20):
                pass


def run_sha256sum(files: list[Path]) -> tuple[float, dict[str, str]]:
    """Wall time of ``sha256sum`` over the files, and its digests by file name."""
    t0 = time.perf_counter()
    out = subprocess.run(["sha256sum", *map(str, files)], check=True, capture_output=True, text=True).stdout
    seconds = time.perf_counter() - t0
    digests = {Path(line.split(None, 1)[1].strip()).name: line.split()[0] for line in out.splitlines()}
    return seconds, digests


def run_openssl(files: list[Path]) -> float | None:
    """Wall time of ``openssl dgst -sha256`` over the files (``None`` without openssl)."""
    if shutil.which("openssl") is None:
        return None
    t0 = time.perf_counter()
    subprocess.run(["openssl", "dgst", "-sha256", *map(str, files)], check=True, capture_output=True)
    return time.perf_counter() - t0


def run_manifest(home: Path, *, cold: bool) -> dict[str, Any]:
    """One manifest in a fresh process; with ``cold``, the hash cache is deleted first."""
    cache = home / "run" / "hash-cache.json"
    if cold:
        cache.unlink(missing_ok=True)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", TIMER, str(home), AGENT], check=True, capture_output=True, text=True)
    result: dict[str, Any] = json.loads(proc.stdout)
    result["process"] = time.perf_counter() - t0
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=1000, help="megabytes of transcripts (at least)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()

    home, files = prepare(a.mb)
    total = sum(f.stat().st_size for f in files)
    warm_page_cache(files)
    sums, colds, warms, ssls = [], [], [], []
    reference: dict[str, str] = {}
    for _ in range(a.runs):
        seconds, reference = run_sha256sum(files)
        sums.append(seconds)
        ssl = run_openssl(files)
        if ssl is not None:
            ssls.append(ssl)
        colds.append(run_manifest(home, cold=True))
        warms.append(run_manifest(home, cold=False))
    wrong = [r for r in colds + warms if r["digests"] != reference]
    roots = {r["root"] for r in colds + warms}

    mb = total / 1e6
    s_sum = statistics.median(sums)
    s_cold = statistics.median(r["seconds"] for r in colds)
    s_warm = statistics.median(r["seconds"] for r in warms)
    s_ssl = statistics.median(ssls) if ssls else None
    figures = {
        "files": len(files),
        "megabytes": round(mb, 1),
        "cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "sha256sumSeconds": round(s_sum, 4),
        "sha256sumMBps": round(mb / s_sum, 1),
        "opensslMBps": round(mb / s_ssl, 1) if s_ssl else None,
        "coldVsOpenssl": round(s_ssl / s_cold, 3) if s_ssl else None,
        "coldSeconds": round(s_cold, 4),
        "coldMBps": round(mb / s_cold, 1),
        "coldVsSha256sum": round(s_sum / s_cold, 3),
        "coldProcessSeconds": round(statistics.median(r["process"] for r in colds), 4),
        "warmSeconds": round(s_warm, 5),
        "warmProcessSeconds": round(statistics.median(r["process"] for r in warms), 4),
        "coldOverWarm": round(s_cold / s_warm, 1),
        "importSeconds": round(statistics.median(r["imports"] for r in colds + warms), 4),
        "digestsAgree": not wrong,
        "sameRoot": len(roots) == 1,
        "runs": a.runs,
    }
    ok = figures["coldVsSha256sum"] >= 0.70 and figures["coldOverWarm"] >= 10 and not wrong and len(roots) == 1
    if a.json:
        print(json.dumps({**figures, "ok": ok}))
    else:
        print(f"{len(files)} transcripts, {mb:.0f} MB, {figures['cpus']} CPUs, median of {a.runs} runs")
        print(f"  sha256sum           {s_sum:8.3f} s  {mb / s_sum:8.0f} MB/s")
        if s_ssl:
            print(f"  openssl dgst        {s_ssl:8.3f} s  {mb / s_ssl:8.0f} MB/s  (reference, not a bar)")
        print(
            f"  cold manifest       {s_cold:8.3f} s  {mb / s_cold:8.0f} MB/s  "
            f"{figures['coldVsSha256sum']:.2f}x sha256sum (bar 0.70)"
            + (f", {figures['coldVsOpenssl']:.2f}x openssl" if s_ssl else "")
            + f"  [process {figures['coldProcessSeconds']:.3f} s]"
        )
        print(
            f"  warm manifest       {s_warm:8.4f} s  {figures['coldOverWarm']:8.1f}x faster than cold (bar 10)  "
            f"[process {figures['warmProcessSeconds']:.3f} s]"
        )
        print(f"  imports (not timed) {figures['importSeconds']:8.3f} s")
        print(f"  digests agree with sha256sum: {not wrong}; one root across runs: {len(roots) == 1}")
        print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
