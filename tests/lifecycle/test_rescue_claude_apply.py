"""``rescue apply`` of each Claude Code loss kind on sessions built row by row as 2.1.332 writes them (fast tier).

Each kind is made on a copy of a whole session; apply appends, verifies with the model of the
loader, lists the loss no more, and the model then sends what the whole session sends (plus
the rows the break's own damage put in the file: a subagent's, a progress row's, which the
walk no longer reaches). Rollback gives the bytes back. The real CLI's word on the same is
``tests/peers/test_claude_rescue_real.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kurahi.errors import GuessNotAcceptedError, PreconditionError, RescueError
from kurahi.lifecycle.activation import driver
from kurahi.lifecycle.rescue.appending import AppendApplied, apply_append
from kurahi.runtimes.claude.loader import comparable, resume_view
from kurahi.runtimes.claude.losses import find_losses
from kurahi.runtimes.claude.rows import parse_rows
from kurahi.runtimes.registry import named
from kurahi.testing.claude_code import ClaudeSession
from support.claude_sessions import PROMPTS, REPLIES, four_turns, kept_tail_lost


def apply_claude(root: Path, loss_id: str, out: Path, **kw: Any) -> AppendApplied:
    """``kurahi rescue apply ID --claude ROOT``'s library call."""
    return apply_append(named("claude"), root, loss_id, out, **kw)


def rollback(package: Path) -> str:
    """``kurahi activate rollback PACKAGE``'s outcome, through the driver as the command runs it."""
    report = driver.rollback_package(package, None, None).report
    assert report is not None
    return str(report["outcome"])


def _sent(path: Path) -> list[tuple[str, str, str]]:
    return comparable(resume_view(parse_rows(path.read_bytes())).message_dicts())


def _null(s: ClaudeSession, t: list[Any]) -> None:
    s.row(t[2].tool_result)["parentUuid"] = None


def _wrong(s: ClaudeSession, t: list[Any]) -> None:
    s.row(t[2].prompt)["parentUuid"] = t[0].reply


def _compact_null(s: ClaudeSession, t: list[Any]) -> None:
    s.compact("SUMMARY of the first three turns", [t[3].prompt, t[3].reply])
    five = s.turn("echo prompt five", "echo reply five")
    s.row(five.prompt)["parentUuid"] = None


KINDS: dict[str, Callable[[ClaudeSession, list[Any]], None]] = {
    "null-parent": _null,
    "wrong-parent": _wrong,
    "compact-null": _compact_null,
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_apply_appends_and_the_model_then_sends_the_whole_session(kind: str, tmp_path: Path) -> None:
    whole, turns = four_turns()
    damaged, turns2 = four_turns()
    if kind == "compact-null":
        whole.compact("SUMMARY of the first three turns", [turns[3].prompt, turns[3].reply])
        whole.turn("echo prompt five", "echo reply five")
    KINDS[kind](damaged, turns2)
    root = tmp_path / "claude"
    path = damaged.write(root)
    before = path.read_bytes()
    [loss] = find_losses(root).losses
    assert loss.kind == kind and loss.apply_refused is None
    res = apply_claude(root, loss.id, tmp_path / "pkg")
    assert res.verified, res.problems
    assert path.read_bytes().startswith(before) and find_losses(root).losses == []
    assert _sent(path) == comparable(resume_view(parse_rows(whole.to_bytes())).message_dicts())
    assert not [n for n in find_losses(root).notes if "is written on lines" in n]
    assert "byte for byte" in rollback(tmp_path / "pkg")
    assert path.read_bytes() == before


def test_a_torn_last_line_is_ended_before_the_append(tmp_path: Path) -> None:
    s, turns = four_turns()
    _null(s, turns)
    s.raw(b'{"type":"last-prompt","lastPr')
    root = tmp_path / "claude"
    path = s.write(root)
    before = path.read_bytes()
    [loss] = find_losses(root).losses
    assert apply_claude(root, loss.id, tmp_path / "pkg").verified
    assert path.read_bytes().startswith(before + b"\n{")
    rollback(tmp_path / "pkg")
    assert path.read_bytes() == before


def test_continue_elsewhere_carries_the_earlier_history_into_the_new_session_once_accepted(tmp_path: Path) -> None:
    earlier, _ = four_turns("/home/ava/work")
    later = ClaudeSession("/home/ava/work/src", seed=9, start=earlier.clock + timedelta(minutes=5))
    later.turn("where were we?", "I have no earlier context")
    root = tmp_path / "claude"
    old, new = earlier.write(root), later.write(root)
    was = old.read_bytes()
    [loss] = find_losses(root).losses
    with pytest.raises(GuessNotAcceptedError):
        apply_claude(root, loss.id, tmp_path / "pkg")
    res = apply_claude(root, loss.id, tmp_path / "pkg", accept_guess=[loss.id])
    assert res.verified and res.file == str(new) and old.read_bytes() == was
    said = [("user", "text", "where were we?"), ("assistant", "text", "I have no earlier context")]
    assert _sent(new) == [*_sent(old), *said]  # the earlier history, then the new turn
    assert find_losses(root).losses == []


def test_preserved_missing_comes_back_from_the_request_record_and_rolls_back(tmp_path: Path) -> None:
    s, _, kept = kept_tail_lost()
    whole = s.to_bytes()
    s.drop(kept)
    root = tmp_path / "claude"
    path = s.write(root)
    before = path.read_bytes()
    [loss] = find_losses(root).losses
    assert loss.kind == "preserved-missing" and loss.apply_refused is None
    res = apply_claude(root, loss.id, tmp_path / "pkg", markers=[REPLIES[3]])
    assert res.verified, res.problems
    assert res.plan is not None and res.plan.rows == kept
    assert _sent(path) == comparable(resume_view(parse_rows(whole)).message_dicts())
    assert find_losses(root).losses == [] and not [n for n in find_losses(root).notes if "written on lines" in n]
    assert "byte for byte" in rollback(tmp_path / "pkg")
    assert path.read_bytes() == before
    assert driver.apply_package(tmp_path / "pkg", None, None).report["verified"]  # type: ignore[index]


def test_preserved_missing_rollback_after_claude_appended_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    s, _, kept = kept_tail_lost()
    s.drop(kept)
    root = tmp_path / "claude"
    path = s.write(root)
    [loss] = find_losses(root).losses
    assert apply_claude(root, loss.id, tmp_path / "pkg").verified
    with path.open("ab") as f:  # claude went on after the repair
        f.write(b'{"type":"last-prompt","lastPrompt":"later","leafUuid":null}\n')
    grown = path.read_bytes()
    with pytest.raises(PreconditionError, match="appending cannot take a row away"):
        rollback(tmp_path / "pkg")
    assert path.read_bytes() == grown


def test_preserved_missing_without_its_request_record_is_refused_with_its_reason_and_nothing_changes(
    tmp_path: Path,
) -> None:
    s, turns = four_turns()
    s.compact("SUMMARY", [turns[3].prompt, turns[3].reply])
    s.turn("echo prompt five", "echo reply five")
    s.drop([turns[3].prompt, turns[3].reply])
    root = tmp_path / "claude"
    path = s.write(root)
    before = path.read_bytes()
    [loss] = find_losses(root).losses
    assert loss.apply_refused and "no request after the compaction is recorded" in loss.apply_refused
    with pytest.raises(RescueError, match="cannot be rebuilt from this file: no request after the compaction"):
        apply_claude(root, loss.id, tmp_path / "pkg")
    assert path.read_bytes() == before and not (tmp_path / "pkg").exists()


def test_sidechain_and_progress_parents_come_back(tmp_path: Path) -> None:
    for n, kind in enumerate(("sidechain-parent", "progress-parent")):
        s = ClaudeSession("/w")
        s.turn(PROMPTS[0], REPLIES[0], tool=("ls", "out"))
        bad = s.subagent("the subagent's task", "the subagent's answer")[-1] if n == 0 else s.progress(parent=None)
        second = s.turn(PROMPTS[1], REPLIES[1])
        s.row(second.prompt)["parentUuid"] = bad
        root = tmp_path / kind
        path = s.write(root)
        [loss] = find_losses(root).losses
        assert loss.kind == kind
        assert apply_claude(root, loss.id, tmp_path / f"pkg-{n}").verified
        texts = [t for _, what, t in _sent(path) if what == "text"]
        assert texts == [PROMPTS[0], REPLIES[0], PROMPTS[1], REPLIES[1]]
