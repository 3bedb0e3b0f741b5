"""The rows of a session as ``claude --resume`` links them: its uuid map, the leaf it starts from, the walk back.

The model of the loader, as measured on Claude Code 2.1.332 (each step names the fact of
:class:`~kurahi.runtimes.claude.versions.Release` it rests on):

- **The map.** Rows of the chain's types (``user``, ``assistant``, ``attachment``, ``system``,
  ``progress``) with a uuid, by uuid; of two rows with one uuid the later wins, parent and
  content (``later_duplicate_wins``; :attr:`Graph.duplicates` names them).
- **The leaf** (``leaf_from_last_prompt``): the row the last ``last-prompt`` row's ``leafUuid``
  names, when that row is a leaf (no row hangs under it); a ``leafUuid`` naming an inner row is
  ignored. Else the newest leaf in file order (not by timestamps).
- **The walk** goes up ``parentUuid`` to a row without one. A ``parentUuid`` naming a uuid the
  map lacks (a torn line, a row cut out, a row only in a subagent's file) is *bridged* to the
  nearest earlier conversation row in file order (``bridges_missing_parent``): nothing is lost
  there. ``progress`` and subagent (``isSidechain``) rows are walked through like any other.
- **The splice** (``splices_preserved_tail``): when the walk ends at a ``compact_boundary`` (or
  at the summary row after it, whose own ``null`` parent loses nothing), the rows its
  ``compactMetadata`` names as preserved are put back right after the summary row (wherever the
  file has them: rows put back at its end are taken too, and are no leaf); when one of them is
  missing, none is (the kept reply in the file without its ``stop_hook_summary`` is not sent). A row after
  the compaction whose parent is one of those preserved rows is walked to the summary (the
  preserved rows sit before the boundary in the file; the walk must not pass the boundary).

Subagent rows and ``progress`` rows are never the leaf. A loop of parents ends the walk where it
closes (a note says so; Claude Code's own answer to a loop was not measured).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from kurahi.runtimes.claude.layout import (
    CHAIN_TYPES,
    COMPACT_BOUNDARY,
    CONVERSATION_TYPES,
    LAST_PROMPT,
    SYSTEM,
)
from kurahi.runtimes.claude.rows import ParsedRows, Row
from kurahi.runtimes.claude.versions import Release

__all__ = ["BRIDGED", "LINK", "ROOT", "Graph", "Walk", "linear"]

ROOT = "root"
"""The row names no parent: the walk ends there."""
LINK = "link"
"""The row's parent is in the map."""
BRIDGED = "bridged"
"""The parent is missing; the loader takes the nearest earlier conversation row instead."""


def linear(rows: list[Row]) -> tuple[int, int] | None:
    """``(first, last)`` main-chain rows when every one hangs under the one written just before it; else ``None``.

    Such a session is whole: its main chain is one line from its first row to its last, so the
    walk from any leaf on it reaches every row (a ``last-prompt`` leaf is followed to the end),
    and nothing of it can be off the path. No uuid may be claimed twice and no row after the
    first may be a root (a compaction is not linear: it takes the full model). One pass, no
    map: most sessions are judged here.
    """
    seen: set[str] = set()
    last: str | None = None
    first = end = -1
    chain = CHAIN_TYPES
    conversation = CONVERSATION_TYPES
    for i, r in enumerate(rows):
        t = r.type
        if t not in chain:
            continue
        u = r.uuid
        if u is None:
            continue
        if u in seen:
            return None
        seen.add(u)
        if r.is_sidechain or t not in conversation:
            continue
        if r.parent_uuid != last:
            return None
        last = u
        if first < 0:
            first = i
        end = i
    return (first, end) if first >= 0 else None


@dataclass
class Walk:
    """One walk from a leaf to a root, and what ended it."""

    chain: list[int]
    """Row indices, root first, leaf last (the preserved tail spliced in after a compaction's summary)."""
    ended: str
    """``root`` (a row with no parent) or ``cycle`` (a row met twice)."""
    bridged: list[int] = field(default_factory=list)
    """Rows whose missing parent the loader bridged."""
    spliced: list[int] = field(default_factory=list)
    """Rows put back after a compaction's summary."""
    missing_preserved: list[str] = field(default_factory=list)
    """Uuids a compaction named as preserved that the file lacks."""


class Graph:
    """A session's rows, linked as the loader links them (see the module docstring)."""

    def __init__(self, parsed: ParsedRows, release: Release) -> None:
        self.parsed = parsed
        self.release = release
        rows = parsed.rows
        self.rows: list[Row] = rows
        by_uuid: dict[str, int] = {}
        self.duplicates: list[tuple[str, int, int]] = []
        """``(uuid, earlier index, later index)`` of rows claiming one uuid."""
        self.leaf_hint: str | None = None
        """The last ``last-prompt`` row's ``leafUuid``."""
        self.boundaries: list[int] = []
        """Compact boundaries, in file order."""
        for i, r in enumerate(rows):
            t = r.type
            if t in CHAIN_TYPES and r.uuid is not None:
                before = by_uuid.get(r.uuid)
                if before is not None:
                    self.duplicates.append((r.uuid, before, i))
                by_uuid[r.uuid] = i
                if t == SYSTEM and r.subtype == COMPACT_BOUNDARY and not r.is_sidechain:
                    self.boundaries.append(i)
            elif t == LAST_PROMPT:
                self.leaf_hint = r.leaf_uuid
        self.by_uuid = by_uuid
        n = len(rows)
        prev_main = [-1] * n
        prev_side = [-1] * n
        main = -1
        side = -1
        for i, r in enumerate(rows):
            prev_main[i] = main
            prev_side[i] = side
            if r.type in CONVERSATION_TYPES and r.uuid is not None and by_uuid.get(r.uuid) == i:
                if r.is_sidechain:
                    side = i
                else:
                    main = i
        self.prev_main = prev_main
        """The nearest earlier conversation row of the main chain (``-1``: none)."""
        self._prev_side = prev_side
        self._last_main = main
        self._preserved: dict[int, tuple[list[str], int | None]] = {}

    # -- what a row is -----------------------------------------------------------------------

    def mapped(self, i: int) -> bool:
        """Whether row ``i`` is the one its uuid names (not shadowed by a later duplicate)."""
        r = self.rows[i]
        return r.type in CHAIN_TYPES and r.uuid is not None and self.by_uuid.get(r.uuid) == i

    def main(self, i: int) -> bool:
        """A conversation row of the main chain (not a subagent's, not ``progress``)."""
        r = self.rows[i]
        return r.type in CONVERSATION_TYPES and not r.is_sidechain and self.mapped(i)

    def is_boundary(self, i: int) -> bool:
        """A compaction's boundary row."""
        r = self.rows[i]
        return r.type == SYSTEM and r.subtype == COMPACT_BOUNDARY

    # -- links ---------------------------------------------------------------------------------

    def parent(self, i: int) -> tuple[int | None, str]:
        """Where the walk goes from row ``i``, and how (:data:`ROOT`, :data:`LINK`, :data:`BRIDGED`)."""
        r = self.rows[i]
        p = r.parent_uuid
        if p is None:
            return None, ROOT
        j = self.by_uuid.get(p)
        if j is not None:
            if self.boundaries and j < i:
                summary = self._past_boundary(j, i, p)
                if summary is not None:
                    return summary, LINK
            return j, LINK
        if not self.release.bridges_missing_parent:
            return None, ROOT
        k = self._prev_side[i] if r.is_sidechain else self.prev_main[i]
        return (k if k >= 0 else None), BRIDGED

    def _past_boundary(self, j: int, i: int, uuid: str) -> int | None:
        """The summary to walk to when row ``i`` (after a compaction) names a preserved row ``j`` before it."""
        lo = bisect.bisect_right(self.boundaries, j)
        hi = bisect.bisect_left(self.boundaries, i)
        for b in reversed(self.boundaries[lo:hi]):
            uuids, summary = self.preserved(b)
            if uuid in uuids:
                return summary if summary is not None else b
        return None

    def preserved(self, b: int) -> tuple[list[str], int | None]:
        """The uuids compaction ``b`` kept verbatim (in order), and its summary row."""
        found = self._preserved.get(b)
        if found is not None:
            return found
        meta = self.parsed.get(b, "compactMetadata")
        uuids: list[str] = []
        if isinstance(meta, dict):
            messages = meta.get("preservedMessages")
            listed = messages.get("uuids") if isinstance(messages, dict) else None
            if isinstance(listed, list):
                uuids = [u for u in listed if isinstance(u, str)]
            else:
                uuids = self._segment(meta.get("preservedSegment"))
        end = next((k for k in self.boundaries if k > b), len(self.rows))
        summary = next(
            (k for k in range(b + 1, end) if self.rows[k].is_compact_summary and not self.rows[k].is_sidechain),
            None,
        )
        self._preserved[b] = (uuids, summary)
        return uuids, summary

    def _segment(self, segment: Any) -> list[str]:
        """A preserved segment's uuids, walked from its tail up to its head through the file's own links."""
        if not isinstance(segment, dict):
            return []
        head, tail = segment.get("headUuid"), segment.get("tailUuid")
        if not isinstance(head, str) or not isinstance(tail, str):
            return []
        out: list[str] = []
        at: str | None = tail
        seen: set[str] = set()
        while isinstance(at, str) and at not in seen:
            seen.add(at)
            out.append(at)
            if at == head:
                break
            j = self.by_uuid.get(at)
            at = self.rows[j].parent_uuid if j is not None else None
        out.reverse()
        return out

    # -- the leaf and the walk -------------------------------------------------------------------

    def inner(self) -> set[int]:
        """Rows some conversation row names as its parent (the rest are leaves)."""
        out: set[int] = set()
        by_uuid, conversation = self.by_uuid, CONVERSATION_TYPES
        for r in self.rows:
            p = r.parent_uuid
            if p is not None and r.type in conversation:
                j = by_uuid.get(p)
                if j is not None:
                    out.add(j)
        out |= self._relinked_inner()
        return out

    def _relinked_inner(self) -> set[int]:
        """The last compaction's kept rows, as the loader relinks them before it picks the leaf.

        When every listed row is in the file, each hangs under the one listed before it and the
        rows that hung under the summary hang under the last: none is a leaf then, wherever the
        file has them (measured: rows put back at the end of a file without ``last-prompt``).
        """
        if not self.boundaries or not self.release.splices_preserved_tail:
            return set()
        b = self.boundaries[-1]
        uuids, summary = self.preserved(b)
        found = [self.by_uuid.get(u) for u in uuids]
        if not uuids or summary is None or any(k is None for k in found):
            return set()
        kept = [k for k in found if k is not None]
        meta = self.parsed.get(b, "compactMetadata")
        listed = meta.get("preservedMessages") if isinstance(meta, dict) else None
        anchor = listed.get("anchorUuid") if isinstance(listed, dict) else None
        anchor = anchor if isinstance(anchor, str) else self.rows[summary].uuid
        out = set(kept[:-1])
        if any(r.parent_uuid == anchor and r.uuid != uuids[0] and r.type in CONVERSATION_TYPES for r in self.rows):
            out.add(kept[-1])
        return out

    def leaf(self) -> tuple[int | None, str]:
        """The row ``--resume`` starts from, and why (``last-prompt``, ``newest``; ``None``: no conversation)."""
        inner = self.inner()
        hint = self.leaf_hint
        if self.release.leaf_from_last_prompt and hint is not None:
            j = self.by_uuid.get(hint)
            if j is not None and self.main(j) and j not in inner:
                return j, "last-prompt"
        for i in range(len(self.rows) - 1, -1, -1):
            if i not in inner and self.main(i):
                return i, "newest"
        return None, "newest"

    def boundary_of(self, i: int) -> int | None:
        """The compact boundary a root row stands for: itself, or for a compaction's summary the boundary before it."""
        if self.is_boundary(i):
            return i
        if not self.rows[i].is_compact_summary or not self.boundaries:
            return None
        k = bisect.bisect_left(self.boundaries, i) - 1
        return self.boundaries[k] if k >= 0 else None

    def walk(self, leaf: int, overrides: dict[int, int] | None = None) -> Walk:
        """The walk from ``leaf`` to a root, with ``overrides`` (row → the parent to take instead)."""
        chain: list[int] = []
        bridged: list[int] = []
        seen: set[int] = set()
        at: int | None = leaf
        ended = ROOT
        while at is not None:
            if at in seen:
                ended = "cycle"
                break
            seen.add(at)
            chain.append(at)
            if overrides and at in overrides:
                at = overrides[at]
                continue
            nxt, how = self.parent(at)
            if how == BRIDGED:
                bridged.append(at)
            at = nxt
        chain.reverse()
        out = Walk(chain, ended, bridged)
        if chain and self.release.splices_preserved_tail:
            b = self.boundary_of(chain[0])
            if b is not None:
                self._splice(out, b)
        return out

    def _splice(self, walk: Walk, boundary: int) -> None:
        uuids, summary = self.preserved(boundary)
        if not uuids:
            return
        at = walk.chain.index(summary) + 1 if summary is not None and summary in walk.chain else 1
        have = set(walk.chain)
        present: list[int] = []
        for u in uuids:
            j = self.by_uuid.get(u)
            if j is None:
                walk.missing_preserved.append(u)
            elif j not in have:
                present.append(j)
                have.add(j)
        if walk.missing_preserved:
            return  # one listed row gone: the loader relinks none of them (measured: the reply without its hook row)
        walk.chain[at:at] = present
        walk.spliced = present
