"""One error tree for Kurahi.

Every error Kurahi raises on purpose is a :class:`KurahiError`. Errors carry the
file, line and field they are about, so a message can name what is wrong without
a traceback. Foreign errors (``OSError``, ``msgspec.DecodeError``) are translated
at the room boundary and chained with ``raise ... from exc``.

Hierarchy::

    KurahiError
    ├── StoreError                    the `store` room
    │   ├── TranscriptError           a transcript file (path, line)
    │   │   ├── NotASessionError      first parseable line is not a session header
    │   │   ├── TranscriptReadError   missing, a directory, unreadable, oversized line
    │   │   ├── TreeError             parent cycles, unknown entry ids
    │   │   │   ├── ParentCycleError
    │   │   │   └── EntryNotFoundError
    │   │   └── AppendError           an append could not be made durable
    │   ├── LockError                 lock files
    │   │   └── LockHeldError         another live process holds the lock
    │   └── CatalogError              sessions.json
    │       ├── CatalogCorruptError   exists but does not parse: never overwritten
    │       └── CatalogEntryError     an entry or key is not acceptable
    ├── LineageError                  the `lineage` room
    │   └── StitchError               sources that cannot be stitched as asked
    └── UsageError                    a caller passed something that cannot work
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "AppendError",
    "CatalogCorruptError",
    "CatalogEntryError",
    "CatalogError",
    "EntryNotFoundError",
    "KurahiError",
    "LineageError",
    "LockError",
    "LockHeldError",
    "NotASessionError",
    "ParentCycleError",
    "StitchError",
    "StoreError",
    "TranscriptError",
    "TranscriptReadError",
    "TreeError",
    "UsageError",
]


class KurahiError(Exception):
    """Base of every error Kurahi raises on purpose."""


class UsageError(KurahiError):
    """A caller asked for something that cannot work (bad option, bad value)."""


class StoreError(KurahiError):
    """Something about stored session data."""


class TranscriptError(StoreError):
    """A problem with one transcript file.

    Attributes:
        path: the transcript file, when known.
        line: the 1-based line number in that file, when the problem has one.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.detail = message
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        super().__init__(where + message)


class NotASessionError(TranscriptError):
    """The first parseable line of a file is not a session header (or the file is empty)."""


class TranscriptReadError(TranscriptError):
    """A transcript could not be read at all: missing, a directory, unreadable, oversized."""


class TreeError(TranscriptError):
    """The entry tree is not usable as asked."""


class ParentCycleError(TreeError):
    """Following ``parentId`` from an entry comes back to an entry already seen.

    Attributes:
        cycle: the entry ids that form the loop, in walk order.
    """

    def __init__(self, message: str, *, cycle: list[str], path: str | Path | None = None) -> None:
        self.cycle = cycle
        super().__init__(message, path=path)


class EntryNotFoundError(TreeError):
    """An entry id that is not in the transcript.

    Attributes:
        entry_id: the id that was asked for.
    """

    def __init__(self, entry_id: str, *, path: str | Path | None = None) -> None:
        self.entry_id = entry_id
        super().__init__(f"no entry with id {entry_id!r}", path=path)


class AppendError(TranscriptError):
    """An entry could not be appended durably; the file still holds every earlier entry."""


class LockError(StoreError):
    """A lock file could not be taken or released."""

    def __init__(self, message: str, *, path: str | Path | None = None) -> None:
        self.path = str(path) if path is not None else None
        super().__init__(f"{self.path}: {message}" if self.path else message)


class LockHeldError(LockError):
    """Another live process holds the lock.

    Attributes:
        holder_pid: the pid written by the holder, when it could be read.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, holder_pid: int | None = None) -> None:
        self.holder_pid = holder_pid
        super().__init__(message, path=path)


class CatalogError(StoreError):
    """A problem with a ``sessions.json`` catalog."""

    def __init__(self, message: str, *, path: str | Path | None = None, key: str | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.key = key
        where = f"{self.path}: " if self.path else ""
        what = f"key {key!r}: " if key is not None else ""
        super().__init__(where + what + message)


class CatalogCorruptError(CatalogError):
    """The catalog exists but does not parse as a JSON object; it is never overwritten."""


class CatalogEntryError(CatalogError):
    """A catalog key or entry is not acceptable."""


class LineageError(KurahiError):
    """Something about rebuilding one history from several transcripts."""


class StitchError(LineageError):
    """The sources cannot be stitched as asked; nothing was written.

    The same file twice, an output that exists, colliding ids, a later source whose root
    already has a parent, or one older than the source before it (without ``--force``).
    """
