"""One ``kurahi evidence provenance`` call on a 200k-entry transcript and a 10 MB workspace.

The transcript is ``bench-data/tree-e200000-s7.jsonl`` (read only; ``--transcript`` for
another), the workspace is generated under a temporary directory: text files of mixed
words up to ``--workspace-mb`` MB, a memory folder, and one binary file (skipped).

Each sample is a fresh ``python -c`` process that imports the CLI module and runs the
command through Typer with ``--json --auto`` and two phrases (one common in the file, one
absent), timing the whole call with ``time.perf_counter``. The bar is 2 s.

Usage::

    .venv/bin/python benchmarks/provenance.py [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from kurahi.testing import random_text

ROOT = Path(__file__).resolve().parents[1]
TREE = "tree-e200000-s7.jsonl"
CANDIDATES = [ROOT / "bench-data" / TREE]

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from typer.testing import CliRunner
from kurahi.cli.evidence import app
args = json.loads(sys.argv[1])
res = CliRunner().invoke(app, args)
dt = time.perf_counter() - t0
out = json.loads(res.stdout)
print(json.dumps({"seconds": dt, "exit": res.exit_code, "phrases": {p["phrase"]: p["verdict"] for p in out["phrases"]},
                  "skipped": len(out["skippedFiles"]), "contextMessages": out["contextMessages"]}))
"""


def make_workspace(root: Path, megabytes: float, seed: int = 1) -> int:
    """Write text files totalling about ``megabytes`` MB; return the bytes written."""
    rng = random.Random(seed)
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text("# Memory\nThe Cobalt-7 key lives here.\n")
    (root / "image.bin").write_bytes(b"\x89PNG\r\n\x1a\n\0\0" + bytes(rng.getrandbits(8) for _ in range(4096)))
    total, n = 0, 0
    while total < megabytes * 1024 * 1024:
        folder = root / ("memory" if n % 10 == 0 else f"notes/d{n % 17}")
        folder.mkdir(parents=True, exist_ok=True)
        lines = [random_text(rng, 12) for _ in range(2000)]
        data = "\n".join(lines) + "\n"
        (folder / f"f{n:04d}.md").write_text(data)
        total += len(data)
        n += 1
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--transcript", type=Path, default=None)
    ap.add_argument("--workspace-mb", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args()
    transcript = ns.transcript or next((p for p in CANDIDATES if p.is_file()), None)
    if transcript is None:
        print("no transcript: generate bench-data/tree-e200000-s7.jsonl or pass --transcript", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "workspace"
        size = make_workspace(ws, ns.workspace_mb)
        args = ["provenance", "--transcript", str(transcript), "--workspace", str(ws), "--json", "--auto"]
        args += ["--phrase", "harbour lantern", "--phrase", "Cobalt-7", "--phrase", "never-said-zz9"]
        samples = []
        for _ in range(ns.repeat):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, json.dumps(args)], capture_output=True, text=True, check=True
            )
            samples.append(json.loads(out.stdout))
    times = [s["seconds"] for s in samples]
    result = {
        "transcript": str(transcript),
        "transcriptBytes": transcript.stat().st_size,
        "workspaceBytes": size,
        "cold": times[0],
        "median": statistics.median(times),
        "bar": 2.0,
        "last": samples[-1],
    }
    if ns.json:
        print(json.dumps(result))
    else:
        print(
            f"provenance: {result['transcriptBytes'] / 1e6:.0f} MB transcript + {size / 1e6:.1f} MB workspace: "
            f"cold {result['cold']:.2f} s, median {result['median']:.2f} s (bar 2 s); verdicts {samples[-1]['phrases']}"
        )
    ok = all(s["exit"] == 0 for s in samples) and result["median"] < 2.0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
