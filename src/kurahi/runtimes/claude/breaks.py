"""Where a session's chain breaks so that ``claude --resume`` no longer sends part of it, each break with its kind.

The model of the loader (:mod:`kurahi.runtimes.claude.graph`) walks from the leaf; at every row
it asks whether the link it follows is the one Claude Code's own writer would have made. The
writer links each conversation row to the conversation row written just before it on the main
chain (subagent and ``progress`` rows aside), except a compaction's boundary (no parent) and a
rewind (a new prompt under an earlier reply). A link that is neither is a *break*:

``null-parent``
    A row with ``parentUuid: null`` that is neither the session's first row nor a compact
    boundary: every earlier turn is off the path.
``compact-null``
    The same, right after a compaction's summary: the summary and its preserved tail are off.
``progress-parent``
    The parent is a ``progress`` row whose own chain ends without reaching the conversation.
``sidechain-parent``
    The parent is a subagent's row: the subagent's rows are sent in place of every earlier turn.
``wrong-parent``
    The parent is an earlier conversation row, and rows written between the two (a user's or
    the model's words) hang off the path.
``sibling-fork``
    A ``system/stop_hook_summary`` row names the parent of the reply it follows (#88597): the
    delivered reply is off the path.
``preserved-missing``
    The walk ends at a compaction whose preserved tail names rows the file lacks: none of the
    tail is sent, not even its rows still in the file.

Each break says how sure it is. A prompt row of 2.1.332 carries ``turnPosition.turnIndex``,
one more than the last numbered row on the path it was written on (``numbers_turns``); so a
prompt hanging where the CLI itself put it (a rewind: ``--resume-session-at``, ``/rewind``, which
writes a new prompt under an earlier reply, or a new root after a rewind to the start) numbers
its turn for that path and is *not a break*, while a prompt whose link was changed afterwards
keeps the number of the path it was written on: ``recorded``. Without the number (a row of an
older release, a row that is not a prompt) a link nothing deliberate writes is ``recorded``,
and one a rewind could have written (a prompt under an earlier reply, or under a row another
prompt hangs under, or a prompt with no parent) is a ``guess``.

A break's *repair* is the link the writer would have made (the conversation row just before it
on the main chain, in file order); what it *lost* is what the walk reaches through that repair
and did not reach before. Breaks are found leaf first and each repair is followed, so a second
break behind the first is found too, each losing only its own rows. Bridged links (a missing
parent), torn lines, orphan tool results, compactions (the summary's own ``null`` parent
included), rewinds and subagents' own rows are not breaks.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any

from kurahi.runtimes.claude.graph import LINK, ROOT, Graph, Walk
from kurahi.runtimes.claude.layout import ASSISTANT, PROGRESS, STOP_HOOK_SUMMARY, SYSTEM, USER

__all__ = [
    "COMPACT_NULL",
    "GUESS",
    "KINDS",
    "NULL_PARENT",
    "PRESERVED_MISSING",
    "PROGRESS_PARENT",
    "RECORDED",
    "SIBLING_FORK",
    "SIDECHAIN_PARENT",
    "WRONG_PARENT",
    "Break",
    "Found",
    "find_breaks",
]

NULL_PARENT = "null-parent"
COMPACT_NULL = "compact-null"
PROGRESS_PARENT = "progress-parent"
SIDECHAIN_PARENT = "sidechain-parent"
WRONG_PARENT = "wrong-parent"
SIBLING_FORK = "sibling-fork"
PRESERVED_MISSING = "preserved-missing"
KINDS = (NULL_PARENT, PROGRESS_PARENT, SIDECHAIN_PARENT, WRONG_PARENT, SIBLING_FORK, COMPACT_NULL, PRESERVED_MISSING)
"""The kinds found inside one session (``continue-elsewhere`` spans two: :mod:`.elsewhere`)."""
RECORDED = "recorded"
GUESS = "guess"
_LOOK_UP = 100_000
"""Rows walked up to find a turn number or a compaction before giving up."""
_SHOWN = 50
"""Rows off the path a ``wrong-parent`` link is judged by (and named in its evidence)."""
_MAX_BREAKS = 200
"""Breaks followed in one session; a file broken at more rows is named in a note, not walked further."""


@dataclass
class Break:
    """One break of a session's chain and what it took out of the view."""

    kind: str
    confidence: str
    row: int
    """The row whose link broke (the compaction's boundary for ``preserved-missing``)."""
    repair: int | None
    """The row the link should name (``None``: nothing to link to)."""
    evidence: list[str]
    lost: list[int] = field(default_factory=list)
    """Rows (indices) the walk no longer reaches because of it, in file order."""
    missing: list[str] = field(default_factory=list)
    """Uuids it lost that the file lacks."""


@dataclass
class Found:
    """A session's breaks, and the walk ``--resume`` makes today."""

    breaks: list[Break]
    view: Walk | None
    leaf: int | None
    leaf_from: str
    notes: list[str] = field(default_factory=list)


class _Judge:
    """Judges one link of the walk at a time (see the module docstring)."""

    def __init__(self, g: Graph, in_view: set[int]) -> None:
        self.g = g
        self.in_view = in_view
        self.rows = g.rows
        self._candidates: list[int] | None = None
        self._sent: tuple[set[str], set[str]] | None = None
        self._prompts: dict[str, int] | None = None

    # -- what a row is, in words --------------------------------------------------------------

    def content(self, i: int) -> Any:
        message = self.g.parsed.get(i, "message")
        return message.get("content") if isinstance(message, dict) else None

    def is_prompt(self, i: int) -> bool:
        """A ``user`` row with words the user typed (not a tool result, a summary, or the CLI's own)."""
        r = self.rows[i]
        if r.type != USER or r.is_meta or r.is_compact_summary or r.is_sidechain:
            return False
        content = self.content(i)
        if isinstance(content, str):
            return True
        return isinstance(content, list) and not any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )

    def turn_index(self, i: int) -> int | None:
        """The row's ``turnPosition.turnIndex`` (``None``: it has none)."""
        if self.rows[i].type != USER:
            return None
        position = self.g.parsed.get(i, "turnPosition")
        index = position.get("turnIndex") if isinstance(position, dict) else None
        return index if isinstance(index, int) and not isinstance(index, bool) else None

    def numbered_above(self, p: int | None) -> int:
        """The ``turnIndex`` of the nearest numbered row on the path from ``p`` up (0 when none)."""
        seen: set[int] = set()
        at = p
        while at is not None and at not in seen and len(seen) < _LOOK_UP:
            seen.add(at)
            found = self.turn_index(at)
            if found is not None:
                return found
            at, _ = self.g.parent(at)
        return 0

    def written_here(self, c: int, p: int | None) -> tuple[bool | None, str]:
        """Whether prompt ``c`` was written on the path through ``p`` (its turn number says), and the words.

        ``None``: it carries no number (an older release, or not a prompt), so the number cannot tell.
        """
        if not self.g.release.numbers_turns:
            return None, ""
        index = self.turn_index(c)
        if index is None or self.rows[c].is_compact_summary:
            return None, ""
        expected = self.numbered_above(p) + 1
        if index == expected:
            return True, ""
        return False, (
            f"its turnPosition.turnIndex is {index}, but the path it hangs on now makes it turn {expected}: "
            f"Claude Code wrote it after turn {index - 1} of another path (a rewind numbers its prompt for the "
            "path it rewinds to)"
        )

    def after_compaction(self, repair: int) -> bool:
        """Whether the path from ``repair`` up reaches a compaction before any prompt of a turn of its own."""
        seen: set[int] = set()
        at: int | None = repair
        while at is not None and at not in seen and len(seen) < _LOOK_UP:
            seen.add(at)
            r = self.rows[at]
            if r.is_compact_summary or self.g.is_boundary(at):
                return True
            if self.turn_index(at) is not None:
                return False
            at, _ = self.g.parent(at)
        return False

    def describe(self, i: int) -> str:
        r = self.rows[i]
        line = self.g.parsed.lines[i]
        if r.type == USER:
            what = (
                "the compaction's summary"
                if r.is_compact_summary
                else "a prompt"
                if self.is_prompt(i)
                else "a tool result"
                if r.type == USER and not r.is_meta
                else "a user row"
            )
        elif r.type == SYSTEM:
            what = f"a system/{r.subtype or '?'} row"
        elif r.type == PROGRESS:
            what = "a progress row"
        else:
            what = f"an {r.type} row" if (r.type or "")[:1] in "aeiou" else f"a {r.type} row"
        side = " (a subagent's)" if r.is_sidechain else ""
        return f"line {line}: {what}{side} {r.uuid}"

    # -- rows that hang off the path -------------------------------------------------------

    def candidates(self) -> list[int]:
        """Main-chain rows with words (user or assistant, not the CLI's own) off the original view."""
        if self._candidates is None:
            g = self.g
            self._candidates = [
                i
                for i, r in enumerate(self.rows)
                if r.type in (USER, ASSISTANT) and not r.is_meta and i not in self.in_view and g.main(i)
            ]
        return self._candidates

    def sent(self) -> tuple[set[str], set[str]]:
        """``message.id``s and tool call ids of the assistant rows on the view."""
        if self._sent is None:
            ids: set[str] = set()
            tools: set[str] = set()
            for i in self.in_view:
                if self.rows[i].type != ASSISTANT:
                    continue
                message = self.g.parsed.get(i, "message")
                if not isinstance(message, dict):
                    continue
                if isinstance(message.get("id"), str):
                    ids.add(message["id"])
                content = message.get("content")
                for b in content if isinstance(content, list) else []:
                    if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str):
                        tools.add(b["id"])
            self._sent = (ids, tools)
        return self._sent

    def hanging(self, p: int, c: int, seen: set[int]) -> tuple[list[int], int]:
        """Rows written between ``p`` and ``c`` that the walk no longer reaches and that carry words.

        An assistant row of a message that is sent anyway (its other blocks are on the path) and
        tool results of calls that are sent are not counted: they belong to a message on the path.
        Returns the first :data:`_SHOWN` such rows and how many rows with words lie between at all
        (a file broken everywhere is not decoded row by row at every link).
        """
        cands = self.candidates()
        lo, hi = bisect.bisect_right(cands, p), bisect.bisect_left(cands, c)
        out: list[int] = []
        for k in cands[lo:hi]:
            if len(out) >= _SHOWN:
                break
            if k in seen:
                continue
            r = self.rows[k]
            if r.type == ASSISTANT:
                message = self.g.parsed.get(k, "message")
                mid = message.get("id") if isinstance(message, dict) else None
                if isinstance(mid, str) and mid in self.sent()[0]:
                    continue
            else:
                content = self.content(k)
                if isinstance(content, list) and content:
                    results = [
                        b.get("tool_use_id") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                    ]
                    if results and len(results) == len(content) and all(t in self.sent()[1] for t in results):
                        continue
            out.append(k)
        return out, hi - lo

    def prompts_under(self) -> dict[str, int]:
        """How many prompts of the file hang under each uuid (a rewind lands where a prompt once hung)."""
        if self._prompts is None:
            counts: dict[str, int] = {}
            for i, r in enumerate(self.rows):
                if r.type == USER and r.parent_uuid is not None and not r.is_sidechain and self.is_prompt(i):
                    counts[r.parent_uuid] = counts.get(r.parent_uuid, 0) + 1
            self._prompts = counts
        return self._prompts

    def rewind_shaped(self, c: int, p: int) -> bool:
        """A prompt under an earlier reply, or under a row another prompt hangs under: what a rewind writes."""
        if not self.is_prompt(c):
            return False
        return self.rows[p].type == ASSISTANT or self.prompts_under().get(self.rows[p].uuid or "", 0) > 1


def _span(g: Graph, rows: list[int]) -> str:
    if not rows:
        return "no row"
    lines = sorted(g.parsed.lines[i] for i in rows)
    where = f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]}-{lines[-1]}"
    return f"{len(rows)} row(s), {where}"


def _root_break(j: _Judge, c: int) -> Break | None:
    g = j.g
    if g.boundary_of(c) is not None or g.rows[c].is_sidechain:
        return None  # a compaction (its boundary, or its summary): they stand for what came before
    repair = g.prev_main[c]
    if repair < 0:
        return None  # the session's first row
    before = j.describe(repair)
    here, why = j.written_here(c, None)
    if here:
        return None  # numbered turn 1: the CLI wrote a new root on purpose (a rewind to the start)
    if j.after_compaction(repair):
        words = (
            f"{j.describe(c)} has parentUuid null right after the compaction ({before} is the row before it): "
            "--resume starts there, without the summary and the tail the compaction kept"
        )
        return Break(COMPACT_NULL, RECORDED, c, repair, [words + (f"; {why}" if why else "")])
    words = f"{j.describe(c)} has parentUuid null though rows come before it ({before} is the last): a second root"
    if here is False:
        return Break(NULL_PARENT, RECORDED, c, repair, [f"{words}; {why}"])
    if j.is_prompt(c):
        guess = f"{words}. A /rewind to before the first prompt writes the same, and the row has no turn number"
        return Break(NULL_PARENT, GUESS, c, repair, [guess + " to tell, so it is a guess"])
    return Break(NULL_PARENT, RECORDED, c, repair, [words])


def _progress_end(g: Graph, p: int, seen: set[int]) -> tuple[int | None, list[int]]:
    """Where a chain of ``progress`` rows from ``p`` reaches the conversation (``None``: it never does)."""
    passed: list[int] = []
    at: int | None = p
    while at is not None and g.rows[at].type == PROGRESS and at not in seen and at not in passed:
        passed.append(at)
        at, _ = g.parent(at)
    if at is not None and (g.rows[at].type == PROGRESS or at in passed):
        return None, passed
    return at, passed


def _side_rows(g: Graph, p: int) -> list[int]:
    out: list[int] = []
    at: int | None = p
    while at is not None and g.rows[at].is_sidechain and at not in out:
        out.append(at)
        at, _ = g.parent(at)
    return out


def find_breaks(g: Graph) -> Found:
    """Every break of a session's chain, leaf first, each with what it lost (see the module docstring)."""
    leaf, why = g.leaf()
    if leaf is None:
        return Found([], None, None, why)
    original = g.walk(leaf)
    in_view = set(original.chain)
    j = _Judge(g, in_view)
    breaks: list[Break] = []
    notes: list[str] = []
    owner: dict[int, int] = {}
    seen: set[int] = set()
    at: int | None = leaf
    current = -1
    last: int | None = None
    while at is not None:
        if at in seen:
            notes.append(f"the walk comes back to {j.describe(at)}: a loop of parents (it ends there)")
            break
        seen.add(at)
        owner[at] = current
        last = at
        found, nxt = _judge_link(j, at, seen, owner, current)
        if found is not None:
            if len(breaks) >= _MAX_BREAKS:
                notes.append(f"more than {_MAX_BREAKS} broken links: the rest were not followed")
                break
            breaks.append(found)
            current = len(breaks) - 1
            at = found.repair
            continue
        at = nxt
    boundary = g.boundary_of(last) if last is not None else None
    if last is not None and boundary is not None and g.release.splices_preserved_tail:
        uuids, summary = g.preserved(boundary)
        missing = [u for u in uuids if u not in g.by_uuid]
        mine = len(breaks) if missing else owner.get(summary if summary is not None else last, owner[last])
        for u in uuids:
            k = g.by_uuid.get(u)
            if k is not None and k not in owner:
                owner[k] = mine  # with one missing, the listed rows still in the file are not sent either
        if missing:
            shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
            breaks.append(
                Break(
                    PRESERVED_MISSING,
                    RECORDED,
                    boundary,
                    None,
                    [
                        f"{j.describe(boundary)} names {len(uuids)} preserved row(s) to send after its summary; "
                        f"{len(missing)} are not in the file ({shown}): --resume sends the summary without them"
                    ],
                    missing=missing,
                )
            )
    lost: dict[int, list[int]] = {}
    for i, k in owner.items():
        if k >= 0 and i not in in_view:
            lost.setdefault(k, []).append(i)
    for k, b in enumerate(breaks):
        b.lost = sorted(lost.get(k, []))
    return Found(breaks, original, leaf, why, notes)


def _judge_link(
    j: _Judge, c: int, seen: set[int], owner: dict[int, int], current: int
) -> tuple[Break | None, int | None]:
    """The break at row ``c``'s link, if it is one; else where the walk goes next."""
    g = j.g
    p, how = g.parent(c)
    if how == ROOT:
        return _root_break(j, c), None
    if p is None or how != LINK:
        return None, p  # bridged: the loader already mends it
    if g.rows[c].is_sidechain:
        return None, p  # inside a subagent's own rows: theirs to link
    if g.rows[p].type == PROGRESS:
        end, passed = _progress_end(g, p, seen)
        for k in passed:
            owner.setdefault(k, current)
        if end is None:
            repair = g.prev_main[c]
            if repair < 0:
                return None, None
            return (
                Break(
                    PROGRESS_PARENT,
                    RECORDED,
                    c,
                    repair,
                    [
                        f"{j.describe(c)} names as parent {j.describe(p)}, whose chain of {len(passed)} progress "
                        "row(s) ends without reaching the conversation: --resume starts after it"
                    ],
                ),
                None,
            )
        p = end
    if g.rows[p].is_sidechain:
        repair = g.prev_main[c]
        if repair < 0:
            return None, p
        injected = _side_rows(g, p)
        return (
            Break(
                SIDECHAIN_PARENT,
                RECORDED,
                c,
                repair,
                [
                    f"{j.describe(c)} names as parent {j.describe(p)}: --resume sends the subagent's "
                    f"{len(injected)} row(s) in place of the turns before it"
                ],
            ),
            None,
        )
    repair = g.prev_main[c]
    if p == repair or repair < 0 or not g.main(p):
        return None, p
    if p > c:
        return (
            Break(
                WRONG_PARENT,
                RECORDED,
                c,
                repair,
                [f"{j.describe(c)} names as parent {j.describe(p)}, a row written after it"],
            ),
            None,
        )
    off, between = j.hanging(p, c, seen)
    if not off:
        return None, p
    some = _span(g, off) if len(off) < _SHOWN else f"{_span(g, off)} of the {between} with words"
    r = g.rows[c]
    if r.type == SYSTEM and r.subtype == STOP_HOOK_SUMMARY:
        return (
            Break(
                SIBLING_FORK,
                RECORDED,
                c,
                repair,
                [
                    f"{j.describe(c)} names as parent {j.describe(p)}, the parent of the reply it follows "
                    f"({j.describe(repair)}): the delivered reply ({some}) is off the path (#88597)"
                ],
            ),
            None,
        )
    here, why = j.written_here(c, p)
    if here:
        return None, p  # a rewind: the CLI numbered this prompt for the path it hangs on
    words = f"{j.describe(c)} names as parent {j.describe(p)}; {some} written between them hang off the path"
    if here is False:
        return Break(WRONG_PARENT, RECORDED, c, repair, [f"{words}; {why}"]), None
    guess = j.rewind_shaped(c, p)
    if guess:
        words += (
            " (a rewind, `--resume-session-at` or /rewind, writes the same: a prompt under an earlier reply, and the"
            " row has no turn number to tell, so it is a guess)"
        )
    return Break(WRONG_PARENT, GUESS if guess else RECORDED, c, repair, [words]), None
