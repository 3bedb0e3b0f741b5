"""Continuity-preserving rollover: a new session that starts with the old one's operative state.

A rollover that drops the live past is what a session reset does to a resident. With
``carry: lineage`` the new transcript instead begins with the old session's recent
interaction, copied entry by entry (content and timestamps unchanged), followed by a
``compaction`` entry whose summary is the old session's latest compaction summary (plus a
note on what was left behind and where it is). Its projection is that summary followed by
exactly the old effective context's tail; when the old context fits in
``keep_recent_tokens`` the tail is all of it. ``carry: summary`` keeps only the summary and
a digest of the recent interaction; ``none`` keeps nothing. Either way the new header's
``parentSession`` names the old file, which is kept.

:func:`check_carry` re-projects both transcripts and says whether the new one reproduces
the old context as promised.

Pi 1.6.0's kinds are carried by their meaning, never resurrected: an entry a
``context_edit`` removed from the old context is not copied at all, an entry whose content
an edit replaced is copied with the replacement in place of the original (so the new file
does not hold the original bytes either), and the edits themselves are not copied (their
effect is in the copies). System-role messages are folded, as Pi 1.6.0 folds them when it
compacts, into the new compaction's ``systemMessage``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kurahi.context.budget import DEFAULT_KEEP_RECENT_TOKENS, find_cut_point
from kurahi.context.files import project_file
from kurahi.context.origins import EffectivePath, Source, effective_path
from kurahi.context.project import PathEntry, build_context, entry_message
from kurahi.context.text import message_text
from kurahi.context.tokens import estimate_context_tokens
from kurahi.js.values import MISSING
from kurahi.pi.system import current_system_message, path_system_messages
from kurahi.pi.vocab import (
    BRANCH_SUMMARY,
    COMPACTION,
    CONTEXT_EDIT,
    CUSTOM,
    CUSTOM_MESSAGE,
    FIRST_KEPT_ENTRY_ID,
    LABEL,
    LEAF_MARKER_TYPE,
    MESSAGE,
    MODEL_CHANGE,
    TARGET_ID,
    THINKING_LEVEL_CHANGE,
)
from kurahi.store.session import Session

__all__ = ["CarryCheck", "CarryReport", "carry_into", "check_carry"]

Carry = Literal["lineage", "summary", "none"]


@dataclass(frozen=True)
class CarryReport:
    """What a rollover carried into the new session."""

    carry: Carry
    copied_entries: int
    dropped_messages: int
    """Messages of the old context not carried raw (represented by the summary)."""
    compaction_id: str | None
    summary: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "carry": self.carry,
            "copiedEntries": self.copied_entries,
            "droppedMessages": self.dropped_messages,
            "compactionId": self.compaction_id,
        }


def carry_into(
    old_path: Sequence[PathEntry],
    new: Session,
    carry: Carry,
    *,
    old_session_id: str,
    old_file: str | os.PathLike[str],
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS,
) -> CarryReport:
    """Write what ``carry`` asks for from ``old_path`` (root to leaf) into the fresh ``new`` session."""
    if carry == "none" or not old_path:
        return CarryReport(carry, 0, 0, None, None)
    old_ctx = build_context(old_path)
    view = effective_path(old_path)
    by_position = {src.position: src for src in view.sources}
    system = current_system_message(path_system_messages(old_path))
    entries = [e.data for e in old_path]
    comp_at = max((i for i, e in enumerate(old_path) if e.type == COMPACTION), default=-1)
    old_summary = old_path[comp_at].data.get("summary") if comp_at >= 0 else None
    # The old context's raw part starts at the last compaction's first kept entry.
    start = comp_at + 1
    if comp_at >= 0:
        kept_id = old_path[comp_at].data.get(FIRST_KEPT_ENTRY_ID)
        start = next((i for i in range(comp_at) if old_path[i].id == kept_id), comp_at + 1)
    cut = (
        find_cut_point(entries, start, len(entries), keep_recent_tokens).first_kept_entry_index
        if start < len(entries)
        else len(entries)
    )
    cut = max(cut, start)
    raw = [e for i, e in enumerate(old_path) if i >= cut and e.type != COMPACTION and i != comp_at]
    raw = [e for e in raw if not (e.type == CUSTOM and e.data.get("customType") == LEAF_MARKER_TYPE)]
    dropped = sum(src.messages for src in view.sources if start <= src.position < cut and src.entry.type != COMPACTION)
    note = f"[Continued from session {old_session_id} ({Path(old_file).name}). " + (
        f"{dropped} earlier messages are summarized here or kept in that transcript.]"
        if dropped
        else "Its recent context follows unchanged.]"
    )
    tokens_before = int(estimate_context_tokens(old_ctx.messages).tokens)
    details = {"kurahi": {"carry": carry, "from": old_session_id, "parentSession": str(old_file)}}
    if carry == "summary":
        recent = [f"- {role}: {' '.join(text.split())[:200]}" for role, text in _visible_texts(view)[-10:] if text]
        summary = "\n\n".join(
            x
            for x in (
                old_summary if isinstance(old_summary, str) else None,
                note,
                "Recent interaction:\n" + "\n".join(recent),
            )
            if x
        )
        cid = new.append_compaction(summary, None, tokens_before, details=details, system_message=system)
        return CarryReport(carry, 0, view.message_count, cid, summary)
    # lineage: settings first (they shape the projection), then the tail, then the summary.
    for kind in (THINKING_LEVEL_CHANGE, MODEL_CHANGE):
        last = next((e for e in reversed(old_path[:cut]) if e.type == kind), None)
        if last is not None:
            new.append_entry({k: v for k, v in last.data.items() if k not in ("id", "parentId")}, keep_timestamp=True)
    positions = {id(e): i for i, e in enumerate(old_path)}
    mapping: dict[Any, str] = {}
    first_copy: str | None = None
    for e in raw:
        if e.type == CONTEXT_EDIT:
            continue  # its effect is written into the copy of its target
        src = by_position.get(positions[id(e)])
        if src is not None and src.removed:
            continue  # the model no longer saw it: it is not carried, not even as bytes
        data = _as_seen(e.data, src)
        if isinstance(data.get(TARGET_ID), str) and data[TARGET_ID] in mapping:
            data[TARGET_ID] = mapping[data[TARGET_ID]]
        elif e.type == LABEL:
            continue  # a label on an entry that was not carried
        eid = new.append_entry(data, keep_timestamp=True)
        mapping[e.id] = eid
        if first_copy is None and entry_message(e) is not MISSING:
            first_copy = eid
    if first_copy is None:
        return CarryReport(carry, len(mapping), dropped, None, None)
    summary = f"{old_summary}\n\n{note}" if isinstance(old_summary, str) and old_summary else note
    comp_ts = old_path[comp_at].data.get("timestamp") if comp_at >= 0 and not dropped else None
    cid = new.append_compaction(
        summary,
        first_copy,
        tokens_before,
        details=details,
        timestamp=comp_ts if isinstance(comp_ts, str) else None,
        system_message=system,
    )
    return CarryReport(carry, len(mapping), dropped, cid, summary)


def _as_seen(data: dict[str, Any], src: Source | None) -> dict[str, Any]:
    """An entry to copy (without ``id`` and ``parentId``), with its edit's replacement in place."""
    out = {k: v for k, v in data.items() if k not in ("id", "parentId")}
    edit = src.edit if src is not None else None
    replacement = edit.data.get("replacement") if edit is not None else None
    if not isinstance(replacement, dict) or "content" not in replacement:
        return out
    content = replacement["content"]
    if out.get("type") == MESSAGE and isinstance(out.get("message"), dict):
        msg = out["message"]
        if msg.get("role") in ("user", "assistant", "toolResult"):
            if msg.get("role") != "user" and isinstance(content, str):
                content = [{"type": "text", "text": content}]
            out["message"] = {**msg, "content": content}
    elif out.get("type") == CUSTOM_MESSAGE:
        out["content"] = content
    return out


def _visible_texts(view: EffectivePath) -> list[tuple[str, str]]:
    """``(role, text)`` of what the model saw, edits applied (for the summary's digest)."""
    out: list[tuple[str, str]] = []
    for src in view.sources:
        if not src.messages:
            continue
        data = _as_seen(src.entry.data, src)
        kind = data.get("type")
        if kind == MESSAGE and isinstance(data.get("message"), dict):
            out.append((str(data["message"].get("role")), message_text(data["message"])))
        elif kind == CUSTOM_MESSAGE:
            out.append(("custom", message_text({"role": "custom", "content": data.get("content")})))
        elif kind in (COMPACTION, BRANCH_SUMMARY) and isinstance(data.get("summary"), str):
            out.append(("compactionSummary" if kind == COMPACTION else "branchSummary", data["summary"]))
    return out


@dataclass(frozen=True)
class CarryCheck:
    """Whether a carried session reproduces the old effective context."""

    ok: bool
    old_messages: int
    new_messages: int
    tail_messages: int
    """Messages of the new context after its summary; all equal to the old context's last ones."""
    detail: str

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "ok": self.ok,
            "oldMessages": self.old_messages,
            "newMessages": self.new_messages,
            "tailMessages": self.tail_messages,
            "detail": self.detail,
        }


def check_carry(old_file: str | os.PathLike[str], new_file: str | os.PathLike[str]) -> CarryCheck:
    """Project both transcripts: the new context must be one summary and then exactly the old context's tail.

    The summary must contain the old context's summary, if it had one.
    """
    old_all = project_file(old_file).context.messages
    new_all = project_file(new_file).context.messages
    # System messages are compared folded: Pi 1.6.0 keeps them in the compaction, not the tail.
    old = [m for m in old_all if not (isinstance(m, dict) and m.get("role") == "system")]
    new = [m for m in new_all if not (isinstance(m, dict) and m.get("role") == "system")]
    if not new:
        return CarryCheck(not old, len(old), 0, 0, "nothing was carried" if old else "both are empty")
    head, tail = new[0], new[1:]
    if not isinstance(head, dict) or head.get("role") != "compactionSummary":
        return CarryCheck(False, len(old), len(new), 0, "the new context does not open with the carried summary")
    old_summary = (
        old[0].get("summary")
        if old and isinstance(old[0], dict) and old[0].get("role") == "compactionSummary"
        else None
    )
    if old_summary is not None and str(old_summary) not in str(head.get("summary")):
        return CarryCheck(False, len(old), len(new), len(tail), "the old summary is not in the carried one")
    if len(tail) > len(old) or (tail and old[len(old) - len(tail) :] != tail):
        return CarryCheck(False, len(old), len(new), len(tail), "the carried messages are not the old context's tail")
    if _fold(old_all) != _fold(new_all):
        return CarryCheck(False, len(old), len(new), len(tail), "the system prompt was not carried as it was")
    return CarryCheck(True, len(old), len(new), len(tail), f"summary + the old context's last {len(tail)} messages")


def _fold(messages: list[Any]) -> dict[str, Any] | None:
    folded = current_system_message(messages)
    return {k: v for k, v in folded.items() if k != "timestamp"} if folded is not None else None
