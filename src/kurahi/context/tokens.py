"""Pi's token arithmetic: ``estimateTokens``, ``calculateContextTokens``, ``estimateContextTokens``.

Pi 0.73.1 (``dist/core/compaction/compaction.js``) decides when to compact from these numbers,
so they are reproduced exactly, quirks included:

* a message's estimate is ``ceil(chars / 4)``, with ``chars`` counted in UTF-16 code units
  (an emoji counts 2);
* images count 0 in ``user`` messages but 4800 characters in ``toolResult`` and ``custom``;
* a ``toolCall`` counts its name plus ``JSON.stringify(arguments)``;
* a ``bashExecution`` counts command and output even when ``excludeFromContext`` hides it
  from the model;
* the context size is the last usable assistant ``usage`` plus estimates of what follows it.

Where Pi would throw a ``TypeError`` (a ``toolCall`` without ``arguments``, a ``text`` block
without ``text``, a ``null`` message, non-iterable content) or compute ``NaN`` (a text that is
a number, usage fields that are missing), these functions raise
:class:`~kurahi.errors.UsageError` naming the message and block.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from kurahi.context._js import js_length, prop, truthy
from kurahi.errors import UsageError
from kurahi.jsvalues import MISSING, js_stringify, utf16_len

__all__ = [
    "IMAGE_CHARS",
    "ContextTokens",
    "assistant_usage",
    "calculate_context_tokens",
    "estimate_context_tokens",
    "estimate_tokens",
]

IMAGE_CHARS = 4800
"""Characters Pi charges for an image block in a ``toolResult`` or ``custom`` message."""


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


def _user_block(block: Any) -> int:
    if _block_type(block) == "text":
        text = block.get("text", MISSING)
        if truthy(text):
            return js_length(text, "text")
    return 0


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


def _estimate(message: Any) -> int:
    role = prop(message, "role")
    if not isinstance(role, str):
        return 0
    if role == "user":
        content = prop(message, "content")
        if isinstance(content, str):
            return _ceil4(utf16_len(content))
        return _ceil4(_sum_blocks(content, _user_block) if isinstance(content, list) else 0)
    if role == "assistant":
        return _ceil4(_sum_blocks(_blocks(prop(message, "content"), "content"), _assistant_block))
    if role in ("custom", "toolResult"):
        content = prop(message, "content")
        if isinstance(content, str):
            return _ceil4(utf16_len(content))
        return _ceil4(_sum_blocks(_blocks(content, "content"), _result_block))
    if role == "bashExecution":
        command = js_length(prop(message, "command"), "command")
        return _ceil4(command + js_length(prop(message, "output"), "output"))
    if role in ("branchSummary", "compactionSummary"):
        return _ceil4(js_length(prop(message, "summary"), "summary"))
    return 0


def estimate_tokens(message: Any) -> int:
    """Pi's ``estimateTokens``: ``ceil(chars / 4)`` for one agent message.

    ``chars`` is counted in UTF-16 code units, by role:

    * ``user``: a string content's length, or the sum of truthy ``text`` lengths of ``text``
      blocks (images count 0);
    * ``assistant``: ``text`` + ``thinking`` lengths, plus ``name.length +
      JSON.stringify(arguments).length`` per ``toolCall`` (string content counts 0);
    * ``custom``, ``toolResult``: as ``user``, plus :data:`IMAGE_CHARS` per ``image`` block;
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


def assistant_usage(message: Any) -> Any:
    """Pi's ``getAssistantUsage``: the ``usage`` of an assistant message that may be trusted.

    Returns ``MISSING`` unless the message is an ``assistant`` with a truthy ``usage`` and a
    ``stopReason`` other than ``"aborted"`` and ``"error"``.

    Raises:
        UsageError: ``message`` is ``null`` (Pi throws ``TypeError``).
    """
    if prop(message, "role") != "assistant" or not isinstance(message, dict):
        return MISSING
    if message.get("stopReason") in ("aborted", "error"):
        return MISSING
    usage = message.get("usage", MISSING)
    return usage if truthy(usage) else MISSING


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
