"""The C content hash (``_native_canon.h``) against its definition, ``json.dumps(..., sort_keys=True)``.

``lineage check`` hashes both projections' messages with it, and activation packages record
that hash, so it must be byte for byte the canonical text Python writes: from values, and from
JSON text read as ``json.loads`` reads it (a stored message is hashed from its bytes).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kurahi.js.stringify import js_json
from kurahi.lineage.check import messages_sha256
from kurahi.pi.read import native
from kurahi.pi.read.quick import QuickFile

pytestmark = pytest.mark.skipif(
    not native.available(),
    reason="!!! the C extension (kurahi.pi.read._native) is not built: its tests are SKIPPED !!!",
)


def canon(value: Any) -> bytes:
    """The definition."""
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


def c_value(value: Any) -> bytes | None:
    out: bytes | None = native._native.canonical_json(value)
    return out


def c_text(text: bytes) -> bytes | None:
    out: bytes | None = native._native.canonical_json(text, text=True)
    return out


# Strings with what the escapes and the encodings hinge on: quotes, backslashes, every C0
# control, DEL, U+2028, a BOM, astral characters, lone surrogates of both halves.
_chars = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(['"', "\\", "/", "\x00", "\x1f", "\x7f", "\u2028", "\ufeff", "\ud800", "\udfff", "😀", "é"]),
    st.characters(min_codepoint=0, max_codepoint=0x1F),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
)
_text = st.text(_chars, max_size=12)
_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 1e16, 1e15, 1e-4, 1e-5, 1e21, 1e22, 5e-324, 1.7976931348623157e308, 0.1, 100.0]),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**60), max_value=10**60),
    _floats,
    _text,
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(_text, inner, max_size=5)),
    max_leaves=30,
)


@settings(max_examples=100, deadline=None)
@given(_values)
def test_a_value_is_written_as_json_dumps_writes_it(value: Any) -> None:
    assert c_value(value) == canon(value)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(_text, _scalars, min_size=1, max_size=40), st.lists(_scalars, max_size=3))
def test_objects_of_every_size_and_key_kind_are_written_in_key_order(members: dict[str, Any], items: list[Any]) -> None:
    """Up to 16 members the extension sorts the keys itself (one-byte keys by their bytes, others as
    Python compares them); past that, Python's own sort: both must give ``sort_keys``' order."""
    value = {**members, "é": items, "😀": 1, "\ud800": 2, "a\x00": 3, "": 4}
    assert c_value(value) == canon(value)
    assert c_value([members, {"nested": members}]) == canon([members, {"nested": members}])


def test_strings_long_enough_to_be_scanned_eight_bytes_at_a_time() -> None:
    """The escape scan steps over 8 bytes at once: an escape at every position of the block is still found."""
    for at in range(20):
        for ch in ('"', "\\", "\x00", "\x1f", "\n", "\x7f", "é", "\u2028"):
            text = "a" * at + ch + "b" * (19 - at)
            assert c_value(text) == canon(text)
            assert c_value({text: text}) == canon({text: text})


def _random_text(value: Any, rng: random.Random) -> bytes:
    """One of the many JSON texts of ``value``: spacing, escapes, key order and encodings vary."""
    style = rng.randrange(4)
    if style == 0:
        text = json.dumps(value, ensure_ascii=True).encode()
    elif style == 1:
        text = json.dumps(value, ensure_ascii=False, indent=rng.choice([None, 1])).encode("utf-8", "surrogatepass")
    elif style == 2:
        text = js_json(value)  # JavaScript's form: a lone surrogate as its escape, 1e+21, ...
    else:
        text = json.dumps(value, ensure_ascii=False, separators=(" , ", " : ")).encode("utf-8", "surrogatepass")
    return b" \t\r\n"[: rng.randrange(5)] + text + b"\n "[: rng.randrange(3)]


@settings(max_examples=100, deadline=None)
@given(_values, st.randoms(use_true_random=False))
def test_json_text_is_written_as_json_dumps_writes_what_json_loads_reads(value: Any, rng: random.Random) -> None:
    text = _random_text(value, rng)
    try:
        want = canon(json.loads(text))
    except (ValueError, RecursionError):
        return  # not JSON to Python either (a lone surrogate as raw bytes, NaN from js_json...)
    got = c_text(text)
    if got is None:
        # Only what the extension leaves to Python: bytes that are not UTF-8 (surrogatepass
        # output), NaN or Infinity literals, and text nested past its limit.
        assert b"NaN" in text or b"Infinity" in text or _not_utf8(text)
    else:
        assert got == want


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


@pytest.mark.parametrize(
    "text",
    [
        b'{"b":1,"a":2,"b":3}',  # the last of a repeated key wins, sorted in
        b'{"a":{"z":1,"y":[{"d":1,"c":2,"d":5}]},"":0}',
        b"[1.0,-0,-0.0,0e0,1E5,1.50,1e400,-1e400,1e-400,123456789012345678901234567890]",
        b"[0.1,0.00001,0.0001,1e16,1e15,9007199254740993,2.5e-7,100e-2]",
        b'"\\ud83d\\ude00\\ud800x\\udc00\\ud800\\ud800\\udc00\\u001F\\/\\b\\f\\n\\r\\t\\u00e9\\u2028"',
        b'{"\\u0062":1,"b\\u0000":2,"b":3,"\\ud800":4,"\\ud83d\\ude00":5,"\\uffff":6}',
        b'  [ true , false , null , { } , [ ] , "" ]  ',
        b"3",
        b'"plain"',
    ],
)
def test_odd_json_texts(text: bytes) -> None:
    assert c_text(text) == canon(json.loads(text))


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"{",
        b'{"a":1,}',
        b"[1,]",
        b"01",
        b"1.",
        b"-",
        b'"\x01"',
        b'"\\x"',
        b'"\\u12"',
        b"NaN",
        b"[Infinity]",
        b'{"a":1} x',
        b'"\xff"',
        b'"\xed\xa0\x80"',
        b"tru",
        b'{"a" 1}',
    ],
)
def test_what_is_not_json_or_not_utf8_is_left_to_python(text: bytes) -> None:
    assert c_text(text) is None


def test_random_doubles_are_written_as_repr_writes_them() -> None:
    rng = random.Random(40)
    doubles = [struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0] for _ in range(5000)]
    doubles += [2.0**e for e in range(-1074, 1024)] + [math.nextafter(2.0**e, 0) for e in range(-1000, 1000)]
    assert c_value(doubles) == canon(doubles)
    finite = [d for d in doubles if math.isfinite(d)]
    assert c_text(json.dumps(finite).encode()) == canon(finite)
    assert c_text(js_json(finite)) == canon(json.loads(js_json(finite)))


def test_nesting_past_the_limit_and_other_types_are_left_to_python() -> None:
    deep: Any = 1
    for _ in range(600):
        deep = [deep]
    assert c_value(deep) is None
    assert c_text(json.dumps(deep).encode()) is None
    assert c_value({1: 2}) is None  # json.dumps converts the key: Python decides
    assert c_value(object()) is None
    assert c_value((1, [2])) == canon((1, [2]))  # a tuple is a list to json.dumps

    class Str(str):
        pass

    assert c_value(Str("x")) is None


def test_messages_sha256_is_the_hash_of_the_canonical_text_whichever_way_it_is_computed() -> None:
    deep: Any = {"role": "user", "content": "x"}
    for _ in range(2000):
        deep = {"v": deep}
    for messages in (
        [{"role": "user", "content": [{"type": "text", "text": "héllo\ud800"}], "timestamp": 1.5}],
        [deep, {"n": 10**40, "f": float("inf")}],
        [],
    ):
        try:
            text = canon(messages)
        except RecursionError:
            from kurahi.js import deepjson

            text = deepjson.dumps(messages, sort_keys=True).encode("utf-8", "surrogatepass")
        assert messages_sha256(messages) == hashlib.sha256(text).hexdigest()


def test_stored_messages_are_hashed_from_the_transcript_as_their_values_would_be(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": 'a\n"b" é 😀'}], "timestamp": 1},
        {"role": "assistant", "content": [], "usage": {"cost": {"input": 0.0003, "total": 12.5}}, "stopReason": "stop"},
        {
            "role": "toolResult",
            "toolCallId": "t1",
            "content": [{"type": "text", "text": "x" * 70000}],
            "isError": False,
        },
    ]
    lines = [json.dumps({"type": "session", "version": 3, "id": "s", "timestamp": "t", "cwd": "/"})]
    parent = None
    for i, m in enumerate(messages):
        entry = {"type": "message", "id": f"e{i}", "parentId": parent, "timestamp": "t", "message": m}
        lines.append(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
        parent = f"e{i}"
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with QuickFile.open(path) as f:
        scanned = f.scan(f.body)
        stored = scanned.table.stored(range(len(messages)), f.fd)
    assert all(native.is_copied(s) for s in stored)
    mixed = [stored[0], messages[1], stored[2], b'{"role":"custom","content":[]}']
    values = [messages[0], messages[1], messages[2], {"role": "custom", "content": []}]
    assert native.canonical_sha256(mixed) == hashlib.sha256(canon(values)).hexdigest()
    assert messages_sha256(stored) == hashlib.sha256(canon(messages)).hexdigest()
