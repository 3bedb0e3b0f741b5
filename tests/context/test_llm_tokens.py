"""convert_to_llm, token estimates, budget routes and find_cut_point, checked against Pi 1.6.0."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from kurahi.context.budget import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    find_cut_point,
    find_turn_start_index,
    route,
    should_compact,
)
from kurahi.context.llm import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
    bash_execution_to_text,
    convert_to_llm,
)
from kurahi.context.tokens import (
    ContextTokens,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_tokens,
)
from kurahi.errors import UsageError
from support.drawing import draw_batch
from support.peer import CURRENT, NODE, PI_MISSING, PI_PKG, PI_VERSIONS, PiVersion, fixture_files, pis_agree
from support.peer import expected as stored_report


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def check(label: str, actual: Any, expected: Any) -> None:
    """Assert equality and, on failure, print expected and actual in full."""
    assert actual == expected, f"{label} differs\n--- expected\n{_pretty(expected)}\n--- actual\n{_pretty(actual)}"


# ---------------------------------------------------------------------------
# Fixtures produced by Pi's own harness
# ---------------------------------------------------------------------------


def _fixture_reports() -> list[tuple[Path, PiVersion]]:
    """Each fixture with Pi 1.6.0's report, and with 0.73.1's where the two Pis agree (Kurahi
    follows 1.6.0); files a Pi would not open have no messages to convert."""
    cases = [(p, CURRENT) for p in fixture_files()]
    cases += [(p, v) for v in PI_VERSIONS if v != CURRENT for p in fixture_files() if pis_agree(p)]
    return [(p, v) for p, v in cases if "error" not in stored_report(p, v)]


def _kurahi(f: Any) -> dict[str, Any]:
    """``{"ok": value}``, or ``{"error": ...}`` where Kurahi refuses (Pi throws there)."""
    try:
        return {"ok": json.loads(json.dumps(f()))}
    except UsageError as exc:
        return {"error": str(exc)}


def _check_step(label: str, report: dict[str, Any], key: str, actual: dict[str, Any]) -> None:
    if f"{key}Error" in report:  # Pi threw in this step: Kurahi must refuse too
        assert "error" in actual, f"{label} {key}: Pi threw {report[f'{key}Error']!r}, Kurahi gave {actual}"
    else:
        check(f"{label} {key}", actual.get("ok", actual), report[key])


@pytest.mark.parametrize("case", _fixture_reports(), ids=lambda c: f"{c[0].stem}@pi-{c[1]}")
def test_fixture_matches_pi(case: tuple[Path, PiVersion]) -> None:
    path, version = case
    report = stored_report(path, version)
    messages = report["messages"]
    label = f"{path.name} (Pi {version})"
    _check_step(label, report, "llmMessages", _kurahi(lambda: convert_to_llm(messages)))
    per_message = [_kurahi(lambda m=m: estimate_tokens(m)) for m in messages]
    if "tokensPerMessageError" in report:
        assert any("error" in t for t in per_message), f"{label}: Pi's estimate threw, Kurahi's did not"
    else:
        check(f"{label} tokensPerMessage", [t.get("ok", t) for t in per_message], report["tokensPerMessage"])
    _check_step(label, report, "contextTokens", _kurahi(lambda: estimate_context_tokens(messages).to_dict()))


# ---------------------------------------------------------------------------
# convert_to_llm
# ---------------------------------------------------------------------------


def bash(**kw: Any) -> dict[str, Any]:
    return {"role": "bashExecution", "command": "ls", "output": "a", "exitCode": 0, **kw}


def test_summary_constants_are_pis_with_the_asymmetric_suffixes() -> None:
    assert COMPACTION_SUMMARY_PREFIX == (
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
    )
    assert COMPACTION_SUMMARY_SUFFIX == "\n</summary>"
    assert BRANCH_SUMMARY_PREFIX == (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
    )
    assert BRANCH_SUMMARY_SUFFIX == "</summary>"


def test_summaries_become_user_text() -> None:
    out = convert_to_llm(
        [
            {"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 1},
            {"role": "compactionSummary", "summary": "C", "tokensBefore": 9, "timestamp": 2},
        ]
    )
    check(
        "summaries",
        out,
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": BRANCH_SUMMARY_PREFIX + "B</summary>"}],
                "timestamp": 1,
            },
            {
                "role": "user",
                "content": [{"type": "text", "text": COMPACTION_SUMMARY_PREFIX + "C\n</summary>"}],
                "timestamp": 2,
            },
        ],
    )


def test_summary_missing_or_null_is_interpolated_like_javascript() -> None:
    out = convert_to_llm([{"role": "compactionSummary"}, {"role": "branchSummary", "summary": None}])
    assert out[0]["content"][0]["text"] == COMPACTION_SUMMARY_PREFIX + "undefined" + COMPACTION_SUMMARY_SUFFIX
    assert out[1]["content"][0]["text"] == BRANCH_SUMMARY_PREFIX + "null" + BRANCH_SUMMARY_SUFFIX


def test_missing_timestamp_stays_missing_and_null_stays_null() -> None:
    out = convert_to_llm([bash(), {"role": "custom", "content": "x", "timestamp": None}])
    assert "timestamp" not in out[0]
    assert out[1] == {"role": "user", "content": [{"type": "text", "text": "x"}], "timestamp": None}


def test_pass_through_roles_are_the_same_objects() -> None:
    msgs = [{"role": r, "content": [], "odd": 1} for r in ("user", "assistant", "toolResult")]
    out = convert_to_llm(msgs)
    assert all(a is b for a, b in zip(out, msgs, strict=True))


def test_unknown_roles_are_dropped() -> None:
    msgs = [{"role": "hookMessage", "content": "x"}, {"content": "no role"}, {"role": 3}, "text", 7, []]
    assert convert_to_llm(msgs) == []


def test_null_message_raises_with_index() -> None:
    with pytest.raises(UsageError, match=r"messages\[1\]"):
        convert_to_llm([{"role": "user", "content": "x"}, None])


def test_custom_content_and_dropped_fields() -> None:
    blocks = [{"type": "text", "text": "t"}, {"type": "image", "data": "AA", "mimeType": "image/png"}]
    out = convert_to_llm(
        [
            {
                "role": "custom",
                "customType": "k",
                "content": "s",
                "display": False,
                "details": {"a": 1},
                "timestamp": 5,
            },
            {"role": "custom", "customType": "k", "content": blocks, "display": True},
            {"role": "custom", "customType": "k"},
            {"role": "custom", "content": None},
        ]
    )
    check(
        "custom",
        out,
        [
            {"role": "user", "content": [{"type": "text", "text": "s"}], "timestamp": 5},
            {"role": "user", "content": blocks},
            {"role": "user"},
            {"role": "user", "content": None},
        ],
    )
    assert out[1]["content"] is blocks


@pytest.mark.parametrize(
    ("flag", "dropped"),
    [
        (True, True),
        ("", False),
        (0, False),
        (None, False),
        ([], True),
        ({}, True),
        ("no", True),
        (0.0, False),
    ],
)
def test_exclude_from_context_is_js_truthiness(flag: Any, dropped: bool) -> None:
    assert (convert_to_llm([bash(excludeFromContext=flag)]) == []) is dropped


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({}, "Ran `ls`\n```\na\n```"),
        ({"output": ""}, "Ran `ls`\n(no output)"),
        ({"output": None}, "Ran `ls`\n(no output)"),
        ({"output": []}, "Ran `ls`\n```\n\n```"),
        ({"output": ["x", None, 2]}, "Ran `ls`\n```\nx,,2\n```"),
        ({"output": 0}, "Ran `ls`\n(no output)"),
        ({"exitCode": 1}, "Ran `ls`\n```\na\n```\n\nCommand exited with code 1"),
        ({"exitCode": 0.0}, "Ran `ls`\n```\na\n```"),
        ({"exitCode": None}, "Ran `ls`\n```\na\n```"),
        ({"exitCode": False}, "Ran `ls`\n```\na\n```\n\nCommand exited with code false"),
        ({"exitCode": "0"}, "Ran `ls`\n```\na\n```\n\nCommand exited with code 0"),
        ({"exitCode": -1.5}, "Ran `ls`\n```\na\n```\n\nCommand exited with code -1.5"),
        ({"exitCode": 2, "cancelled": True}, "Ran `ls`\n```\na\n```\n\n(command cancelled)"),
        ({"exitCode": 2, "cancelled": 0}, "Ran `ls`\n```\na\n```\n\nCommand exited with code 2"),
        ({"truncated": True}, "Ran `ls`\n```\na\n```"),
        ({"truncated": True, "fullOutputPath": ""}, "Ran `ls`\n```\na\n```"),
        ({"truncated": False, "fullOutputPath": "/p"}, "Ran `ls`\n```\na\n```"),
        (
            {"truncated": 1, "fullOutputPath": "/p"},
            "Ran `ls`\n```\na\n```\n\n[Output truncated. Full output: /p]",
        ),
        ({"command": {"a": 1}}, "Ran `[object Object]`\n```\na\n```"),
        ({"command": None, "output": True}, "Ran `null`\n```\ntrue\n```"),
    ],
)
def test_bash_execution_text(fields: dict[str, Any], text: str) -> None:
    check("bash text", bash_execution_to_text(bash(**fields)), text)
    check(
        "bash llm",
        convert_to_llm([bash(**fields, timestamp=3)]),
        [{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 3}],
    )


def test_bash_execution_missing_exit_code_and_command() -> None:
    msg = {"role": "bashExecution", "output": "o"}
    assert bash_execution_to_text(msg) == "Ran `undefined`\n```\no\n```"


# ---------------------------------------------------------------------------
# estimate_tokens
# ---------------------------------------------------------------------------


def user(content: Any, **kw: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, **kw}


def assistant(*blocks: Any, **kw: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), **kw}


def text(t: Any) -> dict[str, Any]:
    return {"type": "text", "text": t}


IMAGE = {"type": "image", "data": "AAAA", "mimeType": "image/png"}


def test_astral_characters_count_two_utf16_units() -> None:
    # Six UTF-16 units (two tokens); counting code points would give three characters (one token).
    assert estimate_tokens(user("😀😀😀")) == 2
    assert estimate_tokens(user("𝔘𝔫𝔦𝔠𝔬𝔡𝔢 astral plane text")) == 8
    assert estimate_tokens(user([text("😀😀😀")])) == 2
    assert estimate_tokens({"role": "compactionSummary", "summary": "😀😀😀"}) == 2


def test_ceil_of_quarter() -> None:
    assert [estimate_tokens(user("x" * n)) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]


def test_images_count_4800_chars_in_user_tool_result_and_custom_messages() -> None:
    # Pi 0.73.1 counted 0 for an image in a user message; 1.6.0 counts 4800 characters.
    assert estimate_tokens(user([IMAGE, text("abcd")])) == 1201
    assert estimate_tokens({"role": "toolResult", "content": [IMAGE]}) == 1200
    assert estimate_tokens({"role": "toolResult", "content": [text("abcd"), IMAGE]}) == 1201
    assert estimate_tokens({"role": "custom", "content": [IMAGE, IMAGE, text("a")]}) == 2401


def test_falsy_text_blocks_count_zero_in_user_and_tool_results() -> None:
    assert estimate_tokens(user([text(""), {"type": "text"}, {"type": "text", "text": None}])) == 0
    assert estimate_tokens({"role": "toolResult", "content": [{"type": "text"}, text(0)]}) == 0


def test_assistant_blocks() -> None:
    call = {
        "type": "toolCall",
        "id": "c",
        "name": "edit",
        "arguments": {"path": "ä.py", "n": 1.5, "ok": True},
    }
    # "edit" (4) + '{"path":"ä.py","n":1.5,"ok":true}' (33) = 37 chars.
    assert estimate_tokens(assistant(call)) == 10
    assert estimate_tokens(assistant(text("abcd"), {"type": "thinking", "thinking": "efgh"}, IMAGE)) == 2
    assert estimate_tokens(assistant({"type": "toolCall", "name": "x", "arguments": None})) == 2  # "x" + "null"
    assert estimate_tokens(assistant({"type": "toolCall", "name": "x", "arguments": "s"})) == 1  # "x" + '"s"'


def test_assistant_string_content_counts_zero() -> None:
    assert estimate_tokens({"role": "assistant", "content": "a long string of text"}) == 0


def test_tool_call_small_float_argument_matches_json_stringify() -> None:
    # JSON.stringify gives "[0.00001,0.00001,0.00001,0.00001]" (33 chars); + "abc" = 36 = 9 tokens.
    assert estimate_tokens(assistant({"type": "toolCall", "name": "abc", "arguments": [0.00001] * 4})) == 9


def test_bash_execution_counts_even_when_excluded() -> None:
    msg = bash(command="abcd", output="efgh", excludeFromContext=True)
    assert estimate_tokens(msg) == 2
    assert convert_to_llm([msg]) == []


def test_other_roles_count_zero() -> None:
    assert estimate_tokens({"role": "hookMessage", "content": "x" * 100}) == 0
    assert estimate_tokens({"content": "x" * 100}) == 0
    assert estimate_tokens("a string message") == 0


@pytest.mark.parametrize(
    ("message", "where"),
    [
        (assistant({"type": "toolCall", "name": "ls"}), r"content\[0\].*arguments"),
        (assistant(text("ok"), {"type": "text"}), r"content\[1\].*text"),
        (assistant({"type": "thinking"}), r"content\[0\].*thinking"),
        (assistant(None), r"content\[0\]"),
        ({"role": "assistant"}, "content is undefined"),
        ({"role": "toolResult", "content": None}, "content is null"),
        ({"role": "custom", "content": {"a": 1}}, "not iterable"),
        ({"role": "bashExecution", "command": "ls"}, "output is undefined"),
        ({"role": "branchSummary"}, "summary is undefined"),
        (user([text(5)]), "NaN"),
        (None, "null"),
    ],
)
def test_estimate_raises_where_pi_throws_or_computes_nan(message: Any, where: str) -> None:
    with pytest.raises(UsageError, match=where):
        estimate_tokens(message)


# ---------------------------------------------------------------------------
# calculate_context_tokens / estimate_context_tokens
# ---------------------------------------------------------------------------

USAGE = {"input": 10, "output": 5, "cacheRead": 2, "cacheWrite": 1, "totalTokens": 100}


def test_calculate_context_tokens() -> None:
    assert calculate_context_tokens(USAGE) == 100
    assert calculate_context_tokens({**USAGE, "totalTokens": 0}) == 18
    assert calculate_context_tokens({k: v for k, v in USAGE.items() if k != "totalTokens"}) == 18
    assert calculate_context_tokens({**USAGE, "totalTokens": None, "cacheWrite": None}) == 17
    assert calculate_context_tokens({**USAGE, "totalTokens": 12.0}) == 12
    assert isinstance(calculate_context_tokens({**USAGE, "totalTokens": 12.0}), int)
    with pytest.raises(UsageError, match="cacheRead"):
        calculate_context_tokens({"input": 1, "output": 1, "cacheWrite": 1})
    with pytest.raises(UsageError):
        calculate_context_tokens(None)
    with pytest.raises(UsageError, match="input"):  # Pi: {totalTokens: 0} alone gives NaN
        calculate_context_tokens({"totalTokens": 0})


def test_context_tokens_use_last_usable_assistant() -> None:
    msgs = [
        user("x" * 40),
        assistant(text("a"), usage=USAGE, stopReason="stop"),
        user("y" * 8),
        assistant(text("b"), usage={**USAGE, "totalTokens": 999}, stopReason="aborted"),
        assistant(text("c"), usage={**USAGE, "totalTokens": 999}, stopReason="error"),
        assistant(text("d"), usage=None),
        assistant(text("e")),
    ]
    result = estimate_context_tokens(msgs)
    assert result == ContextTokens(tokens=106, usage_tokens=100, trailing_tokens=6, last_usage_index=1)
    check(
        "dict",
        result.to_dict(),
        {"tokens": 106, "usageTokens": 100, "trailingTokens": 6, "lastUsageIndex": 1},
    )


def test_context_tokens_without_usage_sum_all() -> None:
    result = estimate_context_tokens([user("x" * 8), assistant(text("abcd"))])
    check("dict", result.to_dict(), {"tokens": 3, "usageTokens": 0, "trailingTokens": 3, "lastUsageIndex": None})
    check(
        "empty",
        estimate_context_tokens([]).to_dict(),
        {"tokens": 0, "usageTokens": 0, "trailingTokens": 0, "lastUsageIndex": None},
    )


def test_context_tokens_ignore_messages_before_the_usage() -> None:
    # Pi never looks before the last usable assistant, so a broken message there does not throw.
    msgs = [None, assistant({"type": "toolCall"}), assistant(text("a"), usage=USAGE)]
    assert estimate_context_tokens(msgs).tokens == 100


def test_context_tokens_error_names_the_message() -> None:
    with pytest.raises(UsageError, match=r"messages\[2\]: content\[0\]"):
        estimate_context_tokens([assistant(text("a"), usage=USAGE), user("x"), assistant({"type": "toolCall"})])


# ---------------------------------------------------------------------------
# should_compact / route
# ---------------------------------------------------------------------------


def test_defaults() -> None:
    assert DEFAULT_RESERVE_TOKENS == 16384
    assert DEFAULT_KEEP_RECENT_TOKENS == 20000


def test_should_compact_is_strictly_greater() -> None:
    assert not should_compact(100 - 16, 100, 16)
    assert should_compact(100 - 15, 100, 16)
    assert not should_compact(10**9, 100, 16, enabled=False)
    assert should_compact(1, 100, 100)


@pytest.mark.parametrize(
    ("tokens", "name", "headroom"),
    [
        (0, "fits", 83616),
        (83616, "fits", 0),
        (83617, "compact", -1),
        (100000, "compact", -16384),
        (100001, "overflow", -16385),
    ],
)
def test_route_boundaries(tokens: int, name: str, headroom: int) -> None:
    r = route(tokens, 100000, 16384)
    assert r.route == name
    assert r.headroom == headroom
    check(
        "route",
        r.to_dict(),
        {
            "route": name,
            "contextTokens": tokens,
            "contextWindow": 100000,
            "reserveTokens": 16384,
            "threshold": 83616,
            "headroom": headroom,
        },
    )
    assert (name != "fits") is should_compact(tokens, 100000, 16384)


def test_route_from_messages_and_context_tokens() -> None:
    msgs = [user("x" * 400)]  # 100 tokens
    assert route(msgs, 200, 100).route == "fits"
    assert route(msgs, 199, 100).route == "compact"
    assert route(msgs, 99, 0).route == "overflow"
    assert route(estimate_context_tokens(msgs), 99, 0).context_tokens == 100
    assert route(msgs, 150).route == "compact"  # default reserve exceeds the window


@pytest.mark.parametrize(
    "args", [(10, 0, 0), (10, -5, 0), (10, 100, -1), (10, True, 0), ("10", 100, 0), (math.nan, 100, 0)]
)
def test_route_rejects_nonsense(args: tuple[Any, Any, Any]) -> None:
    with pytest.raises(UsageError):
        route(*args)


# ---------------------------------------------------------------------------
# find_cut_point
# ---------------------------------------------------------------------------


def m(message: Any, **kw: Any) -> dict[str, Any]:
    return {"type": "message", "message": message, **kw}


def u(n: int) -> dict[str, Any]:
    """A user message entry worth n tokens."""
    return m(user("u" * (4 * n)))


def a(n: int) -> dict[str, Any]:
    return m(assistant(text("a" * (4 * n))))


def tr(n: int) -> dict[str, Any]:
    return m({"role": "toolResult", "toolCallId": "c", "content": [text("r" * (4 * n))]})


CALL = m(assistant({"type": "toolCall", "id": "c", "name": "ls", "arguments": {}}))
MODEL = {"type": "model_change", "provider": "p", "modelId": "m"}
THINK = {"type": "thinking_level_change", "thinkingLevel": "high"}


def cut(entries: list[Any], keep: int, start: int = 0, end: int | None = None) -> dict[str, Any]:
    return find_cut_point(entries, start, len(entries) if end is None else end, keep).to_dict()


def r(first: int, turn: int = -1, split: bool = False) -> dict[str, Any]:
    return {"firstKeptEntryIndex": first, "turnStartIndex": turn, "isSplitTurn": split}


def test_no_cut_points_keeps_from_start() -> None:
    check("only tool results", cut([tr(5), tr(5), MODEL], 1, start=1), r(1))
    check("empty range", cut([u(1)], 1, start=1, end=1), r(1))
    check("reversed range", cut([u(1)], 1, start=5, end=2), r(5))


def test_clean_cut_at_user() -> None:
    check("cut", cut([u(100), a(100), u(100), a(100)], 200), r(2))


def test_cut_at_assistant_is_a_split_turn() -> None:
    check("cut", cut([u(100), CALL, tr(100), a(100)], 100), r(3, 0, True))


def test_budget_never_reached_keeps_everything() -> None:
    check("cut", cut([u(1), a(1), u(1)], 1000), r(0))
    # Leading non-message entries are kept too, and the cut entry is then not a user message.
    check("cut", cut([MODEL, THINK, u(1), a(1)], 1000), r(0))


def test_huge_trailing_tool_result_keeps_its_call() -> None:
    # [user, assistant(toolCall), toolResult(4000 chars)], keep 100: no cut point lies at or
    # after the tool result, so Pi 1.6.0 cuts at the last one (the call); 0.73.1 kept everything.
    entries = [m(user("hi")), CALL, m({"role": "toolResult", "content": [text("x" * 4000)]})]
    check("cut", cut(entries, 100), r(1, 0, True))


def test_settings_before_user_turn_a_clean_cut_into_a_split_turn() -> None:
    # PI-SEMANTICS §15 quirk [verified]: [u, a, model_change, thinking, u, ...] -> {2, 0, true}.
    check("cut", cut([u(100), a(100), MODEL, THINK, u(100), a(100)], 200), r(2, 0, True))


def test_moving_back_stops_at_compaction_and_start() -> None:
    comp = {"type": "compaction", "summary": "s", "firstKeptEntryId": "x", "tokensBefore": 1}
    label = {"type": "label", "targetId": "x", "label": "l"}
    check("compaction", cut([u(100), a(100), comp, label, u(100), a(100)], 200), r(3, 0, True))
    check("start", cut([u(100), a(100), label, u(100), a(100)], 200, start=2), r(2))


def test_custom_message_and_branch_summary_are_counted_cut_points_and_turn_starts() -> None:
    cm = {"type": "custom_message", "customType": "k", "content": "c" * 4000, "display": True}
    bs = {"type": "branch_summary", "summary": "s" * 4000, "fromId": "root"}
    # Counted (1.6.0 sums what every entry contributes; 0.73.1 counted message entries only):
    # the branch summary's 1000 tokens reach the budget there.
    check("custom_message", cut([u(100), cm, a(50), bs, a(50)], 200), r(3))
    # As turn starts: a cut at the assistant after a custom_message splits the turn it started.
    check("turn start", cut([u(10), cm, a(50), a(100)], 100), r(3, 1, True))


def test_system_messages_and_edits_are_no_cut_points() -> None:
    system = m({"role": "system", "content": "p" * 400})
    edit = {"type": "context_edit", "targetId": "x", "replacement": None}
    check("system", cut([u(100), a(100), system, u(100), a(100)], 200), r(3))
    # An edit contributes nothing: the cut moves back over it, which splits the turn.
    check("edit", cut([u(100), a(100), edit, u(100), a(100)], 200), r(2, 0, True))


def test_custom_message_before_user_is_not_moved_over() -> None:
    # The custom_message contributes a message, so the cut no longer moves back onto it
    # (0.73.1 did, and reported an empty split turn {2, 2, true}).
    cm = {"type": "custom_message", "customType": "k", "content": "c", "display": True}
    check("cut", cut([u(100), a(100), cm, u(100), a(100)], 200), r(3))


def test_tool_result_only_tail_before_budget_uses_first_cut_point_after() -> None:
    # Budget reached inside the tool results: the cut goes forward to the next assistant.
    check("cut", cut([u(10), CALL, tr(100), tr(100), a(10)], 150), r(4, 0, True))


def test_bash_execution_starts_a_turn() -> None:
    entries = [u(100), m(bash(command="c" * 4, output="o" * 400)), CALL, tr(1), a(100)]
    check("cut", cut(entries, 100), r(4, 1, True))


def test_find_turn_start_index() -> None:
    entries = [u(1), a(1), MODEL, a(1)]
    assert find_turn_start_index(entries, 3, 0) == 0
    assert find_turn_start_index(entries, 3, 1) == -1


def test_find_cut_point_errors_name_the_entry() -> None:
    with pytest.raises(UsageError, match=r"entries\[1\]\.message"):
        cut([u(1), {"type": "message"}], 1)
    with pytest.raises(UsageError, match=r"entries\[2\].*out of range"):
        cut([u(1), a(1)], 1, end=3)
    with pytest.raises(UsageError, match=r"entries\[1\]"):
        cut([u(1), None], 1)
    with pytest.raises(UsageError, match=r"entries\[1\]: content\[0\]"):
        cut([u(1), m(assistant({"type": "toolCall", "name": "x"}))], 1)


def test_find_cut_point_does_not_wrap_negative_indices() -> None:
    with pytest.raises(UsageError, match="out of range"):
        cut([u(1), a(1)], 1, start=-1)


def test_unreached_broken_messages_do_not_raise() -> None:
    # The backward walk stops at the budget; Pi never estimates the broken assistant at index 1.
    entries = [u(1), m(assistant({"type": "toolCall", "name": "x"})), u(100), a(100)]
    check("cut", cut(entries, 100), r(3, 2, True))


# ---------------------------------------------------------------------------
# Differential tests against Pi's own code (node)
# ---------------------------------------------------------------------------

_NODE_SCRIPT = r"""
import { findCutPoint, estimateTokens, estimateContextTokens } from %(compaction)s;
import { convertToLlm } from %(messages)s;
let raw = "";
for await (const chunk of process.stdin) raw += chunk;
const input = JSON.parse(raw);
const run = (f) => { try { return { ok: f() }; } catch (e) { return { error: String(e) }; } };
const out = {
  cuts: input.cuts.map((c) => run(() => findCutPoint(c.entries, c.start, c.end, c.keep))),
  msgs: input.msgs.map((ms) => ({
    llm: run(() => convertToLlm(ms)),
    perMessage: ms.map((m) => run(() => estimateTokens(m))),
    context: run(() => estimateContextTokens(ms)),
  })),
};
process.stdout.write(JSON.stringify(out));
"""


def _run_pi(cuts: list[dict[str, Any]], msgs: list[list[Any]]) -> dict[str, Any]:
    if PI_MISSING or NODE is None:
        pytest.skip(PI_MISSING)
    core = PI_PKG / "dist" / "core"
    script = _NODE_SCRIPT % {
        "compaction": json.dumps((core / "compaction" / "index.js").as_uri()),
        "messages": json.dumps((core / "messages.js").as_uri()),
    }
    proc = subprocess.run(
        [NODE, "--input-type=module", "-e", script],
        input=json.dumps({"cuts": cuts, "msgs": msgs}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"node failed:\n{proc.stderr}"
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


_chars = st.sampled_from(list('abc xyz\n\tä€😀𝔘"\\'))
_text = st.one_of(
    st.text(_chars, max_size=40),
    st.builds(lambda c, n: c * n, st.sampled_from(["x", "é", "😀"]), st.integers(0, 400)),
)
_ts = st.one_of(st.none(), st.integers(0, 2**41), st.just("MISSING"))
_json_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.sampled_from([1.5, -0.25, 2.0, 1e21, 1e-7]),
    _text,
)
_args = st.dictionaries(
    st.text(_chars, min_size=1, max_size=6),
    st.one_of(_json_scalar, st.lists(_json_scalar, max_size=3)),
    max_size=4,
)
_image = st.just({"type": "image", "data": "AAAA", "mimeType": "image/png"})
_text_block = st.builds(lambda t: {"type": "text", "text": t}, _text)


def _with(d: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Add fields, leaving out those drawn as "MISSING"."""
    out = dict(d)
    out.update({k: v for k, v in kw.items() if v != "MISSING"})
    return out


_usage = st.one_of(
    st.fixed_dictionaries(
        {
            "input": st.integers(0, 5000),
            "output": st.integers(0, 5000),
            "cacheRead": st.integers(0, 5000),
            "cacheWrite": st.integers(0, 5000),
            "totalTokens": st.one_of(st.just(0), st.integers(0, 20000)),
        }
    ),
    st.none(),
)
_assistant_block = st.one_of(
    _text_block,
    st.builds(lambda t: {"type": "thinking", "thinking": t}, _text),
    st.builds(lambda n, a: {"type": "toolCall", "id": "c1", "name": n, "arguments": a}, _text, _args),
    _image,
)
_user_msg = st.builds(
    lambda c, ts: _with({"role": "user", "content": c}, timestamp=ts),
    st.one_of(_text, st.lists(st.one_of(_text_block, _image, st.just({"type": "text", "text": ""})), max_size=4)),
    _ts,
)
_assistant_msg = st.builds(
    lambda c, usage, stop, ts: _with({"role": "assistant", "content": c}, usage=usage, stopReason=stop, timestamp=ts),
    st.lists(_assistant_block, max_size=4),
    st.one_of(_usage, st.just("MISSING")),
    st.sampled_from(["stop", "toolUse", "aborted", "error", "length", "MISSING"]),
    _ts,
)
_tool_result_msg = st.builds(
    lambda c, ts: _with({"role": "toolResult", "toolCallId": "c1", "toolName": "ls", "content": c}, timestamp=ts),
    st.one_of(_text, st.lists(st.one_of(_text_block, _image), max_size=3)),
    _ts,
)
_bash_msg = st.builds(
    lambda cmd, out, code, canc, trunc, path, excl, ts: _with(
        {"role": "bashExecution", "command": cmd, "output": out},
        exitCode=code,
        cancelled=canc,
        truncated=trunc,
        fullOutputPath=path,
        excludeFromContext=excl,
        timestamp=ts,
    ),
    _text,
    _text,
    st.sampled_from([0, 1, 127, None, "MISSING", -1]),
    st.sampled_from([True, False, "MISSING"]),
    st.sampled_from([True, False, "MISSING"]),
    st.sampled_from(["/tmp/out", "", "MISSING"]),
    st.sampled_from([True, False, "MISSING", 0, ""]),
    _ts,
)
_custom_msg = st.builds(
    lambda c, disp, ts: _with({"role": "custom", "customType": "k", "content": c}, display=disp, timestamp=ts),
    st.one_of(_text, st.lists(st.one_of(_text_block, _image), max_size=3)),
    st.sampled_from([True, False, "MISSING"]),
    _ts,
)
_summary_msg = st.builds(
    lambda role, s, ts: _with({"role": role, "summary": s}, timestamp=ts),
    st.sampled_from(["branchSummary", "compactionSummary"]),
    _text,
    _ts,
)
_other_msg = st.builds(lambda t: {"role": "hookMessage", "customType": "k", "content": t}, _text)
_message = st.one_of(_user_msg, _assistant_msg, _tool_result_msg, _bash_msg, _custom_msg, _summary_msg, _other_msg)
# Messages on which Pi throws TypeError (never NaN: a NaN silently changes Pi's cut).
_broken_message = st.sampled_from(
    [
        {"role": "assistant", "content": [{"type": "toolCall", "id": "c", "name": "x"}]},
        {"role": "assistant", "content": [{"type": "text"}]},
        {"role": "toolResult", "content": None},
        {"role": "bashExecution", "command": "ls"},
    ]
)
_other_entry = st.sampled_from(
    [
        {"type": "model_change", "provider": "p", "modelId": "m"},
        {"type": "thinking_level_change", "thinkingLevel": "low"},
        {"type": "label", "targetId": "x", "label": "l"},
        {"type": "custom", "customType": "k", "data": {}},
        {"type": "session_info", "name": "n"},
        {"type": "compaction", "summary": "s", "firstKeptEntryId": "x", "tokensBefore": 5},
    ]
)
_entry = st.one_of(
    st.builds(lambda msg: {"type": "message", "message": msg}, _message),
    st.builds(lambda msg: {"type": "message", "message": msg}, _message),
    st.builds(lambda msg: {"type": "message", "message": msg}, _message),
    _other_entry,
    st.builds(lambda c: {"type": "custom_message", "customType": "k", "content": c, "display": True}, _text),
    st.builds(lambda s: {"type": "branch_summary", "summary": s, "fromId": "root"}, _text),
)


def _message_tokens_or_zero(entry: dict[str, Any]) -> int:
    try:
        return estimate_tokens(entry.get("message"))
    except UsageError:
        return 0


# Hypothesis draws the contents (where its taste for empty strings, astral characters and odd
# numbers helps); the shape of each case (sizes, ranges, budget, breakage) comes from a drawn
# Random, because hypothesis's own bias towards tiny lists and zeros would rarely move the cut.
@st.composite
def _cut_case(draw: st.DrawFn) -> dict[str, Any]:
    rnd = draw(st.randoms(use_true_random=True))
    entries = [draw(_entry) for _ in range(rnd.randint(0, 40))]
    if rnd.random() < 0.1:
        broken = st.builds(lambda msg: {"type": "message", "message": msg}, _broken_message)
        entries.insert(rnd.randint(0, len(entries)), draw(st.one_of(broken, st.just({"type": "message"}))))
    n = len(entries)
    start = 0 if rnd.random() < 0.6 else rnd.randint(0, n)
    end = n if rnd.random() < 0.8 else rnd.randint(start, n)
    if rnd.random() < 0.03:
        start, end = rnd.randint(0, n + 1), rnd.randint(0, n + 1)  # possibly past the end: Pi throws
    # A budget within the range's size, so that cuts land anywhere in it.
    total = sum(_message_tokens_or_zero(e) for e in entries[start:end] if e.get("type") == "message")
    keep = DEFAULT_KEEP_RECENT_TOKENS if rnd.random() < 0.1 else rnd.randint(0, total + 2)
    return {"entries": entries, "start": start, "end": end, "keep": keep}


@st.composite
def _message_list(draw: st.DrawFn) -> list[Any]:
    rnd = draw(st.randoms(use_true_random=True))
    msgs = [draw(_message) for _ in range(rnd.randint(0, 12))]
    if rnd.random() < 0.1:
        msgs.insert(rnd.randint(0, len(msgs)), draw(_broken_message))
    return msgs


def _summarise(failures: list[str]) -> str:
    failures.sort(key=len)
    return f"{len(failures)} mismatches with Pi; smallest:\n\n" + "\n\n".join(failures[:3])


@pytest.mark.pi
def test_find_cut_point_matches_pi() -> None:
    cases = draw_batch(_cut_case(), 250)
    pi = _run_pi(cases, [])["cuts"]
    failures: list[str] = []
    for case, expected in zip(cases, pi, strict=True):
        try:
            actual: Any = find_cut_point(case["entries"], case["start"], case["end"], case["keep"]).to_dict()
        except UsageError as exc:
            actual = {"error": str(exc)}
        else:
            actual = {"ok": actual}
        if ("error" in expected) != ("error" in actual) or ("ok" in expected and expected != actual):
            failures.append(f"case {json.dumps(case, ensure_ascii=False)}\npi:     {expected}\nkurahi: {actual}")
    assert not failures, _summarise(failures)


def _py(f: Any) -> dict[str, Any]:
    try:
        return {"ok": json.loads(json.dumps(f()))}
    except UsageError as exc:
        return {"error": str(exc)}


def _same(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    if "error" in expected:
        return "error" in actual
    return expected == actual


@pytest.mark.pi
def test_messages_match_pi() -> None:
    lists = draw_batch(_message_list(), 250)
    pi = _run_pi([], lists)["msgs"]
    failures: list[str] = []
    for msgs, expected in zip(lists, pi, strict=True):
        actual = {
            "llm": _py(lambda msgs=msgs: convert_to_llm(msgs)),
            "perMessage": [_py(lambda m=m: estimate_tokens(m)) for m in msgs],
            "context": _py(lambda msgs=msgs: estimate_context_tokens(msgs).to_dict()),
        }
        ok = (
            _same(expected["llm"], actual["llm"])
            and all(_same(e, a) for e, a in zip(expected["perMessage"], actual["perMessage"], strict=True))
            and _same(expected["context"], actual["context"])
        )
        if not ok:
            failures.append(
                f"messages {json.dumps(msgs, ensure_ascii=False)}\npi:     {json.dumps(expected)}\n"
                f"kurahi: {json.dumps(actual)}"
            )
    assert not failures, _summarise(failures)
