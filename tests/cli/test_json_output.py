"""JSON leaves the CLI as Node's ``JSON.stringify`` writes it; ``Number()`` as JavaScript reads it.

Each value is a JSON text both sides parse (Python's ``json.loads``, Node's ``JSON.parse``);
Kurahi's bytes (:func:`kurahi.js.stringify.js_json`) must equal node's, and
:func:`kurahi.js.values.js_number` must equal ``Number(JSON.parse(text))``.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kurahi.js.stringify import js_json, js_stringify, json_utf8
from kurahi.js.values import js_number
from support.peer import NODE

DOCUMENTS = [
    r'{"s":"lone \ud800 high \udc00 low \udbff\udfff pair \ud83d\ude00 NUL \u0000 LS \u2028 BOM \ufeff \u007f"}',
    r'["\udc00\ud800", "\ud800\ud800\udc00", "tab\t nl\n quote\" back\\ slash/ \u001f"]',
    "[1180591620717411303424, 1152921504606846976, 9007199254740993, -9007199254740993, 123456789012345678901]",
    "[1e400, -1e400, -0, -0.0, 0.0, 1.0, 1e21, 1e-7, 0.000001, 1e-5, 1e16, 123456789012345680000, 5e-324]",
    "[1.7976931348623157e308, 2.5, 0.1, 100, 1.5e300, 4.297060479552938e16, " + "1" + "0" * 400 + "]",
    '{"b":1,"2":2,"1":3,"__proto__":{"x":1},"constructor":null,"4294967295":4,"4294967294":5,"01":6,"-1":7}',
    '{"a":{"b":[{"c":[]}, {}]}, "":"empty key", "\\ud800":"surrogate key"}',
    '"top-level \\ud800"',
    "[true, false, null]",
]


def _node(script: str, stdin: str) -> bytes:
    assert NODE is not None, "node is needed: JSON.stringify is the reference"
    return subprocess.run(
        [NODE, "-e", script], input=stdin.encode(), capture_output=True, check=True, timeout=60
    ).stdout


_STRINGIFY_EACH = (
    "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{"
    "process.stdout.write(JSON.parse(s).map(t=>JSON.stringify(JSON.parse(t))).join('\\n'))})"
)


@pytest.mark.pi
def test_js_json_writes_what_json_stringify_writes() -> None:
    want = _node(_STRINGIFY_EACH, json.dumps(DOCUMENTS)).split(b"\n")
    got = [js_json(json.loads(doc)) for doc in DOCUMENTS]
    for doc, g, w in zip(DOCUMENTS, got, want, strict=True):
        assert g == w, f"{doc[:80]}:\n  node   {w!r}\n  Kurahi {g!r}"
        assert js_stringify(json.loads(doc)).encode("utf-8") == w
        g.decode("utf-8")  # always valid UTF-8


def test_the_fast_path_is_taken_only_where_it_cannot_differ() -> None:
    # Plain documents go through msgspec; one float in JavaScript's notation does not change that.
    assert js_json({"a": [1, "x", 0.5, None]}) == b'{"a":[1,"x",0.5,null]}'
    assert js_json({"a": 1.0, "1": 2}) == b'{"1":2,"a":1}'
    assert js_json([2**64]) == b"[18446744073709552000]"


_NUMBERS = st.one_of(
    st.floats(),
    st.integers(-(2**60), 2**60).map(float),
    st.sampled_from([-0.0, 2.0**53, 2.0**53 - 1, -(2.0**53), 2.0**53 + 2, 1e21, 1e20, 1791360105000.0, 0.5]),
    st.integers(-(2**70), 2**70),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["timestamp", "a", "1", "b"]), _NUMBERS | st.text(max_size=3), max_size=4))
def test_an_object_of_numbers_is_written_as_javascript_writes_it(value: dict[str, Any]) -> None:
    # The quick way's integral floats (timestamps Kurahi builds) must keep JavaScript's text.
    assert js_json(value) == js_stringify(value).encode("utf-8")


def test_json_utf8_escapes_only_lone_surrogates() -> None:
    text = json.dumps({"k": "a\ud800b\ud83d\ude00c\u00e9"}, ensure_ascii=False)
    data = json_utf8(text)
    assert json.loads(data) == {"k": "a\ud800b\U0001f600c\u00e9"}
    assert b"\\ud800" in data and "\U0001f600c\u00e9".encode() in data


NUMBERS = ['""', '" 2 "', '"0x2"', '"0X1f"', '"0b101"', '"0o17"', '"-0x2"', '"1_0"', '"inf"', '"nan"']
NUMBERS += ['"Infinity"', '"-Infinity"', '"+Infinity"', '"1e400"', '"1."', '".5"', '"5e"', '"+.5e-1"', '"\\u0662"']
NUMBERS += ['"\\u00a02\\ufeff"', "[]", "[2]", "[1,2]", "[[3]]", '["4"]', "{}", "null", "true", "false", "1e400", "-0"]


@pytest.mark.pi
def test_js_number_is_javascripts_number() -> None:
    script = (
        "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{process.stdout.write(JSON.stringify("
        "JSON.parse(s).map(t=>{const n=Number(JSON.parse(t));return Number.isNaN(n)?'NaN':String(n)})))})"
    )
    want = json.loads(_node(script, json.dumps(NUMBERS)))
    for text, w in zip(NUMBERS, want, strict=True):
        got = js_number(json.loads(text))
        shown = (
            "NaN"
            if got is None
            else ("Infinity" if got == float("inf") else "-Infinity" if got == -float("inf") else None)
        )
        if shown is None:
            assert got == float(w), f"Number({text}): node {w}, Kurahi {got}"
        else:
            assert shown == w, f"Number({text}): node {w}, Kurahi {shown}"
