"""The child process the recorder traces: prepare a protocol's directory, mark the begin, run it.

Usage: ``driver.py PROTOCOL ROOT MARKS [--seed N] [--scale N] [--drop KIND[:N]]``. ``--drop`` leaves out
fsyncs made through ``kurahi.fs.durable.ops`` after the begin mark, to show that a checker
catches a missing one: ``fdatasync``, ``filefsync`` (``fsync`` of a regular file) or
``dirfsync`` (``fsync`` of a directory); with ``:N`` only the Nth such call, otherwise all.
``sqlitesync`` turns SQLite's own fsyncs off instead (``PRAGMA synchronous=OFF``).
The snapshot at the begin mark (``begin.json``) and what the protocol acknowledged
(``info.json``) go next to MARKS, outside ROOT, so they are not part of the trace.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sqlite3
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: run as a script, it imports support

from kurahi.fs import durable as fsio
from support.crashstates.fstrace import snapshot_marker
from support.crashstates.protocols import PROTOCOLS, Ctx, dump_info


def snapshot(root: Path) -> dict[str, Any]:
    """The directory's files, subdirectories, hard links and this process's descriptors on it."""
    files: dict[str, str] = {}
    dirs: list[str] = [""]
    links: dict[str, str] = {}
    first: dict[tuple[int, int], str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir
        dirs += [os.path.join(rel_dir, d) for d in dirnames]
        for name in filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.join(rel_dir, name)
            st = os.lstat(p)
            if not stat.S_ISREG(st.st_mode):
                continue
            if (st.st_dev, st.st_ino) in first:
                links[rel] = first[(st.st_dev, st.st_ino)]
            first.setdefault((st.st_dev, st.st_ino), rel)
            files[rel] = base64.b64encode(Path(p).read_bytes()).decode()
    fds: dict[int, dict[str, Any]] = {}
    real = os.path.realpath(root)
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith(real + "/") or target == real:
            info = dict(line.split(":\t", 1) for line in Path(f"/proc/self/fdinfo/{name}").read_text().splitlines())
            fds[int(name)] = {
                "path": os.path.relpath(target, real) if target != real else "",
                "flags": int(info["flags"].strip(), 8),
                "pos": int(info["pos"].strip()),
            }
    return {"files": files, "dirs": dirs, "links": links, "fds": fds}


def install_drop(spec: str) -> None:
    """Leave out the fsyncs ``spec`` names (see the module docstring)."""
    kind, _, nth = spec.partition(":")
    if kind == "sqlitesync":
        # SQLite fsyncs on its own, outside the seam: turn that off on every writing connection.
        connect = sqlite3.connect

        def unsynced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            con = connect(*args, **kwargs)
            con.execute("PRAGMA synchronous=OFF")
            return con

        sqlite3.connect = unsynced  # type: ignore[assignment]
        return
    want = int(nth) if nth else 0
    seen = [0]
    real_fsync, real_fdatasync = fsio.ops.fsync, fsio.ops.fdatasync

    def dropping(real: Callable[[int], None], kinds: tuple[str, ...]) -> Callable[[int], None]:
        def call(fd: int) -> None:
            is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
            this = kinds[1] if is_dir else kinds[0]
            if this == kind:
                seen[0] += 1
                if not want or seen[0] == want:
                    return
            real(fd)

        return call

    fsio.ops.fsync = dropping(real_fsync, ("filefsync", "dirfsync"))
    fsio.ops.fdatasync = dropping(real_fdatasync, ("fdatasync", "dirfsync"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("protocol")
    ap.add_argument("root", type=Path)
    ap.add_argument("marks", type=Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--drop", default="")
    ap.add_argument("--scale", type=int, default=1)
    a = ap.parse_args()
    proto = PROTOCOLS[a.protocol]
    ctx = Ctx(a.root, a.marks, a.seed, a.scale)
    proto.setup(ctx)
    (a.marks.parent / "begin.json").write_text(json.dumps(snapshot(a.root)))
    if a.drop:
        install_drop(a.drop)
    ctx.begun = True
    snapshot_marker(a.marks, "begin")
    proto.act(ctx)
    (a.marks.parent / "info.json").write_text(dump_info({**ctx.info, "acks": ctx.acks}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
