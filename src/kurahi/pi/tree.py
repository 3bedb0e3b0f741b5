"""The whole tree of a transcript, as Pi's ``getTree()`` builds it, and parent cycles.

These walk every entry, so they live apart from the path-only reading in
:mod:`kurahi.pi.transcript`; :class:`~kurahi.pi.transcript.Transcript` delegates here, and
they read it through :class:`TreeSource`, so this module never imports the reader.
"""

from __future__ import annotations

import gc
from typing import Any, Protocol

import msgspec

from kurahi.js.values import MISSING, date_ms, js_truthy
from kurahi.pi.entry import Entry, EntrySource, TreeNode
from kurahi.pi.read.scan import id_key

__all__ = ["TreeSource", "build_tree", "find_cycles", "timestamp_ms"]


class TreeSource(EntrySource, Protocol):
    """What the functions here read of a transcript (:class:`~kurahi.pi.transcript.Transcript` is one)."""

    @property
    def _overrides(self) -> Any: ...

    def id_positions(self) -> dict[Any, int]:
        """Each id's position (the last entry with it wins)."""
        ...

    def columns(self) -> tuple[list[Any], list[Any], list[Any]]:
        """Every entry's type, id and parent id, in file order."""
        ...

    def labels(self) -> dict[Any, str]:
        """Current label per target id."""
        ...

    def entry_at(self, index: int) -> Entry:
        """Entry ``index``."""
        ...


def find_cycles(t: TreeSource) -> list[list[str]]:
    """Every parent cycle in the file (each reported once), for diagnostics."""
    by_id = t.id_positions()
    _, ids, parents = t.columns()
    state: dict[int, int] = {}
    cycles: list[list[str]] = []
    for start in by_id.values():
        if start in state:
            continue
        trail: list[int] = []
        pos: dict[int, int] = {}
        cur: int | None = start
        while cur is not None and cur not in state:
            pos[cur] = len(trail)
            state[cur] = 1
            trail.append(cur)
            pid = parents[cur]
            if pid is msgspec.UNSET or not (pid if type(pid) is str else js_truthy(pid)):
                break
            cur = by_id.get(pid if type(pid) is str else id_key(pid))
            if cur is not None and cur in pos:
                looped = (ids[i] for i in trail[pos[cur] :])
                cycles.append([str(MISSING if i is msgspec.UNSET else i) for i in looped])
                cur = None
        for i in trail:
            state[i] = 2
    return cycles


def build_tree(t: TreeSource) -> list[TreeNode]:
    """Pi's ``getTree()``: roots in file order, each node's children oldest first."""
    gc_was_enabled = gc.isenabled()
    gc.disable()  # hundreds of thousands of nodes, no cycles among them
    try:
        return _build(t)
    finally:
        if gc_was_enabled:
            gc.enable()


def _build(t: TreeSource) -> list[TreeNode]:
    labels = t.labels()
    nodes: dict[Any, TreeNode] = {}
    order: list[tuple[Any, Any]] = []
    _, ids, parents = t.columns()
    for i, (id_, pid) in enumerate(zip(ids, parents, strict=True)):
        key = id_ if type(id_) is str else id_key(id_)
        node = TreeNode(Entry(t, i), [], labels.get(key) if type(key) is str else None)
        nodes[key] = node
        order.append((key, pid))
    roots: list[TreeNode] = []
    for key, pid in order:
        node = nodes[key]
        pkey = pid if type(pid) is str else id_key(pid)
        if pid is None or pkey == key:
            roots.append(node)
            continue
        # An absent parentId looks up the key `undefined`, which an entry without an id has in
        # Pi's Map: that entry becomes the parent.
        parent = nodes.get(pkey)
        if parent is None:
            roots.append(node)
        else:
            parent.children.append(node)
    stack = list(roots)
    visited: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited.add(id(node))
        if len(node.children) > 1:
            node.children.sort(key=lambda child: _SortKey(timestamp_ms(t, child.entry.index)))
        stack.extend(node.children)
    return roots


class _Stamp(msgspec.Struct):
    timestamp: Any = msgspec.UNSET


_timestamp_decode = msgspec.json.Decoder(_Stamp).decode


def timestamp_ms(t: TreeSource, index: int) -> int | float | None:
    """``new Date(entry.timestamp).getTime()`` for entry ``index`` (``None`` for NaN)."""
    if index not in t._overrides:
        try:
            stamp = _timestamp_decode(t.raw_line(index)).timestamp
            return date_ms(MISSING if stamp is msgspec.UNSET else stamp)
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
    return date_ms(t.entry_at(index).data.get("timestamp", MISSING))


class _SortKey:
    """Stable sort by timestamp where NaN compares equal to everything, as V8's sort does."""

    __slots__ = ("ms",)

    def __init__(self, ms: int | float | None) -> None:
        self.ms = ms

    def __lt__(self, other: _SortKey) -> bool:
        if self.ms is None or other.ms is None:
            return False
        return self.ms < other.ms
