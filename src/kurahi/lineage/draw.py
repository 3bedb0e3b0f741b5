"""A picture of a lineage: each file's canonical path, collapsed to stay legible at any size.

:func:`draw_lineage` reads one or more transcripts (in the order given, a reset chain's
pieces or one stitched file) and builds a :class:`Drawing`: per file, the canonical path
top to bottom, where only the entries worth seeing are nodes (root, leaf, stitch edges,
compactions, context edits and the entries they remove or replace, marker hits, branch
points, labelled entries) and everything between them is
one segment with its count and kinds. The number of nodes is capped whatever the file
size, so the SVG stays a few thousand elements at most. Sources are only read.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from kurahi.context.origins import effective_path
from kurahi.errors import EntryNotFoundError
from kurahi.js.stringify import json_utf8
from kurahi.lineage.path import CanonicalPath, SideBranch, canonical_path
from kurahi.pi.entry import Entry
from kurahi.pi.transcript import Transcript
from kurahi.pi.vocab import COMPACTION, CONTEXT_EDIT, MESSAGE, TARGET_ID
from kurahi.store.redact import scrub_text

__all__ = ["Column", "Drawing", "Node", "Run", "StitchEdge", "draw_lineage"]

NODE_BUDGET = 200
"""Nodes drawn across all columns; the rest of each path is folded into runs."""
MIN_NODES_PER_COLUMN = 16
PINS_PER_MARKER = 12
"""Hits of one marker pinned per file; further hits are counted, not drawn."""

# Priorities of the entries that may become nodes (lower is kept first).
_ALWAYS, _COMPACTION, _MARKER, _BRANCH, _LABEL = range(5)


@dataclass(slots=True)
class StitchEdge:
    """A re-parented root named in a stitched file's header (``lineage.edges``)."""

    child: str
    parent: str
    on_path: bool


@dataclass(slots=True)
class Node:
    """One path entry drawn as a node."""

    position: int
    entry_id: str
    line: int
    kind: str
    flags: list[str] = field(default_factory=list)
    """Among ``root``, ``leaf``, ``stitch``, ``compaction``, ``edit`` (a ``context_edit``),
    ``removed`` / ``replaced`` (what an edit did to this entry's view), ``branch``, ``label``."""
    markers: list[str] = field(default_factory=list)
    side: list[SideBranch] = field(default_factory=list)
    detail: str = ""
    """One short line shown beside the node (compaction summary length, label, ...)."""
    title: str = ""
    """Hover text: id, parent, line, time and a preview."""
    stitched_from_parent: bool = False
    """The edge from the previous node is a stitch edge (drawn highlighted)."""


@dataclass(slots=True)
class Run:
    """Consecutive path entries drawn as one segment."""

    start: int
    count: int
    kinds: list[tuple[str, int]]
    """Kinds (message role, else entry type) with counts, most frequent first."""
    compactions: int = 0
    branch_points: int = 0
    abandoned: int = 0
    marker_hits: int = 0

    @property
    def head(self) -> str:
        """``… 1,234 entries: 600 user, 590 assistant, …``."""
        kinds = ", ".join(f"{n:,} {k}" for k, n in self.kinds[:4])
        more = ", …" if len(self.kinds) > 4 else ""
        return f"… {_count(self.count, 'entry', 'entries')}: {kinds}{more}"

    @property
    def folded(self) -> str:
        """What the run hides besides plain entries (compactions, branch points, marker hits)."""
        parts = [
            _count(self.compactions, "compaction") if self.compactions else "",
            f"{_count(self.branch_points, 'branch point')} ({self.abandoned:,} abandoned)"
            if self.branch_points
            else "",
            _count(self.marker_hits, "more marker hit") if self.marker_hits else "",
        ]
        return "; ".join(p for p in parts if p)

    @property
    def label(self) -> str:
        """The head and, in brackets, what is folded in."""
        return f"{self.head} [{self.folded}]" if self.folded else self.head


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


@dataclass(slots=True)
class Column:
    """One file's canonical path, collapsed."""

    file: str
    session_id: str
    total_entries: int
    path_length: int
    leaf_id: str | None
    pi_leaf_moved: bool
    """The last line is a leaf marker: the path ends at its target, not at the last line."""
    items: list[Node | Run] = field(default_factory=list)
    compactions: int = 0
    branch_points: int = 0
    side_branches: int = 0
    abandoned: int = 0
    stitch_edges: list[StitchEdge] = field(default_factory=list)
    marker_hits: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Drawing:
    """The lineage of one or more files, ready to render."""

    columns: list[Column]
    markers: list[str]

    @property
    def nodes(self) -> int:
        """Nodes across all columns."""
        return sum(isinstance(i, Node) for c in self.columns for i in c.items)


class _Msg(msgspec.Struct):
    role: Any = None


class _Kind(msgspec.Struct):
    message: _Msg | None = None


_kind_decode = msgspec.json.Decoder(_Kind).decode


def _needles(marker: str) -> tuple[bytes, ...]:
    """The byte forms a marker can take inside a JSON line (raw, escaped, ASCII-escaped)."""
    # A marker from the command line may hold bytes that are not UTF-8 (as surrogate escapes):
    # they are looked for as those bytes.
    try:
        raw = marker.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raw = marker.encode("utf-8", "surrogatepass")
    forms = {raw, json_utf8(json.dumps(marker, ensure_ascii=False))[1:-1], json.dumps(marker)[1:-1].encode()}
    return tuple(sorted(forms))


def _kind(entry_type: Any, raw: bytes) -> str:
    if entry_type != MESSAGE:
        return entry_type if isinstance(entry_type, str) else "?"
    try:
        msg = _kind_decode(raw).message
    except (msgspec.DecodeError, msgspec.ValidationError):
        return "message"
    return msg.role if msg is not None and isinstance(msg.role, str) else "message"


def _scan_path(t: Transcript, path: list[Entry], markers: list[str]) -> tuple[list[str], dict[int, list[str]]]:
    """Kind of every path entry, and the markers each path entry's JSON line contains."""
    forms = [(m, f) for m in markers for f in _needles(m)]
    kinds: list[str] = []
    hits: dict[int, list[str]] = {}
    raw_line = t.raw_line
    for pos, e in enumerate(path):
        raw = raw_line(e.index)
        kinds.append(_kind(e.type, raw))
        for marker, form in forms:
            if form in raw:
                found = hits.setdefault(pos, [])
                if marker not in found:
                    found.append(marker)
    return kinds, hits


def _edges(header: dict[str, Any]) -> list[tuple[str, str]]:
    lineage = header.get("lineage")
    edges = lineage.get("edges") if isinstance(lineage, dict) else None
    out: list[tuple[str, str]] = []
    for edge in edges if isinstance(edges, list) else []:
        if isinstance(edge, dict) and isinstance(edge.get("child"), str) and isinstance(edge.get("parent"), str):
            out.append((edge["child"], edge["parent"]))
    return out


def _preview(data: dict[str, Any]) -> str:
    """A short text of an entry for its hover title."""
    text: Any = data.get("summary")
    if not isinstance(text, str):
        msg = data.get("message")
        content = msg.get("content") if isinstance(msg, dict) else data.get("content")
        if isinstance(content, list):
            parts = [b.get("text") or b.get("name") or "" for b in content if isinstance(b, dict)]
            text = " ".join(p for p in parts if isinstance(p, str))
        else:
            text = content
    if not isinstance(text, str):
        text = data.get("customType") or data.get("label") or ""
    # Secrets go before the cut, so a cut never leaves half of one readable.
    flat = " ".join(scrub_text(str(text)).split())
    return flat if len(flat) <= 200 else flat[:199] + "…"


def _describe(entry: Entry, kind: str, node: Node) -> None:
    data = entry.data
    if entry.type == COMPACTION:
        summary = data.get("summary")
        size = len(summary) if isinstance(summary, str) else 0
        tokens = data.get("tokensBefore")
        node.detail = f"summary {size:,} chars" + (f", {tokens:,} tokens before" if isinstance(tokens, int) else "")
    stamp = data.get("timestamp")
    parts = [
        f"{kind} · id {node.entry_id} · line {node.line:,} · path #{node.position:,}",
        f"parent {entry.parent_id}" if isinstance(entry.parent_id, str) else "root (no parent)",
        str(stamp) if isinstance(stamp, str) else "",
        _preview(data),
    ]
    node.title = "\n".join(p for p in parts if p)


def _column(t: Transcript, markers: list[str], leaf_id: str | None, budget: int) -> Column:
    cp: CanonicalPath = canonical_path(t, leaf_id)
    path = cp.entries
    n = len(path)
    col = Column(
        file=t.name,
        session_id=t.session_id,
        total_entries=len(t),
        path_length=n,
        leaf_id=cp.leaf_id,
        pi_leaf_moved=n > 0 and cp.pi_leaf_id != cp.leaf_id and leaf_id is None,
        compactions=len(cp.compactions),
        branch_points=len(cp.branch_points),
        side_branches=len(cp.side_branches),
        abandoned=cp.abandoned,
    )
    if n == 0:
        return col
    kinds, hits = _scan_path(t, path, markers)
    col.marker_hits = {m: sum(m in ms for ms in hits.values()) for m in markers}
    pos_of = {e.index: p for p, e in enumerate(path)}

    def position(entry_id: str) -> int | None:
        idx = t.index_of(entry_id)
        return None if idx is None else pos_of.get(idx)

    prio: dict[int, tuple[int, int]] = {}

    def want(pos: int, rank: int, weight: int = 0) -> None:
        prio[pos] = min(prio.get(pos, (rank, -weight)), (rank, -weight))

    want(0, _ALWAYS)
    want(n - 1, _ALWAYS)
    compaction_at = [p for p, e in enumerate(path) if e.type == COMPACTION]
    stitch_children: set[int] = set()
    for child, parent in _edges(t.header):
        cpos, ppos = position(child), position(parent)
        on_path = cpos is not None and ppos is not None and ppos == cpos - 1
        col.stitch_edges.append(StitchEdge(child, parent, on_path))
        if cpos is not None and ppos is not None and on_path:
            stitch_children.add(cpos)
            want(cpos, _ALWAYS)
            want(ppos, _ALWAYS)
    for pos in compaction_at:
        want(pos, _COMPACTION)
    # Context edits and what they did to the model's view of their targets (on this path).
    edited: dict[int, tuple[str, str]] = {}
    view = effective_path(path)
    for src in view.sources:
        if src.edit is not None:
            edit_pos = pos_of.get(src.edit.index)
            edited[src.position] = ("removed" if src.removed else "replaced", str(src.edit.id))
            want(src.position, _COMPACTION)
            if edit_pos is not None:
                want(edit_pos, _COMPACTION)
    for pos in view.inert_edits:
        want(pos, _LABEL)
    pinned: Counter[str] = Counter()
    for pos in sorted(hits):
        for m in hits[pos]:
            if pinned[m] < PINS_PER_MARKER:
                pinned[m] += 1
                want(pos, _MARKER)
    side: dict[int, list[SideBranch]] = {}
    for sb in cp.side_branches:
        at = position(sb.at)
        if at is not None:
            side.setdefault(at, []).append(sb)
    for pos, branches in side.items():
        want(pos, _BRANCH, sum(b.size for b in branches))
    labels = {k: v for k, v in t.labels().items() if isinstance(k, str)}
    for entry_id in labels:
        lpos = position(entry_id)
        if lpos is not None:
            want(lpos, _LABEL)
    chosen = sorted(sorted(prio, key=lambda p: (prio[p], p))[:budget])

    side_at, hit_at = sorted(side), sorted(hits)

    def within(sorted_positions: list[int], start: int, stop: int) -> list[int]:
        return sorted_positions[bisect_left(sorted_positions, start) : bisect_left(sorted_positions, stop)]

    def run(start: int, stop: int) -> Run:
        r = Run(start, stop - start, Counter(kinds[start:stop]).most_common())
        r.compactions = len(within(compaction_at, start, stop))
        folded = within(side_at, start, stop)
        r.branch_points = len(folded)
        r.abandoned = sum(b.size for p in folded for b in side[p])
        r.marker_hits = sum(len(hits[p]) for p in within(hit_at, start, stop))
        return r

    prev = 0
    for pos in chosen:
        if pos > prev:
            col.items.append(run(prev, pos))
        e = path[pos]
        node = Node(pos, str(e.id), e.line, kinds[pos], markers=list(hits.get(pos, ())), side=side.get(pos, []))
        node.flags = [
            flag
            for flag, on in [
                ("root", pos == 0),
                ("leaf", pos == n - 1),
                ("stitch", pos in stitch_children or pos + 1 in stitch_children),
                ("compaction", e.type == COMPACTION),
                ("edit", e.type == CONTEXT_EDIT),
                ("removed", edited.get(pos, ("",))[0] == "removed"),
                ("replaced", edited.get(pos, ("",))[0] == "replaced"),
                ("branch", pos in side),
                ("label", node.entry_id in labels),
            ]
            if on
        ]
        last = col.items[-1] if col.items else None
        node.stitched_from_parent = pos in stitch_children and isinstance(last, Node) and last.position == pos - 1
        _describe(e, node.kind, node)
        if e.type == CONTEXT_EDIT:
            what = "removes" if e.data.get("replacement") is None else "replaces the content of"
            inert = "" if pos not in view.inert_edits else " (no effect here)"
            node.detail = f"context edit: {what} {e.data.get(TARGET_ID)}{inert}"
        elif pos in edited:
            how, by = edited[pos]
            node.detail = f"{how} from the model's view by {by}"
            node.title = node.title.split("\n")[0] + f"\n{how} by context edit {by} (text not shown)"
        if node.entry_id in labels:
            node.detail = "; ".join(x for x in (f"label “{labels[node.entry_id]}”", node.detail) if x)
        col.items.append(node)
        prev = pos + 1
    if prev < n:
        col.items.append(run(prev, n))
    return col


def draw_lineage(files: Sequence[Path], *, markers: Sequence[str] = (), leaf_id: str | None = None) -> Drawing:
    """Draw the canonical paths of ``files`` side by side (in the order given).

    Args:
        files: transcripts, oldest first (a reset chain's pieces, or one stitched file).
        markers: strings to pin wherever a canonical-path entry's JSON line contains them.
        leaf_id: draw the path to this entry in the (last) file that holds it; the other
            files use their default leaf (Pi's, past a durable leaf marker).

    Raises:
        EntryNotFoundError: ``leaf_id`` is in none of the files.
        TranscriptReadError, NotASessionError: a file cannot be read as a transcript.
        ParentCycleError: a path loops.
    """
    wanted = [m for m in dict.fromkeys(markers) if m]
    budget = max(MIN_NODES_PER_COLUMN, NODE_BUDGET // max(1, len(files)))
    transcripts = [Transcript.open(f) for f in files]
    try:
        holder: int | None = None
        if leaf_id is not None:
            holders = [i for i, t in enumerate(transcripts) if leaf_id in t]
            if not holders:
                raise EntryNotFoundError(leaf_id, path=files[-1] if files else None)
            holder = holders[-1]
        columns = [_column(t, wanted, leaf_id if i == holder else None, budget) for i, t in enumerate(transcripts)]
    finally:
        for t in transcripts:
            t.close()
    return Drawing(columns, wanted)
