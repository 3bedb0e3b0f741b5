"""Opening the files of a home without following a link out of it.

A home is the owner's, but its files can be damaged or hand-edited: a lock file replaced by
a symlink to ``~/.bashrc``, the audit chain by a link to another file, ``devices.json`` by a
directory. Whoever then opens the name for writing would truncate, append to or ``chmod``
whatever the link points at. Every file Kurahi writes in place (lock files, the audit chain,
the journals, transcripts) and the files it reads at start are opened here: with
``O_NOFOLLOW`` (a symlink is refused by the kernel, atomically, not by a check that a race
could slip past) and ``O_NONBLOCK`` (a FIFO planted in place of a file does not hang the
open), then checked to be a regular file. Anything else is an
:class:`~kurahi.errors.UnsafeFileError` naming the file and what it is.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from kurahi.errors import UnsafeFileError

__all__ = ["home_dir", "open_regular", "read_regular"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_regular(
    path: str | os.PathLike[str], flags: int, mode: int = 0o600, *, what: str = "file", single_link: bool = False
) -> int:
    """Open a regular file of the home, never through a symlink; returns the descriptor.

    Args:
        path: the file.
        flags: ``os.O_*`` flags (``O_NOFOLLOW``, ``O_CLOEXEC`` and ``O_NONBLOCK`` are added).
        mode: the mode of a file ``O_CREAT`` makes.
        what: what the file is, for messages (``the audit chain``).
        single_link: also refuse a file with other hard links (for files that are
            truncated, such as lock files: a hard link would carry the damage elsewhere).

    Raises:
        FileNotFoundError: it does not exist (and ``O_CREAT`` was not given).
        UnsafeFileError: a symlink, a directory, a FIFO or anything but a regular file.
        OSError: any other reason the kernel gives (permissions, ENOSPC).
    """
    p = Path(path)
    try:
        fd = os.open(p, flags | _NOFOLLOW | _CLOEXEC | _NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(
                f"{what} is a symlink; Kurahi never follows a link out of its home: remove it", path=p
            ) from None
        if exc.errno == errno.EISDIR:
            raise UnsafeFileError(f"{what} is a directory; remove or move it", path=p) from None
        if exc.errno == errno.ENXIO:  # O_WRONLY|O_NONBLOCK on a FIFO without a reader
            raise UnsafeFileError(f"{what} is a FIFO; remove it", path=p) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFileError(f"{what} is {_kind(st.st_mode)}; remove or move it", path=p)
        if single_link and st.st_nlink > 1:
            raise UnsafeFileError(
                f"{what} has {st.st_nlink - 1} other hard link(s), so writing it would change another file; remove it",
                path=p,
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], *, what: str = "file", limit: int | None = None) -> bytes | None:
    """The bytes of a regular file of the home (its first ``limit + 1`` with a limit); ``None`` if missing.

    Raises:
        UnsafeFileError: a symlink, a directory or anything but a regular file.
        OSError: it cannot be read.
    """
    try:
        fd = open_regular(path, os.O_RDONLY, what=what)
    except FileNotFoundError:
        return None
    chunks: list[bytes] = []
    got = 0
    try:
        while limit is None or got <= limit:
            block = os.read(fd, 1 << 20 if limit is None else min(1 << 20, limit + 1 - got))
            if not block:
                break
            chunks.append(block)
            got += len(block)
    finally:
        os.close(fd)
    return b"".join(chunks)


def home_dir(path: str | os.PathLike[str], *, what: str = "directory") -> Path:
    """A directory of the home (``run/``), made ``0700`` when missing; never a symlink or a file.

    A regular file or a symlink where the directory belongs is refused, not replaced or
    followed: a link would put what is written there outside the home.

    Raises:
        UnsafeFileError: something other than a directory has the name (left as it is).
        OSError: it cannot be made (permissions, a missing parent, ENOSPC).
    """
    p = Path(path)
    with contextlib.suppress(FileExistsError):
        os.mkdir(p, 0o700)
    st = os.lstat(p)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeFileError(f"{what} is a symlink; refused, never followed (replace it with a directory)", path=p)
    if not stat.S_ISDIR(st.st_mode):
        kind = "a regular file" if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)
        raise UnsafeFileError(f"{what} is {kind}, not a directory; move it aside (nothing was changed)", path=p)
    return p
