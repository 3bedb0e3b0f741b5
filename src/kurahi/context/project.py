"""Projection of a leaf's path into the messages Pi sends to the model.

A pure function of the path: :func:`build_context` takes the entries from the root to
the leaf and returns exactly what Pi 0.73.1's ``buildSessionContext`` returns. It reads
an entry's full JSON only when the entry can contribute (a message in the compaction
window, the last settings change), so a 200k-entry path costs little more than a walk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import msgspec

from kurahi.jsvalues import MISSING, date_ms, js_truthy
from kurahi.store.scan import id_key

__all__ = [
    "PathEntry",
    "ProjectionWarning",
    "SessionContext",
    "build_context",
    "entry_message",
    "project_from_leaf",
]


class PathEntry(Protocol):
    """What projection needs from an entry: its type and id up front, its JSON on demand."""

    @property
    def type(self) -> Any:
        """The entry type (``MISSING`` when absent)."""

    @property
    def id(self) -> Any:
        """The entry id (``MISSING`` when absent)."""

    @property
    def line(self) -> int:
        """Line number, for warnings."""

    @property
    def data(self) -> dict[str, Any]:
        """The full entry."""


class ProjectionWarning(msgspec.Struct, frozen=True):
    """An entry Pi would crash on, skipped instead."""

    line: int
    message: str


class SessionContext(msgspec.Struct):
    """The projected context: what Pi's ``buildSessionContext`` returns, plus the leaf used."""

    leaf_id: Any
    """The leaf the path ends at (``None``: explicitly empty; ``MISSING``: Pi's undefined)."""
    messages: list[Any]
    """Messages in order, as Pi emits them (stored message objects and synthesized ones)."""
    thinking_level: Any = "off"
    """The last ``thinking_level_change`` on the path (default ``"off"``)."""
    model: dict[str, Any] | None = None
    """``{provider, modelId}`` from the last model change or assistant message, or ``None``."""
    compaction_id: Any = None
    """Id of the compaction whose summary opens the messages, if any."""
    warnings: list[ProjectionWarning] = msgspec.field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The public JSON shape ``{leafId, thinkingLevel, model, messages}``.

        Keys whose JavaScript value would be ``undefined`` are left out, as ``JSON.stringify``
        leaves them out.
        """
        out: dict[str, Any] = {"leafId": None if self.leaf_id is MISSING else self.leaf_id}
        if self.thinking_level is not MISSING:
            out["thinkingLevel"] = self.thinking_level
        out["model"] = self.model
        out["messages"] = self.messages
        return out


def _present(**kv: Any) -> dict[str, Any]:
    return {k: v for k, v in kv.items() if v is not MISSING}


def entry_message(entry: PathEntry, warnings: list[ProjectionWarning] | None = None) -> Any:
    """The message one path entry contributes, or ``MISSING`` (Pi's ``appendMessage`` helper)."""
    t = entry.type
    if t == "message":
        msg = entry.data.get("message", MISSING)
        if msg is MISSING:
            if warnings is not None:
                warnings.append(ProjectionWarning(entry.line, "a message entry without a message; skipped"))
            return MISSING
        return msg
    if t == "custom_message":
        d = entry.data
        return _present(
            role="custom",
            customType=d.get("customType", MISSING),
            content=d.get("content", MISSING),
            display=d.get("display", MISSING),
            details=d.get("details", MISSING),
            timestamp=date_ms(d.get("timestamp", MISSING)),
        )
    if t == "branch_summary":
        d = entry.data
        summary = d.get("summary", MISSING)
        if summary is MISSING or not js_truthy(summary):
            return MISSING
        return _present(
            role="branchSummary",
            summary=summary,
            fromId=d.get("fromId", MISSING),
            timestamp=date_ms(d.get("timestamp", MISSING)),
        )
    return MISSING


def build_context(path: Sequence[PathEntry], leaf_id: Any = MISSING) -> SessionContext:
    """Project a path (root first) into Pi's session context.

    Args:
        path: the entries from the root to the leaf, every type included.
        leaf_id: the leaf id to report; ``None`` means Pi's explicit empty leaf.
    """
    return project_from_leaf(reversed(path), leaf_id)


def project_from_leaf(back: Iterable[PathEntry], leaf_id: Any = MISSING) -> SessionContext:
    """Project a path given leaf first, reading only as far towards the root as Pi's result needs.

    Pi's projection depends on the whole path only through three things: the last
    thinking level, the last model, and the last compaction with the entries it keeps.
    Once all three are found walking up from the leaf, nothing nearer the root can change
    the result, so the walk stops there. Without a compaction every entry is emitted and
    the walk goes to the root.

    Args:
        back: the path from the leaf up to the root (consumed lazily).
        leaf_id: the leaf id to report; ``None`` means Pi's explicit empty leaf.
    """
    if leaf_id is None:
        return SessionContext(leaf_id=None, messages=[])
    ctx = SessionContext(leaf_id=leaf_id, messages=[])
    warnings = ctx.warnings
    up: list[PathEntry] = []  # leaf first
    thinking_found = model_found = False
    comp_at = -1
    kept_at = -1
    kept_key: Any = MISSING
    exact_walk = False  # a compaction without an id: Pi matches the first such one, so see all
    for entry in back:
        up.append(entry)
        t = entry.type
        if t == "thinking_level_change":
            if not thinking_found:
                ctx.thinking_level = entry.data.get("thinkingLevel", MISSING)
                thinking_found = True
        elif t == "model_change":
            if not model_found:
                d = entry.data
                ctx.model = _present(provider=d.get("provider", MISSING), modelId=d.get("modelId", MISSING))
                model_found = True
        elif t == "message":
            if not model_found:
                msg = entry.data.get("message", MISSING)
                if isinstance(msg, dict) and msg.get("role") == "assistant":
                    ctx.model = _present(provider=msg.get("provider", MISSING), modelId=msg.get("model", MISSING))
                    model_found = True
        elif t == "compaction" and comp_at < 0:
            comp_at = len(up) - 1
            if entry.id is MISSING:
                exact_walk = True
            first_kept = entry.data.get("firstKeptEntryId", MISSING)
            kept_key = id_key(first_kept) if first_kept is not MISSING else _NEVER
        if (
            comp_at >= 0
            and kept_at < 0
            and len(up) - 1 > comp_at
            and entry.id is not MISSING
            and id_key(entry.id) == kept_key
        ):
            kept_at = len(up) - 1
        if thinking_found and model_found and comp_at >= 0 and kept_at >= 0 and not exact_walk:
            break

    messages = ctx.messages

    def emit(entry: PathEntry) -> None:
        msg = entry_message(entry, warnings)
        if msg is not MISSING:
            messages.append(msg)

    if comp_at < 0:
        for i in range(len(up) - 1, -1, -1):
            emit(up[i])
        return ctx

    if exact_walk:
        # Pi looks the compaction up again by type and id from the root; with no id the
        # first id-less compaction on the path is the one whose position counts.
        comp_at = max(i for i, e in enumerate(up) if e.type == "compaction" and e.id is MISSING)
        kept_at = -1
        for i in range(len(up) - 1, comp_at, -1):
            eid = up[i].id
            if eid is not MISSING and id_key(eid) == kept_key:
                kept_at = i
                break
    last_comp = next(e for e in up if e.type == "compaction")
    cd = last_comp.data
    messages.append(
        _present(
            role="compactionSummary",
            summary=cd.get("summary", MISSING),
            tokensBefore=cd.get("tokensBefore", MISSING),
            timestamp=date_ms(cd.get("timestamp", MISSING)),
        )
    )
    ctx.compaction_id = last_comp.id
    if kept_at >= 0:
        for i in range(kept_at, comp_at, -1):
            emit(up[i])
    for i in range(comp_at - 1, -1, -1):
        emit(up[i])
    return ctx


_NEVER = object()
