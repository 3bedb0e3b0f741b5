"""One entry of a transcript, and a node of its tree: what the readers hand out.

Apart from :mod:`kurahi.pi.transcript` so that the tree (:mod:`kurahi.pi.tree`) can build
nodes without importing the reader that builds it: an :class:`Entry` reads its transcript
through :class:`EntrySource`, which :class:`~kurahi.pi.transcript.Transcript` is.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Protocol

import msgspec

from kurahi.js.values import MISSING

__all__ = ["Entry", "EntrySource", "TreeNode", "missing_if_unset"]


class EntrySource(Protocol):
    """What an :class:`Entry` reads of its transcript."""

    @property
    def _table(self) -> Any: ...

    def line_of(self, index: int) -> int:
        """1-based line number of entry ``index``."""
        ...

    def _materialize(self, index: int) -> dict[str, Any]: ...

    def raw_line(self, index: int) -> bytes:
        """Entry ``index``'s line as stored, without its newline."""
        ...


def missing_if_unset(value: Any) -> Any:
    """Map msgspec's ``UNSET`` to the ``MISSING`` sentinel used everywhere else."""
    return MISSING if value is msgspec.UNSET else value


class Entry:
    """One entry of a transcript, its JSON decoded on first use.

    Attributes:
        index: position among the non-header entries, in file order.
        line: 1-based line number in the file.
        type: the entry's ``type`` (``MISSING`` when absent).
        id: the entry's ``id`` (``MISSING`` when absent).
        parent_id: the entry's ``parentId`` (``None`` for a root, ``MISSING`` when absent).
    """

    __slots__ = ("__dict__", "_t", "id", "index", "parent_id", "raw_message", "type")

    def __init__(self, transcript: EntrySource, index: int) -> None:
        type_, id_, parent = transcript._table.row(index)
        self._t = transcript
        self.index = index
        self.type: Any = missing_if_unset(type_)
        self.id: Any = missing_if_unset(id_)
        self.parent_id: Any = missing_if_unset(parent)
        self.raw_message: Any = None
        """A reference to the stored bytes of the ``message`` value, when asked for and fit to
        copy as they are (:meth:`Transcript.path_entries` with ``raw_messages``)."""

    @cached_property
    def line(self) -> int:
        """1-based line number in the file."""
        return self._t.line_of(self.index)

    @cached_property
    def data(self) -> dict[str, Any]:
        """The entry as Pi holds it in memory (after in-memory migration)."""
        return self._t._materialize(self.index)

    @property
    def raw(self) -> bytes:
        """The entry's line exactly as stored, without its newline."""
        return self._t.raw_line(self.index)

    def __repr__(self) -> str:
        return f"Entry(line={self.line}, type={self.type!r}, id={self.id!r}, parent_id={self.parent_id!r})"


class TreeNode(msgspec.Struct):
    """A node of :meth:`Transcript.tree`: an entry, its label and its children (oldest first)."""

    entry: Entry
    children: list[TreeNode]
    label: str | None = None
