"""Which path entries the model sees, and which ``context_edit`` shapes each (Pi 1.6.0).

Pi 1.6.0's ``buildSessionProjection`` keeps, for every message it sends, the entry it came
from. The lineage tools need exactly that bookkeeping (which entry a marker or a phrase
sits in, which entries an edit took out of the model's view) without the messages
themselves, so this module follows Pi's steps on entry *shapes* only:

1. the context entries: with no compaction on the path, the whole path; otherwise the
   newest compaction, then the entries from its ``firstKeptEntryId`` up to it (system-role
   messages left out: the compaction carries the system prompt in its ``systemMessage``),
   then everything after it;
2. the edits: every ``context_edit`` among the context entries, the later one winning per
   ``targetId``;
3. what each context entry contributes: a ``message`` one message, a ``custom_message``
   one, a ``branch_summary`` one when its summary is truthy, the newest compaction its
   summary (and its ``systemMessage`` before it when truthy), an older compaction that
   lies inside the retained range nothing; an edit with ``replacement: null`` makes it
   nothing.

The messages come from :mod:`kurahi.context` (the projection); :class:`EffectivePath`
says where each of them came from, and lines up with them one to one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import msgspec

from kurahi.jsvalues import MISSING, js_truthy
from kurahi.store.scan import id_key

__all__ = ["EDITABLE_ROLES", "EffectivePath", "PathLike", "Source", "effective_path", "is_editable"]

EDITABLE_ROLES = ("user", "assistant", "toolResult")
"""Message roles whose content a ``context_edit`` may replace (``custom_message`` entries too)."""


class PathLike(Protocol):
    """What this module reads of an entry: its type and id up front, its JSON on demand."""

    @property
    def type(self) -> Any:
        """The entry type (``MISSING`` when absent)."""

    @property
    def id(self) -> Any:
        """The entry id (``MISSING`` when absent)."""

    @property
    def data(self) -> dict[str, Any]:
        """The full entry."""


def _role(entry: PathLike) -> Any:
    if entry.type != "message":
        return MISSING
    msg = entry.data.get("message")
    return msg.get("role", MISSING) if isinstance(msg, dict) else MISSING


def is_editable(entry: PathLike) -> bool:
    """Whether Pi 1.6.0's ``appendContextEdit`` accepts ``entry`` as a target."""
    return entry.type == "custom_message" or (entry.type == "message" and _role(entry) in EDITABLE_ROLES)


class Source(msgspec.Struct):
    """One context entry: where it is on the path and what it gives the model."""

    position: int
    """Index on the path (0 = root)."""
    entry: Any
    """The path entry itself."""
    part: str
    """``messages`` (no compaction), ``summary``, ``retained`` or ``later``."""
    messages: int
    """Messages it contributes after its edit (0 when an edit removed it)."""
    edit: Any = None
    """The ``context_edit`` entry applied to it, if any."""

    @property
    def removed(self) -> bool:
        """An edit with ``replacement: null`` took it out of the model's view."""
        return self.edit is not None and self.edit.data.get("replacement", MISSING) is None


class EffectivePath(msgspec.Struct):
    """The path's context entries in projection order, and the edits that apply."""

    sources: list[Source] = msgspec.field(default_factory=list)
    compaction_position: int | None = None
    """Path index of the entry Pi locates the newest compaction at, if there is one."""
    excluded_system: list[int] = msgspec.field(default_factory=list)
    """Path indices of system-role messages in the retained range (left out of the context)."""
    inert_edits: list[int] = msgspec.field(default_factory=list)
    """Path indices of ``context_edit`` entries that change nothing: their target is not a
    context entry (another branch, compacted away, unknown), or a later edit of the same
    target supersedes them, or they lie outside the context entries themselves."""

    @property
    def message_count(self) -> int:
        """Messages the projection holds."""
        return sum(s.messages for s in self.sources)

    def message_sources(self) -> list[Source]:
        """The source of each projected message, in order.

        A compaction with a ``systemMessage`` appears twice: its system message, then its summary.
        """
        out: list[Source] = []
        for s in self.sources:
            out.extend([s] * s.messages)
        return out

    def removed(self) -> list[Source]:
        """Context entries an edit took out of the model's view."""
        return [s for s in self.sources if s.removed]

    def replaced(self) -> list[Source]:
        """Context entries whose content an edit replaced."""
        return [s for s in self.sources if s.edit is not None and not s.removed]

    def in_view(self, entry_id: Any) -> bool:
        """Whether the entry with this id contributes a message (after edits)."""
        key = id_key(entry_id)
        return any(s.messages and id_key(s.entry.id) == key for s in self.sources)


def _truthy(value: Any) -> bool:
    return value is not MISSING and js_truthy(value)  # undefined is falsy too


def _base_count(entry: PathLike, first: bool) -> int:
    t = entry.type
    if t == "message":
        return 1 if "message" in entry.data else 0  # Kurahi skips a message entry without one
    if t == "custom_message":
        return 1
    if t == "branch_summary":
        return 1 if _truthy(entry.data.get("summary", MISSING)) else 0
    if t == "compaction":
        # Only the newest compaction, first among the context entries, speaks (1.6.0).
        return (2 if _truthy(entry.data.get("systemMessage", MISSING)) else 1) if first else 0
    return 0


def effective_path(path: Sequence[PathLike]) -> EffectivePath:
    """Follow Pi 1.6.0's ``buildContextEntries`` and ``buildSessionProjection`` on ``path`` (root first)."""
    out = EffectivePath()
    comp_pos = max((i for i, e in enumerate(path) if e.type == "compaction"), default=-1)
    picked: list[tuple[int, str]] = []
    if comp_pos < 0:
        picked = [(i, "messages") for i in range(len(path))]
    else:
        compaction = path[comp_pos]
        key = id_key(compaction.id)
        # Pi finds the compaction again by id from the root: the first entry with that id.
        at = next((i for i, e in enumerate(path) if id_key(e.id) == key), comp_pos)
        out.compaction_position = at
        picked.append((comp_pos, "summary"))
        first_kept = id_key(compaction.data.get("firstKeptEntryId", MISSING))
        found = False
        for i in range(at):
            e = path[i]
            if not found and id_key(e.id) == first_kept:
                found = True
            if found:
                if e.type == "message" and _role(e) == "system":
                    out.excluded_system.append(i)
                else:
                    picked.append((i, "retained"))
        picked.extend((i, "later") for i in range(at + 1, len(path)))
    edits: dict[Any, int] = {}
    for i, _ in picked:
        if path[i].type == "context_edit":
            edits[id_key(path[i].data.get("targetId", MISSING))] = i
    used: set[int] = set()
    for k, (i, part) in enumerate(picked):
        e = path[i]
        edit_at = edits.get(id_key(e.id))
        count = _base_count(e, k == 0 and part == "summary")
        edit = path[edit_at] if edit_at is not None else None
        if edit is not None:
            used.add(edit_at)  # type: ignore[arg-type]
            if edit.data.get("replacement", MISSING) is None:
                count = 0
        out.sources.append(Source(i, e, part, count, edit))
    out.inert_edits = [i for i, e in enumerate(path) if e.type == "context_edit" and i not in used]
    return out
