"""Run a command as the benchmarks time it: wall seconds from spawn to exit, and its own peak RSS.

A child's ``ru_maxrss`` from ``wait4`` starts from its parent's resident set (the fork, and
``posix_spawn`` too, counts the parent's pages until ``exec``), so a benchmark script that holds
100 MB would report every child at 100 MB or more. The peak comes from ``/usr/bin/time -f %M``
instead, a small program whose own child starts small; without it, none is reported.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

__all__ = ["spawn"]

TIME = shutil.which("time", path="/usr/bin:/bin")


class Failed(RuntimeError):
    """The command exited with a status other than 0."""


def spawn(
    argv: Sequence[str],
    *,
    stdin: bytes | None = None,
    stdout: IO[bytes] | int | None = subprocess.DEVNULL,
    env: Mapping[str, str] | None = None,
) -> tuple[float, float | None]:
    """Wall seconds and peak RSS in MB (``None`` without ``/usr/bin/time``) of ``argv``.

    Raises:
        Failed: a non-zero exit, with the end of its standard error.
    """
    with tempfile.TemporaryDirectory(prefix="kurahi-rss-") as tmp:
        peak_file = os.path.join(tmp, "peak")
        cmd = [TIME, "-f", "%M", "-o", peak_file, *argv] if TIME else list(argv)
        err: Any
        with tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, input=stdin, stdout=stdout, stderr=err, env=env, check=False)
            took = time.perf_counter() - t0
            if proc.returncode != 0:
                err.seek(0)
                raise Failed(f"{' '.join(argv)} exited {proc.returncode}:\n{err.read().decode()[-2000:]}")
        peak = None
        if TIME:
            with open(peak_file) as f:
                peak = int(f.read().split()[-1]) / 1024
    return took, peak
