"""Run the whole suite as two pytest processes at once (`make test`): the peers' half and the rest.

Most of the suite's time is real peers starting (OpenClaw's gateway and CLI, Claude Code,
the continuity suite's gateways) and crash campaigns waiting on processes; one after the other
it took about 97 minutes here (2026-12-07), past CI's limit. On the two cores this is written
for, two halves side by side take a little over half of that when they are about as long
(:data:`PEERS_HALF`).

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

PEERS_HALF = ("tests/peers", "tests/crash", "tests/crashstates", "tests/lifecycle")
"""The half run in the background: the real peers' tests (about 37 minutes of the whole suite's
97, one after the other, here), the crash campaigns and the activation/rescue tests, so that
the two halves take about as long (the OpenClaw continuity suite, about 20 minutes, is in the
rest). With the continuity suite in this half, the rest took 35 minutes and this half had run
78 of its 253 tests after 52."""


def _pytest(args: list[str], basetemp: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", f"--basetemp={basetemp}", *args, *extra]


def main(argv: list[str]) -> int:
    """Run both halves; the exit code (see the module docstring)."""
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    root = Path(__file__).resolve().parent.parent
    work = Path(tempfile.mkdtemp(prefix="kurahi-tests-"))
    log = work / "peers-half.log"
    ignores = [f"--ignore={p}" for p in PEERS_HALF]
    started = time.monotonic()
    with log.open("wb") as out:
        peers = subprocess.Popen(
            _pytest([*PEERS_HALF, "-p", "no:cacheprovider"], work / "peers", extra),
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
        print(f"\n(the rest took {rest_time:.0f} s; waiting for the peers' half: {', '.join(PEERS_HALF)})", flush=True)
    peers_code = peers.wait()
    peers_time = time.monotonic() - started
    print(f"\n===== the peers' half ({', '.join(PEERS_HALF)}): {peers_time:.0f} s =====", flush=True)
    sys.stdout.buffer.write(log.read_bytes())
    print(f"===== the rest: {rest_time:.0f} s, exit {rest_code}; the peers' half: exit {peers_code} =====", flush=True)
    if rest_code or peers_code:
        print(f"what the tests left is kept in {work}", flush=True)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return rest_code or peers_code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
