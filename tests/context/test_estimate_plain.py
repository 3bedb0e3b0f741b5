"""Token estimates of the common message shapes, counted in one pass, against the rule-by-rule count.

:func:`kurahi.context.tokens.estimate_tokens` takes a quick way for a dict message whose role is
``user``, ``custom``, ``toolResult`` or ``assistant`` with the usual blocks (``lineage check``
estimates every message of a history); anything else goes rule by rule, where Pi's crashes are
known. Both must count the same: the rule-by-rule count is checked against Pi itself in
``tests/context/test_llm_tokens.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kurahi.context.tokens import (
    _estimate_any,
    _plain_estimate,
    _stringified_length,
    estimate_each,
    estimate_tokens,
)
from kurahi.errors import UsageError
from kurahi.js.values import MISSING
from kurahi.pi.read import native

_text = st.lists(
    st.characters(codec="utf-8")
    | st.sampled_from(["😀", "\ud800", "\ud83d\ude00", "é", "\u2028", '"', "\\", "\n", "\x00", "\x1f", "\b"]),
    max_size=12,
).map("".join)
"""Strings as a transcript's values may hold them: astral characters, lone surrogates, a pair as two code points."""
_odd = st.sampled_from([None, 1, 1.5, True, [], {}, ["a"], {"length": 3}, MISSING])
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def _block(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["text", "thinking", "toolCall", "image", "other", None]))
    if draw(st.integers(0, 12)) == 0:
        return draw(_odd | _text)  # not a dict at all
    block: dict[str, Any] = {} if kind is None else {"type": kind}
    for key in ("text", "thinking", "name"):
        if draw(st.booleans()):
            block[key] = draw(_text | _odd) if draw(st.integers(0, 5)) == 0 else draw(_text)
    if kind == "toolCall" and draw(st.integers(0, 6)):
        block["arguments"] = draw(_json)
    return {k: v for k, v in block.items() if v is not MISSING}


@st.composite
def _message(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 15)) == 0:
        return draw(_odd | _text)
    role = draw(st.sampled_from(["user", "custom", "toolResult", "assistant", "system", "bashExecution", None]))
    m: dict[str, Any] = {} if role is None else {"role": role}
    content = draw(st.lists(_block(), max_size=4) | _text | _odd)
    if content is not MISSING:
        m["content"] = content
    return m


@settings(max_examples=150, deadline=None)
@given(_message())
def test_the_quick_count_is_the_rule_by_rule_count(message: Any) -> None:
    plain = _plain_estimate(message)
    try:
        want = _estimate_any(message)
    except UsageError:
        assert plain is None  # where Pi throws, the rules say so
        return
    assert plain is None or plain == want
    assert estimate_tokens(message) == want


def test_the_usual_messages_take_the_quick_way() -> None:
    usual = [
        {"role": "user", "content": "héllo 😀"},
        {"role": "toolResult", "content": [{"type": "text", "text": "x"}, {"type": "image", "data": "..."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm"},
                {"type": "text", "text": "ok"},
                {"type": "toolCall", "name": "bash", "arguments": {"command": "ls \u2028", "n": 1e21, "f": 0.1}},
            ],
        },
    ]
    for m in usual:
        assert _plain_estimate(m) == _estimate_any(m)
    if native.available():  # without it, the Python quick count above is the count
        assert native.plain_estimates(usual, _stringified_length) == [_estimate_any(m) for m in usual]


def _each_rule_by_rule(messages: list[Any]) -> list[int | None]:
    out: list[int | None] = []
    for m in messages:
        try:
            out.append(_estimate_any(m))
        except UsageError:
            out.append(None)
    return out


_NEEDS_C = pytest.mark.skipif(not native.available(), reason="the C extension is not built (conftest says so loudly)")


@_NEEDS_C
@settings(max_examples=150, deadline=None)
@given(st.lists(_message(), max_size=6))
def test_the_c_count_is_the_python_quick_count(messages: list[Any]) -> None:
    """The extension's count of the usual shapes gives what the Python quick count gives, ``None`` alike."""
    assert native.plain_estimates(messages, _stringified_length) == [_plain_estimate(m) for m in messages]
    assert estimate_each(messages) == _each_rule_by_rule(messages)


@_NEEDS_C
@settings(max_examples=300, deadline=None)
@given(_json)
def test_arguments_measured_in_c_are_json_stringify_lengths(arguments: Any) -> None:
    """Arguments the C count measures itself have JSON.stringify's length; the rest go to the callable."""
    deferred: list[Any] = []

    def measure(value: Any) -> int:
        deferred.append(value)
        return _stringified_length(value)

    # A name of 4 code units, so that the estimate is ceil((4 + length) / 4) and tells lengths apart.
    message = {"role": "assistant", "content": [{"type": "toolCall", "name": "four", "arguments": arguments}]}
    got = native.plain_estimates([message], measure)
    assert got == [-(-(4 + _stringified_length(arguments)) // 4)]
    if not deferred:  # measured in C: the exact length, checked against the estimate's rounding too
        for pad in range(1, 4):
            padded = {**message, "content": [{**message["content"][0], "name": "x" * pad}]}
            assert native.plain_estimates([padded], measure) == [-(-(pad + _stringified_length(arguments)) // 4)]


@_NEEDS_C
def test_a_measure_that_raises_leaves_the_message_to_the_rules() -> None:
    """When the arguments' measure fails, the C count gives up on that message only, and raises nothing."""
    messages = [
        # a float: measured by the callable
        {"role": "assistant", "content": [{"type": "toolCall", "name": "x", "arguments": {"f": 0.5}}]},
        {"role": "user", "content": "four"},
    ]

    def refuse(value: Any) -> int:
        raise ValueError("no")

    assert native.plain_estimates(messages, refuse) == [None, 1]
    assert native.plain_estimates(messages, lambda v: "2") == [None, 1]  # not an int: not trusted
