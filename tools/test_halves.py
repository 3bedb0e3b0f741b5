"""Run the whole suite as two pytest processes at once (`make test`): the peers' half and the rest.

Most of the suite's time is real peers starting (OpenClaw's gateway and CLI, Claude Code,
the continuity suite's gateways); one after the other it took about 97 minutes here
(2026-12-07), past CI's limit. On the two cores this is written for, two halves side by side
take a little over half of that when they are about as long (:func:`peers_half`).

Each half is its own pytest session: its own temporary directory (``--basetemp``), its own
throwaway PostgreSQL when it needs one, its own leak scan over what it left. The rest's output
is shown as it runs; the peers' half is kept in a file and shown whole when it ends, with its
time. The exit code is the first non-zero one of the two (pytest's: 1 a test failed, 2
interrupted, ...), else 0; what the tests left stays in the temporary folder named then, and
is removed after a run that passed. Ctrl-C or SIGTERM stops both, with their process groups.

Arguments after ``--`` go to both pytest runs.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import FrameType


def peers_half(root: Path) -> list[str]:
    """The half run in the background: every real-peer test file but Claude Code's.

    Measured (2 cores, 2026-12-07): one after the other the suite took about 97 minutes, most
    of it OpenClaw (each peer test starts its gateway two or three times, about 24 s a start,
    and every turn is a CLI start). In a CI-style run of this split with the crash campaigns in
    this half (``--durations=0``, 17:49-19:05), this half took 73 minutes (the OpenClaw and Pi
    peer files 69, the crash campaigns 3.5) and the rest 63 (the OpenClaw continuity suite 21 of
    them): so the crash campaigns now run with the rest, which leaves both at about 67-70.
    """
    peers = sorted(p for p in (root / "tests" / "peers").glob("test_*.py") if not p.name.startswith("test_claude"))
    return [p.relative_to(root).as_posix() for p in peers]


def _pytest(args: list[str], basetemp: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", f"--basetemp={basetemp}", *args, *extra]


def main(argv: list[str]) -> int:
    """Run both halves; the exit code (see the module docstring)."""
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    root = Path(__file__).resolve().parent.parent
    work = Path(tempfile.mkdtemp(prefix="kurahi-tests-"))
    log = work / "peers-half.log"
    half = peers_half(root)
    ignores = [f"--ignore={p}" for p in half]
    started = time.monotonic()
    with log.open("wb") as out:
        peers = subprocess.Popen(
            _pytest([*half, "-p", "no:cacheprovider"], work / "peers", extra),
            cwd=root,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    rest = subprocess.Popen(_pytest(ignores, work / "rest", extra), cwd=root, start_new_session=True)

    def stop(signum: int, frame: FrameType | None) -> None:
        for p in (peers, rest):
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGTERM)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    rest_code = rest.wait()
    rest_time = time.monotonic() - started
    if peers.poll() is None:
        print(f"\n(the rest took {rest_time:.0f} s; waiting for the peers' half)", flush=True)
    peers_code = peers.wait()
    peers_time = time.monotonic() - started
    print(f"\n===== the peers' half ({len(half)} paths): {peers_time:.0f} s =====", flush=True)
    sys.stdout.buffer.write(log.read_bytes())
    print(f"===== the rest: {rest_time:.0f} s, exit {rest_code}; the peers' half: exit {peers_code} =====", flush=True)
    if rest_code or peers_code:
        print(f"what the tests left is kept in {work}", flush=True)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return rest_code or peers_code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
