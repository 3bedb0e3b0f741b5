"""The context budget: whether a context fits, needs compaction, or overflows; and where to cut.

Pi 0.73.1 compacts when ``contextTokens > contextWindow - reserveTokens`` (``shouldCompact``)
and keeps roughly ``keepRecentTokens`` of the newest entries (``findCutPoint``). Both are
reproduced exactly here, over Pi's session entries as plain dicts.

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

from kurahi.context._js import prop
from kurahi.context.tokens import ContextTokens, estimate_context_tokens, estimate_tokens
from kurahi.errors import UsageError

__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS",
    "DEFAULT_RESERVE_TOKENS",
    "BudgetRoute",
    "CutPoint",
    "RouteName",
    "find_cut_point",
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
_CUT_ROLES = ("bashExecution", "custom", "branchSummary", "compactionSummary", "user", "assistant")
# Entry types that stand for a user-role message: cut points and turn starts.
_USER_LIKE_ENTRIES = ("branch_summary", "custom_message")


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


def _entry_type(entries: Sequence[Any], index: int) -> Any:
    entry = _entry(entries, index)
    if isinstance(entry, dict):
        return entry.get("type")
    try:
        return prop(entry, "type")
    except UsageError as exc:
        raise UsageError(f"entries[{index}]: {exc}") from exc


def _message_role(entries: Sequence[Any], index: int) -> Any:
    """``entries[index].message.role``."""
    try:
        return prop(prop(entries[index], "message"), "role")
    except UsageError as exc:
        raise UsageError(f"entries[{index}].message: {exc}") from exc


def _message_tokens(entries: Sequence[Any], index: int) -> int:
    try:
        return estimate_tokens(prop(entries[index], "message"))
    except UsageError as exc:
        raise UsageError(f"entries[{index}].message: {exc}") from exc


def _valid_cut_points(entries: Sequence[Any], start: int, end: int) -> list[int]:
    points: list[int] = []
    for i in range(start, end):
        etype = _entry_type(entries, i)
        if etype == "message":
            role = _message_role(entries, i)
            if isinstance(role, str) and role in _CUT_ROLES:
                points.append(i)
        elif etype in _USER_LIKE_ENTRIES:
            points.append(i)
    return points


def find_turn_start_index(entries: Sequence[Any], entry_index: int, start_index: int) -> int:
    """Pi's ``findTurnStartIndex``: the entry that started the turn holding ``entry_index``.

    Walks back from ``entry_index`` to ``start_index`` (both included) to the nearest ``user``
    or ``bashExecution`` message, or ``branch_summary``/``custom_message`` entry.

    Returns:
        Its index, or -1 when there is none.

    Raises:
        UsageError: an index outside ``entries`` or a ``message`` entry without a message
            (Pi throws ``TypeError``).
    """
    for i in range(entry_index, start_index - 1, -1):
        etype = _entry_type(entries, i)
        if etype in _USER_LIKE_ENTRIES:
            return i
        if etype == "message" and _message_role(entries, i) in ("user", "bashExecution"):
            return i
    return -1


def find_cut_point(
    entries: Sequence[Any],
    start_index: int,
    end_index: int,
    keep_recent_tokens: int | float = DEFAULT_KEEP_RECENT_TOKENS,
) -> CutPoint:
    """Pi's ``findCutPoint``: where a compaction of ``entries[start_index:end_index]`` cuts.

    The algorithm, quirks included:

    1. Valid cut points are ``message`` entries of any role but ``toolResult`` (a tool result
       must follow its call), plus ``branch_summary`` and ``custom_message`` entries. With none,
       the result is ``(start_index, -1, False)``.
    2. Walking back from ``end_index - 1``, the estimated tokens of ``message`` entries (only)
       add up. Where the total first reaches ``keep_recent_tokens``, the cut goes to the first
       cut point at or after that entry. If the budget is never reached, or no cut point lies at
       or after that entry (say the newest entry is one huge tool result), the cut goes to the
       first cut point and everything is kept.
    3. The cut then moves back over non-message entries (settings, labels, custom entries,
       even ``branch_summary``/``custom_message``), stopping at a ``message``, a ``compaction``
       or ``start_index``.
    4. The turn is split when the cut entry is not a ``user`` message and an earlier turn start
       exists (:func:`find_turn_start_index`). So settings entries just before a user message
       make a clean cut report the previous turn as split, as Pi does.

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
        if _entry_type(entries, i) != "message":
            continue
        accumulated += _message_tokens(entries, i)
        if accumulated >= keep_recent_tokens:
            pos = bisect_left(cut_points, i)
            if pos < len(cut_points):
                cut_index = cut_points[pos]
            break

    while cut_index > start_index:
        prev_type = _entry_type(entries, cut_index - 1)
        if prev_type in ("compaction", "message"):
            break
        cut_index -= 1

    is_user = _entry_type(entries, cut_index) == "message" and _message_role(entries, cut_index) == "user"
    turn_start = -1 if is_user else find_turn_start_index(entries, cut_index, start_index)
    return CutPoint(cut_index, turn_start, not is_user and turn_start != -1)
