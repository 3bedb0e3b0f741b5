"""Canonical JSON (RFC 8785): known answers, the fast path's equivalence, errors, chain hashes."""

from __future__ import annotations

import hashlib
import json
import math
import struct
from typing import Any

import msgspec
import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

import kurahi.js.jcs as canonical_mod
from kurahi.errors import CanonicalJSONError, UsageError
from kurahi.js.jcs import (
    MAX_SAFE_INTEGER,
    ZERO_HASH,
    canonical_json,
    chain_hash,
    fast_path_applies,
    is_hash,
    sha256_hex,
)

# -- known answers --------------------------------------------------------------------------

# RFC 8785 section 3.2.2: the input (as parsed) and the canonical output, byte for byte.
RFC_322_INPUT = {
    "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
    "literals": [None, True, False],
}
RFC_322_OUTPUT = (
    b'{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    b'"string":"\xe2\x82\xac$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
)

# RFC 8785 section 3.2.3: keys sorted by their UTF-16 code units.
RFC_323_INPUT = {
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\U0001f600": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis",
}
RFC_323_ORDER = ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]

# RFC 8785 appendix B: IEEE 754 bit patterns and their ECMAScript serialisations.
RFC_APPENDIX_B = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


def test_rfc_section_3_2_2_example() -> None:
    assert rfc8785.dumps(RFC_322_INPUT) == RFC_322_OUTPUT  # the vector as reconstructed, per the package
    assert canonical_json(RFC_322_INPUT) == RFC_322_OUTPUT


def test_rfc_section_3_2_3_sorting() -> None:
    out = canonical_json(RFC_323_INPUT)
    assert out == rfc8785.dumps(RFC_323_INPUT)
    assert list(json.loads(out)) == RFC_323_ORDER
    assert out.startswith(b'{"\\r":"Carriage Return","1":"One","\xc2\x80":"Control"')
    assert not fast_path_applies(RFC_323_INPUT)  # non-ASCII keys take the general path
    # msgspec alone sorts by code point and would put U+FB33 before the emoji: wrong for JCS.
    assert msgspec.json.encode(RFC_323_INPUT, order="sorted") != out


@pytest.mark.parametrize("bits,expected", RFC_APPENDIX_B)
def test_rfc_appendix_b_numbers(bits: str, expected: str) -> None:
    value = struct.unpack(">d", bytes.fromhex(bits))[0]
    assert rfc8785.dumps(value) == expected.encode()
    assert canonical_json(value) == expected.encode()
    assert canonical_json([value]) == b"[" + expected.encode() + b"]"


@pytest.mark.parametrize(
    "value,expected",
    [
        ({"b": 2, "a": 1}, b'{"a":1,"b":2}'),
        ({"z": {"y": [3, {"b": None, "a": True}], "x": False}}, b'{"z":{"x":false,"y":[3,{"a":true,"b":null}]}}'),
        ([], b"[]"),
        ({}, b"{}"),
        ("", b'""'),
        ((1, "two"), b'[1,"two"]'),
        (-0, b"0"),
        (MAX_SAFE_INTEGER, b"9007199254740991"),
        (-MAX_SAFE_INTEGER, b"-9007199254740991"),
        ({"a": 1.0, "b": -0.0, "c": 1e21}, b'{"a":1,"b":0,"c":1e+21}'),
        ("\u2028\u2029/\x7f\U0001f600é", '"\u2028\u2029/\x7f\U0001f600é"'.encode()),
    ],
)
def test_known_answers(value: Any, expected: bytes) -> None:
    assert canonical_json(value) == expected
    assert rfc8785.dumps(value) == expected


SHORT_ESCAPES = {0x08: b"\\b", 0x09: b"\\t", 0x0A: b"\\n", 0x0C: b"\\f", 0x0D: b"\\r"}


@pytest.mark.parametrize("cp", [*range(0x80), 0x2028, 0x2029, 0xFEFF, 0xFFFF, 0x10000, 0x1F600, 0x10FFFF])
def test_every_escape_matches_on_both_paths(cp: int) -> None:
    ch = chr(cp)
    if cp < 0x20:
        expected = SHORT_ESCAPES.get(cp, f"\\u{cp:04x}".encode())
    elif ch == '"':
        expected = b'\\"'
    elif ch == "\\":
        expected = b"\\\\"
    else:
        expected = ch.encode("utf-8")  # including "/", DEL, U+2028/U+2029 and astral characters
    assert rfc8785.dumps(ch) == b'"' + expected + b'"'
    assert msgspec.json.encode(ch) == b'"' + expected + b'"'
    key = ch if cp < 0x80 else "k"
    value = {key: [ch, f"a{ch}b{ch}"], "z": ch}
    assert fast_path_applies(value)  # strings of any characters stay on the fast path
    assert canonical_json(value) == rfc8785.dumps(value)


# -- the fast path is RFC 8785 wherever it is taken -------------------------------------------

CONTROL_AND_ASTRAL = st.sampled_from(
    [chr(c) for c in range(0x20)] + ['"', "\\", "/", "\x7f", "\u2028", "\u2029", "\ufeff", "\ue000", "\U0001f600"]
)
TEXT = st.text(st.one_of(st.characters(exclude_categories=["Cs"]), CONTROL_AND_ASTRAL), max_size=20)
ASCII_KEYS = st.text(st.characters(max_codepoint=0x7F), max_size=8)
SAFE_INTS = st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)


def json_values(keys: st.SearchStrategy[str], scalars: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=5) | st.dictionaries(keys, children, max_size=5),
        max_leaves=30,
    )


NO_FLOAT_SCALARS = st.none() | st.booleans() | SAFE_INTS | TEXT


@settings(max_examples=500, deadline=None)
@given(json_values(ASCII_KEYS, NO_FLOAT_SCALARS))
def test_fast_path_equals_rfc8785(value: Any) -> None:
    assert fast_path_applies(value)
    reference = rfc8785.dumps(value)
    assert msgspec.json.encode(value, order="sorted") == reference
    assert canonical_json(value) == reference


ANY_KEYS = st.text(st.one_of(st.characters(exclude_categories=["Cs"]), CONTROL_AND_ASTRAL), max_size=6)
FINITE = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(json_values(ANY_KEYS, NO_FLOAT_SCALARS | FINITE))
def test_canonical_json_equals_rfc8785_on_any_value(value: Any) -> None:
    # Floats and non-ASCII keys must be routed to the general path; the result is JCS either way.
    assert canonical_json(value) == rfc8785.dumps(value)


@settings(max_examples=300, deadline=None)
@given(json_values(ASCII_KEYS, NO_FLOAT_SCALARS | FINITE))
def test_floats_printed_by_rfc8785_inside_msgspec_output(value: Any) -> None:
    # With ASCII keys, floats are the only obstacle: each is printed by rfc8785 alone and
    # placed verbatim (msgspec.Raw) in msgspec's sorted output. The whole must still be JCS.
    reference = rfc8785.dumps(value)
    real_dumps = rfc8785.dumps

    def floats_only(v: Any) -> bytes:
        assert type(v) is float, f"general path used for {v!r}"
        return real_dumps(v)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(canonical_mod.rfc8785, "dumps", floats_only)
        assert canonical_json(value) == reference


def test_fast_path_is_refused_where_msgspec_differs() -> None:
    assert not fast_path_applies({"a": 1.0})  # msgspec writes 1.0, JCS 1
    assert not fast_path_applies([float("nan")])  # msgspec writes null, JCS has no form
    assert not fast_path_applies(MAX_SAFE_INTEGER + 1)  # msgspec writes it, JCS refuses it
    assert not fast_path_applies({"é": 1})
    assert not fast_path_applies({1: 2})  # msgspec would write "1"
    assert not fast_path_applies(object())
    assert fast_path_applies({"a": [1, "é", None, True, (2, 3)]})


def test_the_fast_path_is_really_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(_: Any) -> bytes:
        raise AssertionError("general path used")

    monkeypatch.setattr(canonical_mod.rfc8785, "dumps", boom)
    assert canonical_json({"b": "é\n", "a": [1, None]}) == '{"a":[1,null],"b":"é\\n"}'.encode()


# -- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value,field,words",
    [
        (math.nan, "$", "NaN or Infinity"),
        ({"a": [1, math.inf]}, "$.a[1]", "NaN or Infinity"),
        ({"x": {"y": -math.inf}}, "$.x.y", "NaN or Infinity"),
        ({"n": 2**53}, "$.n", "2**53"),
        ([-(2**53)], "$[0]", "2**53"),
        ({1: "one"}, "$", "not a string"),
        ({"s": "a\ud800b"}, "$.s", "lone surrogate"),
        ({"a b": object()}, '$["a b"]', "not JSON"),
        ({"k": {1, 2}}, "$.k", "not JSON"),
    ],
)
def test_values_without_a_canonical_form_are_refused(value: Any, field: str, words: str) -> None:
    with pytest.raises(CanonicalJSONError) as info:
        canonical_json(value)
    assert info.value.field == field
    assert words in str(info.value)
    assert str(info.value).startswith(field + ": ")


# -- hashes -------------------------------------------------------------------------------------


def test_sha256_hex_and_zero_hash() -> None:
    assert sha256_hex(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert ZERO_HASH == "0" * 64
    assert is_hash(ZERO_HASH) and is_hash(sha256_hex(b""))
    assert not is_hash("A" * 64) and not is_hash("0" * 63) and not is_hash(None)


def test_chain_hash_is_sha256_of_hex_then_canonical_bytes() -> None:
    value = {"seq": 1, "b": "é", "a": [1, 2.5]}
    expected = hashlib.sha256(ZERO_HASH.encode("ascii") + rfc8785.dumps(value)).hexdigest()
    assert chain_hash(ZERO_HASH, value) == expected
    nxt = chain_hash(expected, {"seq": 2})
    assert nxt == hashlib.sha256(expected.encode() + b'{"seq":2}').hexdigest()


@pytest.mark.parametrize("prev", ["", "0" * 63, "G" * 64, "A" * 64, "0" * 65])
def test_chain_hash_refuses_a_bad_previous_hash(prev: str) -> None:
    with pytest.raises(UsageError, match="64 lowercase hex"):
        chain_hash(prev, {})


def test_public_surface() -> None:
    exported = set(canonical_mod.__all__)
    assert all(hasattr(canonical_mod, n) for n in exported)
    public = {n for n in vars(canonical_mod) if not n.startswith("_") and callable(getattr(canonical_mod, n))}
    public = {n for n in public if getattr(getattr(canonical_mod, n), "__module__", "") == "kurahi.js.jcs"}
    assert public <= exported
