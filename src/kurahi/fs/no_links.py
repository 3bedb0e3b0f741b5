"""Refuse a symlink on the way from a state dir to what is written in it.

A writer is given a state dir and writes below it: ``agents/<id>/sessions/sessions.json``,
a transcript beside it, ``agents/<id>/agent/openclaw-agent.sqlite``. If ``agents``, the
agent's folder, ``sessions``, ``agent`` or the store itself is a symlink, the write lands
wherever the link points: outside the dir the user named, in a file nobody meant to touch.
:func:`refuse_links` looks at each name on the way with ``lstat`` (a link is never followed to
look) and refuses the first that is a symlink, before anything is opened. The state dir
itself is the user's choice and may be reached through a link; only what is below it counts.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from kurahi.errors import UnsafeFileError

__all__ = ["refuse_links"]


def refuse_links(root: str | os.PathLike[str], relative: str | PurePosixPath, *, also: tuple[str, ...] = ()) -> None:
    """Raise when a name on the way from ``root`` to ``root/relative`` is a symlink.

    Args:
        root: the state dir (it may itself be a link: the user gave it).
        relative: the path below it that will be written (``agents/main/agent/openclaw-agent.sqlite``).
        also: names beside the last one that are written too (``-wal``, ``-shm`` suffixes of a
            database: SQLite opens them by name), checked as well.

    A name that does not exist ends the walk: nothing is below it to reach through a link,
    and whoever opens it reports it missing.

    Raises:
        UnsafeFileError: the first symlink (or a non-folder where a folder must be), named.
    """
    base = Path(root)
    parts = PurePosixPath(relative).parts
    path = base
    for n, part in enumerate(parts):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        except OSError as exc:  # by hand: the message ends with what it promises (nothing changed)
            raise UnsafeFileError(f"cannot look at it: {exc.strerror}; nothing was changed", path=path) from exc
        if stat.S_ISLNK(mode):
            raise UnsafeFileError(
                f"is a symlink; Kurahi never writes through a link out of the state dir {base} "
                "(replace it with the folder or file itself); nothing was changed",
                path=path,
            )
        if n < len(parts) - 1 and not stat.S_ISDIR(mode):
            raise UnsafeFileError("is not a folder; nothing was changed", path=path)
    for suffix in also:
        side = path.with_name(path.name + suffix)
        if os.path.islink(side):
            raise UnsafeFileError(
                f"is a symlink; SQLite would write through it out of the state dir {base}; nothing was changed",
                path=side,
            )
