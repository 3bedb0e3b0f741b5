"""A real full disk: a small tmpfs in a private mount namespace, filled to a given free space.

Linux lets an unprivileged user mount a tmpfs inside a user and mount namespace of its own
(``unshare --user --map-root-user --mount``); the mount is gone when the namespace ends. The
test runs this module there: it mounts the tmpfs, copies a state dir onto it, fills the disk
until ``leave`` bytes are free, runs ``kurahi ARGS`` (``{state}`` in them is the copy's path)
and prints, as JSON, the exit code, the output, and the state's files before and after (their
sha256, folders ``dir``). Nothing on the real disk is written but the ``--out`` package the
arguments name.

SQLite's ``-shm`` file is its shared-memory index, rebuilt by whoever opens the database next
(OpenClaw included): the tests leave it out when they compare the state's files.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from support.testdata import tree_hash

SIZE = 4 * 1024 * 1024
"""The tmpfs's size: room for every sample state dir and its repair."""


def available() -> str | None:
    """Why a private tmpfs cannot be mounted here (``None``: it can)."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "no unshare or mount (util-linux)"
    probe = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    return None if probe.returncode == 0 else f"user namespaces cannot mount a tmpfs here: {probe.stderr.strip()}"


def run(state: Path, leave: int, args: list[str]) -> dict[str, Any]:
    """``kurahi ARGS`` on a copy of ``state`` on a tmpfs with ``leave`` bytes free (see the module docstring)."""
    out = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", sys.executable, __file__, str(state), str(leave), *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert out.returncode == 0, f"the full-disk run failed: {out.stdout}{out.stderr}"
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _inside(state: Path, leave: int, args: list[str]) -> dict[str, Any]:
    mnt = Path(tempfile.mkdtemp(prefix="kurahi-full-disk-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(mnt)], check=True)
    copy = mnt / "state"
    shutil.copytree(state, copy, symlinks=True)
    free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
    with open(mnt / "filler", "wb") as f:
        block = b"\0" * (1 << 16)
        left = free - leave
        while left > 0:
            left -= f.write(block[: min(left, len(block))])
        f.flush()
        os.fsync(f.fileno())
    before = tree_hash(copy)
    argv = [a.replace("{state}", str(copy)) for a in args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KURAHI_", "OPENCLAW_"))}
    done = subprocess.run(
        [sys.executable, "-m", "kurahi.cli", *argv], capture_output=True, text=True, env=env, timeout=300
    )
    return {
        "code": done.returncode,
        "stdout": done.stdout,
        "stderr": done.stderr,
        "free": os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize,
        "before": before,
        "after": tree_hash(copy),
        "state": str(copy),
    }


if __name__ == "__main__":
    print(json.dumps(_inside(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])))
