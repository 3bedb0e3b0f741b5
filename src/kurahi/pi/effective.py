"""Which entries of a path make up the model's context, and which ``context_edit`` shapes each.

Pi 1.6.0's ``buildContextEntries`` and the edit lookup of ``buildSessionProjection``, on
positions, done once for every reader: the projection (:mod:`kurahi.context.project`), the
writer's fold of the system messages into a compaction (:mod:`kurahi.pi.system`) and,
through the projection, the lineage tools' view (:func:`kurahi.context.origins.effective_path`).

1. the context entries: with no compaction on the path, the whole path; otherwise the newest
   compaction, then the entries from its ``firstKeptEntryId`` up to where Pi locates it (the
   first entry with its id) with system-role messages left out (the compaction carries the
   system prompt in its ``systemMessage``), then everything after that;
2. the edits: every ``context_edit`` among the context entries, the later one winning per
   ``targetId``.
"""

from __future__ import annotations

from kurahi._record import Record
from kurahi.js.values import MISSING
from kurahi.pi.vocab import COMPACTION, CONTEXT_EDIT, CUSTOM_MESSAGE, FIRST_KEPT_ENTRY_ID, MESSAGE, TARGET_ID

# The projection imports this module: no typing or msgspec at run time (see kurahi._record).
TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from kurahi.pi.shapes import PathLike

__all__ = ["EDITABLE_ROLES", "ContextEntries", "PathLike", "context_entries", "id_key", "is_editable"]

EDITABLE_ROLES = ("user", "assistant", "toolResult")
"""Message roles whose content a ``context_edit`` may replace (``custom_message`` entries too)."""


def __getattr__(name: str) -> Any:
    # PathLike lives with the other Protocols (kurahi.pi.shapes): typing loads on first use.
    if name == "PathLike":
        from kurahi.pi import shapes

        return shapes.PathLike
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def id_key(value: Any) -> Any:
    """:func:`kurahi.pi.read.scan.id_key`, which loads the scanner (and msgspec) only for an id that is not a string."""
    if type(value) is str:
        return value
    from kurahi.pi.read.scan import id_key as full

    return full(value)


def _role(entry: PathLike) -> Any:
    if entry.type != MESSAGE:
        return MISSING
    msg = entry.data.get("message")
    return msg.get("role", MISSING) if isinstance(msg, dict) else MISSING


def is_editable(entry: PathLike) -> bool:
    """Whether Pi 1.6.0's ``appendContextEdit`` accepts ``entry`` as a target."""
    return entry.type == CUSTOM_MESSAGE or (entry.type == MESSAGE and _role(entry) in EDITABLE_ROLES)


class ContextEntries(Record):
    """The context entries of a path, as positions on it (0 = root).

    Attributes:
        compaction: position of the newest compaction, -1 when the path has none.
        retained: positions kept from before the compaction, in order.
        later: first position of the entries after the compaction (0: the whole path).
        edits: ``id_key(targetId)`` to the position of the edit that applies.
    """

    __slots__ = ("compaction", "edits", "later", "retained")

    def __init__(
        self,
        compaction: int = -1,
        retained: list[int] | None = None,
        later: int = 0,
        edits: dict[Any, int] | None = None,
    ) -> None:
        self.compaction = compaction
        self.retained: list[int] = [] if retained is None else retained
        self.later = later
        self.edits: dict[Any, int] = {} if edits is None else edits

    def positions(self, size: int) -> list[int]:
        """Every context entry's position in projection order, for a path of ``size`` entries."""
        if self.compaction < 0:
            return list(range(size))
        return [self.compaction, *self.retained, *range(self.later, size)]

    def part(self, k: int) -> str:
        """What the ``k``-th context entry is: ``messages`` (no compaction), ``summary``, ``retained`` or ``later``."""
        if self.compaction < 0:
            return "messages"
        return "summary" if k == 0 else "retained" if k <= len(self.retained) else "later"


def _is_system(entry: PathLike) -> bool:
    return bool(entry.type == MESSAGE and _role(entry) == "system")


def context_entries(
    path: Sequence[PathLike], *, newest_compaction: int | None = None, edits: bool = True
) -> ContextEntries:
    """Pi 1.6.0's context entries of ``path`` (root first) and the edits among them.

    Args:
        path: the path, or any tail of it that holds the newest compaction and its first
            kept entry (the projection walks only that far up).
        newest_compaction: the newest compaction's position when the caller already knows
            it (-1: none); otherwise the path is searched.
        edits: look for ``context_edit`` entries (a caller that saw none passes ``False``).
    """
    if newest_compaction is None:
        newest_compaction = next((i for i in range(len(path) - 1, -1, -1) if path[i].type == COMPACTION), -1)
    out = ContextEntries()
    if newest_compaction >= 0:
        compaction = path[newest_compaction]
        out.compaction = newest_compaction
        # Pi finds the compaction again by id from the root: the first entry with that id.
        key = id_key(compaction.id)
        at = next(i for i, e in enumerate(path) if e is compaction or id_key(e.id) == key)
        first_kept = id_key(compaction.data.get(FIRST_KEPT_ENTRY_ID, MISSING))
        found = False
        for i in range(at):
            e = path[i]
            if not found and id_key(e.id) == first_kept:
                found = True
            if found and not _is_system(e):
                out.retained.append(i)
        out.later = at + 1
    if edits:
        for i in out.positions(len(path)):
            e = path[i]
            if e.type == CONTEXT_EDIT:
                out.edits[id_key(e.data.get(TARGET_ID, MISSING))] = i  # the latest wins
    return out
