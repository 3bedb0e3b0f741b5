"""``effective_path``: where each of Pi 1.6.0's projected messages comes from, checked against Pi."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.context.origins import effective_path
from kurahi.pi.effective import is_editable
from kurahi.pi.system import current_system_message, path_system_messages
from kurahi.pi.transcript import Transcript
from support.peer import PiPeer

S = [
    {"op": "system", "content": "prompt", "timestamp": 1, "as": "sys"},
    {"op": "user", "text": "u1 secret-one", "timestamp": 2, "as": "u1"},
    {"op": "assistant", "text": "a1", "timestamp": 3, "as": "a1"},
    {"op": "toolResult", "toolCallId": "c", "toolName": "read", "text": "t1 secret-two", "timestamp": 4, "as": "t1"},
    {"op": "appendCustomMessageEntry", "customType": "n", "content": "c1", "display": False, "as": "c1"},
]

SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "remove and replace": [
        *S,
        {"op": "appendContextEdit", "targetId": "$u1", "replacement": None},
        {"op": "appendContextEdit", "targetId": "$t1", "replacement": {"content": "[gone]"}},
        {"op": "appendContextEdit", "targetId": "$c1", "replacement": None},
    ],
    "edit of an edited entry: the later wins": [
        *S,
        {"op": "appendContextEdit", "targetId": "$u1", "replacement": {"content": "first"}},
        {"op": "appendContextEdit", "targetId": "$u1", "replacement": None},
        {"op": "appendContextEdit", "targetId": "$a1", "replacement": None},
        {"op": "appendContextEdit", "targetId": "$a1", "replacement": {"content": "back"}},
    ],
    "edit on another branch does nothing here": [
        *S,
        {"op": "appendContextEdit", "targetId": "$u1", "replacement": None},
        {"op": "branch", "id": "$c1"},
        {"op": "user", "text": "live", "timestamp": 9},
    ],
    "compaction over system messages, edit in the retained range": [
        *S,
        {"op": "system", "content": "later prompt", "timestamp": 5},
        {"op": "appendContextEdit", "targetId": "$t1", "replacement": None},
        {"op": "appendCompaction", "summary": "sum", "firstKeptEntryId": "$u1", "tokensBefore": 10},
        {"op": "user", "text": "after", "timestamp": 6},
        {"op": "system", "content": "after prompt", "timestamp": 7},
    ],
    "edit of a compacted-away entry is inert": [
        *S,
        {"op": "appendContextEdit", "targetId": "$u1", "replacement": None},
        {"op": "appendCompaction", "summary": "sum", "firstKeptEntryId": "$c1", "tokensBefore": 10},
        {"op": "appendContextEdit", "targetId": "$c1", "replacement": {"content": "c1 edited"}},
    ],
    "an older compaction inside the newest retained range says nothing": [
        *S,
        {"op": "appendCompaction", "summary": "old", "firstKeptEntryId": "$t1", "tokensBefore": 10, "as": "k1"},
        {"op": "user", "text": "between", "timestamp": 6},
        {"op": "appendCompaction", "summary": "new", "firstKeptEntryId": "$a1", "tokensBefore": 20},
        {"op": "user", "text": "after", "timestamp": 7},
    ],
    "no system messages: a compaction speaks once, an empty branch summary not at all": [
        {"op": "user", "text": "u1", "timestamp": 2, "as": "u1"},
        {"op": "assistant", "text": "a1", "timestamp": 3, "as": "a1"},
        {"op": "branchWithSummary", "branchFromId": "$u1", "summary": ""},
        {"op": "branchWithSummary", "branchFromId": "$leaf", "summary": "went back"},
        {"op": "appendCompaction", "summary": "sum", "firstKeptEntryId": "$u1", "tokensBefore": 10},
        {"op": "appendContextEdit", "targetId": "$u1", "replacement": {"content": "u1 edited"}},
    ],
}

ROLE = {"custom_message": "custom", "branch_summary": "branchSummary"}


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path, dict[str, Any]]]:
    d = tmp_path_factory.mktemp("effective")
    peer = PiPeer()
    items = [{"out": str(d / f"{i}.jsonl"), "script": script} for i, script in enumerate(SCRIPTS.values())]
    for res in peer.batch("write", json.dumps(items)):
        assert "error" not in res, res
    paths = [Path(i["out"]) for i in items]
    return list(zip(SCRIPTS, paths, peer.contexts(paths), strict=True))


@pytest.mark.pi
@pytest.mark.parametrize("k", range(len(SCRIPTS)), ids=list(SCRIPTS))
def test_sources_line_up_with_pis_messages(written: list[tuple[str, Path, dict[str, Any]]], k: int) -> None:
    _, path, ctx = written[k]
    with Transcript.open(path) as t:
        view = effective_path(t.path())
        sources = view.message_sources()
        assert view.message_count == len(ctx["messages"])
        for src, msg in zip(sources, ctx["messages"], strict=True):
            e = src.entry
            if e.type == "compaction":
                want = "system" if msg is ctx["messages"][0] and src.messages == 2 else "compactionSummary"
                assert msg["role"] == want
            elif e.type == "message":
                assert msg["role"] == e.data["message"]["role"]
                if src.edit is None:
                    assert msg["content"] == e.data["message"]["content"]
                else:
                    assert msg["content"] == src.edit.data["replacement"]["content"]
            else:
                assert msg["role"] == ROLE[e.type]
        # What an edit removed is nowhere in Pi's context.
        for s in view.removed():
            body = json.dumps(s.entry.data.get("message", s.entry.data.get("content")))
            assert body not in json.dumps(ctx["messages"])
        # Pi's systemMessage is the fold of the system messages the context held.
        assert path_system_messages(t.path()) == [m for m in ctx["messages"] if m["role"] == "system"]


@pytest.mark.pi
def test_what_each_script_removes_and_leaves_inert(written: list[tuple[str, Path, dict[str, Any]]]) -> None:
    seen = {}
    for name, path, _ in written:
        with Transcript.open(path) as t:
            view = effective_path(t.path())
            texts = lambda ss: sorted(json.dumps(s.entry.data.get("message", {}).get("content", "")) for s in ss)  # noqa: E731
            seen[name] = (len(view.removed()), len(view.replaced()), len(view.inert_edits), texts(view.removed()))
    assert seen["remove and replace"][:3] == (2, 1, 0)
    assert seen["edit of an edited entry: the later wins"][:3] == (1, 1, 2)
    assert seen["edit on another branch does nothing here"][:3] == (0, 0, 0)  # not on this path at all
    assert seen["compaction over system messages, edit in the retained range"][:3] == (1, 0, 0)
    assert seen["edit of a compacted-away entry is inert"][:3] == (0, 1, 1)


def test_editable_kinds() -> None:
    class E:
        def __init__(self, type_: str, data: dict[str, Any]) -> None:
            self.type, self.id, self.data = type_, "x", data

    assert [
        is_editable(E("message", {"message": {"role": r}}))
        for r in ("user", "assistant", "toolResult", "system", "bashExecution", "custom")
    ] == [True, True, True, False, False, False]
    assert is_editable(E("custom_message", {})) and not is_editable(E("context_edit", {}))
    assert not is_editable(E("message", {"message": "not an object"}))


def test_system_fold_is_pi_ais() -> None:
    msgs = [
        {"role": "user", "content": "x"},
        {"role": "system", "content": "a", "sections": {"s1": "1", "s2": "2"}, "timestamp": 5},
        {"role": "system", "content": [{"type": "text", "text": "b"}, {"type": "image"}], "timestamp": 6},
        {"role": "system", "content": "", "sections": {"s1": None, "s2": "22"}, "toolsAdded": [{"name": "t"}]},
        {"role": "system", "content": "c", "toolsRemoved": [{"name": "t"}], "toolsAdded": [{"name": "u"}]},
    ]
    assert current_system_message(msgs) == {
        "role": "system",
        "content": "a\n\nb\n\nc",
        "sections": {"s2": "22"},
        "toolsAdded": [{"name": "u"}],
        "timestamp": 5,
    }
    assert current_system_message([{"role": "user", "content": "x"}]) is None
    # pi-ai keys "is there one" on a timestamp or a tool: a bare system message has neither.
    assert current_system_message([{"role": "system", "content": "x"}]) is None
    assert current_system_message([{"role": "system", "content": "x", "toolsAdded": [{"name": "t"}]}]) == {
        "role": "system",
        "content": "x",
        "toolsAdded": [{"name": "t"}],
        "timestamp": 0,
    }
