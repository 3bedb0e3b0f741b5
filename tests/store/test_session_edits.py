"""Pi 1.6.0's new entry kinds on the write side: context edits, usage, system messages, systemMessage.

Every shape is checked against what Pi 1.6.0's own ``SessionManager`` writes for the same
script, and every refusal against Pi refusing the same call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.context.files import project_file
from kurahi.errors import ContextEditError, UsageError
from kurahi.store.session import Session
from kurahi.testing import assistant_message, tool_result, user_message
from support.peer import PiPeer

USAGE = {
    "input": 1,
    "output": 2,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 3,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
PI_ASSISTANT = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}


def rows(p: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in p.read_text().splitlines()][1:]


def shape(p: Path) -> list[dict[str, Any]]:
    """Entries with ids and times blanked (they differ between any two writers)."""
    out = []
    for e in rows(p):
        for k in ("id", "parentId", "timestamp", "targetId", "firstKeptEntryId"):
            if k in e:
                e[k] = "*"
        if "systemMessage" in e:
            e["systemMessage"]["timestamp"] = "*"
        out.append(e)
    return out


def pi_assistant(text: str, ts: int) -> dict[str, Any]:
    msg = assistant_message([{"type": "text", "text": text}], ts)
    msg.update(PI_ASSISTANT)
    msg["usage"] = {**USAGE, "input": 0, "output": 0, "totalTokens": 0}
    return msg


@pytest.fixture
def s(tmp_path: Path) -> Any:
    with Session.create(tmp_path / "s.jsonl", cwd=str(tmp_path)) as session:
        yield session


# -- the shapes Pi 1.6.0 writes ------------------------------------------------------------


def test_new_kinds_have_pis_exact_shapes(tmp_path: Path, pi: PiPeer) -> None:
    script = [
        {"op": "system", "content": "You are Ava.", "timestamp": 1},
        {"op": "user", "text": "my password is hunter2", "timestamp": 2, "as": "u"},
        {"op": "assistant", "text": "noted hunter2", "timestamp": 3, "as": "a"},
        {"op": "toolResult", "toolCallId": "c1", "toolName": "read", "text": "hunter2", "timestamp": 4, "as": "t"},
        {"op": "appendCustomMessageEntry", "customType": "note", "content": "hunter2", "display": True, "as": "c"},
        {"op": "appendUsage", "kind": "cache_warm", "provider": "anthropic", "model": "m", "usage": USAGE, "note": "n"},
        {"op": "appendUsage", "kind": "cache_warm", "provider": "anthropic", "model": "m", "usage": USAGE, "note": ""},
        {"op": "appendContextEdit", "targetId": "$u", "replacement": None},
        {"op": "appendContextEdit", "targetId": "$a", "replacement": {"content": "[removed]"}},
        {"op": "appendContextEdit", "targetId": "$t", "replacement": {"content": "[removed]"}},
        {"op": "appendContextEdit", "targetId": "$c", "replacement": {"content": "[removed]"}},
        {"op": "appendContextEdit", "targetId": "$u", "replacement": {"content": [{"type": "text", "text": "x"}]}},
        {"op": "system", "content": "Be brief.", "sections": {"tone": "dry"}, "timestamp": 5},
        {"op": "appendCompaction", "summary": "sum", "firstKeptEntryId": "$a", "tokensBefore": 10},
        {"op": "appendCompaction", "summary": "sum2", "tokensBefore": 10},
    ]
    (res,) = pi.batch("write", json.dumps([{"out": str(tmp_path / "pi.jsonl"), "script": script}]))
    assert "error" not in res, res
    ours = tmp_path / "k.jsonl"
    with Session.create(ours, cwd=str(tmp_path)) as k:
        k.append_system_message("You are Ava.", timestamp=1)
        u = k.append_message(user_message("my password is hunter2", 2))
        a = k.append_message(pi_assistant("noted hunter2", 3))
        t = k.append_message(tool_result("c1", "read", "hunter2", 4))
        c = k.append_custom_message("note", "hunter2", True)
        k.append_usage("cache_warm", "anthropic", "m", USAGE, "n")
        k.append_usage("cache_warm", "anthropic", "m", USAGE, "")
        k.append_context_edit(u, None)
        k.append_context_edit(a, "[removed]")
        k.append_context_edit(t, "[removed]")
        k.append_context_edit(c, "[removed]")
        k.append_context_edit(u, [{"type": "text", "text": "x"}])
        k.append_system_message("Be brief.", sections={"tone": "dry"}, timestamp=5)
        k.append_compaction("sum", a, 10)
        k.append_compaction("sum2", None, 10)
    assert shape(ours) == shape(tmp_path / "pi.jsonl")
    got = rows(ours)
    assert [list(e) for e in got if e["type"] in ("context_edit", "usage")] == [
        list(e) for e in rows(tmp_path / "pi.jsonl") if e["type"] in ("context_edit", "usage")
    ]
    # What the normalisation gave: text blocks for assistant and toolResult, text for the others.
    edits = [e for e in got if e["type"] == "context_edit"]
    assert [e["replacement"] for e in edits[1:4]] == [
        {"content": [{"type": "text", "text": "[removed]"}]},
        {"content": [{"type": "text", "text": "[removed]"}]},
        {"content": "[removed]"},
    ]
    # Pi's own first compaction with no first kept entry names itself; ours too.
    last = got[-1]
    assert last["firstKeptEntryId"] == last["id"]
    assert last["systemMessage"] == {
        "role": "system",
        "content": "You are Ava.\n\nBe brief.",
        "sections": {"tone": "dry"},
        "timestamp": last["systemMessage"]["timestamp"],
    }


def test_pi_opens_what_kurahi_wrote_with_the_same_context(tmp_path: Path, pi: PiPeer) -> None:
    p = tmp_path / "k.jsonl"
    with Session.create(p, cwd=str(tmp_path)) as k:
        k.append_system_message("You are Ava.", timestamp=1)
        u = k.append_message(user_message("my password is hunter2", 2))
        a = k.append_message(pi_assistant("noted hunter2", 3))
        k.append_usage("cache_warm", "anthropic", "m", USAGE)
        k.append_context_edit(u, None)
        k.append_context_edit(a, "noted [redacted]")
        k.append_message(user_message("what did I say?", 4))
    (ctx,) = pi.contexts([p])
    assert "hunter2" not in json.dumps(ctx["messages"])
    assert [m["role"] for m in ctx["messages"]] == ["system", "assistant", "user"]
    assert ctx["messages"][1]["content"] == [{"type": "text", "text": "noted [redacted]"}]
    # The projection follows Pi 1.6.0 (the context room's part of the work).
    assert project_file(p).context.to_dict()["messages"] == ctx["messages"]


def test_compaction_carries_the_folded_system_prompt_as_pi_does(tmp_path: Path, pi: PiPeer) -> None:
    p = tmp_path / "k.jsonl"
    with Session.create(p, cwd=str(tmp_path)) as k:
        k.append_system_message("base", sections={"a": "1", "b": "2"}, tools_added=[{"name": "read"}], timestamp=7)
        q = k.append_message(user_message("q", 8))
        k.append_system_message("on a side branch", timestamp=9)
        k.branch(q)
        k.append_system_message([{"type": "text", "text": "more"}], sections={"a": None, "c": "3"}, timestamp=11)
        kept = k.append_message(user_message("kept", 12))
        k.append_compaction("sum", kept, 5)
    sm = rows(p)[-1]["systemMessage"]
    # The side branch's system message is not on the path, so it is not folded in.
    assert sm["content"] == "base\n\nmore"
    assert sm["sections"] == {"b": "2", "c": "3"} and list(sm["sections"]) == ["b", "c"]
    assert sm["toolsAdded"] == [{"name": "read"}]
    assert sm["timestamp"] != 7 and list(sm) == ["role", "content", "sections", "toolsAdded", "timestamp"]
    (ctx,) = pi.contexts([p])
    assert ctx["messages"][0] == sm and ctx["messages"][1]["role"] == "compactionSummary"


def test_a_compaction_with_no_system_messages_has_no_system_message(s: Session) -> None:
    u = s.append_message(user_message("q", 1))
    s.append_compaction("sum", u, 5)
    assert "systemMessage" not in rows(s.path)[-1]
    s.append_compaction("again", None, 5, system_message=None)
    assert "systemMessage" not in rows(s.path)[-1]
    s.append_compaction("given", None, 5, system_message={"role": "system", "content": "x", "timestamp": 1})
    assert rows(s.path)[-1]["systemMessage"]["content"] == "x"
    with pytest.raises(UsageError):
        s.append_compaction("bad", None, 5, system_message="x")


def test_usage_entry_validation_and_optional_note(s: Session) -> None:
    s.append_usage("cache_warm", "p", "m", USAGE)
    s.append_usage("cache_warm", "p", "m", USAGE, note="why")
    got = rows(s.path)
    assert list(got[0]) == ["type", "id", "parentId", "timestamp", "kind", "provider", "model", "usage"]
    assert got[1]["note"] == "why"
    before = s.path.read_bytes()
    for bad in (
        lambda: s.append_usage(1, "p", "m", USAGE),  # type: ignore[arg-type]
        lambda: s.append_usage("k", "p", "m", [1]),  # type: ignore[arg-type]
        lambda: s.append_usage("k", "p", "m", USAGE, note=3),  # type: ignore[arg-type]
    ):
        with pytest.raises(UsageError):
            bad()
    assert s.path.read_bytes() == before


# -- refusals: a clear error, nothing appended, and Pi refuses the same ---------------------


@pytest.fixture
def branched(s: Session) -> dict[str, str]:
    """u1 → a1 → (u2 → a2 | u3 → ...); the leaf is on the u3 branch."""
    ids = {"sys": s.append_system_message("prompt", timestamp=1)}
    ids["u1"] = s.append_message(user_message("first", 2))
    ids["a1"] = s.append_message(pi_assistant("one", 3))
    ids["u2"] = s.append_message(user_message("abandoned secret", 4))
    s.branch(ids["a1"])
    ids["u3"] = s.append_message(user_message("live", 5))
    ids["mc"] = s.append_model_change("openai", "gpt-5")
    ids["edit"] = s.append_context_edit(ids["u1"], "first [edited]")
    ids["label"] = s.append_label(ids["u3"], "here")
    return ids


@pytest.mark.parametrize(
    ("target", "replacement", "reason", "says"),
    [
        ("nope0000", None, "not-found", "no entry with id 'nope0000'"),
        ("u2", None, "off-branch", "not on the active branch"),
        ("sys", None, "not-editable", "a system message"),
        ("mc", "x", "not-editable", "a model_change entry"),
        ("label", None, "not-editable", "a label entry"),
        ("edit", None, "not-editable", "an edit of an edit is refused"),
        ("u3", 5, "replacement", "not int"),
        ("u3", {"text": "x"}, "replacement", "an object without content"),
        ("u3", {"content": 5}, "replacement", "not int"),
        ("u3", ["plain string"], "replacement", "other than content blocks"),
        ("u3", [{"text": "no type"}], "replacement", "other than content blocks"),
    ],
)
def test_bad_context_edits_are_refused_and_nothing_is_appended(
    s: Session, branched: dict[str, str], target: str, replacement: Any, reason: str, says: str
) -> None:
    target_id = branched.get(target, target)
    before = s.path.read_bytes()
    leaf = s.leaf_id
    with pytest.raises(ContextEditError) as info:
        s.append_context_edit(target_id, replacement)
    assert info.value.reason == reason and info.value.target_id == target_id
    assert says in str(info.value) and str(s.path) in str(info.value) and "nothing appended" in str(info.value)
    if reason in ("off-branch", "not-editable"):
        assert info.value.line is not None  # names the target's line
    assert s.path.read_bytes() == before and s.leaf_id == leaf
    # The session is unharmed: the next entry attaches to the same leaf.
    nxt = s.append_message(user_message("after", 9))
    assert rows(s.path)[-1]["parentId"] == leaf and nxt


def test_pi_refuses_the_same_context_edits(tmp_path: Path, pi: PiPeer) -> None:
    base = [
        {"op": "system", "content": "p", "timestamp": 1, "as": "sys"},
        {"op": "user", "text": "first", "timestamp": 2, "as": "u1"},
        {"op": "assistant", "text": "one", "timestamp": 3, "as": "a1"},
        {"op": "user", "text": "abandoned", "timestamp": 4, "as": "u2"},
        {"op": "branch", "id": "$a1"},
        {"op": "user", "text": "live", "timestamp": 5, "as": "u3"},
        {"op": "appendContextEdit", "targetId": "$u1", "replacement": None, "as": "edit"},
    ]
    bad = [
        ("nope0000", None, "not found"),
        ("$u2", None, "not on the active branch"),
        ("$sys", None, "does not contribute editable model content"),
        ("$edit", None, "does not contribute editable model content"),
        ("$u3", 5, "must be null or contain string/array content"),
        ("$u3", {"text": "x"}, "must be null or contain string/array content"),
    ]
    items = [
        {
            "out": str(tmp_path / f"pi{i}.jsonl"),
            "script": [*base, {"op": "appendContextEdit", "targetId": t, "replacement": r}],
        }
        for i, (t, r, _) in enumerate(bad)
    ]
    for res, (_, _, says) in zip(pi.batch("write", json.dumps(items)), bad, strict=True):
        assert says in res.get("error", ""), res


def test_an_edit_on_an_empty_session_names_nothing_on_the_branch(s: Session) -> None:
    u = s.append_message(user_message("q", 1))
    s.branch(None)
    with pytest.raises(ContextEditError, match="an empty leaf") as info:
        s.append_context_edit(u, None)
    assert info.value.reason == "off-branch"
    with pytest.raises(ContextEditError) as info2:
        s.append_context_edit(7, None)  # type: ignore[arg-type]
    assert info2.value.reason == "not-found"


def test_a_reopened_session_checks_edits_against_its_leaf(tmp_path: Path) -> None:
    p = tmp_path / "s.jsonl"
    with Session.create(p, cwd="/w") as k:
        u = k.append_message(user_message("secret", 1))
        k.append_message(pi_assistant("ok", 2))
    with Session.open(p) as k:
        eid = k.append_context_edit(u, None)
    assert rows(p)[-1] == {**rows(p)[-1], "id": eid, "targetId": u, "replacement": None}
