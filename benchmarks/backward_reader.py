"""The backward reader against the plain path, without the C extension, Pi 1.6.0 in the same run.

``kurahi.pi.read.backward`` reads a transcript from its end and stops once the projection is
settled; it is what ``project_file`` does when the C scanner is off or refuses the file
(``KURAHI_NATIVE=0``). The plain path reads the whole file (``Transcript.open``, the Python
scanner) and projects the leaf's path. This measures both on the two 200k-entry files of
``benchmarks/open_project.py`` (generated once under ``bench-data/``):

* ``tree`` (a branching tree with compactions, whose live path starts at the first entry:
  the backward reader reads past its budget and hands over to a full scan);
* ``linear`` (one 200k-entry path with compactions: settled a few hundred lines from the end).

For each file and each way, ``--repeat`` fresh processes (``KURAHI_NATIVE=0``) time the call
inside the process and the whole process; the medians are printed with Pi 1.6.0's whole
process and in-process time on the same file (``tests/peers/pi_peer.mjs time``), measured
alternately with Kurahi's. Both ways must give the same messages (sha256 of their JSON).

Usage::

    KURAHI_PEER_DIR=... .venv/bin/python benchmarks/backward_reader.py [--repeat 5]
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
from open_project import ROOT, ensure_file

CHILD = r"""
import hashlib, json, sys, time
mode, path = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
if mode == "backward":
    from kurahi.context.files import project_file
    fc = project_file(path)  # KURAHI_NATIVE=0: the backward reader, a full scan past its budget
else:
    from kurahi.context.files import _project_full
    fc = _project_full(__import__("pathlib").Path(path), None, False)
seconds = time.perf_counter() - t0
digest = hashlib.sha256(fc.context.to_json()).hexdigest()
print(json.dumps({"seconds": seconds, "entries_read": fc.entries_read, "sha256": digest,
                  "messages": len(fc.context.messages)}))
"""


def kurahi_once(mode: str, path: Path) -> dict[str, Any]:
    """One fresh process: the in-process time, the whole process time, the digest."""
    env = {**os.environ, "KURAHI_NATIVE": "0"}
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-c", CHILD, mode, str(path)], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise RuntimeError(f"{mode} on {path.name} failed:\n{res.stderr[-3000:]}")
    out: dict[str, Any] = json.loads(res.stdout)
    out["process_s"] = wall
    return out


def main() -> int:
    """Measure, check, print."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--entries", type=int, default=200_000)
    ap.add_argument("--data-dir", type=Path, default=ROOT / "bench-data")
    args = ap.parse_args()
    _pi.check("1.6.0")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "src" / "kurahi")], check=True)
    files = [
        ("tree", ensure_file(args.data_dir, "tree", args.entries, 7, {}, print)),
        ("linear", ensure_file(args.data_dir, "linear", args.entries, 8, {"branch": 0}, print)),
    ]
    for label, path in files:
        runs: dict[str, list[dict[str, Any]]] = {"backward": [], "plain": [], "pi": []}
        for _ in range(args.repeat):  # alternately, so load on the machine falls on all three
            for mode in ("backward", "plain"):
                runs[mode].append(kurahi_once(mode, path))
            runs["pi"].append(_pi.time_open("1.6.0", path, runs=1, warmup=0))
        digests = {r["sha256"] for mode in ("backward", "plain") for r in runs[mode]}
        if len(digests) != 1:
            print(f"!!! {label}: the two ways give different contexts: {digests}")
            return 1
        pi_proc = statistics.median(r["process_s"] for r in runs["pi"])
        pi_in = statistics.median(r["ms"][0] / 1000 for r in runs["pi"])
        print(f"{label} ({path.stat().st_size / 1e6:.0f} MB), medians of {args.repeat}, KURAHI_NATIVE=0:")
        print(f"  Pi 1.6.0: whole process {pi_proc:.3f} s, open + build {pi_in:.3f} s")
        for mode in ("backward", "plain"):
            proc = statistics.median(r["process_s"] for r in runs[mode])
            inside = statistics.median(r["seconds"] for r in runs[mode])
            read = runs[mode][0]["entries_read"]
            samples = ", ".join(f"{r['process_s']:.2f}" for r in runs[mode])
            print(
                f"  {mode:8}: whole process {proc:.3f} s ({pi_proc / proc:.1f}x Pi), "
                f"in-process {inside:.3f} s, {read} entries read "
                f"(samples {samples})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
