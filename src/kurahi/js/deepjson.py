"""``JSON.parse`` for documents nested deeper than CPython's own decoders go.

msgspec and the standard library's ``json`` decode recursively and stop, with
``RecursionError``, about a thousand levels below the caller's stack depth (so the limit
moves with whoever calls them). Node's ``JSON.parse`` has no such limit: V8 parses with a
stack of its own, and reads a line nested a million levels deep. Pi therefore reads such a
line, and so must Kurahi: every reader decodes with the fast decoders first and hands a line
they give up on to :func:`loads`, which keeps its own stack and never recurses.

It gives what ``json.loads`` gives for the same text (``int`` for an integer literal,
``float`` for any other number, lone surrogate escapes kept, the last of repeated keys),
refuses ``NaN``, ``Infinity`` and everything else RFC 8259 refuses, and is used only for
the rare deep line: it is a Python loop, a few times slower than the C decoders.

:func:`dumps` is the other direction: ``json.dumps(value, ensure_ascii=False,
separators=(",", ":"))`` (``sort_keys`` too), byte for byte, without recursion, for a hash or
a search over values that may be that deep.

The quick way, which avoids importing ``json`` and ``re``, imports this module only when
it meets such a line.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable
from json.decoder import scanstring as _scanstring  # type: ignore[attr-defined]  # C, from _json
from json.encoder import encode_basestring as _quote  # C, from _json
from typing import Any, cast

__all__ = ["dumps", "dumps_compact", "loads", "parse"]

# RFC 8259's number (what json.scanner's NUMBER_RE matches), and its four whitespace bytes.
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_WS = " \t\n\r"
_SPACE = re.compile(r"[ \t\n\r]*")
_skip = cast(Callable[[str, int], "re.Match[str]"], _SPACE.match)
"""``_SPACE.match``, which always matches (perhaps nothing)."""
_LITERALS = (("true", True), ("false", False), ("null", None))


def loads(text: str) -> Any:
    """Decode one JSON text of any nesting depth, as ``json.loads`` would with no depth limit.

    Raises:
        ValueError: the text is not JSON; the message names the character offset.
    """
    # Collection paused: a million nested containers would set off full passes of the cyclic
    # collector over all of them, three times the decoding's own cost.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _loads(text)
    finally:
        if enabled:
            gc.enable()


def _loads(text: str) -> Any:
    # Written for speed where it is needed (a line nested a million levels deep): one
    # character is looked at before any call, and whitespace, rare in what Pi writes, is
    # skipped only where there is some.
    number = _NUMBER.match
    end = len(text)
    # Each open container: the container and, for an object, the key its next value goes to.
    stack: list[tuple[Any, str | None]] = []
    push, top = stack.append, stack.pop
    pos = _ws(text, 0)
    value: Any
    while True:
        # A value starts at pos.
        if pos >= end:
            raise ValueError(f"a value was expected at {pos}")
        c = text[pos]
        pos += 1
        if c == "[":
            if pos < end and text[pos] in _WS:
                pos = _ws(text, pos)
            if pos < end and text[pos] == "]":
                value = []
                pos += 1
            else:
                push(([], None))
                continue
        elif c == "{":
            if pos < end and text[pos] in _WS:
                pos = _ws(text, pos)
            if pos < end and text[pos] == "}":
                value = {}
                pos += 1
            else:
                first, pos = _key(text, pos)
                push(({}, first))
                continue
        elif c == '"':
            value, pos = _string(text, pos)
        else:
            pos -= 1
            for word, literal in _LITERALS:
                if text.startswith(word, pos):
                    value, pos = literal, pos + len(word)
                    break
            else:
                m = number(text, pos)
                if m is None or m.end() == pos:
                    raise ValueError(f"a value was expected at {pos}")
                whole, frac, exp = m.groups()
                value = float(m.group()) if frac or exp else int(whole)
                pos = m.end()
        # The value is complete: put it in its container, closing as many as end here.
        while True:
            if pos < end and text[pos] in _WS:
                pos = _ws(text, pos)
            if not stack:
                if pos != end:
                    raise ValueError(f"extra data at {pos}")
                return value
            container, key = stack[-1]
            if key is None:
                container.append(value)
                closer = "]"
            else:
                container[key] = value
                closer = "}"
            c = text[pos] if pos < end else ""
            if c == ",":
                pos = _ws(text, pos + 1)
                if key is not None:
                    key, pos = _key(text, pos)
                    stack[-1] = (container, key)
                break
            if c != closer:
                raise ValueError(f"',' or '{closer}' was expected at {pos}")
            top()
            value, pos = container, pos + 1


def _ws(text: str, pos: int) -> int:
    """Where the whitespace from ``pos`` ends."""
    return _skip(text, pos).end()


def _key(text: str, pos: int) -> tuple[str, int]:
    """An object's key and its colon, from ``pos``; returns the key and where its value starts."""
    if not text.startswith('"', pos):
        raise ValueError(f"a key in double quotes was expected at {pos}")
    key, pos = _string(text, pos + 1)
    if text.startswith(":", pos):
        pos += 1
    else:
        pos = _ws(text, pos)
        if not text.startswith(":", pos):
            raise ValueError(f"':' was expected at {pos}")
        pos += 1
    if pos < len(text) and text[pos] in _WS:
        pos = _ws(text, pos)
    return key, pos


def _string(text: str, pos: int) -> tuple[str, int]:
    """The string whose opening quote is just before ``pos``; returns it and the offset after it."""
    try:
        return _scanstring(text, pos, True)  # type: ignore[no-any-return]
    except ValueError as exc:  # json.JSONDecodeError: its message names the offset
        raise ValueError(str(exc)) from None


def dumps(value: Any, *, sort_keys: bool = False, separators: tuple[str, str] = (",", ":")) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=..., sort_keys=...)``, iteratively.

    For JSON-shaped values (dicts with string keys, lists, strings, numbers, booleans,
    ``None``): the same text the standard library writes, at any depth.

    Raises:
        TypeError: a value JSON has no form for.
    """
    comma, colon = separators
    parts: list[str] = []
    write = parts.append
    # Work list, popped from the end: a str is literal output, a 1-tuple a value to write.
    todo: list[Any] = [(value,)]
    pop, push = todo.pop, todo.append
    while todo:
        item = pop()
        if type(item) is str:
            write(item)
            continue
        (v,) = item
        if isinstance(v, str):
            write(_quote(v))
        elif v is None:
            write("null")
        elif v is True:
            write("true")
        elif v is False:
            write("false")
        elif isinstance(v, int):
            write(int.__repr__(v))
        elif isinstance(v, float):
            write(_float(v))
        elif isinstance(v, (list, tuple)):
            write("[")
            push("]")
            for i in range(len(v) - 1, -1, -1):
                push((v[i],))
                if i:
                    push(comma)
        elif isinstance(v, dict):
            keys = sorted(v) if sort_keys else list(v)
            write("{")
            push("}")
            for i in range(len(keys) - 1, -1, -1):
                key = keys[i]
                if not isinstance(key, str):
                    raise TypeError(f"keys must be str, not {type(key).__name__}")
                push((v[key],))
                push((comma if i else "") + _quote(key) + colon)
        else:
            raise TypeError(f"Object of type {type(v).__name__} is not JSON serializable")
    return "".join(parts)


def _float(v: float) -> str:
    # As json.encoder's floatstr writes it (allow_nan=True, the standard library's default).
    if v != v:
        return "NaN"
    if v == float("inf"):
        return "Infinity"
    if v == -float("inf"):
        return "-Infinity"
    return float.__repr__(v)


def parse(data: str | bytes) -> Any:
    """``json.loads(data)``, falling back to :func:`loads` for a document nested too deeply for it.

    For callers that read JSON with the standard library (the OpenClaw SQLite store's rows):
    the same value, at any depth.

    Raises:
        ValueError: not JSON (``json.JSONDecodeError``, or :func:`loads`'s), or bytes that are
            not UTF-8 (``UnicodeDecodeError``).
    """
    import json

    try:
        return json.loads(data)
    except RecursionError:
        return loads(data.decode("utf-8") if isinstance(data, bytes) else data)


def dumps_compact(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` at any depth."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:
        return dumps(value)
