"""``kurahi.js.deepjson``: the standard library's JSON, at any depth."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kurahi.js import deepjson

_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=30,
)


def _same(a: Any, b: Any) -> bool:
    return repr(a) == repr(b) or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


@settings(max_examples=100, deadline=None)
@given(_json_values, st.sampled_from([None, 0, 1]), st.booleans())
def test_it_reads_and_writes_what_the_standard_library_does(value: Any, indent: int | None, ascii_: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_)
    assert _same(deepjson.loads(text), json.loads(text))
    for sort_keys in (False, True):
        for separators in ((",", ":"), (", ", ": ")):
            want = json.dumps(value, ensure_ascii=False, sort_keys=sort_keys, separators=separators)
            assert deepjson.dumps(value, sort_keys=sort_keys, separators=separators) == want


@pytest.mark.parametrize(
    "text",
    ["", " ", "[1,]", '{"a" 1}', '{"a":1,}', "01", "-", "NaN", "Infinity", "[1 2]", "tru", "[", "]", '"\\x"', "1 1"],
)
def test_it_refuses_what_json_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
    with pytest.raises(ValueError):
        deepjson.loads(text)


def test_it_reads_and_writes_a_hundred_thousand_levels() -> None:
    depth = 100_000
    text = '{"a":' * depth + '[1,"\\ud800",-0]' + "}" * depth
    with pytest.raises(RecursionError):
        json.loads(text)
    value = deepjson.parse(text)
    inner = value
    for _ in range(depth):
        inner = inner["a"]
    assert repr(inner) == repr([1, "\ud800", 0])
    assert deepjson.dumps_compact(value) == text.replace("\\ud800", "\ud800").replace("-0]", "0]")  # -0: an int
    assert deepjson.parse(text.encode("utf-8")) is not None
