"""The recorder: run a write protocol under ``strace`` and turn its system calls into file-system operations.

Why strace and not only the ``fsio`` seam: several writers make their files with plain
``os.open``/``os.link``/``os.rename`` (stitch output, activation staging, the signing key, the
workspace's SQLite store), and a ``sendfile`` or a ``mkdir`` never passes through ``fsio.ops``.
Tracing the process sees every call each writer makes, in the order the kernel saw them, with
no change to the writers, which is what ALICE did.

The protocol runs in a child process (``driver.py``). It prepares its directory, then marks the
*begin* of the traced part by opening ``<marks>/begin`` (which does not exist; the failed
``openat`` is the mark) after it wrote a snapshot of the directory and of its open descriptors
(``begin.json``). Each acknowledged operation is marked the same way (``<marks>/ack-<n>``).
Everything the trace shows about paths under the directory after the begin mark becomes an
:class:`Op`; calls on other paths are ignored.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TRACED = (
    "openat,open,creat,write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync,sync_file_range,"
    "rename,renameat,renameat2,link,linkat,unlink,unlinkat,mkdir,mkdirat,rmdir,ftruncate,truncate,"
    "close,lseek,dup,dup2,dup3,fcntl,sendfile,copy_file_range,clone,clone3,fork,vfork,symlink,symlinkat"
)


@dataclass(frozen=True)
class Op:
    """One file-system operation on the studied directory, paths relative to it.

    ``kind`` is one of ``create`` (a new empty file at ``path``), ``mkdir``, ``write`` (``data``
    at ``offset`` of the file open as ``path``, ``fd`` its descriptor), ``truncate`` (to
    ``offset``), ``fsync`` (file or directory ``path``; ``data_only`` for fdatasync),
    ``rename`` (``path`` to ``dest``), ``link`` (``path`` to ``dest``), ``unlink``, ``rmdir``,
    ``ack`` (``label``: an operation the protocol acknowledged).
    """

    kind: str
    path: str = ""
    dest: str = ""
    offset: int = 0
    data: bytes = b""
    fd: int = -1
    data_only: bool = False
    label: str = ""


@dataclass
class Recording:
    """A traced run: the snapshot at the begin mark and the operations after it."""

    files: dict[str, bytes]
    """Regular files under the directory at the begin mark (relative path to bytes)."""
    dirs: list[str]
    """Directories under it (relative paths, the root as ``""``)."""
    links: dict[str, str]
    """Names that were hard links of one file at the begin mark: path to the first name."""
    fds: dict[int, dict[str, Any]]
    """Descriptors open at the begin mark on files under it: fd to path, flags, position."""
    ops: list[Op] = field(default_factory=list)
    acks: list[str] = field(default_factory=list)
    """Labels of the acknowledged operations, in order (each is also an ``ack`` op)."""
    info: dict[str, Any] = field(default_factory=dict)
    """What the protocol's run wrote for its checker (``info.json``)."""
    root: str = ""
    """Where the run's directory was: crash states are replayed at the same path, since some
    files name it (an activation package is bound to its home)."""


class TraceError(Exception):
    """The trace holds a call the model cannot replay (named), or the protocol failed."""


_STR = re.compile(r'"((?:\\x[0-9a-f]{2})*)"(\.\.\.)?')
_FDPATH = re.compile(r"(-?\d+|AT_FDCWD)<((?:\\x[0-9a-f]{2})*)>(?:\(deleted\))?")
_LINE = re.compile(r"^(\d+) +(?:(\w+)\((.*)\) += (.*)|<\.\.\. (\w+) resumed>(.*)\) += (.*))$")


def _hex(s: str) -> bytes:
    return bytes.fromhex(s.replace("\\x", ""))


def snapshot_marker(marks: Path, name: str) -> None:
    """Leave a mark in the trace: a failed open of ``marks/name`` (called by the driver)."""
    with contextlib.suppress(FileNotFoundError):
        os.close(os.open(marks / name, os.O_RDONLY))


def _args(text: str) -> list[str]:
    """Split a call's argument text at top-level commas (strings are hex, so commas are structure)."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur:
        out.append("".join(cur).strip())
    return out


def _path_arg(arg: str, base: str) -> str:
    m = _STR.fullmatch(arg)
    if not m:
        raise TraceError(f"expected a path, got {arg!r}")
    p = os.fsdecode(_hex(m.group(1)))
    return p if p.startswith("/") else os.path.join(base, p)


def _fd_arg(arg: str) -> tuple[int, str]:
    m = _FDPATH.fullmatch(arg)
    if not m:
        raise TraceError(f"expected a descriptor, got {arg!r}")
    fd = -100 if m.group(1) == "AT_FDCWD" else int(m.group(1))
    return fd, os.fsdecode(_hex(m.group(2)))


def _result(text: str) -> tuple[int, str]:
    m = _FDPATH.match(text)
    if m:
        return int(m.group(1)), os.fsdecode(_hex(m.group(2)))
    head = text.split(" ", 1)[0]
    try:
        return int(head, 0), ""
    except ValueError:
        return -1, ""


def _calls(trace_text: str) -> list[tuple[int, str, list[str], str]]:
    """The complete calls of a ``strace -f`` log, resumed halves joined: (pid, name, args, result)."""
    pending: dict[int, tuple[str, str]] = {}
    out = []
    for line in trace_text.splitlines():
        if line.endswith("<unfinished ...>"):
            pid, rest = line.split(" ", 1)
            rest = rest.strip()
            name, args = rest.split("(", 1)
            pending[int(pid)] = (name, args[: -len("<unfinished ...>")].rstrip().rstrip(","))
            continue
        m = _LINE.match(line)
        if not m:
            continue
        pid = int(m.group(1))
        if m.group(2):
            out.append((pid, m.group(2), _args(m.group(3)), m.group(4)))
        else:
            name, head = pending.pop(pid, (m.group(5), ""))
            tail = m.group(6)
            joined = head + ("," if head and tail and not tail.startswith(",") else "") + tail
            out.append((pid, name, _args(joined.lstrip(",")), m.group(7)))
    return out


@dataclass
class _Fd:
    path: str
    append: bool
    pos: int


class _Parser:
    """Turns calls into :class:`Op` while tracking descriptors, positions and file sizes."""

    def __init__(self, root: str, rec: Recording) -> None:
        self.root = root
        self.rec = rec
        self.fds: dict[int, _Fd] = {}
        self.sizes: dict[str, int] = {p: len(b) for p, b in rec.files.items()}
        for fd, d in rec.fds.items():
            self.fds[fd] = _Fd(d["path"], bool(d["flags"] & os.O_APPEND), int(d["pos"]))

    def rel(self, path: str) -> str | None:
        path = os.path.normpath(path)
        if path == self.root:
            return ""
        if path.startswith(self.root + "/"):
            return path[len(self.root) + 1 :]
        return None

    def emit(self, op: Op) -> None:
        self.rec.ops.append(op)

    def _moved(self, src: str, dst: str) -> None:
        # Descriptors and sizes follow a renamed file or directory.
        for fdesc in self.fds.values():
            if fdesc.path == src or fdesc.path.startswith(src + "/"):
                fdesc.path = dst + fdesc.path[len(src) :]
        for p in [p for p in self.sizes if p == src or p.startswith(src + "/")]:
            self.sizes[dst + p[len(src) :]] = self.sizes.pop(p)

    def call(self, name: str, args: list[str], result: str) -> None:
        ret, ret_path = _result(result)
        if ret < 0 and name not in ("close",):
            return
        if name in ("openat", "open", "creat"):
            if name == "openat":
                _, base = _fd_arg(args[0])
                path, flags = _path_arg(args[1], base), args[2]
            else:
                path = _path_arg(args[0], "/")
                flags = "O_WRONLY|O_CREAT|O_TRUNC" if name == "creat" else args[1]
            rel = self.rel(ret_path or path)
            if rel is None:
                self.fds.pop(ret, None)
                return
            created = "O_CREAT" in flags and rel not in self.sizes and "O_DIRECTORY" not in flags
            if created:
                self.emit(Op("create", rel))
                self.sizes[rel] = 0
            if "O_TRUNC" in flags and self.sizes.get(rel):
                self.emit(Op("truncate", rel, offset=0))
                self.sizes[rel] = 0
            self.fds[ret] = _Fd(rel, "O_APPEND" in flags, 0)
        elif name in ("close",):
            fd, _ = _fd_arg(args[0]) if "<" in args[0] else (int(args[0]), "")
            self.fds.pop(fd, None)
        elif name in ("dup", "dup2", "dup3") or (name == "fcntl" and "F_DUPFD" in args[1]):
            fd, _ = _fd_arg(args[0]) if "<" in args[0] else (int(args[0]), "")
            if fd in self.fds and ret >= 0:
                self.fds[ret] = self.fds[fd]
        elif name == "lseek":
            fd, _ = _fd_arg(args[0]) if "<" in args[0] else (int(args[0]), "")
            if fd in self.fds:
                self.fds[fd].pos = ret
        elif name in ("write", "pwrite64"):
            fd, _ = _fd_arg(args[0]) if "<" in args[0] else (int(args[0]), "")
            f = self.fds.get(fd)
            if f is None:
                return
            m = _STR.fullmatch(args[1])
            if not m or m.group(2):
                raise TraceError(f"{name} on {f.path}: data cut off in the trace")
            data = _hex(m.group(1))[:ret]
            size = self.sizes.get(f.path, 0)
            if name == "pwrite64":
                off = int(args[3])
            else:
                off = size if f.append else f.pos
                f.pos = off + len(data)
            self.emit(Op("write", f.path, offset=off, data=data, fd=fd))
            self.sizes[f.path] = max(size, off + len(data))
        elif name in ("fsync", "fdatasync"):
            fd, _ = _fd_arg(args[0]) if "<" in args[0] else (int(args[0]), "")
            if fd in self.fds:
                self.emit(Op("fsync", self.fds[fd].path, data_only=name == "fdatasync"))
            else:
                _, p = _fd_arg(args[0])
                rel = self.rel(p)
                if rel is not None:  # a directory opened before the begin mark
                    self.emit(Op("fsync", rel))
        elif name == "ftruncate":
            fd, _ = _fd_arg(args[0]) if "<" in args[0] else (int(args[0]), "")
            if fd in self.fds:
                self.emit(Op("truncate", self.fds[fd].path, offset=int(args[1])))
                self.sizes[self.fds[fd].path] = int(args[1])
        elif name in ("rename", "renameat", "renameat2", "link", "linkat"):
            if name in ("rename", "link"):
                src, dst = _path_arg(args[0], "/"), _path_arg(args[1], "/")
            else:
                src = _path_arg(args[1], _fd_arg(args[0])[1])
                dst = _path_arg(args[3], _fd_arg(args[2])[1])
            rs, rd = self.rel(src), self.rel(dst)
            if rs is None and rd is None:
                return
            if rs is None or rd is None:
                raise TraceError(f"{name} across the studied directory's edge: {src} -> {dst}")
            kind = "rename" if name.startswith("rename") else "link"
            self.emit(Op(kind, rs, dest=rd))
            if kind == "rename":
                self._moved(rs, rd)
            elif rs in self.sizes:
                self.sizes[rd] = self.sizes[rs]
        elif name in ("unlink", "unlinkat", "rmdir"):
            if name == "unlinkat":
                path = _path_arg(args[1], _fd_arg(args[0])[1])
                kind = "rmdir" if "AT_REMOVEDIR" in args[2] else "unlink"
            else:
                path, kind = _path_arg(args[0], "/"), name
            rel = self.rel(path)
            if rel is not None:
                self.emit(Op(kind, rel))
                self.sizes.pop(rel, None)
        elif name in ("mkdir", "mkdirat"):
            path = _path_arg(args[0], "/") if name == "mkdir" else _path_arg(args[1], _fd_arg(args[0])[1])
            rel = self.rel(path)
            if rel is not None:
                self.emit(Op("mkdir", rel))
        elif name == "sendfile" and "<" in args[0] and self.rel(_fd_arg(args[0])[1]) is not None:
            self._sendfile(args, ret)
        elif name in ("copy_file_range", "writev", "pwritev", "pwritev2"):
            out = args[2] if name == "copy_file_range" else args[0]
            if "<" in out and self.rel(_fd_arg(out)[1]) is not None:
                raise TraceError(f"{name} into the studied directory is not modelled: {_fd_arg(out)[1]}")
        elif name in ("truncate", "symlink", "symlinkat"):
            paths = [_path_arg(a, "/") for a in args if a.startswith('"')]
            if any(self.rel(p) is not None for p in paths[-1:]):
                raise TraceError(f"{name} in the studied directory is not modelled: {paths[-1]}")

    def _sendfile(self, args: list[str], ret: int) -> None:
        # shutil copies with sendfile: the bytes are the source's, read from the snapshot (a
        # source under the directory) or from the disk (a source outside it, left unchanged).
        fd, _ = _fd_arg(args[0])
        f = self.fds.get(fd)
        src = _fd_arg(args[1])[1]
        m = re.match(r"\[(\d+)\]", args[2])
        if f is None or not m:
            raise TraceError(f"sendfile into the studied directory without a known offset: {args[:3]}")
        rel = self.rel(src)
        content = self.rec.files[rel] if rel is not None else Path(src).read_bytes()
        start = int(m.group(1))
        data = content[start : start + ret]
        size = self.sizes.get(f.path, 0)
        off = size if f.append else f.pos
        f.pos = off + len(data)
        self.emit(Op("write", f.path, offset=off, data=data, fd=fd))
        self.sizes[f.path] = max(size, off + len(data))


def parse(trace_text: str, root: Path, marks: Path, rec: Recording) -> None:
    """Fill ``rec.ops`` from a trace: the calls after the begin mark on paths under ``root``."""
    parser = _Parser(os.path.realpath(root), rec)
    begun = False
    mark_prefix = os.path.realpath(marks) + "/"
    for _pid, name, args, result in _calls(trace_text):
        if name == "openat" and len(args) > 1 and args[1].startswith('"'):
            path = _path_arg(args[1], _fd_arg(args[0])[1])
            if path.startswith(mark_prefix):
                mark = path[len(mark_prefix) :]
                if mark == "begin":
                    begun = True
                elif begun and mark.startswith("ack-"):
                    rec.ops.append(Op("ack", label=rec.acks[int(mark[4:])]))
                continue
        if begun and name not in ("clone", "clone3", "fork", "vfork"):
            parser.call(name, args, result)
    if not begun:
        raise TraceError("the protocol never reached its begin mark")


def record(protocol: str, work: Path, *, drop: str = "", seed: int = 0, scale: int = 1) -> Recording:
    """Run ``protocol`` in a child under strace in ``work/root`` and return its recording.

    ``drop`` names an fsync the child leaves out (``kind[:n]``, see ``driver.py``), to show a
    checker can fail.
    """
    root, marks = work / "root", work / "marks"
    root.mkdir(parents=True)
    marks.mkdir()
    log = work / "strace.log"
    driver = Path(__file__).with_name("driver.py")
    cmd = [
        "strace", "-f", "-qq", "-y", "-xx", "-s", "1000000000", "-e", "signal=none", "-e", f"trace={TRACED}",
        "-o", str(log), sys.executable, str(driver), protocol, str(root), str(marks),
        "--seed", str(seed), "--scale", str(scale),
    ]  # fmt: skip
    if drop:
        cmd += ["--drop", drop]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "KURAHI_NATIVE": os.environ.get("KURAHI_NATIVE", "1")}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise TraceError(f"protocol {protocol} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    begin = json.loads((marks.parent / "begin.json").read_text())
    info = json.loads((marks.parent / "info.json").read_text())
    rec = Recording(
        files={p: base64.b64decode(b) for p, b in begin["files"].items()},
        dirs=begin["dirs"],
        links=begin["links"],
        fds={int(k): v for k, v in begin["fds"].items()},
        acks=info.pop("acks"),
        info=info,
        root=str(root),
    )
    parse(log.read_text(), root, marks, rec)
    return rec
