"""``continue-elsewhere``: ``claude --continue`` run from another directory started a new, empty session.

``--continue`` resumes the newest session *of the directory it runs in*; run from another one
(a subfolder of the project, its parent, a folder beside it) it finds none there and starts a
new session with no history, exit 0. Nothing in the new session's file says it was meant as a
continuation: measured on 2.1.332, its rows are those of a plain new session, field for field.
So this kind rests on clocks and folders alone, and is always a ``guess``. All of these must
hold:

1. the new session is the first its directory ever had (else ``--continue`` would have
   resumed that directory's own newest session);
2. its first row is a root (a fresh session, not a resumed or forked one);
3. the session that ended last before it began is in another directory, and the new
   session's first row came soon after that session's last row: at most
   :data:`WINDOW_MINUTES` when the two directories are near (one inside the other, or side by
   side in one folder: a terminal opened a level off), at most :data:`FAR_WINDOW_MINUTES` when
   they are not (the farther the folders, the more the clocks must say).

A brand-new project begun soon after work elsewhere is listed too, as the guess it is.

What left the view is everything the earlier session's ``--resume`` sends.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = ["FAR_WINDOW_MINUTES", "WINDOW_MINUTES", "Pair", "SessionSummary", "continued_elsewhere"]

WINDOW_MINUTES = 30
"""How soon after the earlier session's last row the new one must begin, in a near directory."""
FAR_WINDOW_MINUTES = 10
"""The same, in a directory that is not near."""


@dataclass(frozen=True)
class SessionSummary:
    """What the kind weighs of one session."""

    session_id: str
    path: str
    project: str
    """The working directory its rows record (else its project folder's name)."""
    first_ms: int | None
    """When its first conversation row was written."""
    last_ms: int | None
    """When its last conversation row was written."""
    fresh: bool
    """Its first conversation row is a root (a new session, not one resumed or forked into this file)."""
    first_uuid: str | None
    first_line: int | None


@dataclass(frozen=True)
class Pair:
    """A new session that ``--continue`` from another directory likely started, and the one it missed."""

    new: SessionSummary
    earlier: SessionSummary
    gap_ms: int


def _near(a: str, b: str) -> bool:
    """One directory inside the other, or both in one folder."""
    pa, pb = PurePosixPath(a), PurePosixPath(b)
    if pa == pb:
        return False
    return pa.is_relative_to(pb) or pb.is_relative_to(pa) or (pa.parent == pb.parent and pa.parent != pa)


def continued_elsewhere(sessions: list[SessionSummary]) -> list[Pair]:
    """Every new session that looks like ``--continue`` run from another directory (see the module docstring)."""
    timed = [s for s in sessions if s.first_ms is not None and s.last_ms is not None]
    first_of_project: dict[str, int] = {}
    for s in timed:
        assert s.first_ms is not None
        known = first_of_project.get(s.project)
        if known is None or s.first_ms < known:
            first_of_project[s.project] = s.first_ms
    by_end = sorted(timed, key=lambda s: (s.last_ms or 0, s.path))
    ends = [s.last_ms or 0 for s in by_end]
    out: list[Pair] = []
    for s in timed:
        assert s.first_ms is not None
        if not s.fresh or first_of_project.get(s.project) != s.first_ms:
            continue
        k = bisect.bisect_right(ends, s.first_ms) - 1
        while k >= 0 and by_end[k] is s:
            k -= 1
        if k < 0:
            continue
        earlier = by_end[k]
        gap = s.first_ms - (earlier.last_ms or 0)
        window = (WINDOW_MINUTES if _near(earlier.project, s.project) else FAR_WINDOW_MINUTES) * 60_000
        if earlier.project == s.project or gap > window:
            continue
        out.append(Pair(s, earlier, gap))
    return out
