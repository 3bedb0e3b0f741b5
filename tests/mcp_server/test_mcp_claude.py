"""``kurahi mcp --claude DIR``: the four tools and the transcript slices over Claude Code's sessions.

A key is a project folder; its pieces are its sessions, oldest first (``/clear`` starts a new one
in the same folder), the newest current. What is in view is what its next ``claude --resume`` sends.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from kurahi.errors import UsageError
from kurahi.mcp_server import answers
from kurahi.mcp_server.served import Served, find_state
from kurahi.runtimes.claude.layout import slug
from support.claude_sessions import ClaudeSession, four_turns, snapshot

CWD = "/home/ava/work"
SECRET = "sk-ant-api03-" + "Q" * 40


def _cleared(root: Path) -> tuple[ClaudeSession, ClaudeSession]:
    """A session that said a phrase (and a secret), then a new one in the same folder, as /clear leaves them."""
    before = ClaudeSession(CWD, seed=1)
    before.turn("remember the phrase PURPLE-OTTER-42 please", "noted")
    before.turn(f"my key is {SECRET}", "do not paste keys")
    before.write(root)
    after = ClaudeSession(CWD, seed=2, start=datetime(2026, 12, 1, 11, 0, tzinfo=UTC))
    after.turn("what was the phrase?", "let me look", tool=("ls", "nothing here"))
    after.write(root)
    return before, after


def test_a_lone_claude_dir_is_served_and_beside_another_state_the_other_is(tmp_path: Path) -> None:
    four_turns()[0].write(tmp_path / ".claude")
    assert find_state(env={"HOME": str(tmp_path)}) == ("claude", tmp_path / ".claude")
    sessions = tmp_path / ".pi" / "agent" / "sessions" / "--w--"
    sessions.mkdir(parents=True)
    assert find_state(env={"HOME": str(tmp_path)}) == ("pi", tmp_path / ".pi" / "agent" / "sessions")
    assert find_state(claude=tmp_path / ".claude", env={"HOME": str(tmp_path)})[0] == "claude"
    with pytest.raises(UsageError, match="not several"):
        find_state(claude=tmp_path / ".claude", pi=tmp_path / ".pi")


def test_recall_finds_what_was_said_before_a_clear_and_never_hands_out_a_secret(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    before, after = _cleared(root)
    state = snapshot(root)
    served = Served("claude", root)
    assert served.keys() == [slug(CWD)]
    lineage = answers.lineage_answer(served)
    assert [(p["sessionId"], p["current"]) for p in lineage["pieces"]] == [
        (before.session_id, False),
        (after.session_id, True),
    ]
    assert lineage["boundaries"][0]["kind"] == "new" and "/clear" in lineage["boundaries"][0]["reason"]
    found = answers.recall_answer(served, "PURPLE-OTTER-42")
    [hit] = [h for h in found["hits"] if h["match"] == "exact phrase"]
    assert hit["piece"] == "p0" and "PURPLE-OTTER-42" in hit["text"] and not hit["inViewNow"]
    keyed = answers.recall_answer(served, "my key is")
    assert keyed["hits"] and all(SECRET not in h["text"] for h in keyed["hits"])
    around = hit["around"].removeprefix(answers.URI_PREFIX).split("/")
    sliced = answers.slice_answer(served, *around)
    assert any("PURPLE-OTTER-42" in e["text"] for e in sliced["entries"])
    assert all(SECRET not in answers.answer_text(a) for a in (lineage, keyed, sliced))
    checked = answers.check_answer(served, ["PURPLE-OTTER-42", "what was the phrase?"])
    assert [(m["sentNext"], m["inHistory"]) for m in checked["markers"]] == [(False, True), (True, True)]
    assert not checked["ok"] and checked["runtime"] == "claude-code-2.1.332"
    assert answers.losses_answer(served)["total"] == 0
    assert snapshot(root) == state


def test_losses_lists_what_claude_resume_no_longer_sends(tmp_path: Path) -> None:
    root = tmp_path / "claude"
    s, turns = four_turns(CWD, seed=3)
    s.row(turns[2].prompt)["parentUuid"] = None
    s.write(root)
    listed = answers.losses_answer(Served("claude", root))
    assert [x["kind"] for x in listed["losses"]] == ["null-parent"]
    assert listed["losses"][0]["sessionId"] == s.session_id and "/home/ava" not in str(listed)
