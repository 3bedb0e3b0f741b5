"""Temporary files an interrupted atomic write left behind, found and removed at start.

Every whole-file replace (:func:`kurahi.fs.durable.atomic_write`, transcript imports, the
signing key) stages its bytes in ``.<name>.<random hex>.tmp`` beside the target and renames
or links it into place. A crash between the two leaves the temporary file: harmless, but it
sits in the workspace, where the ``list`` tool shows it to the model, and the next write
picks a fresh name, so they pile up. :func:`remove_leftovers` removes them when a gateway
starts.

Only Kurahi's own names are touched: a dot, the target's name, a dot, exactly 8 or 12
lowercase hex digits (what the writers draw), ``.tmp``; a regular file (never a symlink,
never a directory), and older than :data:`LEFTOVER_AGE_S`, so the temporary file of a write
in flight in another process (a CLI command under the running gateway) is left to finish.
Directories are walked without following symlinks. Other names, however similar, are
the owner's and stay.
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

__all__ = ["LEFTOVER_AGE_S", "is_leftover_name", "remove_leftovers"]

LEFTOVER_AGE_S = 60.0
"""A temporary file younger than this may belong to a write still in flight."""

_NAME = re.compile(r"^\.(?P<target>[^/]+)\.(?:[0-9a-f]{8}|[0-9a-f]{12})\.tmp$")


def is_leftover_name(name: str) -> bool:
    """Whether ``name`` is one Kurahi's atomic writers give their temporary files."""
    return _NAME.match(name) is not None


def _candidates(directory: Path, recursive: bool) -> Iterator[Path]:
    try:
        entries = list(os.scandir(directory))
    except OSError:  # missing, not a directory, unreadable: nothing of ours to clean
        return
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False):
                if recursive:
                    yield from _candidates(Path(e.path), True)
            elif is_leftover_name(e.name):
                yield Path(e.path)
        except OSError:
            continue


def remove_leftovers(
    directories: Iterable[tuple[Path, bool]], *, now: float | None = None, min_age_s: float = LEFTOVER_AGE_S
) -> list[Path]:
    """Remove Kurahi's leftover temporary files; returns the paths removed.

    Args:
        directories: ``(directory, recursive)`` pairs to look in.
        now: the current time (``time.time()`` by default).
        min_age_s: leave younger files alone (a write in flight).
    """
    cutoff = (time.time() if now is None else now) - min_age_s
    removed: list[Path] = []
    for directory, recursive in directories:
        for p in _candidates(directory, recursive):
            try:
                st = os.lstat(p)
                if not stat.S_ISREG(st.st_mode) or st.st_mtime > cutoff:
                    continue
                os.unlink(p)
            except OSError:
                continue
            removed.append(p)
    return removed
