"""Files the viewer reads from the home's ``reports/`` and ``repairs/`` folders, never through a symlink.

Each folder is opened with ``O_NOFOLLOW | O_DIRECTORY`` and every name below it relative to
its descriptor, so a symlink anywhere on the way (planted to point out of the home) is
refused, not followed, whatever it points at; a check-then-open race cannot swap one in.
Names come from directory listings only, never from a request, and requests name an
entry by a folder name that must be one of them.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path

from kurahi.errors import UsageError
from kurahi.fs.os_errors import os_error

__all__ = ["NAME", "list_folders", "read_file"]

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
"""What a report or repair folder may be called (anything else is not listed)."""

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def list_folders(root: Path) -> list[str]:
    """Sub-folders of ``root`` (itself not a symlink) that are real folders with plain names, sorted."""
    try:
        fd = os.open(root, _DIR)
    except OSError:
        return []
    try:
        out = []
        for name in os.listdir(fd):
            if not NAME.match(name):
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                out.append(name)
        return sorted(out)
    finally:
        os.close(fd)


def read_file(root: Path, *parts: str, limit: int) -> bytes:
    """The bytes of ``root/parts...``, no component a symlink, at most ``limit`` bytes.

    Raises:
        FileNotFoundError: it does not exist.
        UsageError: a symlink on the way, not a regular file, or larger than ``limit``.
    """
    fds: list[int] = []
    try:
        try:
            fds.append(os.open(root, _DIR))
            for part in parts[:-1]:
                fds.append(os.open(part, _DIR, dir_fd=fds[-1]))
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=fds[-1])
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                raise FileNotFoundError(os.path.join(*parts)) from None
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise UsageError(f"{'/'.join(parts)}: a symlink or not a folder on the way; not followed") from None
            raise os_error(UsageError, "cannot open", exc, path="/".join(parts)) from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise UsageError(f"{'/'.join(parts)}: not a regular file")
            if st.st_size > limit:
                raise UsageError(f"{'/'.join(parts)}: {st.st_size} bytes, over the viewer's limit of {limit}")
            return f.read(limit + 1)[:limit]
    finally:
        for d in fds:
            os.close(d)
