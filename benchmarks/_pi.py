"""The two Pis for the benchmarks: where ``make peer`` put them, and the project's harness to run them.

Everything is in the repository: the harness is ``tests/peers/pi_peer.mjs`` (its ``time`` mode
for timings, ``read`` for Pi's context), the Pis and node 24 are in ``.peer/`` after
``make peer`` (``KURAHI_PEER_DIR`` points elsewhere).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEER_DIR = Path(os.environ.get("KURAHI_PEER_DIR", ROOT / ".peer")).resolve()
PI_PEER = ROOT / "tests" / "peers" / "pi_peer.mjs"
VERSIONS = ("0.73.1", "1.6.0")
PACKAGES = {"0.73.1": "@mariozechner/pi-coding-agent", "1.6.0": "@earendil-works/pi-coding-agent"}


class PiMissing(RuntimeError):
    """A Pi (or a node new enough for it) is not installed: run ``make peer``."""


def package_dir(version: str) -> Path:
    """Where ``make peer`` puts this Pi."""
    return PEER_DIR / "node_modules" / PACKAGES[version]


def node() -> str:
    """``.peer``'s own node 24 (Pi 1.6.0 needs node >= 22.19), else the system's."""
    local = PEER_DIR / "node_modules" / ".bin" / "node"
    found = str(local) if local.exists() else shutil.which("node")
    if found is None:
        raise PiMissing("node is not installed (run `make peer`)")
    return found


def check(version: str) -> None:
    """Raise :class:`PiMissing` unless this Pi is installed and runs."""
    pkg = package_dir(version)
    try:
        found = json.loads((pkg / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        raise PiMissing(f"Pi {version} is not installed at {pkg} (run `make peer`)") from None
    if found != version:
        raise PiMissing(f"{pkg} holds Pi {found}, not {version} (run `make peer`)")
    out = _run(version, "read", str(ROOT / "tests" / "fixtures" / "pi" / "linear.jsonl"))
    if "error" in out[0]:
        raise PiMissing(f"Pi {version} cannot run here: {out[0]['error']}")


def _run(version: str, mode: str, stdin: str, *flags: str, timeout: float = 1800) -> list[dict[str, Any]]:
    env = {**os.environ, "PI_PKG": str(package_dir(version))}
    res = subprocess.run(
        [node(), str(PI_PEER), mode, *flags], input=stdin, capture_output=True, text=True, env=env, timeout=timeout
    )
    if res.returncode != 0:
        raise RuntimeError(f"pi_peer.mjs {mode} (Pi {version}) failed (exit {res.returncode}):\n{res.stderr[-4000:]}")
    return [json.loads(line) for line in res.stdout.split("\n") if line.strip()]


def time_open(version: str, path: Path, *, runs: int, warmup: int, full_import: bool = False) -> dict[str, Any]:
    """``pi_peer.mjs time`` on one file in a fresh node process, plus that process's wall time.

    ``process_s`` is spawn to exit minus the time the harness spent copying the file (it opens
    a private copy, which Pi itself would not do): node's start, the import of Pi's session
    code, and every open + ``buildSessionContext``. With ``full_import`` the process first
    loads Pi's whole agent (``dist/index.js``), as Pi's own command does.
    """
    flags = ["--full-import"] if full_import else []
    t0 = time.perf_counter()
    (out,) = _run(version, "time", str(path), "--runs", str(runs), "--warmup", str(warmup), *flags)
    wall = time.perf_counter() - t0
    if out.get("pkgVersion") != version:
        raise RuntimeError(f"asked for Pi {version}, ran {out.get('pkgVersion')}")
    return {**out, "process_s": wall - out["copyMs"] / 1000}


def context(version: str, path: Path) -> dict[str, Any]:
    """Pi's ``SessionManager.open`` + ``buildSessionContext`` of the file (``pi_peer.mjs read``)."""
    (out,) = _run(version, "read", str(path))
    if "error" in out:
        raise RuntimeError(f"Pi {version} could not open {path}: {out['error']}")
    return out
