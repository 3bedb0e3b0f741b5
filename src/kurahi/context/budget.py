"""The context budget: whether a context fits, needs compaction, or overflows; and where to cut.

Pi 1.6.0 compacts when ``contextTokens > contextWindow - reserveTokens`` (``shouldCompact``)
and keeps roughly ``keepRecentTokens`` of the newest entries (``findCutPoint``, and
``findProjectedCutPoint`` over the projection, which its ``prepareCompaction`` uses). They
are reproduced exactly here, over Pi's session entries as plain dicts. The context size
to route on is :func:`~kurahi.context.tokens.estimate_projected_context_tokens` when the
path is at hand (it distrusts a usage captured before a later edit or compaction), else
:func:`~kurahi.context.tokens.estimate_context_tokens`.

:func:`route` adds Kurahi's three-way reading of the same numbers:

* ``fits``: ``tokens <= window - reserve``; Pi would not compact;
* ``compact``: ``window - reserve < tokens <= window``; Pi compacts before the next turn, and a
  model call could still be made;
* ``overflow``: ``tokens > window``; a model call would be rejected, so compaction must happen
  before any call.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from kurahi.context.project import ProjectedEntry, entry_messages
from kurahi.context.tokens import ContextTokens, estimate_context_tokens, estimate_tokens
from kurahi.errors import UsageError
from kurahi.js.ops import prop
from kurahi.js.values import MISSING
from kurahi.pi.read.scan import id_key
from kurahi.pi.vocab import COMPACTION, CONTEXT_EDIT, MESSAGE, TARGET_ID

__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_RESERVE_TOKENS",
    "BudgetRoute",
    "CutPoint",
    "RouteName",
    "find_cut_point",
    "find_projected_cut_point",
    "find_turn_start_index",
    "route",
    "should_compact",
]

DEFAULT_RESERVE_TOKENS = 16384
"""Pi's default ``compaction.reserveTokens``: room kept free for the reply."""

DEFAULT_KEEP_RECENT_TOKENS = 20000
"""Pi's default ``compaction.keepRecentTokens``: how much recent context a compaction keeps."""

RouteName = Literal["fits", "compact", "overflow"]
"""The three budget routes."""

# Message roles at which a compaction may cut: never a toolResult, which must follow its call.
_CUT_ROLES = frozenset({"bashExecution", "custom", "branchSummary", "compactionSummary", "user", "assistant"})
# Message roles that start a turn.
_TURN_START_ROLES = frozenset({"bashExecution", "custom", "branchSummary", "compactionSummary", "user"})


def should_compact(
    context_tokens: int | float,
    context_window: int | float,
    reserve_tokens: int | float = DEFAULT_RESERVE_TOKENS,
    enabled: bool = True,
) -> bool:
    """Pi's ``shouldCompact``: ``enabled and context_tokens > context_window - reserve_tokens``.

    The comparison is strict: a context exactly at the threshold does not compact.
    """
    if not enabled:
        return False
    return context_tokens > context_window - reserve_tokens


class BudgetRoute(msgspec.Struct, frozen=True):
    """Where a context stands against a model's window.

    Attributes:
        route: ``"fits"``, ``"compact"`` or ``"overflow"`` (see the module docstring).
        context_tokens: the context size (Pi's ``estimateContextTokens(...).tokens``).
        context_window: the model's context window.
        reserve_tokens: tokens kept free for the reply.
    """

    route: RouteName
    context_tokens: int | float
    context_window: int
    reserve_tokens: int

    @property
    def threshold(self) -> int:
        """``context_window - reserve_tokens``: the largest context that still fits."""
        return self.context_window - self.reserve_tokens

    @property
    def headroom(self) -> int | float:
        """``threshold - context_tokens``: tokens left before compaction; negative when over."""
        return self.threshold - self.context_tokens

    def to_dict(self) -> dict[str, Any]:
        """``{route, contextTokens, contextWindow, reserveTokens, threshold, headroom}``."""
        return {
            "route": self.route,
            "contextTokens": self.context_tokens,
            "contextWindow": self.context_window,
            "reserveTokens": self.reserve_tokens,
            "threshold": self.threshold,
            "headroom": self.headroom,
        }


def route(
    messages_or_tokens: Sequence[Any] | ContextTokens | int | float,
    context_window: int,
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS,
) -> BudgetRoute:
    """Route a context: ``fits``, ``compact`` or ``overflow``.

    ``compact`` is exactly Pi's :func:`should_compact`; ``overflow`` is the part of it where
    the context is larger than the window itself. A ``reserve_tokens`` at or above the window
    is accepted, as Pi accepts it: every non-empty context then needs compaction.

    Args:
        messages_or_tokens: agent messages (their size is :func:`estimate_context_tokens`),
            a :class:`ContextTokens`, or a token count.
        context_window: the model's context window, in tokens (positive).
        reserve_tokens: tokens kept free for the reply (not negative).

    Raises:
        UsageError: a non-positive window, a negative reserve, a token count that is not a
            number, or messages Pi would crash on.
    """
    if not isinstance(context_window, int) or isinstance(context_window, bool) or context_window <= 0:
        raise UsageError(f"context window must be a positive integer, not {context_window!r}")
    if not isinstance(reserve_tokens, int) or isinstance(reserve_tokens, bool) or reserve_tokens < 0:
        raise UsageError(f"reserve tokens must be a non-negative integer, not {reserve_tokens!r}")
    if isinstance(messages_or_tokens, ContextTokens):
        tokens = messages_or_tokens.tokens
    elif isinstance(messages_or_tokens, Sequence) and not isinstance(messages_or_tokens, (str, bytes)):
        tokens = estimate_context_tokens(messages_or_tokens).tokens
    elif isinstance(messages_or_tokens, (int, float)) and not isinstance(messages_or_tokens, bool):
        tokens = messages_or_tokens
    else:
        raise UsageError(f"cannot route {type(messages_or_tokens).__name__}: expected messages or tokens")
    if isinstance(tokens, float) and not math.isfinite(tokens):
        raise UsageError(f"context tokens must be finite, not {tokens!r}")
    name: RouteName
    if not should_compact(tokens, context_window, reserve_tokens):
        name = "fits"
    elif tokens <= context_window:
        name = "compact"
    else:
        name = "overflow"
    return BudgetRoute(name, tokens, context_window, reserve_tokens)


# ---------------------------------------------------------------------------
# findCutPoint
# ---------------------------------------------------------------------------


class CutPoint(msgspec.Struct, frozen=True):
    """The result of Pi's ``findCutPoint``.

    Attributes:
        first_kept_entry_index: the first entry a compaction keeps.
        turn_start_index: when the cut splits a turn, the entry that started it; else -1.
        is_split_turn: whether the cut falls inside a turn (not at a user message).
    """

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool

    def to_dict(self) -> dict[str, Any]:
        """Pi's JSON shape ``{firstKeptEntryIndex, turnStartIndex, isSplitTurn}``."""
        return {
            "firstKeptEntryIndex": self.first_kept_entry_index,
            "turnStartIndex": self.turn_start_index,
            "isSplitTurn": self.is_split_turn,
        }


def _entry(entries: Sequence[Any], index: int) -> Any:
    # JavaScript's entries[i] is undefined outside the array; Python would wrap negatives.
    if 0 <= index < len(entries):
        return entries[index]
    raise UsageError(f"entries[{index}] is out of range (Pi throws TypeError reading its type)")


class _DictEntry:
    """A plain session entry (a dict) seen through :class:`~kurahi.context.project.PathEntry`."""

    __slots__ = ("data", "id", "line", "type")

    def __init__(self, data: dict[str, Any], line: int) -> None:
        self.data = data
        self.type = data.get("type", MISSING)
        self.id = data.get("id", MISSING)
        self.line = line


def _entry_type(entries: Sequence[Any], index: int) -> Any:
    entry = _entry(entries, index)
    if isinstance(entry, dict):
        return entry.get("type")
    try:
        return prop(entry, "type")
    except UsageError as exc:
        raise UsageError(f"entries[{index}]: {exc}") from exc


def _context_messages(entries: Sequence[Any], index: int) -> list[Any]:
    """``sessionEntryToContextMessages(entries[index])``."""
    entry = _entry(entries, index)
    if not isinstance(entry, dict):
        _entry_type(entries, index)  # null throws; anything else has no type and no messages
        return []
    if entry.get("type") == MESSAGE and entry.get("message") is None:
        raise UsageError(
            f"entries[{index}].message is {'null' if 'message' in entry else 'missing'} (Pi throws TypeError)"
        )
    return entry_messages(_DictEntry(entry, index))


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, dict) else MISSING


def _is_cut_point(message: Any) -> bool:
    role = _role(message)
    return isinstance(role, str) and role in _CUT_ROLES


def _starts_turn(message: Any) -> bool:
    role = _role(message)
    return isinstance(role, str) and role in _TURN_START_ROLES


def _tokens_of(messages: list[Any], what: str) -> int:
    try:
        return sum(estimate_tokens(m) for m in messages)
    except UsageError as exc:
        raise UsageError(f"{what}: {exc}") from exc


def _is_turn_start_entry(entries: Sequence[Any], index: int) -> bool:
    if _entry_type(entries, index) == COMPACTION:
        return False
    return any(map(_starts_turn, _context_messages(entries, index)))


def _valid_cut_points(entries: Sequence[Any], start: int, end: int) -> list[int]:
    out = []
    cut_roles = _CUT_ROLES
    for i in range(start, end):
        entry = entries[i] if 0 <= i < len(entries) else None
        if type(entry) is dict and entry.get("type") == MESSAGE and type(message := entry.get("message")) is dict:
            # The usual entry, quickly: it contributes its message, whose role is kept as stored
            # (:func:`_is_cut_point` inline: two calls per entry were most of this loop).
            role = message.get("role")
            if isinstance(role, str) and role in cut_roles:
                out.append(i)
        elif _entry_type(entries, i) != COMPACTION and any(map(_is_cut_point, _context_messages(entries, i))):
            out.append(i)
    return out


def find_turn_start_index(entries: Sequence[Any], entry_index: int, start_index: int) -> int:
    """Pi's ``findTurnStartIndex``: the entry that started the turn holding ``entry_index``.

    Walks back from ``entry_index`` to ``start_index`` (both included) to the nearest entry,
    other than a compaction, whose context messages include a user-like one (``user``,
    ``bashExecution``, ``custom``, ``branchSummary``, ``compactionSummary``).

    Returns:
        Its index, or -1 when there is none.

    Raises:
        UsageError: an index outside ``entries`` or a ``message`` entry without a message
            (Pi throws ``TypeError``).
    """
    for i in range(entry_index, start_index - 1, -1):
        if _is_turn_start_entry(entries, i):
            return i
    return -1


def find_cut_point(
    entries: Sequence[Any],
    start_index: int,
    end_index: int,
    keep_recent_tokens: int | float = DEFAULT_KEEP_RECENT_TOKENS,
) -> CutPoint:
    """Pi 1.6.0's ``findCutPoint``: where a compaction of ``entries[start_index:end_index]`` cuts.

    Entries are judged by what they contribute to the context (Pi's
    ``sessionEntryToContextMessages``, see :func:`~kurahi.context.project.entry_messages`):

    1. Valid cut points are entries, other than compactions, that contribute a ``user``,
       ``assistant``, ``bashExecution``, ``custom``, ``branchSummary`` or ``compactionSummary``
       message (never a ``toolResult``, which must follow its call, nor a system message).
       With none, the result is ``(start_index, -1, False)``.
    2. Walking back from ``end_index - 1``, the estimated tokens of every entry's context
       messages add up (a compaction's summary counts; entries that contribute nothing are
       passed over). Where the total first reaches ``keep_recent_tokens``, the cut goes to
       the first cut point at or after that entry, or to the last cut point when none lies
       after it (trailing tool results larger than the budget keep their call). If the
       budget is never reached, the cut goes to the first cut point and everything is kept.
    3. The cut then moves back over entries that contribute nothing (settings, labels,
       custom entries, edits, usage), stopping at a compaction, an entry that contributes,
       or ``start_index``.
    4. The turn is split when the cut entry does not start a turn (contribute a user-like
       message) and an earlier turn start exists (:func:`find_turn_start_index`).

    Pi 0.73.1 counted ``message`` entries only, treated any non-``toolResult`` message
    entry (a system message too) as a cut point and fell back to the first cut point.

    Args:
        entries: Pi session entries (dicts with ``type``, ``message``, ...), usually a path.
        start_index: first entry considered.
        end_index: one past the last entry considered.
        keep_recent_tokens: how many recent tokens to keep.

    Raises:
        UsageError: where Pi throws ``TypeError``: an index in range outside ``entries``, a
            ``message`` entry without a message, or a message :func:`estimate_tokens` rejects.
    """
    cut_points = _valid_cut_points(entries, start_index, end_index)
    if not cut_points:
        return CutPoint(start_index, -1, False)

    accumulated = 0
    cut_index = cut_points[0]
    for i in range(end_index - 1, start_index - 1, -1):
        tokens = _tokens_of(_context_messages(entries, i), f"entries[{i}]")
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            pos = bisect_left(cut_points, i)
            cut_index = cut_points[pos] if pos < len(cut_points) else cut_points[-1]
            break

    while cut_index > start_index:
        if _entry_type(entries, cut_index - 1) == COMPACTION or _context_messages(entries, cut_index - 1):
            break
        cut_index -= 1

    starts = _is_turn_start_entry(entries, cut_index)
    turn_start = -1 if starts else find_turn_start_index(entries, cut_index, start_index)
    return CutPoint(cut_index, turn_start, not starts and turn_start != -1)


# ---------------------------------------------------------------------------
# findProjectedCutPoint (what 1.6.0's prepareCompaction uses)
# ---------------------------------------------------------------------------


def _projected_turn_start(entry: ProjectedEntry) -> bool:
    return entry.source.type != COMPACTION and any(map(_starts_turn, entry.messages))


def _intrinsically_visible(entry: ProjectedEntry) -> bool:
    return entry.source.type != CONTEXT_EDIT and bool(entry_messages(entry.source))


def find_projected_cut_point(
    entries: Sequence[ProjectedEntry],
    start_index: int,
    end_index: int,
    keep_recent_tokens: int | float = DEFAULT_KEEP_RECENT_TOKENS,
) -> CutPoint:
    """Pi 1.6.0's ``findProjectedCutPoint``: :func:`find_cut_point` over projected entries.

    The same walk over ``build_context(path, with_entries=True).entries``, with what each
    entry contributes *after* its edits, and one more rule: when the budget was reached
    and everything after the cut is an assistant attempt the edits removed (with nothing
    visible after it and no replacement edit of another entry), the cut moves past it.

    Raises:
        UsageError: a message :func:`estimate_tokens` rejects.
    """
    cut_points = [
        i
        for i in range(start_index, end_index)
        if entries[i].source.type != COMPACTION and any(map(_is_cut_point, entries[i].messages))
    ]
    if not cut_points:
        return CutPoint(start_index, -1, False)
    accumulated = 0
    exceeded = False
    cut_index = cut_points[0]
    for i in range(end_index - 1, start_index - 1, -1):
        tokens = _tokens_of(entries[i].messages, f"entries[{i}]")
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            exceeded = True
            pos = bisect_left(cut_points, i)
            cut_index = cut_points[pos] if pos < len(cut_points) else cut_points[-1]
            break
    suffix = entries[cut_index + 1 : end_index]

    def omitted(e: ProjectedEntry) -> bool:
        return _intrinsically_visible(e) and not e.messages

    omitted_ids = {id_key(e.source.id) for e in suffix if omitted(e)}
    external_replacement = any(
        e.source.type == CONTEXT_EDIT
        and e.source.data.get("replacement", MISSING) is not None
        and id_key(e.source.data.get(TARGET_ID, MISSING)) not in omitted_ids
        for e in suffix
    )
    recovery_suffix = (
        exceeded
        and not external_replacement
        and any(
            e.source.type == MESSAGE and _role(e.source.data.get("message")) == "assistant" and omitted(e)
            for e in suffix
        )
        and all(e.source.type != COMPACTION and (not _intrinsically_visible(e) or omitted(e)) for e in suffix)
    )
    if recovery_suffix:
        cut_index += 1
    while cut_index > start_index:
        previous = entries[cut_index - 1]
        if previous.source.type == COMPACTION or previous.messages:
            break
        cut_index -= 1
    starts = cut_index < len(entries) and _projected_turn_start(entries[cut_index])
    turn_start = -1
    if not starts:
        turn_start = next((i for i in range(cut_index, start_index - 1, -1) if _projected_turn_start(entries[i])), -1)
    return CutPoint(cut_index, turn_start, not starts and turn_start != -1)
