"""The check behind `kurahi session doctor`: what each provider family would refuse, and no false alarm."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from kurahi.errors import NotASessionError
from kurahi.pi.transcript import Transcript
from kurahi.runtimes.requests import check_transcript
from support.request_trees import ValidTree, lines, res, tc

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pi"

ALL = ["pi-1.6", "pi-0.73", "openclaw-2026.5"]

# Fixtures whose next request a provider refuses (or that Pi 0.73.1 would damage), and why.
NOT_REQUEST_VALID = {
    # A replacement without the tool call leaves the call's result unanswered-for.
    "context_edit_replace_string.jsonl": {"result-without-call"},
    # Two results that answer no call.
    "null_content_tool_result.jsonl": {"result-without-call"},
    # A last line without a newline, or cut off: Pi 0.73.1 loses its next append.
    "no_final_newline.jsonl": {"torn-tail"},
    "odd_whitespace.jsonl": {"torn-tail"},
    "truncated_tail.jsonl": {"torn-tail"},
}
NOT_SESSIONS = {"bom_header.jsonl", "empty.jsonl", "not_a_session.jsonl"}


def check(data: bytes) -> Any:
    with Transcript.from_bytes(data) as t:
        return check_transcript(t)


def msg(i: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "id": i, "parentId": parent, "timestamp": "2026-12-01T00:00:01.000Z", "message": message}


def asst(content: list[dict[str, Any]], *, api: str = "anthropic-messages", stop: str = "stop") -> dict[str, Any]:
    models = {"anthropic-messages": "claude-sonnet-4-5", "openai-completions": "gpt-4.1", "openai-responses": "gpt-5"}
    provider = "anthropic" if api == "anthropic-messages" else "openai"
    return {
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": models[api],
        "stopReason": stop,
    }


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_the_bricked_compaction_is_refused_by_every_family_and_named() -> None:
    data = lines(
        msg("u1", None, user("read a")),
        msg("a1", "u1", asst([tc("call_1")], stop="toolUse")),
        msg("r1", "a1", res("call_1")),
        msg("a2", "r1", asst([{"type": "text", "text": "done"}])),
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "a2",
            "timestamp": "2026-12-01T00:00:02.000Z",
            "summary": "S",
            "firstKeptEntryId": "r1",
            "tokensBefore": 1,
        },
        msg("u2", "c1", user("now?")),
    )
    (f,) = check(data).failing(ALL)
    assert (f.code, f.entry_id, f.line, f.role) == ("result-without-call", "r1", 4, "toolResult")
    assert f.refused_by == ["anthropic-messages", "openai-completions", "openai-responses"]
    assert f.repaired_by == ["openclaw-2026.5"]
    assert check(data).failing(["openclaw-2026.5"]) == []


def test_an_unanswered_call_is_answered_by_pi_and_not_reported() -> None:
    data = lines(
        msg("u1", None, user("go")), msg("a1", "u1", asst([tc("call_1")], stop="toolUse")), msg("u2", "a1", user("hm"))
    )
    assert check(data).findings == []


def test_a_result_displaced_by_a_user_message_is_refused_by_anthropic_and_chat() -> None:
    data = lines(
        msg("u1", None, user("go")),
        msg("a1", "u1", asst([tc("call_1")], stop="toolUse")),
        msg("u2", "a1", user("wait")),
        msg("r1", "u2", res("call_1")),
        msg("u3", "r1", user("and")),
    )
    report = check(data)
    # Pi answers the call with a synthetic result at the user message; the real one comes after:
    # in Anthropic's merged user turn it follows text, in Chat it answers no pending call.
    failing = {(f.entry_id, f.code, tuple(f.refused_by)) for f in report.failing(ALL)}
    assert failing == {
        ("r1", "result-after-content", ("anthropic-messages",)),
        ("r1", "result-without-call", ("openai-completions",)),
    }
    responses = [x for x in report.findings if x.code == "duplicate-result"]
    assert responses and not responses[0].certain  # a second output for one call: not established


def test_same_model_ids_are_checked_and_foreign_ones_normalised_as_pi_does() -> None:
    bad = lines(
        msg("u1", None, user("go")),
        msg("a1", "u1", asst([tc("call.1:x")], stop="toolUse")),
        msg("r1", "a1", res("call.1:x")),
        msg("u2", "r1", user("ok")),
    )
    (f,) = check(bad).failing(ALL)
    assert (f.code, f.entry_id, f.refused_by) == ("tool-id-pattern", "a1", ["anthropic-messages"])
    # The same ids from an OpenAI model are normalised by Pi on the way to Anthropic.
    foreign = bad.replace(
        b'"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"',
        b'"api": "openai-completions", "provider": "openai", "model": "gpt-4.1"',
    )
    assert foreign != bad
    assert check(foreign).failing(ALL) == []


def test_a_non_json_signature_on_the_current_responses_model_makes_pi_throw() -> None:
    thinking = {"type": "thinking", "thinking": "hm", "thinkingSignature": "sig-abc"}
    data = lines(
        msg("u1", None, user("go")),
        msg("a1", "u1", asst([thinking, {"type": "text", "text": "hi"}], api="openai-responses")),
        msg("u2", "a1", user("ok")),
    )
    (f,) = check(data).failing(ALL)
    assert (f.code, f.refused_by, f.repaired_by) == ("conversion-throws", ["openai-responses"], [])
    ok = data.replace(b'"sig-abc"', json.dumps(json.dumps({"type": "reasoning", "id": "rs_1", "summary": []})).encode())
    assert check(ok).findings == []


def test_an_errored_turns_result_is_an_orphan() -> None:
    data = lines(
        msg("u1", None, user("go")),
        msg("a1", "u1", asst([tc("toolu_1")], stop="error")),
        msg("r1", "a1", res("toolu_1")),
        msg("u2", "r1", user("again")),
    )
    (f,) = check(data).failing(ALL)
    assert (f.code, f.entry_id) == ("result-without-call", "r1")


def test_file_health() -> None:
    ok = lines(msg("u1", None, user("hi")), msg("u2", "u1", user("again")))
    torn = ok + b'{"type":"message","id":"u3","par'
    (f,) = check(torn).failing(ALL)
    assert (f.code, f.line, f.repaired_by) == ("torn-tail", 4, ["openclaw-2026.5", "pi-1.6"])
    assert check(torn).failing(["pi-1.6"]) == []
    cyc = lines(msg("a", "b", user("x")), msg("b", "a", user("y")))
    (f,) = check(cyc).failing(ALL)
    assert f.code == "parent-cycle" and check(cyc).context is None
    cut = lines(msg("u1", "gone", user("x")), msg("u2", "u1", user("y")))
    report = check(cut)
    assert [x.code for x in report.findings] == ["path-cut-short"] and report.failing(ALL) == []
    dup = lines(msg("u1", None, user("x")), msg("u1", None, user("y")))
    assert [x.code for x in check(dup).findings] == ["duplicate-id"] and check(dup).failing(ALL) == []


def test_a_body_over_anthropics_limit_is_reported_with_no_runtime_repairing_it() -> None:
    big = "x" * (33 * 1024 * 1024)
    data = lines(msg("u1", None, user(big)), msg("u2", "u1", user("ok")))
    codes = {f.code: f for f in check(data).findings}
    assert codes["request-too-large"].refused_by == ["anthropic-messages"]
    assert codes["context-window"].fails_for(ALL) is False  # every runtime compacts and retries


@pytest.mark.parametrize("fixture", sorted(p.name for p in FIXTURES.glob("*.jsonl")))
def test_fixtures_only_the_request_invalid_ones_fail(fixture: str) -> None:
    if fixture in NOT_SESSIONS:
        with pytest.raises(NotASessionError):
            Transcript.open(FIXTURES / fixture)
        return
    with Transcript.open(FIXTURES / fixture) as t:
        report = check_transcript(t)
    assert {f.code for f in report.failing(ALL)} == NOT_REQUEST_VALID.get(fixture, set())


# -- random valid trees ------------------------------------------------------------------


def test_two_thousand_random_valid_trees_give_no_finding() -> None:
    for seed in range(2000):
        data = ValidTree(random.Random(seed)).data()
        report = check(data)
        assert report.findings == [], (seed, [f.to_dict() for f in report.findings], data.decode())


def test_the_session_family_is_its_current_models_last_known_api() -> None:
    from kurahi.runtimes.requests import session_family

    model = {"provider": "acme", "modelId": "m2"}
    msgs = [
        {"role": "assistant", "provider": "acme", "model": "m2", "api": "anthropic-messages"},
        {"role": "assistant", "provider": "other", "model": "x", "api": "openai-responses"},
        {"role": "user", "content": "hi"},
    ]
    assert session_family(msgs, model) == "anthropic-messages", "another model's reply does not count"
    msgs.append({"role": "assistant", "provider": "acme", "model": "m2", "api": "openai-completions"})
    assert session_family(msgs, model) == "openai-completions"
    msgs.append({"role": "assistant", "provider": "acme", "model": "m2", "api": "google-gemini"})
    assert session_family(msgs, model) is None, "a family the check does not know holds the session to all"
