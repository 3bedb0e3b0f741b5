"""The canonical path of a transcript: the ancestry of its leaf, and what it leaves out.

The canonical path is what Pi would project from: the leaf (Pi's, i.e. the last entry
line, or the target of a durable leaf marker) and its ancestors. Branch points on it and
the side branches that hang off them (abandoned explorations) are reported with their
sizes, so a reconstruction can say exactly what it kept and what it dropped.
"""

from __future__ import annotations

from typing import Any

import msgspec

from kurahi.errors import EntryNotFoundError
from kurahi.js.values import MISSING
from kurahi.pi.entry import Entry
from kurahi.pi.transcript import Transcript, is_leaf_marker
from kurahi.pi.vocab import COMPACTION, CUSTOM

__all__ = ["BranchPoint", "CanonicalPath", "SideBranch", "canonical_path", "children_index"]


class SideBranch(msgspec.Struct, frozen=True):
    """A subtree hanging off the canonical path that the leaf does not descend from."""

    at: str
    """Id of the branch point on the path."""
    first: str
    """Id of the side branch's first entry."""
    size: int
    """Entries in the side branch (the whole subtree)."""
    first_line: int
    """Line of the side branch's first entry."""


class BranchPoint(msgspec.Struct, frozen=True):
    """An entry on the canonical path with more than one child."""

    id: str
    position: int
    """Index on the path (0 = root)."""
    children: int


class CanonicalPath(msgspec.Struct):
    """The leaf's ancestry in one transcript."""

    file: str
    leaf_id: str | None
    """The entry the path ends at (``None``: an empty session)."""
    pi_leaf_id: Any
    """Pi's leaf on open (the last entry line); differs when that line is a leaf marker."""
    entries: list[Entry] = msgspec.field(default_factory=list)
    """Root first."""
    branch_points: list[BranchPoint] = msgspec.field(default_factory=list)
    side_branches: list[SideBranch] = msgspec.field(default_factory=list)
    total_entries: int = 0

    @property
    def ids(self) -> list[str]:
        """Ids on the path, root first."""
        return [str(e.id) for e in self.entries]

    @property
    def compactions(self) -> list[str]:
        """Ids of the compaction entries on the path, oldest first."""
        return [str(e.id) for e in self.entries if e.type == COMPACTION]

    @property
    def abandoned(self) -> int:
        """Entries in side branches (not on the path, not projected)."""
        return sum(b.size for b in self.side_branches)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "file": self.file,
            "leafId": self.leaf_id,
            "piLeafId": None if self.pi_leaf_id is MISSING else self.pi_leaf_id,
            "totalEntries": self.total_entries,
            "pathLength": len(self.entries),
            "path": [{"id": e.id, "type": e.type, "line": e.line} for e in self.entries],
            "compactions": self.compactions,
            "branchPoints": [{"id": b.id, "position": b.position, "children": b.children} for b in self.branch_points],
            "sideBranches": [
                {"at": s.at, "first": s.first, "size": s.size, "firstLine": s.first_line} for s in self.side_branches
            ],
            "abandonedEntries": self.abandoned,
        }


def children_index(t: Transcript) -> dict[int, list[int]]:
    """Child positions per entry position, as Pi's tree links them (the later line wins ids)."""
    by_id = t.id_positions()
    kids: dict[int, list[int]] = {}
    for i, pid in enumerate(t.columns()[2]):
        if isinstance(pid, str) and pid:
            parent = by_id.get(pid)
            if parent is not None and parent != i:
                kids.setdefault(parent, []).append(i)
    return kids


def _subtree_size(kids: dict[int, list[int]], root: int) -> int:
    size = 0
    stack = [root]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if node in seen:  # a cycle below the branch point: count each entry once
            continue
        seen.add(node)
        size += 1
        stack.extend(kids.get(node, ()))
    return size


def canonical_path(t: Transcript, leaf_id: str | None = None, *, branches: bool = True) -> CanonicalPath:
    """Trace the canonical path of ``t`` from ``leaf_id`` (default: Pi's leaf, past a leaf marker).

    ``branches=False`` skips the branch points and side branches (they need the whole tree).

    Raises:
        EntryNotFoundError: ``leaf_id`` is not in the transcript.
        ParentCycleError: the ancestry loops.
    """
    n = len(t)
    pi_leaf = t.leaf_id
    out = CanonicalPath(file=t.name, leaf_id=None, pi_leaf_id=pi_leaf, total_entries=n)
    if leaf_id is not None:
        idx = t.index_of(leaf_id)
        if idx is None:
            raise EntryNotFoundError(leaf_id, path=t.name)
    else:
        if n == 0:
            return out
        idx = n - 1
        last = t.entry_at(idx)
        if is_leaf_marker(last.type, last.data, last.parent_id):
            target = last.parent_id
            if not isinstance(target, str):
                return out  # a reset to "before the first entry"
            found = t.index_of(target)
            if found is None:
                raise EntryNotFoundError(target, path=t.name)
            idx = found
    indices = t.path_indices(idx)
    out.entries = t.path_entries(indices)
    leaf = out.entries[-1].id
    out.leaf_id = leaf if isinstance(leaf, str) else None
    if not branches:
        return out
    kids = children_index(t)
    on_path = set(indices)
    for pos, i in enumerate(indices):
        children = kids.get(i, [])
        if len(children) < 2 and not (children and children[0] not in on_path):
            continue
        if len(children) > 1:
            out.branch_points.append(BranchPoint(str(t.entry_at(i).id), pos, len(children)))
        for c in children:
            if c in on_path:
                continue
            child = t.entry_at(c)
            if child.type == CUSTOM and is_leaf_marker(child.type, child.data, child.parent_id):
                continue  # a durable leaf move is bookkeeping, not an abandoned exploration
            out.side_branches.append(
                SideBranch(str(t.entry_at(i).id), str(child.id), _subtree_size(kids, c), child.line)
            )
    return out
