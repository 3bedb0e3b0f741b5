"""A key's whole history as passages: every entry of every piece, with where it stands now.

Built once per key and state (:mod:`kurahi.mcp_server.served` keeps it until the state
changes), so a recall is a scan of text already in memory. Where an entry stands is read from
the transcript's structure, as the runtimes read it:

``inView``
    on the current piece's path, after its last ``reset`` entry (OpenClaw 2026.9 sends only
    what follows one) and not before the kept part of its last compaction.
``compacted``
    on a path, but before the first entry its last compaction kept: the model saw only a summary.
``abandoned``
    not on its piece's path at all (a branch the session left).

Everything else (earlier pieces, the part before a reset) is simply not in view. The window
(a history too large for the model) is not applied here: the ``check`` tool does that.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kurahi.context.tokens import estimate_tokens
from kurahi.js.values import MISSING, date_ms
from kurahi.lineage.path import canonical_path
from kurahi.lineage.provenance import content_text
from kurahi.pi.transcript import Transcript
from kurahi.pi.vocab import COMPACTION, FIRST_KEPT_ENTRY_ID, RESET
from kurahi.runtimes.own_files import OwnEntry
from kurahi.store.redact import redact

__all__ = ["OWN_TOOLS", "Passage", "PieceInfo", "fold", "own_passages", "piece_passages"]

OWN_TOOLS = frozenset({"lineage", "recall", "check", "losses"})
"""This server's tools: their results, recorded in a transcript, are flagged ``ownResult``."""


def fold(text: str) -> str:
    """Text as a query is matched against it: NFKC, case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


@dataclass(frozen=True, slots=True)
class PieceInfo:
    """One piece of the lineage as the server names it (``p0`` the oldest)."""

    label: str
    source: str
    session_id: str
    kind: str
    current: bool
    first_ms: int | None
    last_ms: int | None
    found_by: str
    confidence: str
    repair_active: bool
    """The piece is a stitched history (its header records a ``lineage``): a repair is live in it."""


@dataclass(frozen=True, slots=True)
class Passage:
    """One entry of a piece, readable."""

    piece: str
    pos: int
    """The entry's position in its piece (0 = the first entry after the header)."""
    entry_id: str | None
    entry_type: str
    role: str | None
    at_ms: int | None
    text: str
    """The entry's readable text, as stored: pass it through :func:`~kurahi.mcp_server.safety.scrub` to hand it out."""
    in_view: bool
    compacted: bool
    abandoned: bool
    before_reset: bool
    own: bool
    is_message: bool
    tokens: int


def _blocks_text(content: Any) -> list[str]:
    """A message content's text as :func:`kurahi.lineage.provenance.content_text` reads it.

    Tool calls' arguments are the one place a keyed secret (an ``apiKey``, a token) sits in a
    message: a content holding a call is redacted first (:func:`kurahi.store.redact.redact`).
    """
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "toolCall" for b in content):
        content = redact(content)
    text = content_text(content)
    return [text] if text else []


def _readable(data: dict[str, Any]) -> tuple[str | None, str, dict[str, Any] | None]:
    """``(role, text, message)`` of an entry; text is empty for bookkeeping entries."""
    kind = data.get("type")
    if kind == "message" and isinstance(data.get("message"), dict):
        m = data["message"]
        role = m.get("role") if isinstance(m.get("role"), str) else None
        parts = _blocks_text(m.get("content"))
        for field in ("command", "output", "summary"):
            if isinstance(m.get(field), str):
                parts.append(m[field])
        return role, "\n".join(parts), m
    if kind in (COMPACTION, "branch_summary") and isinstance(data.get("summary"), str):
        return kind, data["summary"], None
    if kind == "custom_message":
        return "custom", "\n".join(_blocks_text(data.get("content"))), None
    return None, "", None


def _own(message: dict[str, Any] | None, text: str) -> bool:
    """Whether a recorded message is a result of this server's tools (or the call of one)."""
    if message is None:
        return False
    details = message.get("details")
    if isinstance(details, dict):
        if details.get("mcpTool") in OWN_TOOLS and isinstance(details.get("mcpServer"), str):
            return True
        name = details.get("toolName")
        if isinstance(name, str) and name.split("__")[-1] in OWN_TOOLS and "__" in name:
            return True
    name = message.get("toolName")
    if isinstance(name, str) and "__" in name and name.split("__")[-1] in OWN_TOOLS:
        return True
    # A result wrapped by OpenClaw's tool_call carries the MCP server's tool id in its text.
    return message.get("role") == "toolResult" and (
        '"mcpTool":"recall"' in text or '\\"mcpTool\\":\\"recall\\"' in text
    )


def piece_passages(t: Transcript, info: PieceInfo) -> Iterator[Passage]:
    """Every entry of ``t`` as a :class:`Passage` (see the module docstring for the flags)."""
    path = canonical_path(t, branches=False)
    order = {e.index: n for n, e in enumerate(path.entries)}
    reset_at = -1
    kept_at = -1
    for n, e in enumerate(path.entries):
        if e.type == RESET:
            reset_at, kept_at = n, -1
        elif e.type == COMPACTION:
            kept = e.data.get(FIRST_KEPT_ENTRY_ID)
            idx = t.index_of(kept) if isinstance(kept, str) else None
            kept_at = order.get(idx, n) if idx is not None else n
    for e in t.entries():
        data = e.data
        role, text, message = _readable(data if isinstance(data, dict) else {})
        at_path = order.get(e.index)
        on_path = at_path is not None
        before_reset = at_path is not None and at_path <= reset_at
        compacted = at_path is not None and not before_reset and at_path < kept_at
        in_view = info.current and on_path and not before_reset and not compacted
        tokens = 0
        if message is not None:
            try:
                tokens = estimate_tokens(message)
            except Exception:  # an odd message counts nothing rather than failing the whole index
                tokens = 0
        at = date_ms(data.get("timestamp", MISSING)) if isinstance(data, dict) else None
        if not at and message is not None and isinstance(message.get("timestamp"), int | float):
            at = message["timestamp"]
        at = int(at) if isinstance(at, int | float) and at > 0 else None
        yield Passage(
            piece=info.label,
            pos=e.index,
            entry_id=e.id if isinstance(e.id, str) else None,
            entry_type=e.type if isinstance(e.type, str) else "",
            role=role,
            at_ms=at,
            text=text,
            in_view=in_view,
            compacted=compacted,
            abandoned=not on_path,
            before_reset=before_reset,
            own=_own(message, text),
            is_message=message is not None,
            tokens=tokens,
        )


def _own_tool(name: str) -> bool:
    return "__" in name and name.split("__")[-1] in OWN_TOOLS


def own_passages(entries: list[OwnEntry], info: PieceInfo) -> Iterator[Passage]:
    """A runtime's own session (Claude Code's) as passages: in view when its next resume sends the row.

    A row of the current session its resume no longer reaches is an abandoned branch; every row
    of an earlier session is simply not in view.
    """
    for pos, e in enumerate(entries):
        in_view = info.current and e.in_view
        yield Passage(
            piece=info.label,
            pos=pos,
            entry_id=e.id,
            entry_type=e.type,
            role=e.role,
            at_ms=e.at_ms,
            text=e.text,
            in_view=in_view,
            compacted=False,
            abandoned=info.current and not e.in_view,
            before_reset=False,
            own=any(_own_tool(t) for t in e.tools),
            is_message=e.is_message,
            tokens=e.tokens,
        )
