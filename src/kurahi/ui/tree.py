"""A session's tree for the viewer: every entry in tree order, linear runs folded, paged by rows.

:class:`TreeIndex` is built once per transcript version (its size) from the store's parsed
transcript: the children of each entry (:func:`kurahi.lineage.path.children_index`),
the leaf's path (:func:`kurahi.lineage.path.canonical_path`) and the effective context
(:func:`kurahi.context.origins.effective_path`, i.e. the projection itself), so what is
highlighted as "sent to the model" cannot disagree with what the model is sent.

Only the entries' type, id and parent are held for every entry; an entry's JSON is decoded
when a page of rows that shows it is asked for, so a page costs the same at any file size.
Rows are in depth-first order, children oldest first, as Pi's ``getTree()`` lists them;
indentation grows at branch points only. A *run* is a stretch of at least
:data:`RUN_MIN` entries, each the only child of the one before, with nothing worth seeing
(no branch, compaction, label, edit, leaf move, root or leaf) and the same place relative to
the context; it is one row until it is expanded.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kurahi.context.budget import DEFAULT_RESERVE_TOKENS, route
from kurahi.context.origins import effective_path
from kurahi.context.project import build_context
from kurahi.context.text import message_text
from kurahi.context.tokens import estimate_context_tokens
from kurahi.lineage.path import canonical_path
from kurahi.pi import vocab
from kurahi.pi.transcript import LEAF_MARKER_TYPE, Transcript

__all__ = ["FLAGS", "RUN_MIN", "TreeIndex"]

RUN_MIN = 4
"""Fewest plain entries folded into one run row."""
PREVIEW = 160
"""Characters of text shown per row."""
MAX_RAW = 256 * 1024
"""Bytes of one raw line sent to the page; a longer line is cut there (and said so)."""

ROOT, LEAF, PATH, CTX, REMOVED, REPLACED, COMPACTION, OPERATIVE, BRANCH, LABELLED, LEAF_MOVE, EDIT, INERT, SIDE = (
    1 << i for i in range(14)
)
FLAGS = {
    "root": ROOT,
    "leaf": LEAF,
    "path": PATH,
    "context": CTX,
    "removed": REMOVED,
    "replaced": REPLACED,
    "compaction": COMPACTION,
    "operative": OPERATIVE,
    "branch": BRANCH,
    "labelled": LABELLED,
    "leafMove": LEAF_MOVE,
    "edit": EDIT,
    "inert": INERT,
    "side": SIDE,
}
"""Names of the row flags, as the page shows them."""
_NOTABLE = ROOT | LEAF | REMOVED | REPLACED | COMPACTION | BRANCH | LABELLED | LEAF_MOVE | EDIT
_PLACE = PATH | CTX | SIDE


def _flag_names(bits: int) -> list[str]:
    return [name for name, bit in FLAGS.items() if bits & bit]


class TreeIndex:
    """The rows of one transcript (see the module docstring).

    Args:
        t: the parsed transcript (kept open: rows and raw lines are read from it later).
        context_window: the model's window, for the budget route.
        reserve_tokens: tokens kept free for the reply.
    """

    def __init__(self, t: Transcript, *, context_window: int, reserve_tokens: int = DEFAULT_RESERVE_TOKENS) -> None:
        self.t = t
        n = len(t)
        self.size = t.size
        types, ids, parents = _columns(t)
        # Children as Pi's tree links them: a parent id names the last line with that id.
        try:
            by_id = dict(zip(ids, range(n), strict=True))  # the last line with an id wins
        except TypeError:  # an id that is a JSON array or object: only string ids can be parents
            by_id = {v: i for i, v in enumerate(ids) if type(v) is str}
        kids: dict[int, list[int]] = {}
        parent_of = [-1] * n
        get = by_id.get
        for i, pid in enumerate(parents):
            if type(pid) is str and pid:
                p = get(pid)
                if p is not None and p != i:
                    parent_of[i] = p
                    k = kids.get(p)
                    if k is None:
                        kids[p] = [i]
                    else:
                        k.append(i)
        self.types = [ty if type(ty) is str else "?" for ty in types]
        flags = [SIDE] * n
        self.children = [0] * n
        for i, k in kids.items():
            self.children[i] = len(k)
            if len(k) > 1:
                flags[i] |= BRANCH
        # Tree order: roots (no parent in the file) in file order, then each subtree, oldest child first.
        order: list[int] = []
        roots = [r for r in range(n) if parent_of[r] < 0]
        for r in roots:
            flags[r] |= ROOT
            _walk(r, kids, order)
        if len(order) < n:  # entries only reachable through a parentId cycle: listed last, flat
            reached = bytearray(n)
            for i in order:
                reached[i] = 1
            for r in range(n):
                if not reached[r]:
                    order.append(r)
                    parent_of[r] = -1
        # Indentation grows by one below each branch point (parents come before their children).
        depth_of = [0] * n
        children = self.children
        for i in order:
            p = parent_of[i]
            if p >= 0:
                depth_of[i] = depth_of[p] + (children[p] > 1)
        self.order = order
        self.depth = [depth_of[i] for i in order]
        self._position: list[int] | None = None
        # The leaf's path and what the model is sent from it.
        path = canonical_path(t, branches=False)
        self.leaf_id = path.leaf_id
        path_idx = [e.index for e in path.entries]
        for i in path_idx:
            flags[i] = (flags[i] & ~SIDE) | PATH
        if path_idx:
            flags[path_idx[-1]] |= LEAF
        eff = effective_path(path.entries)
        for s in eff.sources:
            i = path_idx[s.position]
            if s.messages > 0:
                flags[i] |= CTX
            if s.edit is not None:
                flags[i] |= REMOVED if s.removed else REPLACED
        for pos in eff.inert_edits:
            flags[path_idx[pos]] |= INERT
        if eff.compaction_position is not None:
            flags[path_idx[eff.compaction_position]] |= OPERATIVE
        for i in [i for i, ty in enumerate(self.types) if ty != "message"]:
            ty = self.types[i]
            if ty == "compaction":
                flags[i] |= COMPACTION
            elif ty == "context_edit":
                flags[i] |= EDIT
            elif ty == "custom" and self.children[i] == 0 and t.entry_at(i).data.get("customType") == LEAF_MARKER_TYPE:
                flags[i] |= LEAF_MOVE
        self.labels: dict[Any, str] = t.labels()
        for target in self.labels:
            found = by_id.get(target) if isinstance(target, str) else None
            if found is not None:
                flags[found] |= LABELLED
        self.flags = flags
        messages = build_context(path.entries).messages
        tokens = estimate_context_tokens(messages)
        self.context: dict[str, Any] = {
            "leafId": self.leaf_id,
            "pathEntries": len(path_idx),
            "messages": len(messages),
            "contextEntries": sum(1 for src in eff.sources if src.messages > 0),
            "removed": len(eff.removed()),
            "replaced": len(eff.replaced()),
            "tokens": tokens.to_dict(),
            "budget": route(tokens, context_window, reserve_tokens).to_dict(),
            "compactionId": None if eff.compaction_position is None else ids[path_idx[eff.compaction_position]],
        }
        self._segments = self._fold()
        self._rows_cache: dict[frozenset[int] | None, list[int]] = {}

    def _fold(self) -> list[tuple[int, int]]:
        """``(first position, count)`` of each row when every run is folded (count 1: one entry)."""
        out: list[tuple[int, int]] = []
        n = len(self.order)
        pos = 0
        while pos < n:
            end = pos
            i = self.order[pos]
            if not self.flags[i] & _NOTABLE:
                place = self.flags[i] & _PLACE
                while end + 1 < n:
                    cur, nxt = self.order[end], self.order[end + 1]
                    if self.children[cur] != 1 or self.flags[nxt] & _NOTABLE or self.flags[nxt] & _PLACE != place:
                        break
                    end += 1
            count = end - pos + 1
            if count >= RUN_MIN:
                out.append((pos, count))
                pos = end + 1
            else:
                out.append((pos, 1))
                pos += 1
        return out

    @property
    def position(self) -> list[int]:
        """Tree position of each entry (by file index), made on first use."""
        if self._position is None:
            position = [0] * len(self.order)
            for pos, i in enumerate(self.order):
                position[i] = pos
            self._position = position
        return self._position

    @property
    def entries(self) -> int:
        """Entries in the transcript."""
        return len(self.order)

    def runs(self) -> int:
        """Folded runs when nothing is expanded."""
        return sum(1 for _, c in self._segments if c > 1)

    def rows(self, expanded: frozenset[int] | None) -> list[int]:
        """The rows: ``p >= 0`` is the entry at tree position ``p``; ``-(s + 1)`` the folded run ``s``.

        ``expanded`` holds the first positions of the runs shown entry by entry; ``None``
        expands every run.
        """
        cached = self._rows_cache.get(expanded)
        if cached is not None:
            return cached
        if expanded is None:
            rows = list(range(len(self.order)))
        else:
            rows = []
            for s, (start, count) in enumerate(self._segments):
                if count == 1:
                    rows.append(start)
                elif start in expanded:
                    rows.extend(range(start, start + count))
                else:
                    rows.append(-(s + 1))
        if len(self._rows_cache) >= 8:
            self._rows_cache.pop(next(iter(self._rows_cache)))
        self._rows_cache[expanded] = rows
        return rows

    def page(self, expanded: frozenset[int] | None, offset: int, limit: int) -> dict[str, Any]:
        """Rows ``offset`` to ``offset + limit`` as JSON objects, and the total."""
        rows = self.rows(expanded)
        out = [self._row(r, offset + k) for k, r in enumerate(rows[offset : offset + limit])]
        return {"total": len(rows), "offset": offset, "rows": out}

    def _row(self, r: int, number: int) -> dict[str, Any]:
        if r < 0:
            start, count = self._segments[-r - 1]
            idx = self.order[start : start + count]
            kinds = Counter(self.types[i] for i in idx)
            return {
                "row": number,
                "run": True,
                "pos": start,
                "count": count,
                "depth": self.depth[start],
                "flags": _flag_names(self.flags[idx[0]] & _PLACE),
                "kinds": [[k, c] for k, c in kinds.most_common(4)],
                "firstId": _str(self.t.entry_at(idx[0]).id),
                "lastId": _str(self.t.entry_at(idx[-1]).id),
            }
        i = self.order[r]
        e = self.t.entry_at(i)
        data = e.data
        row: dict[str, Any] = {
            "row": number,
            "pos": r,
            "id": _str(e.id),
            "parentId": _str(e.parent_id),
            "type": self.types[i],
            "line": e.line,
            "depth": self.depth[r],
            "children": self.children[i],
            "flags": _flag_names(self.flags[i]),
        }
        msg = data.get("message")
        if isinstance(msg, dict):
            role = msg.get("role")
            row["role"] = role if isinstance(role, str) else None
        label = self.labels.get(e.id) if type(e.id) is str else None  # an id may be any JSON value
        if label is not None:
            row["label"] = _str(label)
        row["preview"] = _preview(self.types[i], data)
        return row

    def raw(self, entry_id: str) -> dict[str, Any] | None:
        """The raw line of ``entry_id`` (cut at :data:`MAX_RAW` bytes), or ``None`` when unknown."""
        i = self.t.index_of(entry_id)
        if i is None:
            return None
        raw = self.t.raw_line(i)
        e = self.t.entry_at(i)
        return {
            "id": entry_id,
            "line": e.line,
            "bytes": len(raw),
            "truncated": len(raw) > MAX_RAW,
            "raw": raw[:MAX_RAW].decode("utf-8", "replace"),
            "flags": _flag_names(self.flags[i]),
            "pos": self.position[i],
        }

    def locate(self, entry_id: str, expanded: frozenset[int] | None) -> dict[str, Any] | None:
        """The row showing ``entry_id`` (and the run to expand when it is folded), or ``None``."""
        i = self.t.index_of(entry_id)
        if i is None:
            return None
        pos = self.position[i]
        rows = self.rows(expanded)
        for s, (start, count) in enumerate(self._segments):
            if start <= pos < start + count:
                if count > 1 and (expanded is not None and start not in expanded):
                    return {"id": entry_id, "pos": pos, "run": start, "row": rows.index(-(s + 1))}
                break
        return {"id": entry_id, "pos": pos, "run": None, "row": rows.index(pos)}


def _walk(root: int, kids: dict[int, list[int]], order: list[int]) -> None:
    """Append the subtree of ``root`` to ``order``, depth first, oldest child first."""
    append = order.append
    get = kids.get
    stack = [root]
    while stack:
        i = stack.pop()
        while True:  # down a linear stretch without touching the stack
            append(i)
            k = get(i)
            if k is None:
                break
            if len(k) == 1:
                i = k[0]
                continue
            stack.extend(reversed(k))
            break


def _columns(t: Transcript) -> tuple[list[Any], list[Any], list[Any]]:
    """Every entry's type, id and parent id, from the store's scan (no line is decoded)."""
    return t.columns()


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None if value is None else str(value)


def _preview(kind: str, data: dict[str, Any]) -> str:
    if kind == vocab.MESSAGE:
        text = message_text(data.get("message"))
        if not text:
            msg = data.get("message")
            content = msg.get("content") if isinstance(msg, dict) else None
            if isinstance(content, list):
                text = " ".join(
                    f"[{b.get('type')}{': ' + str(b.get('name')) if b.get('name') else ''}]"
                    for b in content
                    if isinstance(b, dict)
                )
    elif kind in (vocab.COMPACTION, vocab.BRANCH_SUMMARY):
        s = data.get("summary")
        text = s if isinstance(s, str) else ""
    elif kind == vocab.LABEL:
        text = f"label {data.get('label')!r} on {data.get(vocab.TARGET_ID)}"
    elif kind == vocab.CONTEXT_EDIT:
        what = "removes" if data.get("replacement") is None else "replaces"
        text = f"{what} {data.get(vocab.TARGET_ID)}"
    elif kind == vocab.MODEL_CHANGE:
        text = f"{data.get('provider')}/{data.get('modelId')}"
    elif kind == vocab.CUSTOM:
        text = f"{data.get('customType')}"
    else:
        text = ""
    text = " ".join(str(text).split())
    return text[:PREVIEW] + ("…" if len(text) > PREVIEW else "")
