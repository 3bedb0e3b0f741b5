"""Notice when a resident lost its past: every loss of every agent and key of a state directory.

A *loss* is a boundary (a reset, a rollover, a moved dir, an upgrade) after which a stretch of
a key's history is no longer in what the runtime sends the model, and no later session
carries it either. :func:`find_losses` reads the state strictly read-only (the SQLite store
through a private snapshot, files through the transcript reader) and answers, per loss:

- a short stable id (the same state gives the same ids), the agent, key and time;
- its kind: ``reset`` / ``new`` (an in-transcript reset entry's reason, or a JSON-era reset
  archive), ``idle`` / ``daily`` (a rollover whose cause the runtime's reset policy tells),
  ``rollover`` (a rollover whose cause is not recorded), ``moved`` (the catalog names a
  transcript outside its state dir, so the runtime starts empty), ``migration`` (history that
  legacy files or leftover archives hold and the SQLite store lacks) or ``unknown``;
- the evidence that links the lost piece to the key, and how sure it is (``recorded``,
  ``matched``, ``guess``: :mod:`kurahi.runtimes.openclaw.json_links`);
- what left the model's view (messages, estimated tokens) and whether the history brought
  back from there would fit the model's window.

A runtime whose history breaks *inside* a session file lists those losses itself
(:meth:`kurahi.runtimes.base.Runtime.losses`); :func:`own_losses` puts them in a report of this
shape (:attr:`RescueReport.session_losses`), beside the lineage losses of the others.

How the view is decided, per runtime: Pi and OpenClaw 2026.5 send the current session's path;
OpenClaw 2026.9 sends what follows the last ``reset`` entry on it; a 2026.5 catalog whose
``sessionFile`` points outside the state dir gives an empty view. A stretch is *visible* when
its last entry is on that view's path, and *carried* when a later session's path holds it
(a stitched session from an earlier repair keeps every entry id): neither is a loss.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from kurahi.lifecycle.rescue.reading import Stretch, estimate_stretch, stretches_of
from kurahi.lineage.find import Lineage, Piece, iso, list_agents, open_agent
from kurahi.runtimes.base import Agent, ResetPolicy, Runtime, View
from kurahi.runtimes.session_losses import SessionLoss
from kurahi.runtimes.view import sends_whole, whole_rule
from kurahi.store.redact import scrub_text

__all__ = [
    "KINDS",
    "Loss",
    "RescueReport",
    "find_losses",
    "loss_id",
    "own_losses",
]

KINDS = ("reset", "new", "idle", "daily", "rollover", "moved", "migration", "unknown")
"""Every kind of loss, as :class:`Loss.kind` names it."""


class Restore(msgspec.Struct, rename="camel", frozen=True):
    """What bringing a loss back would give the model, estimated before any candidate is built."""

    messages: int
    """Messages of the history from the loss onward (the view after a repair, before compaction)."""
    tokens: int
    """Their estimated tokens."""
    bytes: int
    """Their stored size (what OpenClaw 2026.9 bounds what it loads by)."""
    window: int | None
    """The model's context window in tokens, when the state says (``None``: unknown)."""
    window_from: str | None
    """Where the window came from."""
    fits: bool | None
    """Whether the runtime sends it whole under the window, by its own rule (``None`` when the window is unknown)."""
    figures: str = ""
    """The figures that rule compared (``14,785 > 14,400 bytes``: OpenClaw 2026.9 bounds bytes, not tokens)."""
    rule: str = ""
    """That rule, in a sentence."""


class Loss(msgspec.Struct, rename="camel", frozen=True):
    """One loss: a stretch of a key's history that left the model's view at a boundary."""

    id: str
    """Short and stable: the same state gives the same id."""
    agent: str
    key: str
    at: str | None
    """When the boundary happened (ISO-8601 UTC): the reset, or the start of the next session."""
    kind: str
    """One of :data:`KINDS`."""
    confidence: str
    """``recorded``, ``matched`` or ``guess`` (clocks alone: applied only when the user accepts it)."""
    evidence: list[str]
    """The rules that link the lost piece to the key, and what marks the boundary."""
    source: str
    """The transcript (file or ``sqlite:<db>#<session id>``) holding the lost stretch."""
    session_id: str
    lost_messages: int
    """Messages the runtime no longer sends."""
    lost_tokens: int
    """Their estimated tokens."""
    first_entry_at: str | None
    last_entry_at: str | None
    runtime: str
    """The runtime whose view was measured: ``pi``, ``openclaw-2026.5`` or ``openclaw-2026.9``."""
    restore: Restore
    pieces: list[str]
    """The sources a repair from this loss stitches, oldest first (the current one last)."""
    state_dir: str
    last_message_at: str | None = None
    """When the stretch's last message was said (ISO-8601 UTC); ``at`` is when it left the view."""
    apply_refused: str | None = None
    """Why ``rescue apply`` would refuse to bring it back, and what to do (the check apply runs,
    read-only); ``None``: nothing in the state refuses it."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (camelCase)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out


class RescueReport(msgspec.Struct, rename="camel"):
    """Every loss of a state directory, oldest first."""

    state_dir: str
    kind: str
    """``openclaw``, ``pi`` or ``kurahi``: what the directory is."""
    agents: list[str]
    keys: int
    """Session keys looked at."""
    losses: list[Loss]
    notes: list[str] = msgspec.field(default_factory=list)
    unread: list[str] = msgspec.field(default_factory=list)
    """Transcripts that could not be read at all (a note says why): no loss in them could be judged."""
    session_losses: list[SessionLoss] = msgspec.field(default_factory=list)
    """Losses a runtime found inside its session files (:func:`own_losses`), oldest first."""
    looked_at: str | None = None
    """What was looked at, in words, when the runtime counted it itself (its sessions and projects)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (camelCase)."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    @property
    def count(self) -> int:
        """How many losses of either shape."""
        return len(self.losses) + len(self.session_losses)


def own_losses(runtime: Runtime, root: str | os.PathLike[str], state_kind: str) -> RescueReport | None:
    """The losses ``runtime`` finds itself in its state at ``root`` (read-only); ``None``: it finds none itself.

    Raises:
        UsageError: ``root`` is not a directory.
        TranscriptReadError: the state cannot be read at all.
    """
    found = runtime.losses(Path(os.path.abspath(root)))
    if found is None:
        return None
    return RescueReport(
        found.state_dir,
        state_kind,
        [],
        found.sessions,
        [],
        found.notes,
        found.unread,
        session_losses=found.losses,
        looked_at=found.words,
    )


# ---- the losses of one key -------------------------------------------------------------


@dataclass
class _KeyContext:
    state: Agent
    lineage: Lineage
    view: View
    policy: ResetPolicy


def _view_ids(ctx: _KeyContext, stretches: dict[str, list[Stretch]]) -> set[str]:
    """Entry ids on the path of what the runtime sends now."""
    if ctx.lineage.moved_from is not None and ctx.view.empty_when_moved:
        return set()  # OpenClaw opens the absent file the catalog names, and starts empty
    current = next((p for p in ctx.lineage.pieces if p.current), None)
    if current is None:
        return set()
    parts = stretches.get(current.source, [])
    if ctx.view.after_last_reset:
        parts = parts[-1:]
    return {i for s in parts for i in s.ids}


def _boundary(ctx: _KeyContext, s: Stretch, after: Piece | None) -> tuple[str, int | None, list[str]]:
    """The kind, time and evidence of the boundary that ends stretch ``s``."""
    piece = s.piece
    evidence = [f"linked by {rule}" for rule in piece.found_by]
    if s.ends_with_reset is not None:
        eid, reason, ms = s.ends_with_reset
        kind = reason if reason in ("reset", "new") else "reset"
        return kind, ms, [*evidence, f"reset entry {eid} ({reason or 'no reason'}) in {piece.session_id}"]
    found = ctx.state.boundary(ctx.lineage, piece, after, ctx.policy)
    return found.kind, found.at_ms, [*evidence, *found.evidence]


def loss_id(agent: str, key: str, s: Stretch) -> str:
    """The id of the loss of stretch ``s`` (the same state gives the same id)."""
    text = f"{agent}\n{key}\n{s.piece.session_id}\n{s.number}\n{s.last_id}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _key_losses(ctx: _KeyContext, notes: list[str]) -> list[Loss]:
    lineage = ctx.lineage
    stretches: dict[str, list[Stretch]] = {}
    path_ids: dict[str, set[str]] = {}
    for piece in lineage.pieces:
        stretches[piece.source], path_ids[piece.source] = stretches_of(ctx.state, piece, notes)
    view = _view_ids(ctx, stretches)
    window, window_from = ctx.state.window(lineage.key)
    pieces = list(lineage.pieces)
    # Pieces whose last stretch a later piece carries are superseded (an earlier repair's sources).
    later: set[str] = set()
    carried: set[str] = set()
    for piece in reversed(pieces):
        last = stretches[piece.source][-1].last_id if stretches[piece.source] else None
        if last is not None and last in later:
            carried.add(piece.source)
        later |= path_ids[piece.source]
    moved = lineage.moved_from is not None and ctx.view.empty_when_moved
    lost: list[tuple[int, Stretch]] = []
    for n, piece in enumerate(pieces):
        later_ids: set[str] = set().union(*(path_ids[p.source] for p in pieces[n + 1 :]))
        for s in stretches[piece.source]:
            last = s.last_id
            if last is None or s.messages == 0 or last in view or last in later_ids:
                continue  # nothing the model saw, still in view, or a later session carries it
            if piece.current and s.ends_with_reset is None and not moved:
                continue  # the current stretch of the current session is the view itself
            lost.append((n, s))
    if not lost:
        return []
    # Pi's estimate for what was lost and for what the runtime sends now; bytes / 4 elsewhere.
    for _, s in lost:
        estimate_stretch(ctx.state, s, notes)
    current = next((p for p in pieces if p.current), None)
    for s in stretches[current.source] if current is not None else []:
        if s.last_id in view:
            estimate_stretch(ctx.state, s, notes)
    losses: list[Loss] = []
    for n, s in lost:
        piece = pieces[n]
        after = pieces[n + 1] if n + 1 < len(pieces) else None
        kind, at, evidence = _boundary(ctx, s, after)
        sources = [p.source for p in pieces[n:] if p.source not in carried or p is piece]
        restored = [
            st
            for p in pieces[n:]
            if p.source in sources
            for st in stretches[p.source]
            if p is not piece or st.number >= s.number
        ]
        losses.append(
            Loss(
                id=loss_id(lineage.agent, lineage.key, s),
                agent=lineage.agent,
                key=lineage.key,
                at=iso(at),
                kind=kind,
                confidence=piece.confidence,
                evidence=[scrub_text(line) for line in evidence],  # a reset's reason is the user's words
                source=piece.source,
                session_id=piece.session_id,
                lost_messages=s.messages,
                lost_tokens=s.tokens,
                first_entry_at=iso(s.first_ms),
                last_entry_at=iso(s.last_ms),
                runtime=ctx.view.name,
                restore=_restore(ctx.view.name, restored, window, window_from),
                pieces=sources,
                state_dir=lineage.state_dir,
                last_message_at=iso(s.last_message_ms),
            )
        )
    return losses


def _restore(runtime: str, restored: list[Stretch], window: int | None, window_from: str | None) -> Restore:
    """What a rescue from here gives back, and whether the runtime will send all of it."""
    tokens = sum(st.tokens for st in restored)
    size = sum(st.bytes for st in restored)
    entries = sum(len(st.indices) for st in restored)
    figures, rule = ("", "")
    if window is not None:
        figures, rule = whole_rule(runtime, window, tokens=tokens, size=size, entries=entries)
    return Restore(
        messages=sum(st.messages for st in restored),
        tokens=tokens,
        bytes=size,
        window=window,
        window_from=window_from,
        fits=None if window is None else sends_whole(runtime, window, tokens=tokens, size=size, entries=entries),
        figures=figures,
        rule=rule,
    )


def find_losses(
    state_dir: str | os.PathLike[str],
    *,
    agent: str | None = None,
    key: str | None = None,
    state_kind: str = "openclaw",
) -> RescueReport:
    """Every loss of every agent and key of ``state_dir``, oldest first; reads only.

    Args:
        state_dir: an OpenClaw state directory (either era), a Kurahi home.
        agent: look at this agent only.
        key: look at this session key only.
        state_kind: what the directory is, for the report (``openclaw``, ``kurahi``).

    Raises:
        UsageError: the directory is neither layout; an unknown agent or key.
        TranscriptReadError, CatalogError: the store or catalog cannot be read.
    """
    agents = list_agents(state_dir) if agent is None else [agent]
    notes: list[str] = []
    unread: list[str] = []
    losses: list[Loss] = []
    keys_seen = 0
    root = Path(os.path.abspath(state_dir))
    for name in agents:
        found = len(losses)
        with open_agent(state_dir, name) as state:
            keys = state.keys if key is None else [key]
            if key is not None and key not in state.keys:
                from kurahi.errors import UsageError

                raise UsageError(f"{root}: agent {name!r} has no session key {key!r}")
            policy = state.reset_policy()
            for k in keys:
                if state.hidden(k):
                    continue  # the runtime's own bookkeeping: its pieces belong to another key
                keys_seen += 1
                lineage = state.lineage(k)
                unread.extend(lineage.unread)
                notes.extend(f"{k}: {n}" for n in lineage.notes)
                notes.extend(
                    f"{u}: no evidence ties it to one key, so it is not offered (see `kurahi lineage find`)"
                    for u in lineage.unlinked
                )
                ctx = _KeyContext(state, lineage, state.view(lineage), policy)
                losses.extend(_key_losses(ctx, notes))
            if len(losses) > found:
                # Never promise what apply would refuse: its own check, asked once per agent of
                # the snapshot already read (a second copy of a large store costs as much again).
                refused = state.write_refusal()
                if refused is not None:
                    losses[found:] = [msgspec.structs.replace(loss, apply_refused=refused) for loss in losses[found:]]
    losses.sort(key=lambda loss: (loss.at or "", loss.agent, loss.key, loss.id))
    notes = [scrub_text(note) for note in notes]  # keys and session names can hold anything
    return RescueReport(str(root), state_kind, agents, keys_seen, losses, sorted(set(notes)), sorted(set(unread)))
