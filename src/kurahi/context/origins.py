"""Where each projected message comes from: the lineage tools' view of a path.

The lineage tools need the projection's bookkeeping, not only its messages: which entry a
marker or a phrase sits in, which entries an edit took out of the model's view, which edits
change nothing. :func:`effective_path` reads it off the projection itself
(:func:`kurahi.context.project.build_context` with ``with_entries``), so it cannot disagree
with what the model is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from kurahi.context.project import PathEntry, build_context
from kurahi.js.values import MISSING
from kurahi.pi.vocab import CONTEXT_EDIT

__all__ = ["EffectivePath", "Source", "effective_path"]


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
    """Path index of the newest compaction, if there is one."""
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


def effective_path(path: Sequence[PathEntry]) -> EffectivePath:
    """The projection of ``path`` (root first, the leaf last) with where each message comes from."""
    projected = build_context(path, with_entries=True).entries or []
    where = {id(e): i for i, e in enumerate(path)}
    sources = [Source(where[id(p.source)], p.source, p.part, len(p.messages), p.edit) for p in projected]
    applied = {id(s.edit) for s in sources if s.edit is not None}
    return EffectivePath(
        sources=sources,
        compaction_position=sources[0].position if sources and sources[0].part == "summary" else None,
        inert_edits=[i for i, e in enumerate(path) if e.type == CONTEXT_EDIT and id(e) not in applied],
    )
