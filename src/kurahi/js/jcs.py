r"""Canonical JSON (RFC 8785, JCS) over UTF-8, and the hashes built on it.

Everything Kurahi hashes or signs goes through :func:`canonical_json`, so that anyone can
recompute a hash from the JSON alone, in any language with a JCS library.

Two paths give the same bytes. The general one is the ``rfc8785`` package. The fast one is
``msgspec.json.encode(value, order="sorted")``, taken only when that is byte-for-byte the
same thing, which holds when the value is made of exactly ``dict``/``list``/``tuple``/``str``/
``int``/``bool``/``None`` with no float, every integer within ±(2**53 - 1), and every object
key ASCII:

- strings: both escape ``"``, ``\``, and U+0000–U+001F (``\b \t \n \f \r`` in short form,
  the rest as lowercase ``\u00xx``) and nothing else: not ``/``, not U+007F, not U+2028/U+2029,
  not non-ASCII (written as UTF-8). ``tests/js/test_canonical.py`` checks every one of these
  characters and random strings with hypothesis;
- keys: JCS sorts by UTF-16 code units, msgspec by code point. The two orders agree except
  between astral characters and U+E000–U+FFFF, which ASCII keys cannot contain;
- floats: JCS prints them as ECMAScript does (``1e+30``, ``1``, ``0`` for -0.0) where msgspec
  writes ``1e30``, ``1.0``, ``-0.0``, and msgspec writes NaN as ``null`` where JCS has no form
  at all; hence no float on the fast path. A value whose only obstacle is floats still goes
  through msgspec, with each float replaced by ``rfc8785``'s text for it as ``msgspec.Raw``;
- integers beyond 2**53 are not I-JSON: ``rfc8785`` refuses them, so the fast path must too;
- lone surrogates: msgspec raises ``UnicodeEncodeError``; the general path then refuses them.

The fast path is about ten times the general one on what Kurahi hashes (audit records, catalog
entries, manifest entries: ``benchmarks/canonical_json.py``, ``BENCHMARKS.md``).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import msgspec
import rfc8785

from kurahi.errors import CanonicalJSONError, UsageError

__all__ = [
    "MAX_SAFE_INTEGER",
    "ZERO_HASH",
    "canonical_json",
    "chain_hash",
    "fast_path_applies",
    "is_hash",
    "sha256_hex",
]

ZERO_HASH = "0" * 64
"""The ``prevHash`` of the first link of every chain."""

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest integer an IEEE 754 double holds exactly (I-JSON, RFC 7493); beyond it is refused."""

_HEX = frozenset("0123456789abcdef")
_encode_sorted = msgspec.json.Encoder(order="sorted").encode


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical JSON of ``value``, as UTF-8 bytes.

    Args:
        value: JSON-like data: ``dict`` with string keys, ``list``/``tuple``, ``str``, ``int``,
            ``float``, ``bool``, ``None``.

    Raises:
        CanonicalJSONError: NaN or Infinity, an integer beyond ±(2**53 - 1), a non-string key,
            a lone surrogate, or a type that is not JSON; the message names where (``$.a[2]``).
    """
    try:
        if fast_path_applies(value):
            return _encode_sorted(value)
        # Floats are all that keeps many values off the fast path: print just them the JCS way.
        return _encode_sorted(_floats_as_raw(value))
    except (_NotFast, UnicodeEncodeError, RecursionError):
        pass  # non-ASCII keys, a lone surrogate, very deep nesting: the general path decides (and explains)
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, RecursionError) as exc:
        field, message = _locate(value, "$", 0) or (None, f"no canonical JSON form: {exc}")
        raise CanonicalJSONError(message, field=field) from exc


def sha256_hex(data: bytes) -> str:
    """The lowercase hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def is_hash(value: object) -> bool:
    """Whether ``value`` is a lowercase hex SHA-256 (64 characters of ``0-9a-f``)."""
    return type(value) is str and len(value) == 64 and _HEX.issuperset(value)


def chain_hash(prev_hash: str, value: Any) -> str:
    """One link of a hash chain: SHA-256 of the 64 hex characters of ``prev_hash``, then ``canonical_json(value)``.

    Raises:
        UsageError: ``prev_hash`` is not 64 lowercase hex characters.
        CanonicalJSONError: ``value`` has no canonical form.
    """
    if not is_hash(prev_hash):
        raise UsageError(f"prev_hash must be 64 lowercase hex characters, got {prev_hash!r:.80}")
    digest = hashlib.sha256(prev_hash.encode("ascii"))
    digest.update(canonical_json(value))
    return digest.hexdigest()


def fast_path_applies(value: Any) -> bool:
    """Whether msgspec's sorted encoding of ``value`` is exactly its RFC 8785 form (see the module docstring).

    True when ``value`` is made of exactly ``dict``/``list``/``tuple``/``str``/``int``/``bool``/
    ``None``, with no float, every integer within ±(2**53 - 1) and every object key ASCII.
    """
    t = type(value)
    if t is dict:
        for key, item in value.items():
            if type(key) is not str or not key.isascii():
                return False
            ti = type(item)
            if ti is str or ti is bool or item is None:
                continue
            if ti is int:
                if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                    return False
                continue
            if not fast_path_applies(item):
                return False
        return True
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return bool(-MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER)
    if t is list or t is tuple:
        for item in value:  # noqa: SIM110 - a plain loop: all() with a generator is slower here
            if not fast_path_applies(item):
                return False
        return True
    return False


class _NotFast(Exception):
    """Raised inside :func:`_floats_as_raw` when something besides floats needs the general path."""


def _floats_as_raw(value: Any) -> Any:
    """A copy of ``value`` with each finite float replaced by its RFC 8785 text as ``msgspec.Raw``.

    msgspec writes a ``Raw`` verbatim, so with every other part meeting the fast path's terms
    (ASCII keys, safe integers, exact JSON types) the sorted encoding is exactly RFC 8785.

    Raises:
        _NotFast: anything else stands in the way (NaN, a non-ASCII key, another type).
    """
    t = type(value)
    if t is float:
        if math.isfinite(value):
            return msgspec.Raw(rfc8785.dumps(value))
        raise _NotFast
    if t is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str or not key.isascii():
                raise _NotFast
            out[key] = _floats_as_raw(item)
        return out
    if t is list or t is tuple:
        return [_floats_as_raw(item) for item in value]
    if t is str or t is bool or value is None:
        return value
    if t is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
        return value
    raise _NotFast


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{msgspec.json.encode(key).decode()}]"


def _locate(value: Any, path: str, depth: int) -> tuple[str, str] | None:
    """Find the first part of ``value`` that has no canonical form: ``(JSON path, what is wrong)``."""
    if depth > 500:
        return path, "nested too deeply"
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            return path, f"integer {value} is beyond ±(2**53 - 1), which JSON numbers (IEEE 754 doubles) cannot hold"
        return None
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return path, f"{value} is not a JSON number: RFC 8785 has no form for NaN or Infinity"
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return path, f"string has a lone surrogate at index {exc.start}: not valid Unicode"
        return None
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            found = _locate(item, f"{path}[{i}]", depth + 1)
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return path, f"object key {key!r} is not a string"
            found = _locate(key, f"{path} (a key)", depth + 1) or _locate(item, _key_path(path, key), depth + 1)
            if found:
                return found
        return None
    return path, f"a value of type {type(value).__name__!r} is not JSON"
