"""A piece of a key's history read as *stretches*: its path cut at its ``reset`` entries.

What :mod:`kurahi.lifecycle.rescue.losses` weighs: each stretch's entry ids (is it still in view, or
carried by a later session?), its messages, tokens and stored bytes (what left the view, and
whether it fits back), and for choosing markers the texts of its user and assistant messages.
Read from the transcript's columns: only a stretch's ends, the resets and (when asked) the
messages of the stretches a rescue needs are decoded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kurahi.context.project import entry_messages
from kurahi.context.tokens import estimate_tokens
from kurahi.errors import TranscriptError
from kurahi.lineage.find import Agent, Piece
from kurahi.pi.transcript import Transcript
from kurahi.pi.vocab import BRANCH_SUMMARY, COMPACTION, CUSTOM_MESSAGE, MESSAGE, RESET

__all__ = ["Stretch", "estimate_stretch", "stretches_of", "strip_envelope"]

_TEXTS_KEPT = 400
"""Texts a stretch keeps for choosing markers (its first and last ones), whatever its length."""


@dataclass
class Stretch:
    """A run of one piece's path between ``reset`` entries (or the whole path without one)."""

    piece: Piece
    number: int
    """0 for the stretch before the piece's first reset entry."""
    ids: list[str]
    """Entry ids of the stretch, in path order."""
    messages: int
    tokens: int
    """Estimated: Pi's estimate of each message once :func:`estimate_stretch` ran, else the stored bytes / 4."""
    texts: list[tuple[str, str]]
    """``(role, text)`` of user and assistant texts (the first and last :data:`_TEXTS_KEPT`)."""
    ends_with_reset: tuple[str, str | None, int | None] | None = None
    """``(entry id, reason, time)`` of the reset entry that ends the stretch."""
    first_ms: int | None = None
    last_ms: int | None = None
    bytes: int = 0
    """The stored size of the stretch's lines (what OpenClaw 2026.9 bounds its context by)."""
    indices: list[int] = field(default_factory=list)
    """Positions of the stretch's entries in its transcript (path order)."""
    last_message_ms: int | None = None
    """When its last message was written (``last_ms`` is its last entry of any kind)."""

    @property
    def last_id(self) -> str | None:
        """The stretch's last entry id (what decides whether it is still in view)."""
        return self.ids[-1] if self.ids else None


def _texts(message: Any) -> list[tuple[str, str]]:
    """``(role, text)`` of a user or assistant message's text parts (OpenClaw's envelope removed)."""
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return []
    role = message["role"]
    content = message.get("content")
    parts: list[str] = []
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [
            b["text"]
            for b in content
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        ]
    return [(role, strip_envelope(t) if role == "user" else t) for t in parts]


_MESSAGE_KINDS = frozenset({MESSAGE, CUSTOM_MESSAGE, BRANCH_SUMMARY, COMPACTION})
"""Entry types that put a message into the context."""


def _ms(t: Transcript, index: int) -> int | None:
    stamp = t.timestamp_ms(index)
    return int(stamp) if stamp is not None else None


def stretches_of(
    state: Agent, piece: Piece, notes: list[str], *, texts: bool = False
) -> tuple[list[Stretch], set[str]]:
    """A piece's path cut at its ``reset`` entries, and every id on the path.

    Read from the transcript's columns: only each stretch's two ends and the resets are
    decoded, so a 100 MB session costs what its index costs. Tokens are estimated from the
    stored bytes (four to a token, the JSON around the text included: an upper bound). With
    ``texts`` the user and assistant texts are kept too, for choosing markers (the first and
    last :data:`_TEXTS_KEPT` messages of each stretch).
    """
    try:
        with state.open_piece(piece) as t:
            if not len(t):
                return [], set()
            path = t.path_indices(len(t) - 1)
            types = t.types()
            ids = t.ids_of(path)
            out: list[Stretch] = []
            start = 0
            for n, index in enumerate([*path, None]):
                if index is not None and types[index] != RESET:
                    continue
                run = path[start:n]
                part = Stretch(piece, len(out), [i for i in ids[start:n] if isinstance(i, str)], 0, 0, [])
                part.messages = sum(1 for i in run if types[i] in _MESSAGE_KINDS)
                part.bytes = t.line_bytes(run)
                part.tokens = part.bytes // 4
                part.indices = run
                if run:
                    part.first_ms, part.last_ms = _ms(t, run[0]), _ms(t, run[-1])
                    said = next((i for i in reversed(run) if types[i] in _MESSAGE_KINDS), None)
                    part.last_message_ms = _ms(t, said) if said is not None else None
                if texts:
                    part.texts = _stretch_texts(t, [i for i in run if types[i] == MESSAGE])
                if index is not None:
                    reason = t.entry_at(index).data.get("reason")
                    eid = ids[n] if isinstance(ids[n], str) else ""
                    part.ends_with_reset = (eid, reason if isinstance(reason, str) else None, _ms(t, index))
                out.append(part)
                start = n + 1
            return out, {i for i in ids if isinstance(i, str)}
    except TranscriptError as exc:
        notes.append(f"skipped {piece.source}: {exc.detail}")
        return [], set()


def estimate_stretch(state: Agent, s: Stretch, notes: list[str]) -> None:
    """Replace a stretch's byte-based token figure with Pi's estimate of each of its messages."""
    try:
        with state.open_piece(s.piece) as t:
            types = t.types()
            messages = [i for i in s.indices if types[i] in _MESSAGE_KINDS]
            s.tokens = sum(estimate_tokens(m) for e in t.path_entries(messages) for m in entry_messages(e))
    except TranscriptError as exc:
        notes.append(f"{s.piece.source}: tokens estimated from bytes ({exc.detail})")


def _stretch_texts(t: Transcript, messages: list[int]) -> list[tuple[str, str]]:
    if len(messages) > 2 * _TEXTS_KEPT:
        messages = messages[:_TEXTS_KEPT] + messages[-_TEXTS_KEPT:]
    out: list[tuple[str, str]] = []
    for i in messages:
        for message in entry_messages(t.entry_at(i)):
            out.extend(_texts(message))
    return out


_PREFIX = re.compile(r"^\[[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2}[^\]]*\]\s*")


def strip_envelope(text: str) -> str:
    """A user text without OpenClaw's ``[Mon 2026-11-30 08:24 UTC] `` prefix."""
    return _PREFIX.sub("", text)
