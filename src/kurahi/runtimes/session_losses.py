"""Losses a runtime finds inside its own session files, in the one shape the generic rooms show.

A runtime of agents and keys (OpenClaw, a Kurahi home) loses history *between* sessions: a
reset or a rollover starts a new one, and rescue finds what left the view by reading a key's
lineage (:mod:`kurahi.lifecycle.rescue.losses`). A runtime whose history breaks *inside* one
session file (Claude Code: a row whose link sends ``--resume`` down the wrong path) finds its
losses itself, through :meth:`kurahi.runtimes.base.Runtime.losses`, and answers in this shape,
which ``kurahi rescue`` and ``kurahi doctor`` show without knowing which runtime it came from.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["SessionLoss", "SessionLosses"]


class SessionLoss(msgspec.Struct, rename="camel", frozen=True, kw_only=True):
    """One loss inside a session file: what its runtime no longer sends, and why."""

    id: str
    """Short and stable: the same files give the same id."""
    agent: str
    """The project the session belongs to (its working directory), where rescue's other losses name an agent."""
    key: str
    """The session id (what the runtime resumes by), where rescue's other losses name a session key."""
    project: str
    """The session's working directory, as its rows record it."""
    session_id: str
    source: str
    """The session file."""
    at: str | None
    """When the break happened (ISO-8601 UTC): the time of the row whose link broke."""
    kind: str
    """The runtime's name for what broke (Claude Code: ``null-parent``, ``wrong-parent``, ...)."""
    confidence: str
    """``recorded`` (the file itself shows the break) or ``guess`` (the same rows could be deliberate,
    or only clocks link them): a guess is brought back only when its user accepts it."""
    evidence: list[str]
    """What shows it, in words, naming rows by uuid and line."""
    lost_messages: int
    """Messages the runtime no longer sends."""
    lost_tokens: int
    """Their estimated tokens."""
    first_entry_at: str | None
    """When the first row that left the view was written."""
    last_entry_at: str | None
    """When the last row that left the view was written."""
    last_message_at: str | None
    """When the last lost message was said."""
    row: str | None
    """The uuid of the row whose link broke (a compact boundary for a missing preserved tail)."""
    line: int | None
    """Its line in the session file (1-based)."""
    repair_parent: str | None
    """The row that link would name for the runtime to send the lost rows again (``None``: none)."""
    lost_rows: int
    """Rows that left the view (messages, tool results, attachments)."""
    runtime: str
    """The release whose loader was modelled (``claude-code-2.1.332``)."""
    state_dir: str
    apply_refused: str | None = None
    """Why ``kurahi rescue apply`` would not bring it back (``None``: it would)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (camelCase)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


class SessionLosses(msgspec.Struct, rename="camel", kw_only=True):
    """Every loss a runtime found in its session files, oldest first, and what it looked at."""

    state_dir: str
    runtime: str
    """The runtime's name (``claude``)."""
    projects: int
    """Project folders looked at."""
    sessions: int
    """Session files read."""
    losses: list[SessionLoss]
    notes: list[str] = msgspec.field(default_factory=list)
    unread: list[str] = msgspec.field(default_factory=list)
    """Files or folders that were not read (a link, unreadable): a note says why."""

    @property
    def words(self) -> str:
        """What was looked at, in a sentence's words."""
        return f"{self.sessions} session(s) in {self.projects} project(s)"
