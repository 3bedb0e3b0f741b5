"""The few JavaScript operations Pi's message helpers perform on stored JSON.

Used by the ``context`` room and by :mod:`kurahi.pi.system`. Pi's helpers read properties (``m.role``), take lengths
(``text.length``), build strings (`` `Ran ${command}` ``) and test truthiness; each of those
has a JavaScript meaning that differs from Python's on odd inputs. Where Pi would throw a
``TypeError`` (reading a property of ``null``/``undefined``, iterating a non-iterable) or
silently compute ``NaN``, these helpers raise :class:`~kurahi.errors.UsageError` instead.
"""

from __future__ import annotations

from typing import Any

from kurahi.errors import UsageError
from kurahi.js.values import MISSING, js_string, js_truthy, utf16_len

__all__ = ["is_js_zero", "js_length", "js_string", "prop", "truthy"]


def _js_name(value: Any) -> str:
    return "undefined" if value is MISSING else "null"


def prop(obj: Any, key: str) -> Any:
    """``obj[key]`` as JavaScript reads it: ``MISSING`` when absent.

    Raises:
        UsageError: ``obj`` is ``null`` or ``undefined`` (Pi throws ``TypeError``).
    """
    if isinstance(obj, dict):
        return obj.get(key, MISSING)
    if obj is None or obj is MISSING:
        raise UsageError(f"cannot read {key!r} of {_js_name(obj)} (Pi throws TypeError)")
    return MISSING


def truthy(value: Any) -> bool:
    """JavaScript truthiness, with ``MISSING`` (``undefined``) falsy."""
    return value is not MISSING and js_truthy(value)


def is_js_zero(value: Any) -> bool:
    """``value === 0`` in JavaScript (``false`` and ``"0"`` are not ``0``)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0


def js_length(value: Any, what: str) -> int:
    """``value.length`` where Pi adds it to a character count.

    Strings count UTF-16 code units and arrays their elements. An object with an integer
    ``length`` key gives that key, as in JavaScript.

    Args:
        value: the value whose length Pi reads.
        what: a name for the value, used in error messages.

    Raises:
        UsageError: ``value`` is ``null``/``undefined`` (Pi throws ``TypeError``), or its length
            is not an integer (Pi would compute ``NaN`` or concatenate strings).
    """
    if isinstance(value, str):
        return utf16_len(value)
    if isinstance(value, list):
        return len(value)
    if value is None or value is MISSING:
        raise UsageError(f"{what} is {_js_name(value)}; Pi throws TypeError reading its length")
    length = value.get("length", MISSING) if isinstance(value, dict) else MISSING
    if isinstance(length, int) and not isinstance(length, bool):
        return length
    raise UsageError(f"{what} is a {type(value).__name__} without a length; Pi would count NaN characters")
