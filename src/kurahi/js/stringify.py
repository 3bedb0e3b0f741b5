"""JavaScript's ``JSON.stringify``, ``Number.prototype.toString`` and string escapes, exactly.

Apart from :mod:`kurahi.js.values` (which it builds on, and which never imports it) so that a
process that only projects a file does not compile this part: without bytecode files a
module's import costs its compile, and this half cost several ms.
"""

from __future__ import annotations

from kurahi.js.values import MISSING, _Pattern, js_string, number_text

TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING
if TYPE_CHECKING:
    import re
    from typing import Any

__all__ = ["js_json", "js_json_items", "js_quote", "js_stringify", "json_utf8", "utf8_bytes"]


# JSON.stringify escapes these in strings: '"', '\\', C0 controls and (since ES2019) any
# surrogate that is not half of a pair, as a lowercase \uXXXX.
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_TO_ESCAPE = _Pattern('["\\\\\x00-\x1f\ud800-\udfff]')
_SURROGATE = _Pattern("[\ud800-\udfff]")
_INDEX_KEY = _Pattern(r"0|[1-9][0-9]{0,9}")
_MAX_INDEX = 2**32 - 2


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def js_quote(text: str) -> str:
    r"""``JSON.stringify(text)`` for a string: JavaScript's escapes, lone surrogates as ``\udXXX``.

    A Python string may hold the two halves of a pair as separate code points (JavaScript
    strings are UTF-16, so there they are one character); they are joined first, so only a
    surrogate without its partner is escaped, as JavaScript does.
    """
    if _SURROGATE.get().search(text) is not None:
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return '"' + _TO_ESCAPE.get().sub(_escape, text) + '"'


def _ordered_items(obj: dict[Any, Any]) -> list[tuple[str, Any]]:
    """An object's keys in JavaScript's order: integer indices ascending first, then insertion order."""
    items = [(k if isinstance(k, str) else js_string(k), v) for k, v in obj.items() if v is not MISSING]
    indices = [kv for kv in items if _INDEX_KEY.get().fullmatch(kv[0]) and int(kv[0]) <= _MAX_INDEX]
    if not indices:
        return items
    indices.sort(key=lambda kv: int(kv[0]))
    return indices + [kv for kv in items if not (_INDEX_KEY.get().fullmatch(kv[0]) and int(kv[0]) <= _MAX_INDEX)]


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for JSON-shaped data, exactly as JavaScript writes it.

    Compact; JavaScript's key order (integer-like keys first); numbers as JavaScript prints
    the double ``JSON.parse`` would have read (so ``-0`` is ``0``, a 70-bit integer loses
    its low digits, ``1e400`` is ``null``); strings escaped as :func:`js_quote` does. A
    missing value (:data:`MISSING`) leaves its key out and is ``null`` in an array.
    Iterative, so a document nested as deeply as Python could decode it is written too.
    """
    parts: list[str] = []
    write = parts.append
    # Work list, popped from the end: ``(True, text)`` is literal output, ``(False, v)`` a value.
    todo: list[tuple[bool, Any]] = [(False, value)]
    pop, push = todo.pop, todo.append
    while todo:
        literal, v = pop()
        if literal:
            write(v)
        elif v is None or v is MISSING:
            write("null")
        elif v is True:
            write("true")
        elif v is False:
            write("false")
        elif isinstance(v, str):
            write(js_quote(v))
        elif isinstance(v, (int, float)):
            write(number_text(v))
        elif isinstance(v, (list, tuple)):
            if not v:
                write("[]")
                continue
            write("[")
            push((True, "]"))
            for i in range(len(v) - 1, -1, -1):
                push((False, v[i]))
                if i:
                    push((True, ","))
        elif isinstance(v, dict):
            items = _ordered_items(v)
            if not items:
                write("{}")
                continue
            write("{")
            push((True, "}"))
            for i in range(len(items) - 1, -1, -1):
                key, item = items[i]
                push((False, item))
                push((True, ("," if i else "") + js_quote(key) + ":"))
        else:
            import msgspec  # a struct or another type msgspec knows how to make plain

            push((False, msgspec.to_builtins(v)))
    return "".join(parts)


def utf8_bytes(text: str) -> bytes:
    """``text`` as Node writes a string to a file in UTF-8: a lone surrogate becomes U+FFFD.

    (A pair split into two code points is joined first, as JavaScript holds it as one.)
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def json_utf8(text: str) -> bytes:
    r"""JSON text (``json.dumps(..., ensure_ascii=False)``) as UTF-8, a lone surrogate as ``\udXXX``.

    In JSON text a surrogate can only sit inside a string, so writing it as its escape keeps
    the document's value and makes the bytes valid UTF-8 (``str.encode`` refuses it).
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        return _SURROGATE.get().sub(_escape, joined).encode("utf-8")


# Where msgspec's compact JSON may differ from JavaScript's: an integral or negative-zero
# float (``1.0``, ``-0.0``), an exponent (``1e21`` for ``1e+21``, ``1e-6`` for ``0.000001``),
# an integer of 16 digits or more (past 2**53 JavaScript rounds) and an integer-like key
# (JavaScript puts those first). With every digit read as ``0`` these are a few substrings,
# found by ``bytes.find`` at memory speed; a regular expression took four times as long.
# The same text inside a string (``"v1.0,"``, a hex digest) only costs the exact encoder's time.
_AS_ZEROS = bytes.maketrans(b"123456789E", b"000000000e")
_SAFE_INT = 2.0**53
_SUSPECT_RAW = (b".0,", b".0}", b".0]")
_SUSPECT_ZEROS = (b"0e0", b"0e-0", b"0" * 16, b'{"0', b',"0')


def _may_differ(out: bytes) -> bool:
    if any(s in out for s in _SUSPECT_RAW):
        return True
    zeros = out.translate(_AS_ZEROS)
    return any(s in zeros for s in _SUSPECT_ZEROS)


def js_json(value: Any, *, _depth: int = 0) -> bytes:
    """``JSON.stringify(value)`` as UTF-8 bytes, what Node writes for it.

    msgspec writes the same bytes for almost every document several times faster; its
    output is used whenever it cannot differ (no number or key it would write otherwise,
    and no lone surrogate stopped it), and :func:`js_stringify` writes the rest. When a
    large document fails that check, its parts are tried one by one (three levels deep),
    so one odd number costs the exact encoder's time for its own part only. A
    ``msgspec.Raw`` (bytes already known to be what ``JSON.stringify`` writes, such as a
    message copied from a transcript) is written as it is, and a list holding one is
    written part by part, so those bytes are never checked again. The bytes are always
    valid UTF-8.
    """
    import msgspec

    if type(value) is msgspec.Raw:
        return bytes(value)
    if isinstance(value, (dict, list)):
        if isinstance(value, list) and any(type(v) is msgspec.Raw for v in value):
            return b"[" + b",".join(js_json_items(value, _depth=_depth + 1)) + b"]"
        try:
            out: bytes = msgspec.json.encode(value)
        except (UnicodeEncodeError, TypeError, OverflowError):
            pass  # a lone surrogate, a MISSING, an integer past 64 bits
        except RecursionError:
            # Nested too deeply for msgspec: the iterative writer, with collection paused (its
            # work list would set off full passes of the cyclic collector over every level).
            import gc

            enabled = gc.isenabled()
            gc.disable()
            try:
                return js_stringify(value).encode("utf-8")
            finally:
                if enabled:
                    gc.enable()
        else:
            if not _may_differ(out):
                return out
            if type(value) is dict and any(type(v) is float for v in value.values()):
                # A timestamp Kurahi built (new Date(...).getTime(), a float) is the usual cause:
                # an integral float below 2**53 is written by JavaScript as that integer.
                ints = {
                    k: int(v) if type(v) is float and abs(v) < _SAFE_INT and v.is_integer() else v
                    for k, v in value.items()
                }
                try:
                    out = msgspec.json.encode(ints)
                except (UnicodeEncodeError, TypeError, OverflowError, RecursionError):
                    pass
                else:
                    if not _may_differ(out):
                        return out
        if _depth < 3 and value:
            if isinstance(value, list):
                return b"[" + b",".join([js_json(v, _depth=_depth + 1) for v in value]) + b"]"
            parts = [
                js_quote(k).encode("utf-8") + b":" + js_json(v, _depth=_depth + 1) for k, v in _ordered_items(value)
            ]
            return b"{" + b",".join(parts) + b"}"
    return js_stringify(value).encode("utf-8")


def js_json_items(values: list[Any], *, keep: tuple[type, ...] = (), _depth: int = 0) -> list[Any]:
    """Each item's ``JSON.stringify`` bytes, for a caller that joins them.

    ``msgspec.Raw`` items, and items of the types in ``keep`` (other forms of JSON text the
    caller knows how to join, such as :data:`kurahi.pi.read.native.COPIED_TYPES`), are kept
    as they are.
    """
    import msgspec

    kinds = (msgspec.Raw, *keep)
    return [v if type(v) in kinds else js_json(v, _depth=_depth) for v in values]
