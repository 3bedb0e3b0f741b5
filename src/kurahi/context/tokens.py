"""Pi's token arithmetic: ``estimateTokens``, ``calculateContextTokens``, ``estimateContextTokens``.

Pi 1.6.0 (``dist/core/compaction/compaction.js``) decides when to compact from these numbers,
so they are reproduced exactly, quirks included:

* a message's estimate is ``ceil(chars / 4)``, with ``chars`` counted in UTF-16 code units
  (an emoji counts 2);
* an image block counts 4800 characters in ``user``, ``toolResult``, ``custom`` and ``system``
  messages (0.73.1 counted 0 in ``user`` messages);
* a ``system`` message counts its content, its sections and ``JSON.stringify(toolsAdded)``
  (0.73.1 counted 0);
* a ``toolCall`` counts its name plus ``JSON.stringify(arguments)``;
* a ``bashExecution`` counts command and output even when ``excludeFromContext`` hides it
  from the model;
* the context size is the last usable assistant ``usage`` plus estimates of what follows it;
  a usage whose total is 0 (or not a number) is not usable (0.73.1 used it).

Where Pi would throw a ``TypeError`` (a ``toolCall`` without ``arguments``, a ``text`` block
without ``text``, a ``null`` message, non-iterable content) or compute ``NaN`` (a text that is
a number), these functions raise :class:`~kurahi.errors.UsageError` naming the message and
block.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from kurahi.context.project import PathEntry, SessionContext
from kurahi.errors import UsageError
from kurahi.js.ops import js_length, prop, truthy
from kurahi.js.stringify import js_json, js_stringify
from kurahi.js.values import MISSING, utf16_len
from kurahi.pi.read.scan import id_key
from kurahi.pi.system import current_system_message
from kurahi.pi.vocab import COMPACTION, CONTEXT_EDIT

__all__ = [
    "IMAGE_CHARS",
    "ContextTokens",
    "assistant_usage",
    "calculate_context_tokens",
    "estimate_content_tokens",
    "estimate_context_tokens",
    "estimate_each",
    "estimate_projected_context_tokens",
    "estimate_tokens",
]

IMAGE_CHARS = 4800
"""Characters Pi charges for an image block (``ESTIMATED_IMAGE_CHARS``)."""


def _blocks(content: Any, what: str) -> list[Any] | str:
    """``for (const block of content)``: arrays and strings iterate, anything else throws."""
    if isinstance(content, (list, str)):
        return content
    kind = "undefined" if content is MISSING else "null" if content is None else type(content).__name__
    raise UsageError(f"{what} is {kind}, not iterable (Pi throws TypeError)")


def _block_type(block: Any) -> Any:
    if isinstance(block, dict):
        return block.get("type", MISSING)
    return prop(block, "type")  # raises on null, undefined for anything else


def _ceil4(chars: int) -> int:
    return -(-chars // 4)


def _assistant_block(block: Any) -> int:
    btype = _block_type(block)
    if btype == "text":
        return js_length(block.get("text", MISSING), "text")
    if btype == "thinking":
        return js_length(block.get("thinking", MISSING), "thinking")
    if btype == "toolCall":
        name = js_length(block.get("name", MISSING), "name")
        arguments = block.get("arguments", MISSING)
        if arguments is MISSING:
            raise UsageError("toolCall without arguments (Pi throws TypeError)")
        return name + utf16_len(js_stringify(arguments))
    return 0


def _result_block(block: Any) -> int:
    btype = _block_type(block)
    if btype == "text":
        text = block.get("text", MISSING)
        return js_length(text, "text") if truthy(text) else 0
    return IMAGE_CHARS if btype == "image" else 0


def _sum_blocks(blocks: list[Any] | str, count: Callable[[Any], int]) -> int:
    chars = 0
    for index, block in enumerate(blocks):
        try:
            chars += count(block)
        except UsageError as exc:
            raise UsageError(f"content[{index}]: {exc}") from exc
    return chars


def _content_chars(content: Any) -> int:
    """``estimateTextAndImageContentChars``: a string's length, or text and image blocks."""
    if isinstance(content, str):
        return utf16_len(content)
    return _sum_blocks(_blocks(content, "content"), _result_block)


def _system_chars(message: dict[str, Any]) -> int:
    chars = _content_chars(message.get("content", MISSING))
    sections = message.get("sections", MISSING)
    if truthy(sections):
        values = (
            sections.values() if isinstance(sections, dict) else sections if isinstance(sections, (list, str)) else ()
        )
        for value in values:
            if truthy(value):
                chars += js_length(value, "a section")
    tools = message.get("toolsAdded", MISSING)
    if truthy(tools):
        chars += utf16_len(js_stringify(tools))
    return chars


def _stringified_length(value: Any) -> int:
    """``JSON.stringify(value).length``: :func:`js_json`'s UTF-8 is that text, written at msgspec's speed."""
    out = js_json(value)
    return len(out) if out.isascii() else utf16_len(out.decode("utf-8"))


_TEXT_ROLES = frozenset({"user", "custom", "toolResult"})


def _plain_estimate(message: Any) -> int | None:
    """:func:`_estimate` of the shapes nearly every message has, in one pass; ``None`` for any other.

    A dict whose role is ``user``, ``custom`` or ``toolResult`` with string content or a list of
    ``text`` (string ``text``) and ``image`` blocks, or ``assistant`` with a list of ``text``,
    ``thinking`` and ``toolCall`` blocks (string ``text``, ``thinking`` and ``name``, some
    ``arguments``); blocks of any other type count 0, as in :func:`_estimate`. Anything else
    (a block that is not a dict, a text that is not a string, a missing ``arguments``) is
    left to :func:`_estimate`, which knows where Pi throws.
    """
    if type(message) is not dict:
        return None
    role = message.get("role")
    content = message.get("content", MISSING)
    chars = 0
    if role in _TEXT_ROLES:
        if type(content) is str:
            return _ceil4(utf16_len(content))
        if type(content) is not list:
            return None
        for block in content:
            if type(block) is not dict:
                return None
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if type(text) is not str:
                    return None
                chars += len(text) if text.isascii() else utf16_len(text)
            elif kind == "image":
                chars += IMAGE_CHARS
        return _ceil4(chars)
    if role == "assistant":
        if type(content) is not list:
            return None
        for block in content:
            if type(block) is not dict:
                return None
            kind = block.get("type")
            if kind == "text" or kind == "thinking":
                text = block.get(kind)
                if type(text) is not str:
                    return None
                chars += len(text) if text.isascii() else utf16_len(text)
            elif kind == "toolCall":
                name = block.get("name")
                arguments = block.get("arguments", MISSING)
                if type(name) is not str or arguments is MISSING:
                    return None
                chars += utf16_len(name) + _stringified_length(arguments)
        return _ceil4(chars)
    return None


def _estimate(message: Any) -> int:
    plain = _plain_estimate(message)
    return plain if plain is not None else _estimate_any(message)


def _estimate_any(message: Any) -> int:
    """:func:`estimate_tokens` of any message, rule by rule (where Pi throws, :class:`UsageError`)."""
    role = prop(message, "role")
    if not isinstance(role, str):
        return 0
    if role in ("user", "custom", "toolResult"):
        return _ceil4(_content_chars(prop(message, "content")))
    if role == "assistant":
        return _ceil4(_sum_blocks(_blocks(prop(message, "content"), "content"), _assistant_block))
    if role == "system":
        return _ceil4(_system_chars(message))
    if role == "bashExecution":
        command = js_length(prop(message, "command"), "command")
        return _ceil4(command + js_length(prop(message, "output"), "output"))
    if role in ("branchSummary", "compactionSummary"):
        return _ceil4(js_length(prop(message, "summary"), "summary"))
    return 0


def estimate_tokens(message: Any) -> int:
    """Pi's ``estimateTokens``: ``ceil(chars / 4)`` for one agent message.

    ``chars`` is counted in UTF-16 code units, by role:

    * ``user``, ``custom``, ``toolResult``: a string content's length, or the sum of truthy
      ``text`` lengths of ``text`` blocks plus :data:`IMAGE_CHARS` per ``image`` block;
    * ``system``: as ``user``, plus the lengths of its truthy ``sections`` values and of
      ``JSON.stringify(toolsAdded)``;
    * ``assistant``: ``text`` + ``thinking`` lengths, plus ``name.length +
      JSON.stringify(arguments).length`` per ``toolCall`` (string content counts 0);
    * ``bashExecution``: ``command`` + ``output`` lengths, whether or not excluded from context;
    * ``branchSummary``, ``compactionSummary``: the summary's length (prefix/suffix not counted);
    * any other role: 0.

    Raises:
        UsageError: where Pi throws ``TypeError`` (a ``null`` message, a ``toolCall`` without
            ``arguments``, a ``text``/``thinking`` block without its text, non-iterable
            content, a missing ``command``/``output``/``summary``) or would count ``NaN``
            characters (a length that is not an integer). The message names the block.
    """
    return _estimate(message)


def _js_add_operand(usage: Any, key: str) -> int | float:
    value = prop(usage, key)
    if value is None:
        return 0  # null + 1 === 1
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return value
    raise UsageError(
        f"usage.{key} is {'missing' if value is MISSING else type(value).__name__}; "
        "Pi would compute NaN (or concatenate strings)"
    )


def _as_number(value: int | float, what: str) -> int | float:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError(f"{what} is not finite ({value!r})")
        if value.is_integer():
            return int(value)
    return value


def calculate_context_tokens(usage: Any) -> int | float:
    """Pi's ``calculateContextTokens``: ``totalTokens``, or the sum of the parts when it is falsy.

    ``totalTokens || input + output + cacheRead + cacheWrite``: a ``totalTokens`` of 0 falls back
    to the sum. Integral floats come back as ``int`` (JavaScript has one number type).

    Raises:
        UsageError: ``usage`` is ``null``/missing, ``totalTokens`` is truthy but not a number,
            or the sum would be ``NaN`` (a part missing or not a number).
    """
    total = prop(usage, "totalTokens")
    if truthy(total):
        if isinstance(total, (int, float)) and not isinstance(total, bool):
            return _as_number(total, "usage.totalTokens")
        raise UsageError(f"usage.totalTokens is a {type(total).__name__}, not a number")
    parts = [_js_add_operand(usage, key) for key in ("input", "output", "cacheRead", "cacheWrite")]
    return _as_number(parts[0] + parts[1] + parts[2] + parts[3], "usage sum")


class ContextTokens(msgspec.Struct, frozen=True):
    """The result of Pi's ``estimateContextTokens``.

    Attributes:
        tokens: ``usage_tokens + trailing_tokens``, the estimated context size.
        usage_tokens: tokens reported by the last usable assistant ``usage`` (0 without one).
        trailing_tokens: estimated tokens of the messages after that assistant (all messages
            without one).
        last_usage_index: index of that assistant message, or ``None``.
    """

    tokens: int | float
    usage_tokens: int | float
    trailing_tokens: int
    last_usage_index: int | None

    def to_dict(self) -> dict[str, Any]:
        """Pi's JSON shape ``{tokens, usageTokens, trailingTokens, lastUsageIndex}``."""
        return {
            "tokens": self.tokens,
            "usageTokens": self.usage_tokens,
            "trailingTokens": self.trailing_tokens,
            "lastUsageIndex": self.last_usage_index,
        }


def _positive_total(usage: Any) -> bool:
    """``calculateContextTokens(usage) > 0``, where a missing part makes the total ``NaN`` (false)."""
    total = prop(usage, "totalTokens")
    if not truthy(total):
        for key in ("input", "output", "cacheRead", "cacheWrite"):
            if prop(usage, key) is MISSING:
                return False  # undefined + n is NaN, and NaN > 0 is false
    return calculate_context_tokens(usage) > 0


def assistant_usage(message: Any) -> Any:
    """Pi 1.6.0's ``getAssistantUsage``: the ``usage`` of an assistant message that may be trusted.

    Returns ``MISSING`` unless the message is an ``assistant`` with a truthy ``usage``, a
    ``stopReason`` other than ``"aborted"`` and ``"error"``, and a positive
    :func:`calculate_context_tokens` (1.6.0 skips an all-zero usage, and one whose total is
    ``NaN`` because a part is missing; 0.73.1 used them).

    Raises:
        UsageError: ``message`` is ``null`` (Pi throws ``TypeError``), or a usage Pi would
            compute a string from (a part or total that is not a number).
    """
    if prop(message, "role") != "assistant" or not isinstance(message, dict):
        return MISSING
    if message.get("stopReason") in ("aborted", "error"):
        return MISSING
    usage = message.get("usage", MISSING)
    if not truthy(usage) or not _positive_total(usage):
        return MISSING
    return usage


def estimate_context_tokens(messages: Sequence[Any]) -> ContextTokens:
    """Pi's ``estimateContextTokens``: the context size of a list of agent messages.

    Takes the last assistant message whose ``usage`` is usable (see :func:`assistant_usage`)
    and adds :func:`estimate_tokens` of every message after it; with no such assistant, sums
    the estimates of all messages. Messages before that assistant are not looked at.

    Raises:
        UsageError: a message Pi would crash on (see :func:`estimate_tokens`), or a usage
            whose total would be ``NaN``; the message names its index.
    """
    usage: Any = MISSING
    usage_index = -1
    index = len(messages) - 1
    try:
        while index >= 0:
            usage = assistant_usage(messages[index])
            if usage is not MISSING:
                usage_index = index
                break
            index -= 1
        usage_tokens = calculate_context_tokens(usage) if usage_index >= 0 else 0
        trailing = 0
        for index in range(usage_index + 1, len(messages)):
            trailing += _estimate(messages[index])
    except UsageError as exc:
        raise UsageError(f"messages[{index}]: {exc}") from exc
    return ContextTokens(
        tokens=usage_tokens + trailing,
        usage_tokens=usage_tokens,
        trailing_tokens=trailing,
        last_usage_index=usage_index if usage_index >= 0 else None,
    )


def _same_id(entry: Any, source: Any) -> bool:
    # ``entry.id === source.id``: an object id is equal only to itself (the same entry).
    return entry is source or (type(entry.id) is not dict and id_key(entry.id) == id_key(source.id))


def estimate_projected_context_tokens(projection: SessionContext, path: Sequence[PathEntry]) -> ContextTokens:
    """Pi 1.6.0's ``estimateProjectedContextTokens``: the size of a projection, distrusting stale usage.

    The last usable assistant usage (see :func:`estimate_context_tokens`) is trusted only when
    the entry that holds it comes after the last ``context_edit`` or ``compaction`` on the
    path: an edit or a compaction changes the context the usage measured. Otherwise every
    message is estimated, the system messages as one (their replay,
    :func:`~kurahi.pi.system.current_system_message`).

    Args:
        projection: ``build_context(path, with_entries=True)`` (or ``project_from_leaf``).
        path: the whole path from the root to the leaf (Pi's ``branchEntries``).

    Raises:
        UsageError: the projection has no entries (``with_entries`` was not set), or a
            message Pi would crash on.
    """
    entries = projection.entries
    if entries is None:
        raise UsageError("estimate_projected_context_tokens needs a projection made with with_entries=True")
    messages = projection.messages
    estimate = estimate_context_tokens(messages)
    last = estimate.last_usage_index
    if last is not None:
        source: Any = None
        start = 0
        for projected in entries:
            end = start + len(projected.messages)
            if last < end:
                source = projected.source
                break
            start = end
        usage_at = -1
        if source is not None and source.id is not MISSING and truthy(source.id):  # usageEntryId ? ... : -1
            usage_at = next((i for i, e in enumerate(path) if _same_id(e, source)), -1)
        invalidated_at = next(
            (i for i in range(len(path) - 1, -1, -1) if path[i].type in (CONTEXT_EDIT, COMPACTION)), -1
        )
        if usage_at > invalidated_at:
            return estimate
    tokens = estimate_content_tokens(messages)
    return ContextTokens(tokens=tokens, usage_tokens=0, trailing_tokens=tokens, last_usage_index=None)


def estimate_each(messages: Sequence[Any]) -> list[int | None]:
    """:func:`estimate_tokens` of every message, ``None`` for one Pi would crash on.

    The usual shapes are counted in C when the extension is built (a history of 20k messages
    in a few milliseconds, against about 0.08 s here); the rest rule by rule.
    """
    from kurahi.pi.read.native import plain_estimates

    plain = plain_estimates(messages, _stringified_length) if type(messages) is list else None
    if plain is not None and None not in plain:
        return plain
    out: list[int | None] = []
    for i, message in enumerate(messages):
        known = plain[i] if plain is not None else _plain_estimate(message)
        if known is not None:
            out.append(known)
            continue
        try:
            out.append(_estimate_any(message))
        except UsageError:
            out.append(None)
    return out


def estimate_content_tokens(messages: Sequence[Any], each: Sequence[int | None] | None = None) -> int:
    """Every message estimated from its content, no recorded usage.

    This is Pi 1.6.0's projected estimate when it distrusts the usage (the system messages
    counted once, as their replay). ``each``, the messages' :func:`estimate_each` when the
    caller has it already, saves estimating them twice; with a ``None`` in it, or without
    it, every message is estimated here.

    Raises:
        UsageError: a message Pi would crash on; the message names its index.
    """
    index = -1  # -1: the system messages' replay
    known = [t for t in each if t is not None] if each is not None else None
    known = known if known is not None and len(known) == len(messages) else None
    try:
        system = current_system_message(messages)
        tokens = _estimate(system) if system is not None else 0
        for index, message in enumerate(messages):
            if prop(message, "role") != "system":
                tokens += known[index] if known is not None else _estimate(message)
    except UsageError as exc:
        raise UsageError(f"messages[{index}]: {exc}") from exc
    return tokens
