"""JavaScript value semantics that Pi's output depends on.

Pi is JavaScript, and its projection leaks JS semantics into the result:
``new Date(x).getTime()`` for timestamps, truthiness (``[]`` is truthy, ``""`` is not),
``.length`` counted in UTF-16 code units, and ``JSON.stringify`` formatting. Matching Pi
byte for byte means reproducing those rules here, once.

Missing keys play the part of JS ``undefined``: a projected message leaves a key out
exactly where Pi's ``JSON.stringify`` would.
"""

from __future__ import annotations

import math

TYPE_CHECKING = False  # mypy reads it as typing.TYPE_CHECKING
if TYPE_CHECKING:
    import re
    from typing import Any

__all__ = [
    "MISSING",
    "date_ms",
    "js_json",
    "js_json_items",
    "js_number",
    "js_quote",
    "js_string",
    "js_stringify",
    "js_truthy",
    "js_whitespace_strip",
    "json_utf8",
    "utf8_bytes",
    "utf16_len",
]


class _Pattern:
    """A regular expression compiled on first use.

    Projecting a file needs this module but rarely its patterns, and importing ``re`` costs
    a fresh process about 5 ms.
    """

    __slots__ = ("_compiled", "_source", "_verbose")

    def __init__(self, source: str, *, verbose: bool = False) -> None:
        self._source = source
        self._verbose = verbose
        self._compiled: re.Pattern[str] | None = None

    def get(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:
            import re

            compiled = self._compiled = re.compile(self._source, re.VERBOSE if self._verbose else 0)
        return compiled


# JS String.prototype.trim() removes WhiteSpace and LineTerminator code points.
_JS_WS = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" + (
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_whitespace_strip(text: str, *, left: bool = True, right: bool = True) -> str:
    """Strip the characters JavaScript's ``trim()`` strips (a BOM among them)."""
    if left:
        text = text.lstrip(_JS_WS)
    if right:
        text = text.rstrip(_JS_WS)
    return text


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness: ``""``, ``0``, ``NaN``, ``null``, ``false`` are falsy; ``[]``, ``{}`` truthy."""
    if value is None or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, (int, float)):
        return not (value == 0 or (isinstance(value, float) and math.isnan(value)))
    if isinstance(value, str):
        return value != ""
    return True


def utf16_len(text: str) -> int:
    """``text.length`` in JavaScript: the number of UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


# ---------------------------------------------------------------------------
# new Date(value).getTime()
# ---------------------------------------------------------------------------

# ECMAScript date-time string format (and V8's acceptance of a few relaxations).
_ISO = _Pattern(
    r"""^(?P<year>[+-]\d{6}|\d{4})
        (?:-(?P<month>\d{2})(?:-(?P<day>\d{2}))?)?
        (?:T(?P<hour>\d{2}):(?P<minute>\d{2})
           (?::(?P<second>\d{2})(?:\.(?P<frac>\d+))?)?
           (?P<tz>Z|[+-]\d{2}:\d{2})?)?$""",
    verbose=True,
)
_MAX_MS = 8.64e15


def _iso_ms(text: str) -> float | None:
    if (
        len(text) == 24
        and text[23] == "Z"
        and text[4] == text[7] == "-"
        and text[10] == "T"
        and text[13] == text[16] == ":"
        and text[19] == "."
        and text.isascii()
        and (text[:4] + text[5:7] + text[8:10] + text[11:13] + text[14:16] + text[17:19] + text[20:23]).isdigit()
    ):
        # What toISOString() writes, read without the pattern (the same groups it would give).
        year, month, day = int(text[:4]), int(text[5:7]), int(text[8:10])
        hour, minute, second, millis = int(text[11:13]), int(text[14:16]), int(text[17:19]), int(text[20:23])
        return _civil_ms(year, month, day, hour, minute, second, millis, "Z", True)
    m = _ISO.get().match(text)
    if m is None:
        return None
    year_s = m.group("year")
    if year_s == "-000000":
        return None
    frac = m.group("frac") or ""
    return _civil_ms(
        int(year_s),
        int(m.group("month") or 1),
        int(m.group("day") or 1),
        int(m.group("hour") or 0),
        int(m.group("minute") or 0),
        int(m.group("second") or 0),
        int((frac + "000")[:3]) if frac else 0,
        m.group("tz"),
        m.group("hour") is not None,
    )


def _civil_ms(
    year: int, month: int, day: int, hour: int, minute: int, second: int, millis: int, tz: str | None, timed: bool
) -> float | None:
    if not (1 <= month <= 12) or hour > 24 or minute > 59 or second > 59:
        return None
    if hour == 24 and (minute or second or millis):
        return None
    if not (1 <= day <= _days_in_month(year, month)):
        return None
    days = _days_from_civil(year, month, day)
    ms = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    if tz is None and timed:
        # A date-time without an offset is local time in JavaScript.
        ms = _local_to_utc_ms(ms)
    elif tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        ms -= sign * (int(tz[1:3]) * 60 + int(tz[4:6])) * 60_000
    if abs(ms) > _MAX_MS:
        return None
    return float(ms)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _days_from_civil(y: int, m: int, d: int) -> int:
    # Howard Hinnant's algorithm: days since 1970-01-01 for any proleptic Gregorian date.
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _local_to_utc_ms(local_ms: int) -> int:
    import datetime as _dt

    try:
        naive = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=local_ms)
        return int(naive.astimezone(_dt.UTC).timestamp() * 1000)
    except (OverflowError, ValueError, OSError):  # pragma: no cover - far outside real timestamps
        return local_ms


def _fallback_ms(text: str) -> float | None:
    # V8 also accepts RFC 2822-like strings ("Mon, 01 Jun 2025 10:00:00 GMT").
    import calendar  # imported here: only this rare form needs it
    from email.utils import parsedate_tz

    parsed = parsedate_tz(text)
    if parsed is None:
        return None
    offset = parsed[9] or 0
    try:
        secs = calendar.timegm(parsed[:6]) - offset
    except (OverflowError, ValueError):  # pragma: no cover
        return None
    return float(secs * 1000)


def date_ms(value: Any) -> int | float | None:
    """``new Date(value).getTime()``, with ``NaN`` returned as ``None`` (JSON ``null``).

    A missing value (JS ``undefined``) is passed as the sentinel ``MISSING``, not ``None``:
    ``new Date(null)`` is 0 but ``new Date(undefined)`` is NaN.
    """
    if value is MISSING:
        return None
    if value is None:
        return 0
    if value is True or value is False:
        return int(value)
    if isinstance(value, (int, float)):
        if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
            return None
        if abs(value) > _MAX_MS:
            return None
        return math.trunc(value)
    text = js_string(value)
    text = js_whitespace_strip(text)
    ms = _iso_ms(text)
    if ms is None:
        ms = _fallback_ms(text)
    if ms is None:
        return None
    return int(ms)


def js_string(value: Any) -> str:
    """``String(value)``, as a template literal or ``+`` with a string computes it."""
    if isinstance(value, str):
        return value
    if value is MISSING:
        return "undefined"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "NaN"
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, (int, float)):
        return js_stringify(value)
    if isinstance(value, list):
        return ",".join("" if v is None or v is MISSING else js_string(v) for v in value)
    return "[object Object]"


class _Missing:
    """JS ``undefined``: a key that is not there."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()
"""Sentinel for JavaScript ``undefined`` (a key that is absent)."""


def _js_number(value: float) -> str:
    """``Number.prototype.toString()``: shortest round-trip digits, JS's notation rules."""
    if math.isnan(value) or math.isinf(value):
        return "null"  # JSON.stringify writes NaN and Infinity as null
    if value == 0:
        return "0"
    import decimal

    sign = "-" if value < 0 else ""
    digits_t = decimal.Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digits_t.digits))
    k = len(digits)
    n = int(digits_t.exponent) + k  # value = 0.digits * 10**n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exp = n - 1
    mant = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mant}e{'+' if exp >= 0 else '-'}{abs(exp)}"


# JSON.stringify escapes these in strings: '"', '\\', C0 controls and (since ES2019) any
# surrogate that is not half of a pair, as a lowercase \uXXXX.
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_TO_ESCAPE = _Pattern('["\\\\\x00-\x1f\ud800-\udfff]')
_SURROGATE = _Pattern("[\ud800-\udfff]")
_INDEX_KEY = _Pattern(r"0|[1-9][0-9]{0,9}")
_MAX_SAFE = 2**53
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


def _js_int(value: int) -> str:
    # JSON.parse reads every number as a double: past 2**53 the digits are the double's.
    if -_MAX_SAFE <= value <= _MAX_SAFE:
        return str(value)
    try:
        return _js_number(float(value))
    except OverflowError:
        return "null"  # beyond the largest double: Infinity, which JSON.stringify writes as null


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
        elif isinstance(v, int):
            write(_js_int(v))
        elif isinstance(v, float):
            write(_js_number(v))
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
    caller knows how to join, such as :data:`kurahi.store.native.COPIED_TYPES`), are kept
    as they are.
    """
    import msgspec

    kinds = (msgspec.Raw, *keep)
    return [v if type(v) in kinds else js_json(v, _depth=_depth) for v in values]


# StringToNumber's grammar: decimal literals with ASCII digits only (Python's float() also
# takes "1_0", "inf", "nan" and other scripts' digits), and unsigned 0x / 0o / 0b integers.
_JS_DECIMAL = _Pattern(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_JS_RADIX = _Pattern(r"0(?:[xX](?P<x>[0-9a-fA-F]+)|[oO](?P<o>[0-7]+)|[bB](?P<b>[01]+))")


def _string_to_number(text: str) -> float | None:
    text = js_whitespace_strip(text)
    if text == "":
        return 0.0
    if text in ("Infinity", "+Infinity"):
        return math.inf
    if text == "-Infinity":
        return -math.inf
    if _JS_DECIMAL.get().fullmatch(text):
        return float(text)
    radix = _JS_RADIX.get().fullmatch(text)
    if radix is not None:
        base, digits = next((b, d) for b, d in zip((16, 8, 2), radix.groups(), strict=True) if d is not None)
        try:
            return float(int(digits, base))
        except OverflowError:
            return math.inf
    return None


def js_number(value: Any) -> float | None:
    """``Number(value)``, as JavaScript's ``<`` and ``>=`` see it; ``None`` for NaN.

    Strings follow JavaScript's grammar (``" 2 "`` and ``"0x2"`` are 2, ``"1_0"`` is NaN),
    and an array is first made a string (``[]`` is 0, ``[2]`` is 2), as ``ToPrimitive`` does.
    """
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, str):
        return _string_to_number(value)
    if isinstance(value, list):
        return _string_to_number(js_string(value))
    return None  # an object ("[object Object]"), undefined
