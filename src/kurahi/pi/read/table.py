"""The index of a transcript's entries, one protocol for both scanners.

A :class:`~kurahi.pi.transcript.Transcript` asks its index the same few questions
whoever built it: how many entries, an entry's ``type``, ``id`` and ``parentId``, where the
*last* entry with an id is (Pi's ``byId``), and the path from an entry up its parents. Two
implementations answer them:

* the C scanner's table (``kurahi.pi.read._native``), for every file it reads alone: every
  type and id a printable ASCII string, every parent a string or ``None``; it also knows
  where each line lies and which stored messages can be copied as they are
  (:class:`StoredTable`);
* :class:`PyTable`, over the skeletons of the Python scanner (no extension, a file with lines
  the C scanner hands back, a version 1 file migrated in memory), where an id may be any
  JSON value and is matched as a JavaScript ``Map`` matches keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any, Protocol

import msgspec

from kurahi.js.values import js_truthy
from kurahi.pi.read.scan import Skeleton, id_key

__all__ = ["EntryTable", "PyTable", "StoredTable", "index_ids"]


class EntryTable(Protocol):
    """What a transcript's index answers. Values absent from a line are ``msgspec.UNSET``."""

    def __len__(self) -> int:
        """Entries (lines other than the header and the skipped ones), in file order."""

    def row(self, k: int) -> tuple[Any, Any, Any]:
        """``(type, id, parentId)`` of entry ``k`` (``parentId`` ``None`` for a root)."""

    def get(self, entry_id: Any) -> int:
        """Position of the last entry whose id is ``entry_id`` as a ``Map`` matches it, or -1."""

    def walk(self, k: int) -> list[int] | None:
        """Positions from ``k`` up its parents (``k`` first), as Pi follows them; ``None`` on a loop.

        The chain ends at a parent that is absent, ``null`` or falsy, or not found.
        """

    def types(self) -> list[Any]:
        """Every entry's type, in order."""

    def ids(self) -> list[Any]:
        """Every entry's id, in order."""

    def parents(self) -> list[Any]:
        """Every entry's parent id, in order."""


class StoredTable(EntryTable, Protocol):
    """The C scanner's table, which also knows where each line lies in the file it read."""

    def span(self, k: int) -> tuple[int, int]:
        """``(offset, length)`` of entry ``k``'s line, newline excluded."""

    def entries(self, cls: type, indices: Sequence[int], transcript: Any, fd: int) -> list[Any]:
        """``cls`` objects for ``indices``, made in C; with ``fd >= 0`` each gets its ``raw_message``."""

    def stored(self, indices: Sequence[int], fd: int) -> list[Any]:
        """References to the stored ``message`` bytes of ``indices`` that may be copied as they are, else ``None``."""


def index_ids(ids: Sequence[Any]) -> dict[Any, int]:
    """Pi's ``byId`` as a dict: id key (:func:`~kurahi.pi.read.scan.id_key`) -> last position."""
    if all(type(k) is str for k in ids):
        return dict(zip(ids, range(len(ids)), strict=True))
    return {k if type(k) is str else id_key(k): i for i, k in enumerate(ids)}


_get_type = attrgetter("type")
_get_id = attrgetter("id")
_get_parent = attrgetter("parentId")


class PyTable:
    """An :class:`EntryTable` over skeletons in file order (``id`` of any JSON value).

    Args:
        skeletons: one per entry; ``msgspec.UNSET`` where a key is absent.
    """

    __slots__ = ("_by_id", "_sks")

    def __init__(self, skeletons: list[Skeleton]) -> None:
        self._sks = skeletons
        self._by_id: dict[Any, int] | None = None

    def __len__(self) -> int:
        return len(self._sks)

    def row(self, k: int) -> tuple[Any, Any, Any]:
        """See :meth:`EntryTable.row`."""
        sk = self._sks[k]
        return sk.type, sk.id, sk.parentId

    def get(self, entry_id: Any) -> int:
        """See :meth:`EntryTable.get`."""
        if self._by_id is None:
            # Built once: a dict of 200k ids costs about as much as 200 path lookups by search.
            self._by_id = index_ids(self.ids())
        return self._by_id.get(entry_id if type(entry_id) is str else id_key(entry_id), -1)

    def walk(self, k: int) -> list[int] | None:
        """See :meth:`EntryTable.walk`."""
        sks = self._sks
        out = [k]
        seen = {k}
        while True:
            pid = sks[k].parentId
            if pid is msgspec.UNSET or not (pid if type(pid) is str else js_truthy(pid)):
                return out
            k = self.get(pid)
            if k < 0:
                return out
            if k in seen:
                return None
            seen.add(k)
            out.append(k)

    def types(self) -> list[Any]:
        """See :meth:`EntryTable.types`."""
        return list(map(_get_type, self._sks))

    def ids(self) -> list[Any]:
        """See :meth:`EntryTable.ids`."""
        return list(map(_get_id, self._sks))

    def parents(self) -> list[Any]:
        """See :meth:`EntryTable.parents`."""
        return list(map(_get_parent, self._sks))
