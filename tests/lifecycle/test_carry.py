"""Continuity-preserving rollover: the new session reproduces the old effective context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kurahi.context.files import project_file
from kurahi.lifecycle.freshness.carry import carry_into, check_carry
from kurahi.pi.transcript import Transcript
from kurahi.store.session import Session
from kurahi.testing import build_session
from support.peer import PiPeer


def _carry(tmp_path: Path, entries: int, seed: int, carry: str, keep: int) -> tuple[Path, Path]:
    old = tmp_path / "old.jsonl"
    build_session(old, entries=entries, seed=seed)
    with Transcript.open(old) as t:
        path = t.path()
        for e in path:
            _ = e.data  # entries read their JSON lazily: do it while the file is open
        sid = t.session_id
    new = tmp_path / "new.jsonl"
    with Session.create(new, cwd="/w", parent_session=str(old)) as s:
        carry_into(path, s, carry, old_session_id=sid, old_file=old, keep_recent_tokens=keep)  # type: ignore[arg-type]
    return old, new


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_lineage_carry_reproduces_the_old_context_and_pi_agrees(tmp_path: Path, seed: int, pi: PiPeer) -> None:
    old, new = _carry(tmp_path, 400, seed, "lineage", keep=10**9)  # keep everything: an exact reproduction
    report = check_carry(old, new)
    assert report.ok, report
    old_msgs = project_file(old).context.messages
    summaries = 1 if old_msgs and old_msgs[0].get("role") == "compactionSummary" else 0
    assert report.tail_messages == len(old_msgs) - summaries
    assert pi.context(new)["messages"] == project_file(new).context.to_dict()["messages"]
    header = json.loads(new.read_text().splitlines()[0])
    assert header["parentSession"] == str(old)


def test_lineage_carry_with_a_small_budget_keeps_the_recent_tail(tmp_path: Path) -> None:
    old, new = _carry(tmp_path, 600, 9, "lineage", keep=2000)
    report = check_carry(old, new)
    assert report.ok, report
    assert 0 < report.tail_messages < report.old_messages
    summary = project_file(new).context.messages[0]["summary"]
    assert "Continued from session" in summary


def test_summary_and_none(tmp_path: Path) -> None:
    _, new = _carry(tmp_path, 300, 4, "summary", keep=2000)
    msgs = project_file(new).context.messages
    assert len(msgs) == 1 and msgs[0]["role"] == "compactionSummary" and "Recent interaction:" in msgs[0]["summary"]
    (tmp_path / "b").mkdir()
    _, new = _carry(tmp_path / "b", 300, 4, "none", keep=2000)
    assert project_file(new).context.messages == []


def test_check_carry_notices_a_wrong_tail(tmp_path: Path) -> None:
    _, new = _carry(tmp_path, 200, 3, "lineage", keep=10**9)
    other = tmp_path / "other.jsonl"
    build_session(other, entries=200, seed=11)
    assert not check_carry(other, new).ok
