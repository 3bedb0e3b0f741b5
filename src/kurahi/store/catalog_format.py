r"""The bytes of a ``sessions.json`` and the names in it: parsing, layout, validation.

Pure functions, no I/O: :mod:`kurahi.store.catalog` does the file work. The layout is
OpenClaw's ``JSON.stringify(store, null, 2)``: two-space indent, ``": "`` between name and
value, no trailing newline, non-ASCII characters written raw, unpaired surrogates written as
``\uXXXX``. An unchanged catalog therefore round-trips byte for byte.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from kurahi.errors import CatalogCorruptError, CatalogEntryError
from kurahi.js.decode import DECODE_ERRORS
from kurahi.store.names import MAX_AGENT_ID_LENGTH, MAX_KEY_LENGTH, validate_agent_id, validate_key

__all__ = [
    "MAX_AGENT_ID_LENGTH",
    "MAX_KEY_LENGTH",
    "Entry",
    "Store",
    "normalise_entry",
    "parse_catalog",
    "same_json",
    "serialize_catalog",
    "validate_agent_id",
    "validate_key",
]


Entry = dict[str, Any]
"""One catalog entry: field name to JSON value."""
Store = dict[str, Entry]
"""A whole catalog: session key to entry, in file order."""

_BOM = b"\xef\xbb\xbf"
_ENCODER = msgspec.json.Encoder()

# Field types OpenClaw relies on; checked only on what a caller writes, never on what we read.
_INT_FIELDS = frozenset(
    {"updatedAt", "sessionStartedAt", "lastInteractionAt", "endedAt", "startedAt", "compactionCount"}
)
_STR_FIELDS = frozenset({"sessionId", "sessionFile", "status"})
_BOOL_FIELDS = frozenset({"abortedLastRun"})


def parse_catalog(data: bytes, *, path: str | Path | None = None) -> Store:
    """Parse the bytes of a ``sessions.json``.

    Accepts what OpenClaw's ``JSON.parse`` accepts (plus a leading UTF-8 byte-order mark).

    Raises:
        CatalogCorruptError: empty, invalid UTF-8, not JSON (with line and column), not a
            JSON object, or an entry that is not a JSON object.
    """
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        value = msgspec.json.decode(data)
    except DECODE_ERRORS:
        # msgspec is strict where JSON.parse is not (unpaired \\ud800 escapes, 1e400), and it
        # reports offsets, not lines: the standard parser settles both.
        value = _parse_slowly(data, path)
    if type(value) is not dict:
        raise CatalogCorruptError(f"holds a JSON {_kind(value)}, expected an object of entries", path=path)
    for key, entry in value.items():
        if type(entry) is not dict:
            raise CatalogCorruptError(f"entry is a JSON {_kind(entry)}, expected an object", path=path, key=key)
    return value


def _parse_slowly(data: bytes, path: str | Path | None) -> Any:
    if not data.strip():
        raise CatalogCorruptError("is empty (a catalog is a JSON object, at least {})", path=path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise CatalogCorruptError(
            f"invalid UTF-8 at line {line}, byte {column} of the line (offset {exc.start})", path=path
        ) from exc

    def reject(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        return json.loads(text, parse_constant=reject)
    except json.JSONDecodeError as exc:
        raise CatalogCorruptError(
            f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path=path
        ) from exc
    except ValueError as exc:
        raise CatalogCorruptError(f"not valid JSON: {exc}", path=path) from exc
    except RecursionError as exc:
        raise CatalogCorruptError("not usable JSON: nested too deeply", path=path) from exc


def _kind(value: object) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")


def serialize_catalog(store: Mapping[str, Mapping[str, Any]]) -> bytes:
    """Serialize a catalog, laid out as ``JSON.stringify(store, null, 2)`` lays it out."""
    try:
        compact = _ENCODER.encode(store)
    except (msgspec.EncodeError, UnicodeEncodeError, OverflowError, TypeError):
        # Unpaired surrogates (legal in JSON.parse input) cannot be UTF-8: write them as
        # \\uXXXX escapes, which is also what JSON.stringify does. Numbers out of range
        # (1e400 reads as Infinity) become null, as JSON.stringify and the fast path write them.
        text = json.dumps(_finite(store), indent=2, ensure_ascii=False, allow_nan=False)
        return text.encode("utf-8", "backslashreplace")
    # Reformatting the fast encoder's output gives the same bytes as json.dumps(indent=2).
    return msgspec.json.format(compact, indent=2)


def _finite(value: Any) -> Any:
    """A copy of ``value`` with every infinite or NaN float replaced by ``None`` (how JSON.stringify writes them)."""
    # Without recursion: the loader accepts nesting close to the parser's limit, deeper than
    # Python's recursion limit allows a recursive copy to go.
    containers: list[dict[Any, Any] | list[Any]] = []

    def copy_of(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict | list):
            c: dict[Any, Any] | list[Any] = dict(v) if isinstance(v, dict) else list(v)
            containers.append(c)
            return c
        return v

    top = copy_of(value)
    while containers:
        c = containers.pop()
        for k in list(c.keys()) if isinstance(c, dict) else range(len(c)):
            c[k] = copy_of(c[k])
    return top


def _check_json(value: Any, where: str) -> None:
    if value is None or isinstance(value, str | bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CatalogEntryError(f"field {where}: {value} is not representable in JSON")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for name, item in value.items():
            if not isinstance(name, str):
                raise CatalogEntryError(f"field {where}: object key {name!r} is not a string")
            _check_json(item, f"{where}.{name}")
        return
    raise CatalogEntryError(f"field {where}: a {type(value).__name__} is not a JSON value")


def normalise_entry(fields: object, key: str) -> Entry:
    """Check the fields a caller wants to write and return a deep copy as a plain dict.

    Raises:
        CatalogEntryError: not a mapping, a non-string name, a value that is not JSON, or a
            known field of the wrong type (``updatedAt`` not a non-negative integer, ...).
    """
    if not isinstance(fields, Mapping):
        raise CatalogEntryError(f"an entry must be a JSON object, got {type(fields).__name__}", key=key)
    entry: Entry = {}
    for name, value in fields.items():
        if not isinstance(name, str):
            raise CatalogEntryError(f"field name {name!r} is not a string", key=key)
        _check_json(value, name)
        expected = _expected_type(name)
        if expected is not None and not _has_type(value, expected):
            raise CatalogEntryError(f"field {name}: expected {expected}, got {_kind(value)} {value!r:.60}", key=key)
        entry[name] = copy.deepcopy(value)
    return entry


def _expected_type(name: str) -> str | None:
    if name in _INT_FIELDS:
        return "a non-negative integer"
    if name in _STR_FIELDS:
        return "a string"
    if name in _BOOL_FIELDS:
        return "a boolean"
    return None


def _has_type(value: Any, expected: str) -> bool:
    if expected == "a string":
        return isinstance(value, str)
    if expected == "a boolean":
        return isinstance(value, bool)
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values serialize to the same text (``True`` and ``1`` differ; order counts)."""
    try:
        return _ENCODER.encode(a) == _ENCODER.encode(b)
    except (msgspec.EncodeError, UnicodeEncodeError, OverflowError, TypeError):
        return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)
