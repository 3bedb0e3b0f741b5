"""Token estimates of the common message shapes, counted in one pass, against the rule-by-rule count.

:func:`kurahi.context.tokens.estimate_tokens` takes a quick way for a dict message whose role is
``user``, ``custom``, ``toolResult`` or ``assistant`` with the usual blocks (``lineage check``
estimates every message of a history); anything else goes rule by rule, where Pi's crashes are
known. Both must count the same: the rule-by-rule count is checked against Pi itself in
``tests/context/test_llm_tokens.py``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kurahi.context.tokens import _estimate_any, _plain_estimate, estimate_tokens
from kurahi.errors import UsageError
from kurahi.js.values import MISSING

_text = st.text(st.characters(codec="utf-8") | st.sampled_from(["😀", "\ud800", "é", "\u2028", '"', "\\", "\n"]))
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
