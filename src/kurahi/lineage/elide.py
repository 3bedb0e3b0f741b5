"""Elide: take an entry out of what the model sees, by appending a ``context_edit``.

The library call behind ``kurahi session elide``. The transcript is never edited: the
bytes already in the file stay exactly as they were (the report proves it with the
sha256 of the old length, before and after), and one ``context_edit`` entry is appended
at the leaf, in Pi 1.6.0's shape, under the session's writer lock. From then on, on that
branch, Pi 1.6.0 and Kurahi project the entry with the replacement text, or not at all.

What it does not do: the original text is still in the file, so anything that reads the
file (a backup, a grep, Pi 0.73.1, which ignores ``context_edit``) still sees it. To get
rid of the bytes, write a new file without them (``docs/elide.md``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import KurahiError
from kurahi.fs.durable import file_sha256
from kurahi.pi.vocab import CUSTOM_MESSAGE, MESSAGE
from kurahi.store.session import Session

__all__ = ["ContextSize", "ElideReport", "describe", "elide"]


class ContextSize(msgspec.Struct, frozen=True):
    """How big the context at the leaf is."""

    messages: int
    tokens: int | None
    """Sum of Pi's per-message estimates (``ceil(chars / 4)``); ``None`` when a message has none."""

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {"messages": self.messages, "tokens": self.tokens}


class ElideReport(msgspec.Struct):
    """What one elide appended and what it changed in the model's view."""

    file: str
    entry_id: str
    kind: str
    """The target: ``user``, ``assistant``, ``toolResult`` (message roles) or ``custom_message``."""
    line: int
    edit_id: str
    replacement: str | None
    """The replacement text, or ``None``: the entry was removed from the view."""
    leaf_id: str | None
    """Where the edit was appended (the leaf it applies from)."""
    before: ContextSize
    after: ContextSize
    bytes_before: int
    bytes_after: int
    prefix_sha256: str
    """sha256 of the file's first ``bytes_before`` bytes, the same before and after."""
    still_visible: bool
    """The target's original content is still in the projected context after the edit
    (another message with the same content, or a projection that ignores edits)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "file": self.file,
            "entryId": self.entry_id,
            "kind": self.kind,
            "line": self.line,
            "editId": self.edit_id,
            "replacement": self.replacement,
            "leafId": self.leaf_id,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "bytesBefore": self.bytes_before,
            "bytesAfter": self.bytes_after,
            "prefixSha256": self.prefix_sha256,
            "stillVisible": self.still_visible,
        }


def _size(messages: list[Any]) -> ContextSize:
    from kurahi.context.tokens import estimate_tokens

    try:
        tokens: int | None = sum(int(estimate_tokens(m)) for m in messages)
    except KurahiError:
        tokens = None
    return ContextSize(len(messages), tokens)


def elide(path: str | os.PathLike[str], entry_id: str, replacement: str | None = None) -> ElideReport:
    """Append a ``context_edit`` that removes ``entry_id`` from the model's view (or replaces its text).

    Args:
        path: the transcript (a version-3 session).
        entry_id: a user, assistant or toolResult message or a ``custom_message`` on the
            path to the leaf.
        replacement: text shown to the model instead; ``None`` removes the entry.

    Raises:
        ContextEditError: the entry is unknown, off the active branch or not editable
            (its ``reason`` says which); nothing was appended.
        LockHeldError: another process is writing the session.
        NotASessionError, TranscriptReadError: the file cannot be read as a session.
        UsageError: a version-1/2 file (Kurahi never appends to one).
    """
    from kurahi.context.files import project_file

    p = Path(path)
    with Session.open(p) as s:
        leaf = s.leaf_id
        ctx_before = project_file(p, leaf).context.messages if leaf is not None else []
        size_before = os.path.getsize(p)
        prefix = file_sha256(p, limit=size_before)
        with s.transcript() as t:
            idx = t.index_of(entry_id)
            target = t.entry_at(idx) if idx is not None else None
            original = target.data if target is not None else None
            line = target.line if target is not None else 0
        edit_id = s.append_context_edit(entry_id, replacement)
        s.sync()
    ctx_after = project_file(p).context.messages
    after_prefix = file_sha256(p, limit=size_before)
    if after_prefix != prefix:  # pragma: no cover - an append that rewrote history would be a bug
        raise KurahiError(f"{p}: the first {size_before} bytes changed while appending; report this")
    assert original is not None  # append_context_edit refused an unknown id
    kind = str(original["message"].get("role")) if original.get("type") == MESSAGE else CUSTOM_MESSAGE
    content = original["message"].get("content") if original.get("type") == MESSAGE else original.get("content")
    visible = content not in (None, "", []) and any(
        isinstance(m, dict) and m.get("content") == content and m.get("role") in (kind, "custom") for m in ctx_after
    )
    return ElideReport(
        file=str(p),
        entry_id=entry_id,
        kind=kind,
        line=line,
        edit_id=edit_id,
        replacement=replacement,
        leaf_id=leaf,
        before=_size(ctx_before),
        after=_size(ctx_after),
        bytes_before=size_before,
        bytes_after=os.path.getsize(p),
        prefix_sha256=prefix,
        still_visible=visible,
    )


def _kind(kind: str) -> str:
    return kind if kind == CUSTOM_MESSAGE else f"{kind} message"


def _tokens(size: ContextSize) -> str:
    return f"~{size.tokens:,} tokens" if size.tokens is not None else "tokens unknown"


def describe(report: ElideReport) -> list[str]:
    """The report in a few lines for people."""
    what = "replaced its content" if report.replacement is not None else "removed it from the model's view"
    lines = [
        f"entry {report.entry_id} ({_kind(report.kind)}, line {report.line:,}): {what}; appended context_edit "
        f"{report.edit_id} at leaf {report.leaf_id}",
        f"context: {report.before.messages:,} messages, {_tokens(report.before)} → "
        f"{report.after.messages:,} messages, {_tokens(report.after)}",
        f"the file's first {report.bytes_before:,} bytes are unchanged (sha256 {report.prefix_sha256[:16]}…); "
        f"{report.bytes_after - report.bytes_before:,} bytes appended",
        "the original text is still in the file: see docs/elide.md to remove the bytes themselves",
    ]
    if report.still_visible:
        lines.append("warning: the original content is still in the projected context (another copy of it?)")
    return lines
