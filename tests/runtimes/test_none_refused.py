"""``none_refused``, lineage check's quick proof that no provider refuses a history, against the full check.

Whenever the quick proof says "nothing can fail", :func:`check_context` (the request rules of
every family, the body size and the window) must find nothing that fails for the runtimes
asked about. The histories are drawn to hit the rules: calls answered late, out of order, twice
or never; results without a call, after a user message, after a system message; errored
assistants with and without calls; ids every family's normaliser changes; signatures that are
not JSON on the Responses model.
"""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kurahi.context.project import ProjectedEntry, SessionContext
from kurahi.pi.transcript import Transcript
from kurahi.runtimes.requests import check_context, check_transcript, none_refused
from support.request_trees import ValidTree

PI = ["pi-1.6", "pi-0.73"]
OPENCLAW = ["openclaw-2026.5"]
MODELS = [
    ("anthropic", "anthropic-messages", "claude"),
    ("openai", "openai-completions", "gpt-4.1"),
    ("openai", "openai-responses", "gpt-5"),
]


class _Source:
    def __init__(self, i: int) -> None:
        self.id = f"e{i}"
        self.line = i + 2


def _full(messages: list[Any], model: dict[str, Any] | None, runtimes: list[str]) -> list[Any]:
    """What the full check says fails, as lineage check filters it."""
    entries = [ProjectedEntry(_Source(i), [m]) for i, m in enumerate(messages)]
    ctx = SessionContext(leaf_id="leaf", messages=list(messages), model=model)
    return [f for f in check_context(entries, ctx) if f.fails_for(runtimes) and f.refused_by]


_IDS = st.sampled_from(["toolu_1", "toolu_2", "call_3", "call_4", "a|b", "x_", "bad id", "t" * 41, "t" * 70, "-"])


@st.composite
def _message(draw: st.DrawFn) -> dict[str, Any]:
    roles = ["user", "assistant", "assistant", "assistant", "toolResult", "toolResult", "system", "custom"]
    role = draw(st.sampled_from([*roles, "bashExecution", "branchSummary", "compactionSummary", "hookMessage"]))
    if role == "assistant":
        provider, api, model = draw(st.sampled_from(MODELS))
        blocks: list[Any] = []
        for _ in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["text", "toolCall", "toolCall", "thinking"]))
            if kind == "text":
                blocks.append({"type": "text", "text": draw(st.sampled_from(["", " ", "ok"]))})
            elif kind == "thinking":
                sig = draw(st.sampled_from([None, "", "not json", '{"id":"rs_1"}']))
                block = {"type": "thinking", "thinking": draw(st.sampled_from(["", "hm"]))}
                if sig is not None:
                    block["thinkingSignature"] = sig
                blocks.append(block)
            else:
                blocks.append({"type": "toolCall", "id": draw(_IDS), "name": "read", "arguments": {}})
        stop = draw(st.sampled_from(["stop", "toolUse", "error", "aborted", "length"]))
        return {
            "role": "assistant",
            "content": blocks,
            "api": api,
            "provider": provider,
            "model": model,
            "stopReason": stop,
        }
    if role == "toolResult":
        return {"role": "toolResult", "toolCallId": draw(_IDS), "toolName": "read", "content": []}
    if role == "bashExecution":
        return {"role": role, "command": "ls", "output": "", "excludeFromContext": draw(st.booleans())}
    if role in ("branchSummary", "compactionSummary"):
        return {"role": role, "summary": "s"}
    return {"role": role, "content": draw(st.sampled_from(["hi", " ", [], [{"type": "text", "text": ""}]]))}


@st.composite
def _history(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Mostly well-formed turns (so the proof often succeeds), with random messages mixed in."""
    out: list[dict[str, Any]] = []
    n = 0
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.integers(0, 3)) == 0:
            out.append(draw(_message()))
            continue
        out.append({"role": "user", "content": "go"})
        provider, api, model = draw(st.sampled_from(MODELS))
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            n += 1
            calls.append(f"toolu_{n}")
        content = [{"type": "text", "text": "ok"}] + [
            {"type": "toolCall", "id": c, "name": "read", "arguments": {}} for c in calls
        ]
        out.append(
            {
                "role": "assistant",
                "content": content,
                "api": api,
                "provider": provider,
                "model": model,
                "stopReason": "stop",
            }
        )
        answered = draw(st.permutations(calls))[: draw(st.integers(0, len(calls)))]
        out.extend({"role": "toolResult", "toolCallId": c, "toolName": "read", "content": []} for c in answered)
    return out


@settings(max_examples=300, deadline=None)
@given(_history(), st.sampled_from([None, *[{"provider": p, "modelId": m} for p, _, m in MODELS]]))
def test_what_the_quick_proof_passes_the_full_check_passes(messages: list[dict[str, Any]], model: Any) -> None:
    for runtimes in (PI, OPENCLAW):
        if none_refused(messages, model, runtimes):
            assert _full(messages, model, runtimes) == [], messages


def test_the_quick_proof_is_not_vacuous() -> None:
    """It passes most histories Pi writes, including calls Pi answers itself (at a user message, at the end)."""
    passed = late = 0
    for seed in range(200):
        data = ValidTree(random.Random(seed)).data()
        with Transcript.from_bytes(data) as t:
            report = check_transcript(t)
        assert report.context is not None
        messages, model = report.context.messages, report.context.model
        if none_refused(messages, model, PI):
            passed += 1
            assert _full(messages, model, PI) == []
            late += any(
                m.get("role") == "assistant" and any(b.get("type") == "toolCall" for b in m["content"])
                for m in messages[-1:]
            )
    assert passed > 100, passed
    unanswered = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "toolCall", "id": "toolu_1", "name": "r", "arguments": {}}]},
        {"role": "user", "content": "never mind"},
        {"role": "assistant", "content": [{"type": "toolCall", "id": "toolu_2", "name": "r", "arguments": {}}]},
    ]
    assert none_refused(unanswered, None, PI) and _full(unanswered, None, PI) == []


def test_what_the_full_check_refuses_the_quick_proof_does_not_pass() -> None:
    call = {"type": "toolCall", "id": "toolu_1", "name": "r", "arguments": {}}
    result = {"role": "toolResult", "toolCallId": "toolu_1", "toolName": "r", "content": []}
    cases = {
        "a result after a user message": [
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": "x"},
            result,
        ],
        "a result without a call": [{"role": "user", "content": "x"}, result],
        "an errored assistant's result": [{"role": "assistant", "content": [call], "stopReason": "error"}, result],
        "a result twice": [{"role": "assistant", "content": [call]}, result, result],
    }
    for name, messages in cases.items():
        assert _full(messages, None, PI), name  # the full check refuses it
        assert not none_refused(messages, None, PI), name
    too_big = [{"role": "user", "content": "x" * (33 * 1024 * 1024)}]
    assert _full(too_big, None, PI) and not none_refused(too_big, None, PI)
