"""Durable files, the way every room that writes one goes.

Atomic replace and fsync policy, opening without following links out of a home,
cross-process lock files, and the leftovers an interrupted write leaves.
"""

from __future__ import annotations

from kurahi._lazy import lazy_getattr

TYPE_CHECKING = False  # not from typing: importing it costs ~8 ms a process that needs one name pays

if TYPE_CHECKING:
    from kurahi.fs.durable import FsyncPolicy
    from kurahi.fs.locks import FileLock

_WHERE = {"FileLock": "kurahi.fs.locks", "FsyncPolicy": "kurahi.fs.durable"}

__all__ = ["FileLock", "FsyncPolicy"]

__getattr__ = lazy_getattr(__name__, _WHERE)
