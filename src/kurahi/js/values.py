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
    "js_number",
    "js_string",
    "js_truthy",
    "js_whitespace_strip",
    "number_text",
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
    if not (1 <= day <= 31):
        return None  # V8 takes 31 days in every month: "2021-02-31" is 3 March
    days = _days_from_civil(year, month, day)
    ms = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    if tz is None and timed:
        # A date-time without an offset is local time in JavaScript.
        ms = _local_to_utc_ms(ms)
    elif tz and tz != "Z":
        if int(tz[1:3]) > 23 or int(tz[4:6]) > 59:
            return None
        sign = 1 if tz[0] == "+" else -1
        ms -= sign * (int(tz[1:3]) * 60 + int(tz[4:6])) * 60_000
    if abs(ms) > _MAX_MS:
        return None
    return float(ms)


def _days_from_civil(y: int, m: int, d: int) -> int:
    # Howard Hinnant's algorithm: days since 1970-01-01 for any proleptic Gregorian date.
    # His C version writes the era as (y - 399) / 400 for negative years because C's division
    # truncates; Python's // already floors, so the era is y // 400 for every year.
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _local_to_utc_ms(local_ms: int) -> int:
    import datetime as _dt

    try:
        naive = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=local_ms)
        offset = naive.astimezone().utcoffset()
    except (OverflowError, ValueError, OSError):  # pragma: no cover - outside years 1-9999
        return local_ms
    # Whole milliseconds: a float timestamp of a far year loses the last one.
    return local_ms - (offset // _dt.timedelta(milliseconds=1) if offset else 0)


def _legacy_numeric_ms(text: str) -> float | None:
    """V8's fallback parser on three numbers joined by ``-`` (``"0001-12-32"``, ``"12-01-05"``), else ``None``.

    When the date-time format refuses such a text (a field out of range, a year not of four
    digits), V8's fallback reads the numbers as month-day-year when the first could be a day
    (1 to 31), else as year-month-day; a year of 0-49 is 20xx, 50-99 19xx; the month must be
    1 to 12 and the day 1 to 31 (a day past the month's end runs into the next); the moment
    is local midnight. A leading ``+`` changes nothing. Held to node over random texts of parts
    up to seven digits; longer parts, a leading ``-`` and the fallback's two-number forms
    (``"0001-13"`` is 13 January 2001 to V8) are not modelled: they read as NaN here.
    """
    parts = text.removeprefix("+").split("-")
    if len(parts) != 3 or not all(p.isascii() and p.isdigit() and len(p) <= 7 for p in parts):
        return None
    a, b, c = (int(p) for p in parts)
    year, month, day = (c, a, b) if 1 <= a <= 31 else (a, b, c)
    year += 2000 if year <= 49 else 1900 if year <= 99 else 0
    return _civil_ms(year, month, day, 0, 0, 0, 0, None, True)  # a date-time without an offset: local


def _fallback_ms(text: str) -> float | None:
    # V8 also accepts RFC 2822-like strings ("Mon, 01 Jun 2025 10:00:00 GMT").
    numeric = _legacy_numeric_ms(text)
    if numeric is not None:
        return numeric
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
    # V8 reads the date-time format only as it stands (a space around it sends the text to its
    # fallback parser, which refuses a fraction or a "Z" there); the fallback trims.
    ms = _iso_ms(text)
    if ms is None:
        ms = _fallback_ms(js_whitespace_strip(text))
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
        return number_text(value)
    if isinstance(value, list):
        return ",".join("" if v is None or v is MISSING else js_string(v) for v in value)
    return "[object Object]"


_MAX_SAFE = 2**53


def number_text(value: float) -> str:
    """``Number.prototype.toString()`` of the double ``JSON.parse`` reads for ``value``.

    Shortest round-trip digits and JavaScript's notation rules; an integer past 2**53 has the
    double's digits. ``NaN`` and the infinities (an integer beyond the largest double too) are
    ``null``, as ``JSON.stringify`` writes them (:func:`js_string` spells them out first).
    """
    if isinstance(value, int):
        if -_MAX_SAFE <= value <= _MAX_SAFE:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "null"
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
