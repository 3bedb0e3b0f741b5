"""Run a command as the benchmarks time it: wall seconds from spawn to exit, its own peak RSS and CPU.

A child's ``ru_maxrss`` from ``wait4`` starts from its parent's resident set (the fork, and
``posix_spawn`` too, counts the parent's pages until ``exec``), so a benchmark script that holds
100 MB would report every child at 100 MB or more. The peak comes from ``/usr/bin/time -f %M``
instead, a small program whose own child starts small; without it, none is reported. The CPU
time (user + system, every thread) comes from it too: on a machine other jobs load, the wall
time of a two-thread scan moves with the free cores, its CPU time much less.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any, NamedTuple

__all__ = ["Failed", "Run", "spawn"]

TIME = shutil.which("time", path="/usr/bin:/bin")


class Failed(RuntimeError):
    """The command exited with a status other than 0."""


class Run(NamedTuple):
    """One command's figures."""

    wall_s: float
    peak_mb: float | None
    """``None`` without ``/usr/bin/time``."""
    cpu_s: float | None
    """User + system seconds; ``None`` without ``/usr/bin/time``."""


def spawn(
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    stdout: IO[bytes] | int | None = subprocess.DEVNULL,
    env: Mapping[str, str] | None = None,
) -> Run:
    """Wall seconds, peak RSS in MB and CPU seconds of ``argv``.

    Raises:
        Failed: a non-zero exit, with the end of its standard error.
    """
    with tempfile.TemporaryDirectory(prefix="kurahi-rss-") as tmp:
        peak_file = os.path.join(tmp, "peak")
        cmd = [TIME, "-f", "%M %U %S", "-o", peak_file, *argv] if TIME else list(argv)
        err: Any
        with tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, input=stdin, stdout=stdout, stderr=err, env=env, check=False)
            took = time.perf_counter() - t0
            if proc.returncode != 0:
                err.seek(0)
                raise Failed(f"{' '.join(argv)} exited {proc.returncode}:\n{err.read().decode()[-2000:]}")
        if not TIME:
            return Run(took, None, None)
        with open(peak_file) as f:
            kb, user, system = f.read().split()[-3:]
    return Run(took, int(kb) / 1024, float(user) + float(system))
