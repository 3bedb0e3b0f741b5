"""Durable file-system primitives: whole-file atomic replace, directory fsync, fsync policy.

Everything that must survive a crash goes through here, so there is one place that
knows the order: write a temporary file, fsync it, rename it over the target, fsync
the directory. Tests inject faults by replacing the functions of :data:`ops`.

The time every ``fsync``/``fdatasync`` of :data:`ops` takes can be watched
(:func:`watch_syncs`): a gateway exports it as a metric. Nothing is timed while nobody watches.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

__all__ = [
    "FsyncPolicy",
    "Ops",
    "SyncWatcher",
    "append_durably",
    "atomic_write",
    "copy_durably",
    "file_sha256",
    "fsync_dir",
    "make_dirs",
    "ops",
    "watch_syncs",
    "write_new",
]


class FsyncPolicy(StrEnum):
    """When appended entries are forced to stable storage.

    ``always``: after every entry. ``turn``: when the caller ends a turn (``sync()``) and on
    close. ``never``: left to the OS. Each write reaches the kernel before an append returns
    whatever the policy, so a killed process loses nothing; the policy is about power loss.
    """

    ALWAYS = "always"
    TURN = "turn"
    NEVER = "never"


_FDATASYNC: Callable[[int], None] = getattr(os, "fdatasync", os.fsync)

SyncWatcher = Callable[[str, float], None]
"""Told ``("fsync" | "fdatasync", seconds)`` after each sync, from whichever thread made it."""

_watchers: list[SyncWatcher] = []


def watch_syncs(watcher: SyncWatcher) -> Callable[[], None]:
    """Have ``watcher`` told of every sync made through :data:`ops`; returns the function that stops it."""
    _watchers.append(watcher)

    def stop() -> None:
        with contextlib.suppress(ValueError):
            _watchers.remove(watcher)

    return stop


def _timed(kind: str, sync: Callable[[int], None]) -> Callable[[int], None]:
    def call(fd: int) -> None:
        if not _watchers:
            sync(fd)
            return
        t0 = time.perf_counter()
        sync(fd)
        elapsed = time.perf_counter() - t0
        for w in tuple(_watchers):
            w(kind, elapsed)

    return call


class Ops:
    """The system calls durable code uses, replaceable for fault injection in tests."""

    def __init__(self) -> None:
        self.write: Callable[[int, bytes], int] = os.write
        self.fsync: Callable[[int], None] = _timed("fsync", os.fsync)
        self.fdatasync: Callable[[int], None] = _timed("fdatasync", _FDATASYNC)
        self.rename: Callable[[str, str], None] = os.replace
        self.ftruncate: Callable[[int, int], None] = os.ftruncate


ops = Ops()
"""The live operations. Tests swap attributes to raise ENOSPC, EIO or short writes."""


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Fsync a directory so that a rename or a new file in it survives a power loss."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        ops.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(directory: str | os.PathLike[str], mode: int = 0o700) -> None:
    """Make ``directory`` and its missing parents so that they survive a power loss.

    ``mkdir`` is a change to the parent directory: until the parent is fsynced, a power cut may
    take the new directory, and every file durably written inside it, away. Each directory made
    here is fsynced, and so is its parent.
    """
    target = Path(directory)
    missing: list[Path] = []
    while not target.is_dir():
        missing.append(target)
        if target.parent == target:  # pragma: no cover - the root always exists
            break
        target = target.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, mode)
        except FileExistsError:
            if not d.is_dir():
                raise
        fsync_dir(d.parent)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte: a short write is continued, an error raised."""
    view = memoryview(data)
    while view:
        n = ops.write(fd, view)  # type: ignore[arg-type]
        if n <= 0:  # pragma: no cover - write(2) returns >0 or raises for regular files
            raise OSError(5, "write returned 0")
        view = view[n:]


def append_durably(fd: int, data: bytes, *, size_before: int, durable: bool) -> None:
    """Append ``data`` to an ``O_APPEND`` file this process alone writes, all or nothing.

    Every writer of an append-only file (transcripts, journals, the audit chain) goes through
    here, so fault injection on :data:`ops` reaches all of them. A short write is continued;
    with ``durable`` the data is flushed with ``fdatasync`` before this returns.

    Raises:
        OSError: the append failed. The file was cut back to ``size_before`` (and that cut
            flushed, when ``durable``), so it holds exactly what it held before; the
            exception's ``cut_back`` attribute is ``False`` when even the cut failed, and
            the caller must then start its next line on a fresh line.
    """
    try:
        write_all(fd, data)
        if durable:
            ops.fdatasync(fd)
    except OSError as exc:
        cut = True
        try:
            ops.ftruncate(fd, size_before)
            if durable:
                ops.fsync(fd)
        except OSError:
            cut = False
        exc.cut_back = cut  # type: ignore[attr-defined]
        raise


def write_new(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o600) -> None:
    """Write ``data`` to a new temporary file ``path`` and fsync it (no directory fsync: it is renamed or linked next).

    A file left at ``path`` by a process that died before renaming it was never in place,
    so it is removed first; one this call cannot finish (a full disk) is removed before the
    error goes up, so a failed write leaves no file behind.
    """
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        try:
            write_all(fd, data)
            ops.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


def atomic_write(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` atomically: temp file, fsync, rename, directory fsync.

    The temporary file sits in the same directory (so the rename is atomic) and is removed
    if anything fails; the old content stays in place until the rename.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), mode)
    try:
        try:
            write_all(fd, data)
            ops.fsync(fd)
        finally:
            os.close(fd)
        ops.rename(str(tmp), str(target))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def copy_durably(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
    """Copy ``src`` to ``dst`` with its metadata (``shutil.copy2``), then make the copy durable.

    Without the fsyncs a power cut can leave the copy's name with fewer bytes than ``src``,
    or no copy at all, after the caller has reported it written.
    """
    shutil.copy2(src, dst)
    fd = os.open(dst, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        ops.fsync(fd)
    finally:
        os.close(fd)
    fsync_dir(Path(dst).parent)


def file_sha256(path: str | os.PathLike[str], limit: int | None = None) -> str:
    """The lowercase hex SHA-256 of a file's bytes (its first ``limit`` bytes), read in 1 MiB blocks."""
    h = hashlib.sha256()
    remaining = float("inf") if limit is None else limit
    with open(path, "rb") as fh:
        while remaining > 0 and (block := fh.read(int(min(remaining, 1 << 20)))):
            h.update(block)
            remaining -= len(block)
    return h.hexdigest()
