"""Skeletons kept as columns instead of one object per entry, served on demand.

The two-process scan sends its half back as three joined strings (types, ids, parent ids)
when every value is a plain string, which costs a fraction of sending 100k objects; the
joined ids go straight into the id index. The C scanner keeps its columns in C
(:class:`TableSkeletons`), with its own id index.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any, overload

from kurahi.store.scan import Skeleton

__all__ = ["NONE_MARK", "SEP", "ColumnSkeletons", "TableSkeletons", "join_columns"]

SEP = "\x00"
"""Separates values in a joined column (a character no plain id or type contains)."""
NONE_MARK = "\x01"
"""Stands for ``parentId: null`` in a joined column."""

_get_type = attrgetter("type")
_get_id = attrgetter("id")
_get_parent = attrgetter("parentId")


def join_columns(sks: Sequence[Any]) -> tuple[str, str, str] | None:
    """``(types, ids, parents)`` joined, or ``None`` when some value is not a plain string."""
    types = list(map(_get_type, sks))
    ids = list(map(_get_id, sks))
    parents = [NONE_MARK if p is None else p for p in map(_get_parent, sks)]
    if not sks:
        return "", "", ""
    for col in (types, ids, parents):
        if set(map(type, col)) != {str}:
            return None
    joined = (SEP.join(types), SEP.join(ids), SEP.join(parents))
    for text, col in zip(joined, (types, ids, parents), strict=True):
        if text.count(SEP) != len(col) - 1 or (col is not parents and NONE_MARK in text):
            return None
    return joined


def _make(type_: str, id_: str, parent: str) -> Skeleton:
    return Skeleton(type=type_, id=id_, parentId=None if parent == NONE_MARK else parent)


class ColumnSkeletons(Sequence[Any]):
    """Skeleton objects for a head part, columns for a tail part; indexable as one sequence."""

    def __init__(self, head: list[Any], types: str, ids: str, parents: str) -> None:
        self.head = head
        self.tail_ids_joined = ids
        self._types = types.split(SEP) if ids else []
        self._ids = ids.split(SEP) if ids else []
        self._parents = parents.split(SEP) if ids else []

    def __len__(self) -> int:
        return len(self.head) + len(self._ids)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        n = len(self)
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(index)
        h = len(self.head)
        if index < h:
            return self.head[index]
        j = index - h
        return _make(self._types[j], self._ids[j], self._parents[j])

    def __iter__(self) -> Iterator[Any]:
        return chain(self.head, map(_make, self._types, self._ids, self._parents))

    def id_list(self) -> list[Any]:
        """Every id in order, without building the tail's objects."""
        return [*map(_get_id, self.head), *self._ids]


class TableSkeletons(Sequence[Any]):
    """Every entry of a file from a table of the C scanner (:mod:`kurahi.store.native`).

    Args:
        table: ``len()``, ``row(k) -> (type, id, parent)``, ``types()``, ``ids()``,
            ``parents()`` and ``get(id) -> position | -1`` (the last entry with that id).
    """

    def __init__(self, table: Any) -> None:
        self.table = table

    def __len__(self) -> int:
        return len(self.table)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self.table)
        return Skeleton(*self.table.row(index))

    def __iter__(self) -> Iterator[Any]:
        return map(Skeleton, self.table.types(), self.table.ids(), self.table.parents())

    def id_list(self) -> list[Any]:
        """Every id in order."""
        ids: list[Any] = self.table.ids()
        return ids
