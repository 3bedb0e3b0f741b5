"""``kurahi lineage find --claude``: one conversation split over several Claude Code sessions, joined.

A conversation leaves its session file in three ways users meet, each joined here with its
evidence and how sure it is:

``clear``
    ``/clear`` starts a new session in the same project folder whose first rows are the CLI's
    caveat and the ``/clear`` command itself (measured on 2.1.332). The piece before it is the
    session of that folder last written before the new one began: ``recorded`` (the command is
    in the file); a ``guess`` when another session of the folder ended within a minute of it.
``continue-elsewhere``
    ``claude --continue`` run from another directory starts an empty session there (the rule of
    :mod:`.elsewhere`: by folders and clocks alone): a ``guess``.
``moved``
    The project folder was moved or renamed: the new place's first session is fresh, and the
    folder the earlier session ran in no longer exists; joined when the two folders share their
    last name or the new session began at most 30 minutes after the old one ended: a ``guess``.

Read-only, like every reader of this room.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from kurahi.errors import KurahiError, UsageError
from kurahi.runtimes.claude.elsewhere import SessionSummary, continued_elsewhere
from kurahi.runtimes.claude.files import list_sessions, read_session
from kurahi.runtimes.claude.layout import USER
from kurahi.runtimes.claude.losses import ms_of
from kurahi.runtimes.claude.rows import parse_rows
from kurahi.runtimes.pieces import Boundary, Lineage, Piece

__all__ = ["CLEAR", "CONTINUE_ELSEWHERE", "MOVED", "Summary", "find_lineage", "summarize"]

CLEAR = "clear"
CONTINUE_ELSEWHERE = "continue-elsewhere"
MOVED = "moved"
_CLEAR_COMMAND = "<command-name>/clear</command-name>"
_OPENING = 6
"""Conversation rows looked at for the ``/clear`` command that opens a cleared session."""
_NEAR_MS = 60_000
_MOVED_MS = 30 * 60_000


@dataclass(frozen=True)
class Summary:
    """What joining weighs of one session."""

    base: SessionSummary
    rows: int
    """Conversation rows."""
    cleared: bool
    """It opens with the ``/clear`` command."""


def summarize(path: Path, session_id: str, folder: str) -> Summary:
    """One session file read for joining.

    Raises:
        UnsafeFileError, TranscriptReadError: it cannot be read.
    """
    parsed = parse_rows(read_session(path))
    chain = [i for i, r in enumerate(parsed.rows) if r.uuid is not None and not r.is_sidechain]
    first = chain[0] if chain else None
    cwd = next((c for i in chain[:50] if isinstance(c := parsed.get(i, "cwd"), str) and c), folder)
    cleared = any(
        parsed.rows[i].type == USER and _CLEAR_COMMAND in str(parsed.get(i, "message")) for i in chain[:_OPENING]
    )
    times = [t for i in (chain[:20] + chain[-20:]) if (t := ms_of(parsed.get(i, "timestamp"))) is not None]
    base = SessionSummary(
        session_id=session_id,
        path=str(path),
        project=cwd,
        first_ms=min(times, default=None),
        last_ms=max(times, default=None),
        fresh=first is not None and parsed.rows[first].parent_uuid is None,
        first_uuid=parsed.rows[first].uuid if first is not None else None,
        first_line=parsed.line_of(first) if first is not None else None,
    )
    return Summary(base, len(chain), cleared)


def _before(cur: Summary, others: list[Summary], same_project: bool) -> list[Summary]:
    start = cur.base.first_ms
    if start is None:
        return []
    out = [
        s
        for s in others
        if s is not cur
        and s.base.last_ms is not None
        and s.base.last_ms <= start
        and (s.base.project == cur.base.project) == same_project
    ]
    return sorted(out, key=lambda s: s.base.last_ms or 0, reverse=True)


def _earlier(cur: Summary, every: list[Summary], pairs: dict[str, str]) -> tuple[Summary, str, str, str] | None:
    """The piece before ``cur``: (it, rule, confidence, evidence), else ``None``."""
    by_id = {s.base.session_id: s for s in every}
    if cur.cleared:
        found = _before(cur, every, same_project=True)
        if found:
            prev = found[0]
            close = len(found) > 1 and (prev.base.last_ms or 0) - (found[1].base.last_ms or 0) < _NEAR_MS
            why = (
                f"session {cur.base.session_id} opens with the /clear command (line {cur.base.first_line}); "
                f"{prev.base.session_id} is the session of {cur.base.project} last written before it"
            )
            return prev, CLEAR, "guess" if close else "recorded", why
    first_of_project = min(
        (s.base.first_ms or 0 for s in every if s.base.project == cur.base.project), default=cur.base.first_ms
    )
    if not cur.base.fresh or cur.base.first_ms != first_of_project:
        return None
    if cur.base.session_id in pairs and pairs[cur.base.session_id] in by_id:
        prev = by_id[pairs[cur.base.session_id]]
        if os.path.isdir(prev.base.project):  # a folder that is gone was moved (the rule below)
            why = (
                f"session {cur.base.session_id} is the first in {cur.base.project} and began soon after "
                f"{prev.base.session_id} in {prev.base.project} ended (claude --continue from another directory)"
            )
            return prev, CONTINUE_ELSEWHERE, "guess", why
    for prev in _before(cur, every, same_project=False):
        old = prev.base.project
        if os.path.isdir(old):
            continue
        gap = (cur.base.first_ms or 0) - (prev.base.last_ms or 0)
        if PurePosixPath(old).name == PurePosixPath(cur.base.project).name or gap <= _MOVED_MS:
            why = (
                f"{old}, where {prev.base.session_id} ran, no longer exists; session {cur.base.session_id} "
                f"is the first in {cur.base.project}"
            )
            return prev, MOVED, "guess", why
    return None


def find_lineage(root: str | os.PathLike[str], session: str | None = None) -> Lineage:
    """The pieces of the conversation whose newest session is ``session`` (default: the newest of all).

    Raises:
        UsageError: no session in the dir, or none with that id.
    """
    listing = list_sessions(root)
    every: list[Summary] = []
    notes = list(listing.notes)
    for sp in listing.sessions:
        try:
            every.append(summarize(sp.path, sp.session_id, sp.project_dir.name))
        except KurahiError as exc:
            notes.append(f"{sp.path}: not read ({exc})")
    if not every:
        raise UsageError(f"{root}: no Claude Code session to join")
    if session is None:
        cur = max(every, key=lambda s: (s.base.last_ms or 0, s.base.path))
    else:
        named = [s for s in every if s.base.session_id == session]
        if not named:
            raise UsageError(f"{root}: no Claude Code session {session!r}")
        cur = named[0]
    pairs = {p.new.session_id: p.earlier.session_id for p in continued_elsewhere([s.base for s in every])}
    chain: list[Summary] = [cur]
    links: list[tuple[str, str, str]] = []
    seen = {cur.base.session_id}
    while (found := _earlier(chain[-1], every, pairs)) is not None:
        prev, rule, confidence, why = found
        if prev.base.session_id in seen:
            notes.append(f"{prev.base.session_id}: already a piece (a loop of links); stopped there")
            break
        seen.add(prev.base.session_id)
        links.append((rule, confidence, why))
        chain.append(prev)
    chain.reverse()
    links.reverse()
    pieces = []
    for n, s in enumerate(chain):
        # A piece is found by its link to the piece after it; the newest, by being asked for.
        rule, confidence = (links[n][0], links[n][1]) if n < len(links) else ("", "recorded")
        if n == len(chain) - 1:
            rule = "the session asked for" if session else "the newest session"
        pieces.append(
            Piece(
                source=s.base.path,
                session_id=s.base.session_id,
                kind="session",
                found_by=(rule,),
                header_ms=None,
                first_ms=s.base.first_ms,
                last_ms=s.base.last_ms,
                entry_count=s.rows,
                confidence=confidence,
                current=n == len(chain) - 1,
            )
        )
    bounds = [
        Boundary(rule, a.source, b.source, a.last_ms, b.first_ms, reason=f"{why} ({confidence})")
        for (rule, confidence, why), (a, b) in zip(links, itertools.pairwise(pieces), strict=True)
    ]
    return Lineage(
        state_dir=str(Path(root)),
        layout="claude",
        agent=cur.base.project,
        key=cur.base.session_id,
        current_session_id=cur.base.session_id,
        pieces=tuple(pieces),
        boundaries=tuple(bounds),
        unlinked=(),
        notes=tuple(notes),
        unread=tuple(listing.unread),
    )
