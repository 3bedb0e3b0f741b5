"""Rollover over Pi 1.6.0's kinds: the edited context is reproduced, removed content never comes back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kurahi.lifecycle.freshness.carry import carry_into, check_carry
from kurahi.pi.transcript import Transcript
from kurahi.store.session import Session
from kurahi.testing import assistant_message, tool_result, user_message
from support.peer import PiPeer

SECRET = "sk-live-CARRY-42"
REPLACED = "hunter2-original"


def old_session(path: Path, *, compact: bool) -> None:
    with Session.create(path, cwd="/w") as s:
        s.append_system_message("You are Ava.", sections={"tone": "plain"}, timestamp=1)
        s.append_message(user_message("hello", 2))
        s.append_message(assistant_message([{"type": "text", "text": "hi"}], 3))
        leak = s.append_message(user_message(f"use {SECRET}", 4))
        s.append_message(assistant_message([{"type": "text", "text": "ok"}], 5))
        tool = s.append_message(tool_result("c1", "read", f"pw={REPLACED}", 6))
        if compact:
            s.append_compaction("the story so far", leak, 100)
        s.append_system_message("Be brief.", timestamp=7)
        s.append_usage("cache_warm", "p", "m", {"input": 1})
        s.append_context_edit(leak, None)
        s.append_context_edit(tool, "pw=[redacted]")
        s.append_message(user_message("and now?", 8))
        s.append_message(assistant_message([{"type": "text", "text": "now this"}], 9))


def carry(tmp_path: Path, how: str, *, compact: bool) -> tuple[Path, Path]:
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old_session(old, compact=compact)
    with Transcript.open(old) as t:
        path = t.path()
        for e in path:
            _ = e.data
        sid = t.session_id
    with Session.create(new, cwd="/w", parent_session=str(old)) as s:
        carry_into(path, s, how, old_session_id=sid, old_file=old, keep_recent_tokens=10**9)  # type: ignore[arg-type]
    return old, new


def split(messages: list[Any]) -> tuple[list[Any], list[Any]]:
    system = [m for m in messages if m["role"] == "system"]
    return system, [m for m in messages if m["role"] != "system"]


@pytest.mark.parametrize("compact", [False, True], ids=["no compaction", "after a compaction"])
def test_lineage_carry_reproduces_the_edited_context_in_pi(tmp_path: Path, pi: PiPeer, compact: bool) -> None:
    old, new = carry(tmp_path, "lineage", compact=compact)
    data = new.read_bytes()
    assert SECRET.encode() not in data and REPLACED.encode() not in data  # not even as bytes
    assert b'"context_edit"' not in data  # the edits' effect is in the copies
    old_ctx, new_ctx = (c["messages"] for c in pi.contexts([old, new]))
    assert SECRET not in json.dumps(old_ctx)  # Pi's reading of the old file: the edits apply
    _, old_rest = split(old_ctx)
    new_sys, new_rest = split(new_ctx)
    # Pi sees the same conversation after the carried summary ...
    start = 1 if compact else 0
    assert new_rest[0]["role"] == "compactionSummary"
    assert new_rest[1:] == old_rest[start:]
    assert any(m.get("content") == [{"type": "text", "text": "pw=[redacted]"}] for m in new_rest)
    # ... and the same system prompt, folded into the new compaction as Pi folds it.
    assert len(new_sys) == 1 and new_sys[0]["content"] == "You are Ava.\n\nBe brief."
    assert new_sys[0]["sections"] == {"tone": "plain"}


@pytest.mark.parametrize("compact", [False, True], ids=["no compaction", "after a compaction"])
def test_check_carry_vouches_for_it(tmp_path: Path, compact: bool) -> None:
    old, new = carry(tmp_path, "lineage", compact=compact)
    report = check_carry(old, new)  # Kurahi's projection of the old file applies its edits
    assert report.ok, report


def test_summary_carry_digest_leaves_out_what_was_removed(tmp_path: Path, pi: PiPeer) -> None:
    _, new = carry(tmp_path, "summary", compact=False)
    data = new.read_bytes()
    assert SECRET.encode() not in data and REPLACED.encode() not in data
    (ctx,) = pi.contexts([new])
    summary = next(m for m in ctx["messages"] if m["role"] == "compactionSummary")["summary"]
    assert "pw=[redacted]" in summary and "now this" in summary
    assert ctx["messages"][0]["role"] == "system"
